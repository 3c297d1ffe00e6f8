"""Reading the lexical index: exact BM25 top-k, conjunctive candidates and source totals.

Scope. ``IndexScope`` narrows by the columns every posting carries through its group
(``collection_ids``: collection *names*, the identity ``Record.collection`` uses, optionally
narrowed to exact ``(name, version)`` pairs by ``versions``; ``statuses``; ``types``;
``keyed``) and by ``entities`` (through the record table). ``None`` is no restriction on that
axis; an empty tuple admits nothing. Only visible records are ever in the index
(``catalog_app.lexical.maintenance``), so every statistic is over the visible records in scope.

Statistics. N, the average length and each term's df are exact over the scope: a scope without
``entities`` reads the maintained group statistics; an entity scope counts its documents. Each
read is one SQL statement, so statistics and postings come from one snapshot.
"""
from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

import numpy as np
from django.db import connection

from memseek_site.errors import ApiError

from ..record_sql import RECORD
from .analyzers import Analyzer, analyzer_get, maintained_analyzers
from .scoring import TermPostings, best_k, contribution, idf, top_candidates, union_size
from .tables import DOCUMENT, GROUP, GROUP_STATS, POSTING, SOURCE_TOTALS, TERM_STATS


@dataclass(frozen=True, slots=True)
class IndexScope:
    """The records a query reads (module docstring). ``None`` = no restriction on that axis."""

    collection_ids: tuple[str, ...] | None = None  # collection names (Record.collection)
    statuses: tuple[str, ...] = ("active",)
    types: tuple[str, ...] | None = None
    keyed: bool | None = None
    entities: tuple[str, ...] | None = None
    versions: tuple[tuple[str, int], ...] | None = None  # exact (collection, version) pairs


@dataclass(frozen=True, slots=True)
class IndexTopK:
    n: int
    average_length: float
    dfs: tuple[int, ...]  # exact statistics over the scope, one per term
    matched: int  # visible records in scope sharing >= 1 term
    hits: tuple[tuple[UUID, float], ...]  # best k by exact BM25, ties by ascending UUID
    scored: int = 0  # records scored in full (the rest were pruned)


class LexicalIndexInconsistent(ApiError):
    """The index disagrees with itself (a maintained statistic against the postings it counts);
    the read fails rather than rank with a wrong statistic or drop a candidate."""

    codes = ("lexical_index_inconsistent",)


def index_top_k(*, workspace_id: int, analyzer: str, terms: tuple[str, ...], k: int,
                scope: IndexScope) -> IndexTopK:
    """The best ``k`` visible records of ``scope`` by exact BM25 over distinct ``terms`` (OR
    semantics), with the statistics they were scored with. Raises ``ValueError`` for repeated
    terms or an analyzer the write path does not maintain, ``LexicalIndexInconsistent`` (500)
    when the statistics contradict the postings."""
    spec = _maintained(analyzer)
    terms = tuple(terms)
    if len(set(terms)) != len(terms):
        raise ValueError("terms must be distinct")
    rows = _read(workspace_id, spec, terms, scope)
    n, total, average = int(rows[0][0]), int(rows[0][1]), float(rows[0][2])
    if not terms:
        return IndexTopK(n, average, (), 0, ())
    postings, dfs = [], []
    # The statistics are kept per (collection, status): they count this scope's df exactly only
    # when no narrower axis applies; a read holding them against its postings where they do
    # fails instead of ranking with a wrong statistic. Bounds come from the postings themselves
    # (exact, so pruning is as tight as it can be, at the cost of one pass over each array).
    whole_cells = scope.entities is None and scope.types is None and scope.keyed is None and scope.versions is None
    for _, _, _, term, df, max_tf, min_length, blob in rows:
        table = np.frombuffer(blob or b"", dtype=_POSTING_ROW)
        seq_array = table["seq"].astype(np.int64)
        tf_array = table["tf"].astype(np.float64)
        length_array = table["length"].astype(np.float64)
        top_tf = float(tf_array.max()) if tf_array.size else 0.0
        shortest = float(length_array.min()) if length_array.size else 0.0
        if whole_cells and (int(df or 0) != seq_array.size
                            or seq_array.size and (top_tf > max_tf or shortest < min_length)):
            raise LexicalIndexInconsistent(
                "lexical_index_inconsistent", f"The lexical index of workspace {workspace_id} counts df {df} "
                f"(max tf {max_tf}, min length {min_length}) for term {term!r} ({analyzer}) but holds "
                f"{seq_array.size} postings in scope (max tf {top_tf:g}, min length {shortest:g}); run "
                f"`python manage.py lexical_check --workspace {workspace_id}`.")
        df = int(seq_array.size)
        term_idf = idf(n, df) if n else 0.0
        bound = float(contribution(term_idf, top_tf, shortest, average)) if average > 0 and df else 0.0
        postings.append(TermPostings(seq_array, tf_array, length_array, term_idf, bound))
        dfs.append(df)
    matched = union_size(postings)
    if matched > n:
        raise LexicalIndexInconsistent(
            "lexical_index_inconsistent", f"The lexical index of workspace {workspace_id} has {matched} records "
            f"matching {terms!r} ({analyzer}) in a scope of {n}; run `python manage.py lexical_check "
            f"--workspace {workspace_id}`.")
    seqs, scores, scored = top_candidates(postings, k, average)
    hits = _ranked(*best_k(seqs, scores, k), k)
    return IndexTopK(n, average, tuple(dfs), matched, hits, scored)


