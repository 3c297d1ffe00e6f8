"""Context retrieval, briefs, lookups, lexical BM25, receipts and evaluation."""
