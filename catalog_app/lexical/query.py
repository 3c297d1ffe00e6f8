"""Reading the lexical index: exact BM25 top-k, conjunctive candidates (walked newest first) and
source totals.

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

from collections.abc import Iterator
from dataclasses import dataclass
from uuid import UUID

import numpy as np
from django.db import connection

from memseek_site.errors import ApiError

from ..binary_rows import binary_rows
from ..record_sql import RECORD, id_array
from .analyzers import Analyzer, analyzer_get, maintained_analyzers, stored_columns
from .block_cache import BLOCKS
from .blocks import ROW, block_bytes, decode_into, packed_rows
from .bm25_topk import TermPostings, best_k, contribution, idf, is_among, slots_of, top_candidates
from .tables import BLOCK, CHANGE, COMPACTION, DOCUMENT, GROUP, GROUP_STATS, PENDING, SOURCE_TOTALS


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
    n, average, arrays = _in_scope(workspace_id, spec, terms, scope, scored=True)
    if not terms:
        return IndexTopK(n, average, (), 0, ())
    postings, dfs = [], []
    # Bounds come from the postings themselves (exact, so pruning is as tight as it can be, at
    # the cost of one pass over each array).
    for seq_array, tf_array, length_array in arrays:
        assert tf_array is not None and length_array is not None  # scored: both decoded
        top_tf = float(tf_array.max()) if tf_array.size else 0.0
        shortest = float(length_array.min()) if length_array.size else 0.0
        df = int(seq_array.size)
        term_idf = idf(n, df) if n else 0.0
        bound = float(contribution(term_idf, top_tf, shortest, average)) if average > 0 and df else 0.0
        postings.append(TermPostings(seq_array, tf_array, length_array, term_idf, bound))
        dfs.append(df)
    found = top_candidates(postings, slots_of(postings), k, average)
    if found.matched > n:
        raise LexicalIndexInconsistent(
            "lexical_index_inconsistent", f"The lexical index of workspace {workspace_id} has {found.matched} "
            f"records matching {terms!r} ({analyzer}) in a scope of {n}; run `python manage.py lexical_check "
            f"--workspace {workspace_id}`.")
    hits = _ranked(*best_k(found.seqs, found.scores, k), k)
    return IndexTopK(n, average, tuple(dfs), found.matched, hits, found.scored)


def records_with_all_terms(*, workspace_id: int, analyzer: str, terms: tuple[str, ...], scope: IndexScope,
                           walk: int, before_seq: int | None = None, growth: int = 4) -> Iterator[tuple[int, ...]]:
    """The visible records of ``scope`` holding every one of ``terms`` (conjunctive candidates),
    seqs below ``before_seq`` (no bound when ``None``), newest first, in steps: each step reads
    the next rows of the walk's lead (the rarest term's postings, or, when the scope names
    entities, those entities' records), ``walk`` the first time and ``growth`` times more each
    next, and yields the seqs among them that hold every term (possibly none). The generator ends
    once the lead is read to the end. Raises ``ValueError`` for no terms, ``walk`` < 1 or an
    unmaintained analyzer."""
    spec = _maintained(analyzer)
    terms = tuple(dict.fromkeys(terms))
    if not terms:
        raise ValueError("records_with_all_terms needs at least one term")
    if walk < 1:
        raise ValueError("records_with_all_terms walks at least one row a step")
    return _conjunctive_steps(workspace_id, spec, terms, scope, walk, before_seq, growth)


def _conjunctive_steps(workspace_id: int, spec: Analyzer, terms: tuple[str, ...], scope: IndexScope, walk: int,
                       before_seq: int | None, growth: int) -> Iterator[tuple[int, ...]]:
    arrays = [seqs for seqs, _, _ in _in_scope(workspace_id, spec, terms, scope, scored=False)[2]]
    if any(not seqs.size for seqs in arrays):
        return
    if scope.entities is None:  # the rarest term's postings lead
        arrays.sort(key=len)
        lead, probed = np.sort(arrays[0])[::-1], arrays[1:]
    else:  # an entity's records are fewer than a term's postings across the workspace
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT seq FROM {RECORD} WHERE workspace_id = %s AND entity = ANY(%s) ORDER BY seq DESC",
                           [workspace_id, list(scope.entities)])
            lead, probed = np.fromiter((row[0] for row in cursor.fetchall()), np.int64), arrays
    if before_seq is not None:
        lead = lead[lead < before_seq]
    holds = np.ones(lead.size, bool)
    for seqs in probed:
        holds &= is_among(lead, seqs)
    start = 0
    while True:
        step = slice(start, start + walk)
        yield tuple(lead[step][holds[step]].tolist())
        if lead[step].size < walk:
            return
        start, walk = start + walk, walk * growth


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
    return f"SELECT g.id FROM {GROUP} g WHERE {' AND '.join(parts)}", params


@dataclass(frozen=True, slots=True)
class _Blocks:
    """One term's blocks in scope, by first seq: their columns, and the data of those the
    statement sent (the ones the process did not hold), one after another."""

    firsts: tuple
    counts: tuple
    widths: tuple
    groups: tuple
    digests: tuple
    data: bytes


def _block_sources(blocks: _Blocks, held: dict[bytes, bytes]):
    """Each block in order with where its data lies: (first seq, count, width, group, digest,
    the bytes holding it, its start there, whether the statement sent it)."""
    offset = 0
    for first, count, width, group_id, digest in zip(blocks.firsts, blocks.counts, blocks.widths, blocks.groups,
                                                     blocks.digests):
        if digest in held:
            yield first, count, width, group_id, digest, held[digest], 0, False
        else:
            yield first, count, width, group_id, digest, blocks.data, offset, True
            offset += block_bytes(count, width)


def _postings(rows: bytes | None, blocks: _Blocks, logged, members: np.ndarray | None, groups: np.ndarray,
              held: dict[bytes, bytes], scored: bool) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """One term's (seqs, tfs, lengths) in scope: its blocks (from ``held``, the data this
    process holds by digest, or else from the statement's) without the logged seqs, then its
    other rows: with ``members`` (a scope without entities) its pending rows, of which those
    of the scope's ``groups`` and the member seqs count, once each, as ``compaction`` defines
    them; without, the entity scope's rows read from its records. Decoded straight into the
    output arrays; without ``scored`` the tfs and lengths are ``None``."""
    table = np.frombuffer(rows or b"", dtype=ROW)
    if members is not None and table.size:
        table = table[np.isin(table["group"], groups) & is_among(table["seq"].astype(np.int64), members)]
        table = table[np.unique(table["seq"], return_index=True)[1]]  # a seq added twice since the compaction
    in_blocks = sum(blocks.counts)
    seqs = np.empty(in_blocks + table.size, np.int64)
    tfs, lengths = (np.empty(seqs.size), np.empty(seqs.size)) if scored else (None, None)
    at = 0
    for first, count, width, _, _, data, start, _ in _block_sources(blocks, held):
        end = at + count
        decode_into(first, count, width, data, start, seqs[at:end], None if tfs is None else tfs[at:end],
                    None if lengths is None else lengths[at:end])
        at = end
    seqs[in_blocks:] = table["seq"]
    if tfs is not None and lengths is not None:
        tfs[in_blocks:], lengths[in_blocks:] = table["tf"], table["length"]
    if in_blocks and logged:
        keep = np.ones(seqs.size, bool)
        keep[:in_blocks] = ~is_among(seqs[:in_blocks], np.asarray(logged, np.int64))
        seqs = seqs[keep]
        if tfs is not None and lengths is not None:
            tfs, lengths = tfs[keep], lengths[keep]
    return seqs, tfs, lengths


def _remember(workspace_id: int, analyzer: Analyzer, term: str, blocks: _Blocks, held: dict[bytes, bytes]) -> None:
    """Tell the block cache this read's blocks of ``term``: per group, its current digests and
    the data of those the statement sent."""
    by_group: dict[int, tuple[list[bytes], dict[bytes, bytes]]] = {}
    view = memoryview(blocks.data)
    for _, count, width, group_id, digest, _, start, sent in _block_sources(blocks, held):
        current, fresh = by_group.setdefault(group_id, ([], {}))
        current.append(digest)
        if sent:
            fresh[digest] = bytes(view[start:start + block_bytes(count, width)])
    for group_id, (current, fresh) in by_group.items():
        BLOCKS.keep((workspace_id, analyzer.code, term, group_id), current, fresh)


def _in_scope(workspace_id: int, spec: Analyzer, terms: tuple[str, ...], scope: IndexScope,
              scored: bool) -> tuple[int, float, list[tuple[np.ndarray, np.ndarray | None, np.ndarray | None]]]:
    """N, the average length and each term's (seqs, tfs, lengths) in ``scope``, from one
    ``_read`` (without ``scored``, the seqs alone: tfs and lengths are ``None``); the blocks it
    received are remembered for the next."""
    rows, held, group_ids = _read(workspace_id, spec, terms, scope)
    packed_members = rows[0][-1]
    members = None if packed_members is None else np.frombuffer(packed_members, ">i8").astype(np.int64)
    groups = np.asarray(group_ids, np.int32)
    arrays = []
    for _, _, _, term, blob, firsts, counts, widths, block_groups, digests, data, logged, _ in rows if terms else ():
        blocks = _Blocks(firsts or (), counts or (), widths or (), block_groups or (), digests or (), data or b"")
        arrays.append(_postings(blob, blocks, logged, members, groups, held, scored))
        _remember(workspace_id, spec, term, blocks, held)
    return int(rows[0][0]), float(rows[0][2]), arrays


def _read(workspace_id: int, analyzer: Analyzer, terms: tuple[str, ...],
          scope: IndexScope) -> tuple[list[tuple], dict[bytes, bytes], list[int]]:
    """Per term in query order (one row with NULL term columns when no terms): N, total length,
    average, term, its other rows (below), the term's blocks in scope (first seqs, counts,
    widths, groups, digests, and the data of those the process does not hold, one after
    another), the logged seqs and the member seqs (big-endian int8s). The other rows are the
    big-endian (seq, group, tf, length) rows of ``blocks.ROW``: a scope without entities reads
    its pending rows in every group, which count for the member seqs (the documents above the
    watermark or logged) of the scope's groups; an entity scope reads its entities' documents
    and takes their terms from the records (watermark 0, no members: every row counts). Also
    returns the data the block cache held for the terms, by digest (``block_cache``), and the
    scope's group ids.

    The scope's groups are read first (a group, once created, never changes), then everything
    else in one statement, so statistics and postings come from one snapshot (a cached block is
    content its digest names, whenever it was read). The average is ``numeric`` division cast
    to float8, exactly as the oracle's ``avg()``. Results come in binary (``binary_rows``)."""
    groups, group_params = _groups(workspace_id, scope)
    with connection.cursor() as cursor:
        cursor.execute(groups, group_params)
        ids = [row[0] for row in cursor.fetchall()]
    if scope.entities is None:
        stats = (f"SELECT coalesce(sum(s.docs), 0) AS n, coalesce(sum(s.total_length), 0) AS total "
                 f"FROM {GROUP_STATS} s WHERE s.analyzer = %s AND s.group_id = ANY(%s::integer[])")
        stats_params = [analyzer.code, ids]
        watermark = f"SELECT coalesce(max(watermark), 0) FROM {COMPACTION} WHERE workspace_id = %s AND analyzer = %s"
        watermark_params = [workspace_id, analyzer.code]
        rows = (f"SELECT p.term, string_agg(p.data, ''::bytea) AS postings FROM {PENDING} p "
                "WHERE p.workspace_id = %s AND p.analyzer = %s AND p.term = ANY(%s) GROUP BY p.term")
        rows_params = [workspace_id, analyzer.code, list(terms)]
        members = (f"SELECT coalesce(string_agg(int8send(m.seq), ''::bytea), ''::bytea) FROM (SELECT d.seq "
                   f"FROM {DOCUMENT} d WHERE d.workspace_id = %s AND d.analyzer = %s "
                   "AND d.seq > (SELECT watermark FROM w) UNION ALL "
                   f"SELECT d.seq FROM {DOCUMENT} d WHERE d.workspace_id = %s AND d.analyzer = %s "
                   "AND d.seq = ANY((SELECT seqs FROM lg)::bigint[])) m")
        members_params = [workspace_id, analyzer.code] * 2
    else:
        entity = (f"FROM {DOCUMENT} d JOIN {RECORD} r ON r.seq = d.seq WHERE d.analyzer = %s "
                  "AND d.group_id = ANY(%s::integer[]) AND r.workspace_id = %s AND r.entity = ANY(%s)")
        entity_params = [analyzer.code, ids, workspace_id, list(scope.entities)]
        stats = f"SELECT count(*) AS n, coalesce(sum(d.length), 0) AS total {entity}"
        stats_params = entity_params
        watermark, watermark_params = "SELECT 0::bigint", []
        rows = (f"SELECT t.term, {packed_rows('x')} AS postings FROM (SELECT d.seq, d.group_id, d.length, "
                f"{stored_columns('r')} {entity}) r {analyzer.postings_sql} WHERE t.term = ANY(%s) "
                "GROUP BY t.term")
        rows_params = [*entity_params, list(terms)]
        members, members_params = "SELECT NULL::bytea", []
    sql = (
        f"WITH st AS ({stats}), w AS MATERIALIZED (SELECT ({watermark}) AS watermark), "
        f"lg AS MATERIALIZED (SELECT coalesce(array_agg(DISTINCT c.seq), '{{}}') AS seqs FROM {CHANGE} c "
        "WHERE c.workspace_id = %s AND c.analyzer = %s AND c.seq <= (SELECT watermark FROM w)), "
        f"mb AS (SELECT ({members}) AS seqs), po AS ({rows}), "
        "bl AS (SELECT b.term, array_agg(b.first_seq ORDER BY b.first_seq) AS firsts, "
        "array_agg(b.postings ORDER BY b.first_seq) AS counts, array_agg(b.width ORDER BY b.first_seq) AS widths, "
        "array_agg(b.group_id ORDER BY b.first_seq) AS groups, array_agg(b.digest ORDER BY b.first_seq) AS digests, "
        "string_agg(CASE WHEN b.digest = ANY(%s::bytea[]) THEN NULL ELSE b.data END, ''::bytea "
        f"ORDER BY b.first_seq) AS data FROM {BLOCK} b WHERE b.workspace_id = %s "
        "AND b.analyzer = %s AND b.term = ANY(%s) AND b.group_id = ANY(%s::integer[]) "
        "AND (SELECT watermark FROM w) > 0 GROUP BY b.term) "
        "SELECT st.n, st.total, CASE WHEN st.n > 0 THEN (st.total::numeric / st.n::numeric)::float8 ELSE 0 END, "
        "q.term, po.postings, bl.firsts, bl.counts, bl.widths, bl.groups, bl.digests, bl.data, lg.seqs, "
        "mb.seqs, q.i "
        "FROM st CROSS JOIN lg CROSS JOIN mb LEFT JOIN unnest(%s::text[]) WITH ORDINALITY q(term, i) ON true "
        "LEFT JOIN po ON po.term = q.term LEFT JOIN bl ON bl.term = q.term")
    held = {} if scope.entities is not None else BLOCKS.held(
        [(workspace_id, analyzer.code, term, group_id) for term in terms for group_id in ids])
    params = [*stats_params, *watermark_params, workspace_id, analyzer.code, *members_params, *rows_params,
              list(held), workspace_id, analyzer.code, list(terms), ids, list(terms)]
    # In query order here, not by the statement: sorting would copy every term's blocks.
    return [row[:-1] for row in sorted(binary_rows(sql, params), key=lambda row: row[-1] or 0)], held, ids