def records_with_all_terms(*, workspace_id: int, analyzer: str, terms: tuple[str, ...], scope: IndexScope,
                           limit: int) -> list[UUID]:
    """The visible records of ``scope`` holding every one of ``terms`` (conjunctive candidates),
    newest first by ``seq``, at most ``limit``. Raises ``ValueError`` for no terms or an
    unmaintained analyzer."""
    spec = _maintained(analyzer)
    terms = tuple(dict.fromkeys(terms))
    if not terms:
        raise ValueError("records_with_all_terms needs at least one term")
    if limit <= 0:
        return []
    groups, group_params = _groups(workspace_id, scope)
    entity_sql, entity_params = _entity_filter(workspace_id, scope, "p0")
    # The scan walks the first term's postings newest first and probes the others by key, so it
    # stops after ``limit`` matches; any order is correct, the rarest first reads the least.
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT term, sum(df) FROM {TERM_STATS} WHERE workspace_id = %s AND analyzer = %s "
                       f"AND term = ANY(%s) AND (collection, status) IN (SELECT g.collection, g.status FROM ({groups}) g) "
                       "GROUP BY term",
                       [workspace_id, spec.code, list(terms), *group_params])
        dfs = dict(cursor.fetchall())
        if any(dfs.get(term, 0) == 0 for term in terms):  # counted over a superset of the scope
            return []
        ordered = sorted(terms, key=lambda term: dfs.get(term, 0))
        probes = "".join(
            f" AND EXISTS (SELECT 1 FROM {POSTING} p{i} WHERE p{i}.workspace_id = p0.workspace_id AND "
            f"p{i}.analyzer = p0.analyzer AND p{i}.term = %s AND p{i}.seq = p0.seq)" for i in range(1, len(ordered)))
        cursor.execute(
            f"SELECT r.id FROM (SELECT p0.seq FROM {POSTING} p0 WHERE p0.workspace_id = %s AND p0.analyzer = %s "
            f"AND p0.term = %s AND p0.group_id IN (SELECT g.id FROM ({groups}) g){entity_sql}{probes} "
            "ORDER BY p0.seq DESC LIMIT %s) x "
            f"JOIN {RECORD} r ON r.seq = x.seq ORDER BY x.seq DESC",
            [workspace_id, spec.code, ordered[0], *group_params, *entity_params, *ordered[1:], limit])
        return [row[0] for row in cursor.fetchall()]


def source_totals(*, workspace_id: int, collection_ids: tuple[str, ...] | None) -> tuple[int, int]:
    """(source rows, source bytes) of the workspace's collections ``collection_ids`` (names;
    ``None`` = all): every record row ever inserted, visible or not, and the sum of their
    ``record_sql.source_bytes``."""
    sql = f"SELECT coalesce(sum(rows), 0), coalesce(sum(bytes), 0) FROM {SOURCE_TOTALS} WHERE workspace_id = %s"
    params: list = [workspace_id]
    if collection_ids is not None:
        sql += " AND collection = ANY(%s)"
        params.append(list(collection_ids))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows, size = cursor.fetchone()
    return int(rows), int(size)


def _maintained(name: str) -> Analyzer:
    analyzer = analyzer_get(name)
    if analyzer not in maintained_analyzers():
        raise ValueError(f"analyzer {name!r} is not maintained (setting LEXICAL_ANALYZERS)")
    return analyzer


def _groups(workspace_id: int, scope: IndexScope) -> tuple[str, list]:
    """SQL selecting the ids of the scope's groups, and its parameters."""
    parts, params = ["g.workspace_id = %s", "g.status = ANY(%s)"], [workspace_id, list(scope.statuses)]
    if scope.collection_ids is not None:
        parts.append("g.collection = ANY(%s)")
        params.append(list(scope.collection_ids))
    if scope.versions is not None:
        parts.append("(g.collection, g.collection_version) IN (SELECT * FROM unnest(%s::text[], %s::integer[]))")
        params.extend([[name for name, _ in scope.versions], [version for _, version in scope.versions]])
    if scope.types is not None:
        parts.append("g.type = ANY(%s)")
        params.append(list(scope.types))
    if scope.keyed is not None:
        parts.append("g.keyed = %s")
        params.append(scope.keyed)
    return f"SELECT g.id, g.collection, g.status FROM {GROUP} g WHERE {' AND '.join(parts)}", params


