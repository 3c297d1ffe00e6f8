"""``POST /search/lexical`` (lexical-search.md): exact BM25 (``bm25_v1``) over a Memseek scope,
with scan budgets, coverage figures, a source-row cursor and retrieval slots."""
