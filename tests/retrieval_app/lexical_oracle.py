"""The lexical page's contract computed the simple way, in Python over every record row: the
oracle the SQL scan (and the index path) are compared with.

Only the byte size of a row is read through SQL (``catalog_app.record_sql.source_bytes``: the
length of the content's JSON text as PostgreSQL writes it), since that is its definition.
"""
from __future__ import annotations

import math
import uuid
from dataclasses import dataclass

import pytest
from django.db.models.expressions import RawSQL

from catalog_app.bm25_terms import bm25_query_terms, bm25_tokens
from catalog_app.models import Record
from catalog_app.record_sql import source_bytes


@dataclass(frozen=True)
class OraclePage:
    ranking: list[tuple[uuid.UUID, float]]  # every matching corpus row, best first, ties by UUID
    matched: int
    corpus: int
    scanned: int
    scanned_bytes: int
    exhaustive: bool
    next_after: uuid.UUID | None
    budget_too_small: bool = False


def oracle_page(*, workspace, collections: list[str], text: str, after: uuid.UUID | None, scan_limit: int,
                scan_bytes_limit: int, entities=None, types=None, status: str = "active", keyed=None,
                versions: str = "current", record_type: str | None = None, tag: str | None = None,
                tag_collections: tuple[str, ...] = ("notes",)) -> OraclePage:
    rows = list(Record.objects.filter(workspace=workspace)
                .annotate(size=RawSQL(source_bytes(Record._meta.db_table), ()))
                .values("id", "seq", "collection", "entity", "type", "key", "status", "text", "content",
                        "enriched_at", "tombstone", "size"))
    newest = {}
    for row in rows:
        if row["key"] is not None:
            lane = (row["entity"], row["collection"], row["key"], row["status"])
            newest[lane] = max(newest.get(lane, 0), row["seq"])
    source = sorted((row for row in rows if row["collection"] in collections and (after is None or row["id"] > after)),
                    key=lambda row: row["id"])
    admitted, used = [], 0
    for row in source:
        if len(admitted) == scan_limit or used + row["size"] > scan_bytes_limit:
            break
        admitted.append(row)
        used += row["size"]
    if source and not admitted:
        return OraclePage([], 0, 0, 0, 0, False, None, budget_too_small=True)

    def visible(row) -> bool:
        if row["enriched_at"] is None or row["tombstone"]:
            return False
        if entities is not None and row["entity"] not in entities:
            return False
        if types is not None and row["type"] not in types:
            return False
        if record_type is not None and row["type"] != record_type:
            return False
        if status != "all" and row["status"] != status:
            return False
        if keyed is not None and (row["key"] is not None) != keyed:
            return False
        if versions == "current" and row["key"] is not None and \
                newest[(row["entity"], row["collection"], row["key"], row["status"])] != row["seq"]:
            return False
        if tag is not None and (row["collection"] not in tag_collections
                                or tag not in (row["content"].get("tags") or [])):
            return False
        return True

    corpus = [row for row in admitted if visible(row)]
    terms = bm25_query_terms(text)
    docs = [(row["id"], bm25_tokens(row["text"])) for row in corpus]
    n = len(docs)
    average = sum(len(tokens) for _, tokens in docs) / n if n else 0.0
    df = {term: sum(term in tokens for _, tokens in docs) for term in terms}
    ranking = []
    for record_id, tokens in docs:
        if not any(term in tokens for term in terms):
            continue
        score = 0.0
        for term in terms:
            tf = tokens.count(term)
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(tokens) / average))
        ranking.append((record_id, score))
    ranking.sort(key=lambda hit: (-hit[1], hit[0]))
    remains = len(source) > len(admitted)
    return OraclePage(ranking, len(ranking), n, len(admitted), used, after is None and not remains,
                      admitted[-1]["id"] if remains else None)


def assert_top_k(hits, oracle: OraclePage, limit: int) -> None:
    """``hits`` ((id, score) best first) are a correct top ``limit`` of the oracle's ranking:
    the right count, each score the oracle's (1e-9), non-increasing with exact ties by UUID, and
    no record left out that scores more than the last one kept (float noise allowed)."""
    scores = dict(oracle.ranking)
    assert len(hits) == min(limit, oracle.matched)
    for (record_id, score), (next_id, next_score) in zip(hits, hits[1:]):
        assert score > next_score or (score == next_score and record_id < next_id)
    for record_id, score in hits:
        assert score == _approx(scores[record_id])
    if hits:
        floor = hits[-1][1]
        kept = {record_id for record_id, _ in hits}
        assert all(score <= floor * (1 + 1e-9) for record_id, score in oracle.ranking if record_id not in kept)


def _approx(value: float):
    return pytest.approx(value, rel=1e-9, abs=1e-12)