def _entity_filter(workspace_id: int, scope: IndexScope, alias: str) -> tuple[str, list]:
    if scope.entities is None:
        return "", []
    return (f" AND {alias}.seq IN (SELECT e.seq FROM {RECORD} e WHERE e.workspace_id = %s AND e.entity = ANY(%s))",
            [workspace_id, list(scope.entities)])


_POSTING_ROW = np.dtype([("seq", ">i8"), ("tf", ">i4"), ("length", ">i4")])


def _read(workspace_id: int, analyzer: Analyzer, terms: tuple[str, ...], scope: IndexScope) -> list[tuple]:
    """(N, total length, average, term, maintained df, max tf, min length, postings) per term in
    query order (one row with NULL term columns when no terms); postings are the big-endian
    (seq, tf, length) rows of ``_POSTING_ROW``, ascending by seq. The scope's groups are read
    first (a group, once created, never changes), then everything else in one statement, so
    statistics and postings come from one snapshot. The average is ``numeric`` division cast
    to float8, exactly as the oracle's ``avg()``."""
    groups, group_params = _groups(workspace_id, scope)
    with connection.cursor() as cursor:
        cursor.execute(groups, group_params)
        found = cursor.fetchall()
    ids = [row[0] for row in found]
    cells = sorted({(collection, status) for _, collection, status in found})
    entity_sql, entity_params = _entity_filter(workspace_id, scope, "p")
    if scope.entities is None:
        stats = (f"SELECT coalesce(sum(s.docs), 0) AS n, coalesce(sum(s.total_length), 0) AS total "
                 f"FROM {GROUP_STATS} s WHERE s.analyzer = %s AND s.group_id = ANY(%s::integer[])")
        stats_params = [analyzer.code, ids]
        term_stats = (f"SELECT t.term, sum(t.df) AS df, max(t.max_tf) AS max_tf, min(t.min_length) AS min_length "
                      f"FROM {TERM_STATS} t WHERE t.workspace_id = %s AND t.analyzer = %s AND t.term = ANY(%s) "
                      "AND (t.collection, t.status) IN (SELECT * FROM unnest(%s::text[], %s::text[])) GROUP BY t.term")
        term_params = [workspace_id, analyzer.code, list(terms), [c for c, _ in cells], [s for _, s in cells]]
    else:
        stats = (f"SELECT count(*) AS n, coalesce(sum(d.length), 0) AS total FROM {DOCUMENT} d "
                 f"JOIN {RECORD} e ON e.seq = d.seq WHERE d.analyzer = %s AND d.group_id = ANY(%s::integer[]) "
                 "AND e.workspace_id = %s AND e.entity = ANY(%s)")
        stats_params = [analyzer.code, ids, workspace_id, list(scope.entities)]
        term_stats = ("SELECT NULL::text AS term, NULL::bigint AS df, NULL::integer AS max_tf, "
                      "NULL::integer AS min_length")
        term_params = []
    sql = (
        f"WITH st AS ({stats}), ts AS ({term_stats}), "
        "po AS (SELECT p.term, string_agg(int8send(p.seq) || int4send(p.tf) || int4send(p.length), ''::bytea "
        f"ORDER BY p.seq) AS postings FROM {POSTING} p WHERE p.workspace_id = %s AND p.analyzer = %s "
        f"AND p.term = ANY(%s) AND p.group_id = ANY(%s::integer[]){entity_sql} GROUP BY p.term) "
        "SELECT st.n, st.total, CASE WHEN st.n > 0 THEN (st.total::numeric / st.n::numeric)::float8 ELSE 0 END, "
        "q.term, ts.df, ts.max_tf, ts.min_length, po.postings "
        "FROM st LEFT JOIN unnest(%s::text[]) WITH ORDINALITY q(term, i) ON true "
        "LEFT JOIN ts ON ts.term = q.term LEFT JOIN po ON po.term = q.term ORDER BY q.i")
    params = [*stats_params, *term_params, workspace_id, analyzer.code, list(terms), ids, *entity_params,
              list(terms)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _ranked(above: np.ndarray, above_scores: np.ndarray, tied: np.ndarray, kth: float,
            k: int) -> tuple[tuple[UUID, float], ...]:
    """The top ``k`` as (UUID, score): those above the k-th score by score then UUID, then the
    records tied at it with the smallest UUIDs (only those are read)."""
    if not above.size and not tied.size:
        return ()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT seq, id FROM {RECORD} WHERE seq = ANY(%s)", [above.tolist()])
        ids = dict(cursor.fetchall())
        ranked = sorted(zip(above_scores.tolist(), (ids[int(seq)] for seq in above)), key=lambda h: (-h[0], h[1]))
        if len(ranked) < k and tied.size:
            cursor.execute(f"SELECT id FROM {RECORD} WHERE seq = ANY(%s) ORDER BY id LIMIT %s",
                           [tied.tolist(), k - len(ranked)])
            ranked += [(kth, row[0]) for row in cursor.fetchall()]
    return tuple((uid, score) for score, uid in ranked[:k])
