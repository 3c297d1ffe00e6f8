"""tantivy as ``bench lexical``'s same-run peer: the same visible records, the same ``bm25_v1``
tokens, the same queries.

Tokens. Each record the lexical index holds (its ``catalog_app_lexical_document`` rows) gets one
tantivy document with one field per maintained analyzer (``LEXICAL_ANALYZERS``: ``bm25_v1`` and
``english`` by default, so the index sizes compare the same analyzers). A field's text is the
analyzer's own terms for the record (``Analyzer.terms_sql``, what the index itself is built from:
for ``bm25_v1`` the ``catalog_app.bm25_terms`` tokens stored at ingest), each repeated tf times,
joined by single spaces; the field's analyzer is tantivy's whitespace tokenizer with no filter
(no lowercasing, stemming or length limit), indexed with term frequencies and no positions (the
lexical index keeps none). The build fails if a record's token count in a field differs from the
length the index stores, so both engines see identical terms, tfs and lengths. Queries read the
``bm25_v1`` field only, ``bm25_query_terms`` of the same text: one SHOULD term query per distinct
term (OR semantics, as ``index_top_k``), and, in one entity's scope, a MUST of that OR and of the
entity's term with a constant score of 0.

Scoring. tantivy 0.27's BM25 has ``bm25_v1``'s constants (k1 1.2, b 0.75) and idf
(``ln(1 + (N - df + 0.5) / (df + 0.5))``), but: it computes in 32-bit floats; it quantises each
document's length to one byte (exact up to 40 tokens, then buckets that grow with the length);
and its N, average length and df are always the whole index's, where Memseek's are the scope's
(an entity scope ranks with that entity's statistics). So top-10 lists can differ: near-ties
reorder, and an entity scope's idf differs. ``overlap`` reports how many of Memseek's top 10 are
among tantivy's.

The call timed is ``searcher.search(query, k, count=False)`` (top-k only, so block-max WAND can
prune; ``count=True`` would visit every match) plus the read of the hits' record ids from two
u64 fast fields (the UUID's halves); ``index_top_k`` also returns N and the number matched.
The index lives in ``bench/.cache/`` beside the build info and is reused with the corpus.
"""
from __future__ import annotations

import shutil
import time
import uuid
from pathlib import Path

import tantivy

QUERIED = "bm25_v1"  # the analyzer ``bench lexical`` queries
WHITESPACE = "whitespace_only"
WRITER_HEAP = 256_000_000
_MASK = (1 << 64) - 1


def _schema(analyzers: tuple[str, ...]) -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    for name in analyzers:
        builder.add_text_field(name, tokenizer_name=WHITESPACE, index_option="freq")
    builder.add_text_field("entity", tokenizer_name="raw", index_option="basic")
    builder.add_unsigned_field("id_hi", fast=True)
    builder.add_unsigned_field("id_lo", fast=True)
    return builder.build()


def _open(path: Path, analyzers: tuple[str, ...], reuse: bool) -> tantivy.Index:
    index = tantivy.Index(_schema(analyzers), path=str(path), reuse=reuse)
    index.register_tokenizer(WHITESPACE, tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build())
    return index


def directory_bytes(path: Path) -> int:
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


def _documents_sql(analyzers) -> str:
    """Per visible record: id, entity, then each analyzer's terms (repeated tf times, spaces
    between) and the length the index stores for it."""
    from catalog_app.lexical.tables import DOCUMENT

    columns, joins = [], []
    for number, analyzer in enumerate(analyzers):
        columns += [f"(SELECT coalesce(string_agg(repeat(t.term || ' ', t.tf), ''), '') FROM {analyzer.terms_sql})",
                    f"d{number}.length"]
        joins.append(f"JOIN {DOCUMENT} d{number} ON d{number}.seq = d.seq AND d{number}.analyzer = {analyzer.code}")
    return (f"SELECT r.id, r.entity, {', '.join(columns)} FROM {DOCUMENT} d JOIN catalog_app_record r "
            f"ON r.id = d.record_id {' '.join(joins)} WHERE d.workspace_id = %s AND d.analyzer = %s")


def build(path: Path, workspace_id: int) -> dict:
    """A fresh tantivy index at ``path`` of the workspace's visible records; returns
    ``{documents, analyzers, build_s, bytes, segments}``. One indexing thread (the lexical
    backfill runs in one database backend); the time includes reading the terms."""
    from django.db import connection, transaction

    from catalog_app.lexical.analyzers import BM25_V1, maintained_analyzers

    analyzers = maintained_analyzers()
    names = tuple(analyzer.name for analyzer in analyzers)
    if QUERIED not in names:
        raise RuntimeError(f"bench lexical queries {QUERIED}, which LEXICAL_ANALYZERS does not maintain")
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    started = time.perf_counter()
    index = _open(path, names, reuse=False)
    writer = index.writer(heap_size=WRITER_HEAP, num_threads=1)
    documents = 0
    with transaction.atomic(), connection.chunked_cursor() as cursor:
        cursor.execute(_documents_sql(analyzers), [workspace_id, BM25_V1.code])
        for record_id, entity, *fields in cursor:
            document = tantivy.Document()
            for name, terms, length in zip(names, fields[::2], fields[1::2]):
                if terms.count(" ") != length:
                    raise RuntimeError(f"record {record_id}: {terms.count(' ')} {name} tokens, the index "
                                       f"stores a length of {length}")
                document.add_text(name, terms)
            document.add_text("entity", entity)
            number = record_id.int
            document.add_unsigned("id_hi", number >> 64)  # typed: a keyword int would be an i64
            document.add_unsigned("id_lo", number & _MASK)
            writer.add_document(document)
            documents += 1
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return {"documents": documents, "analyzers": list(names), "build_s": time.perf_counter() - started,
            "bytes": directory_bytes(path), "segments": index.searcher().num_segments}


class Peer:
    """An open tantivy index answering ``top_k`` like ``index_top_k`` answers ``hits``' ids."""

    def __init__(self, path: Path, analyzers: tuple[str, ...]):
        self.index = _open(path, analyzers, reuse=True)
        self.schema = self.index.schema
        self.searcher = self.index.searcher()

    def documents(self) -> int:
        return self.searcher.num_docs

    def top_k(self, terms: tuple[str, ...], k: int, entity: str | None = None) -> list[uuid.UUID]:
        """The ids of the best ``k`` records by tantivy's BM25 over ``terms`` (OR), in order."""
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, QUERIED, term)) for term in terms])
        if entity is not None:
            only = tantivy.Query.const_score_query(tantivy.Query.term_query(self.schema, "entity", entity), 0.0)
            query = tantivy.Query.boolean_query([(tantivy.Occur.Must, query), (tantivy.Occur.Must, only)])
        hits = [address for _, address in self.searcher.search(query, k, count=False).hits]
        highs = self.searcher.fast_field_values("id_hi", hits)
        lows = self.searcher.fast_field_values("id_lo", hits)
        return [uuid.UUID(int=high << 64 | low) for high, low in zip(highs, lows)]