def _ranked(above: np.ndarray, above_scores: np.ndarray, tied: np.ndarray, kth: float,
            k: int) -> tuple[tuple[UUID, float], ...]:
    """The top ``k`` as (UUID, score): those above the k-th score by score then UUID, then the
    records tied at it with the smallest UUIDs (only those are read), from one statement."""
    if not above.size and not tied.size:
        return ()
    # bigint[], as seq is: against an integer[] the comparison is bigint = integer, which has no
    # hash, so a plan walking ids in order tested each one against every tied seq.
    sql = f"SELECT seq, id FROM {RECORD} WHERE seq = ANY(%s::bigint[])"
    params: list[str | int] = [id_array(above.tolist())]
    wanted = k - above.size  # the records above are fewer than k (best_k)
    if wanted > 0 and tied.size:
        sql = (f"({sql}) UNION ALL (SELECT seq, id FROM {RECORD} WHERE seq = ANY(%s::bigint[]) "
               "ORDER BY id LIMIT %s)")
        params += [id_array(tied.tolist()), wanted]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        ids = dict(cursor.fetchall())
    ranked = sorted(zip(above_scores.tolist(), (ids.pop(int(seq)) for seq in above)), key=lambda h: (-h[0], h[1]))
    ranked += [(kth, uid) for uid in sorted(ids.values())]  # what is left: the tied records read
    return tuple((uid, score) for score, uid in ranked[:k])
