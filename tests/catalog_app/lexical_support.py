"""Shared pieces of the lexical index tests: a small catalog, writes through the ingest
service, and the brute-force oracle (the full scan of ``search_app.backends.pg_bm25`` over every
visible record's stored term frequencies, scoped by ``catalog_app.record_sql``)."""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from uuid import UUID

from django.db import connection

from catalog_app.lexical.query import IndexScope
from catalog_app.record_sql import RECORD, record_scope
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.record_ingest import record_ingest_batch
from search_app.backends.pg_bm25 import _term_sql, terms_join

CATALOG = """
collections:
  - name: notes
    version: 1
    active: false
    mode: mixed
    schema: {type: object, required: [text], properties: {text: {type: string}}}
    required_processors: []
    search_profile: pg_default
  - name: notes
    version: 2
    active: true
    mode: mixed
    schema: {type: object, required: [text], properties: {text: {type: string}}}
    required_processors: []
    search_profile: pg_default
  - name: logs
    version: 1
    active: true
    mode: mixed
    schema: {type: object, required: [text], properties: {text: {type: string}}}
    required_processors: []
    search_profile: pg_default
  - name: slow
    version: 1
    active: true
    mode: mixed
    schema: {type: object, required: [text], properties: {text: {type: string}}}
    required_processors: [stamp]
    search_profile: pg_default
"""
PROCESSORS = """
processors:
  - name: stamp
    kind: json
    source: constant
    input: {collections: [slow]}
    output_schema: {type: object, required: [label], properties: {label: {type: string}}}
    default_output: {label: done}
"""


def maintain_both_analyzers(settings) -> None:
    """Make the write path maintain every analyzer (``bm25_v1``, ``english``, ``en_v1``), whatever
    the setting's default is."""
    settings.MEMSEEK = {**getattr(settings, "MEMSEEK", {}), "LEXICAL_ANALYZERS": "bm25_v1,english,en_v1"}


def maintain_two_analyzers(settings) -> None:
    """Make the write path maintain ``bm25_v1`` and ``english`` only: for the tests whose counts
    (changes logged, compactions run) and migrations were written for those two, from before
    ``en_v1`` (whose record column a migration back past it drops). ``en_v1``'s own index is
    proven against the scan in ``test_lexical_property_en``."""
    settings.MEMSEEK = {**getattr(settings, "MEMSEEK", {}), "LEXICAL_ANALYZERS": "bm25_v1,english"}


def load_lexical_catalog(workspace, directory) -> None:
    """Write and load the tests' catalog (``notes`` v1 and v2, ``logs``: ready at insert;
    ``slow``: ready once its constant processor ran)."""
    (directory / "collections").mkdir(parents=True, exist_ok=True)
    (directory / "conf").mkdir(exist_ok=True)
    (directory / "collections" / "all.yaml").write_text(textwrap.dedent(CATALOG))
    (directory / "conf" / "processors.yaml").write_text(textwrap.dedent(PROCESSORS))
    catalog_load(workspace=workspace, directory=directory)
    workspace.refresh_from_db()


def write(workspace, *items: dict) -> list[UUID]:
    """Ingest ``items`` (defaults: collection ``notes`` v1, entity ``e1``); returns their ids."""
    full = [{"collection": "notes", "collection_version": 1, "entity": "e1", "type": "note", **item} for item in items]
    result = record_ingest_batch(workspace=workspace, items=full)
    assert not result.duplicates
    return [outcome.id for outcome in result.inserted]


@dataclass(frozen=True)
class OracleResult:
    n: int
    average_length: float
    dfs: tuple[int, ...]
    matched: int
    hits: tuple[tuple[UUID, float], ...]


def oracle_top_k(workspace_id: int, terms: tuple[str, ...], k: int, scope: IndexScope,
                 analyzer: str = "bm25_v1") -> OracleResult:
    """Exact BM25 by full scan: every visible record in scope, its stored term frequencies
    (``bm25_v1`` or ``en_v1``), the statement shape and float8 arithmetic of
    ``pg_bm25.bm25_candidates``."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT DISTINCT collection, collection_version FROM {RECORD} WHERE workspace_id = %s",
                       [workspace_id])
        versions: dict[str, list[int]] = {}
        for name, version in cursor.fetchall():
            if scope.collection_ids is None or name in scope.collection_ids:
                if scope.versions is None or (name, version) in scope.versions:
                    versions.setdefault(name, []).append(version)
    if not versions:
        return OracleResult(0, 0.0, tuple(0 for _ in terms), 0, ())
    clause = record_scope(workspace_id=workspace_id, collection_versions=versions, entities=scope.entities,
                          types=scope.types, keyed=scope.keyed, current=True)
    where = f"{clause.sql} AND r.status = ANY(%s)"
    params = [*clause.params, list(scope.statuses)]
    if not terms:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*), coalesce(avg(b.length), 0)::float8 FROM {RECORD} r "
                           f"{terms_join((), analyzer)[0]} WHERE {where}", params)
            n, average = cursor.fetchone()
        return OracleResult(n, average, (), 0, ())
    join, join_params = terms_join(terms, analyzer)
    tcols = "".join(f", b.t{i}" for i in range(len(terms)))
    dfs = "".join(f", count(d.t{i})::float8 AS df{i}" for i in range(len(terms)))
    score = " + ".join(_term_sql(i, f"ln(1 + (s.n - s.df{i} + 0.5) / (s.df{i} + 0.5))", "s.average", "d")
                       for i in range(len(terms)))
    shares = " OR ".join(f"d.t{i} IS NOT NULL" for i in range(len(terms)))
    sql = (f"WITH d AS MATERIALIZED (SELECT r.id, b.length{tcols} FROM {RECORD} r {join} WHERE {where}), "
           f"s AS (SELECT count(*)::float8 AS n, coalesce(avg(d.length), 0)::float8 AS average{dfs}, "
           f"count(*) FILTER (WHERE {shares}) AS matched FROM d) "
           f"SELECT c.id, c.score, s.* FROM s LEFT JOIN LATERAL (SELECT d.id, {score} AS score FROM d "
           f"WHERE ({shares}) AND s.average > 0 ORDER BY score DESC, d.id ASC LIMIT %s) c ON true "
           f"ORDER BY c.score DESC, c.id ASC")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*join_params, *params, max(k, 0)])
        rows = cursor.fetchall()
    first = rows[0]
    n, average, df_values, matched = first[2], first[3], first[4:4 + len(terms)], first[4 + len(terms)]
    hits = tuple((row[0], row[1]) for row in rows if row[0] is not None)
    return OracleResult(int(n), float(average), tuple(int(df) for df in df_values), int(matched), hits)
