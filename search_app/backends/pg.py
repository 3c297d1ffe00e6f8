"""The ``pg`` search backend: candidate ids per mode, then the canonical reload.

Candidates are only proposals: scope and typed filters are applied inside the candidate SQL
so a filtered search still fills its pool, and every proposal is reloaded with the same
scope (``reload_rows``) and re-checked in Python before ranking. Vector candidates use the
space's partial HNSW index with ``hnsw.ef_search`` at least the pool size and iterative
scans, so selective filters still fill the pool. The lexical channels (text: the query's
English lexemes; BM25: its ``bm25_v1`` terms, or its ``en_v1`` terms for ``bm25_en``) read the
term index, or the exact scan for a scope the index does not hold (``pg_index``).
"""
from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from functools import partial

from django.db import connection

from catalog_app.binary_rows import binary_rows
from catalog_app.lexical.query import source_totals
from catalog_app.record_rows import CANONICAL_COLUMNS, CANONICAL_COLUMNS_NO_BODIES, CanonicalRow
from catalog_app.record_sql import (EMBEDDING, RECORD, Clause, embedding_rows, id_array, nearest_scan, nearest_sql,
                                    vector_distance, vector_literal)
from memseek_site.conf import memseek_setting
from memseek_site.parallel import run_all

from ..engine.bm25 import LEXICAL_SIGNALS, Bm25Stats
from ..engine.candidates import QueryContext, Reloaded, interleave
from ..engine.profiles import BACKEND_CAPABILITIES
from ..engine.resolve import ResolvedSource
from ..engine.trace import NO_TRACE, Trace
from .pg_bm25 import score_expression, terms_join
from .pg_index import bm25_candidates, text_candidates
from .pg_scope import filter_clause, order_clause, scope_clause

NAME = "pg"
CAPABILITIES = BACKEND_CAPABILITIES[NAME]

# The query's English lexemes, OR-ed: a long question still finds rows sharing some words. Written
# inline (not in a CTE) so the planner folds it to a constant and estimates how many rows match.
OR_QUERY = "replace(plainto_tsquery('english', %s)::text, ' & ', ' | ')::tsquery"
_WHITESPACE = re.compile(r"[ \t\n\r\f\v]+")


def distinct_words(q: str | None) -> str | None:
    """``q``'s words (split at ASCII whitespace), each once in the order it first appears,
    joined by single spaces: what ``OR_QUERY`` is given. A word never spans whitespace in
    PostgreSQL's parser, so the query keeps every lexeme of ``q`` and ``ts_rank_cd`` and ``@@``
    answer exactly as for ``q`` (a property test compares them), without the repeats whose cost
    ``ts_rank_cd`` pays per operand and per position: work follows distinct words, not length."""
    if q is None:
        return None
    return " ".join(dict.fromkeys(word for word in _WHITESPACE.split(q) if word))


def vector_matches(where: Clause, workspace_id: int, vector: list[float], space: str, dimensions: int, *,
                   cap: int, min_similarity: float) -> list[tuple[uuid.UUID, float, str | None, str]]:
    """Context retrieval's vector proposals: ``(id, similarity, key, entity)`` of at most ``cap``
    records of ``workspace_id`` under ``where`` (over the record table as ``r``) nearest
    ``vector`` in ``space``, keeping similarity >= ``min_similarity``, best first, then seq desc.
    Compares every record when the workspace is small (``_vector``'s rule), else walks HNSW."""
    literal = vector_literal(vector)
    similarity = f"1 - ({vector_distance(dimensions)}) AS similarity"
    exact = _workspace_at_most(workspace_id, memseek_setting("VECTOR_EXACT_MAX"))
    nearest = nearest_sql(columns=f"r.id, r.seq, r.key, r.entity, {similarity}", space=space,
                          dimensions=dimensions, where=where.sql, exact=exact)
    sql = (f"SELECT id, similarity, key, entity FROM ({nearest}) nearest WHERE similarity >= %s "
           f"ORDER BY similarity DESC, seq DESC")
    with nearest_scan(cap, exact=exact) as cursor:
        cursor.execute(sql, [literal, workspace_id, *where.params, literal, cap, min_similarity])
        return [(row[0], float(row[1]), row[2], row[3]) for row in cursor.fetchall()]


def text_matches(where: Clause, query: str, *, cap: int) -> list[tuple[uuid.UUID, float, str | None, str]]:
    """Context retrieval's text proposals: ``(id, text_match, key, entity)`` of at most ``cap``
    records under ``where`` (over the record table as ``r``) matching the OR of ``query``'s
    English lexemes, best ``ts_rank_cd`` first, then ``seq`` desc. Every match is ranked: the
    retrieval scope (its time axis, visibility and supersession) is not one the index holds."""
    sql = (f"SELECT m.id, m.text_match, m.key, m.entity FROM (SELECT r.id, r.seq, r.key, r.entity, "
           f"ts_rank_cd(r.search_vector, {OR_QUERY}) AS text_match FROM {RECORD} r "
           f"WHERE r.search_vector @@ {OR_QUERY} AND {where.sql}) m ORDER BY m.text_match DESC, m.seq DESC LIMIT %s")
    with connection.cursor() as cursor:
        words = distinct_words(query)
        cursor.execute(sql, [words, words, *where.params, cap])
        return [(row[0], float(row[1]), row[2], row[3]) for row in cursor.fetchall()]


def match_count(where: Clause, workspace_id: int, query: str, vector: tuple[list[float], str, int] | None, *,
                min_similarity: float, cap: int) -> int:
    """How many distinct records under ``where`` the text proposals (the OR of ``query``'s
    lexemes) and, given ``vector`` (values, space, dimensions), the vector proposals at
    similarity >= ``min_similarity`` would hold, counting at most ``cap`` of each."""
    parts = [f"(SELECT r.id FROM {RECORD} r WHERE r.search_vector @@ ({OR_QUERY}) AND {where.sql} LIMIT %s)"]
    params: list = [distinct_words(query), *where.params, cap]
    if vector is not None:
        values, space, dimensions = vector
        parts.append(f"(SELECT r.id {embedding_rows(space, where.sql)} "
                     f"AND 1 - ({vector_distance(dimensions)}) >= %s LIMIT %s)")
        params.extend([workspace_id, *where.params, vector_literal(values), min_similarity, cap])
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM ({' UNION '.join(parts)}) hidden", params)
        return int(cursor.fetchone()[0])

def candidate_ids(resolved: ResolvedSource, context: QueryContext, *, bm25: Collection[str] = (),
                  early_reload: Callable[[list[uuid.UUID]], Reloaded] | None = None,
                  trace: Trace = NO_TRACE) -> tuple[list[uuid.UUID], dict[str, Bm25Stats], Reloaded]:
    """At most the source's candidate cap of ids, in the mode's proposal order, and for each
    exact-BM25 signal in ``bm25`` (those the rank reads among ``engine.bm25.LEXICAL_SIGNALS``:
    ``bm25``, ``bm25_en``; text and hybrid mode) the source's BM25 statistics under its
    analyzer, keyed by signal; each signal's exact-BM25 candidates join the text channel.

    With ``early_reload`` (``reload_by_id`` bound to the source, for a hybrid search that reads
    no BM25 signal), each channel, on its own thread as soon as it answers, reloads the ids certain to
    be merged: its first ``cap // channels`` (``interleave`` reaches that position in every
    channel before the pool can fill). Only the last channel to answer skips it, so what is left
    for the merged reload is that channel's ids and the few others merged beyond the share.
    Returns (ids, stats, reloaded: those early reloads, by id, None where out of scope). Each
    channel runs inside ``trace.stage("channel <name>", resolved)``, the early reload outside it."""
    mode = resolved.source.mode
    cap = resolved.source.candidate_cap()
    if mode in ("vector", "recent", "structured"):  # bm25 is a text and hybrid signal (spec check)
        channel = {"vector": _vector, "recent": _recent, "structured": _structured}[mode]
        return _traced(trace, mode, channel, resolved, context, cap)(), {}, {}
    # The channels are independent queries: run concurrently (memseek_site.parallel), merged in
    # this fixed order whichever finishes first.
    signals = [signal for signal in LEXICAL_SIGNALS if signal in bm25]
    lexical = [_traced(trace, "text", _text, resolved, context, cap)]
    lexical += [_traced(trace, signal, bm25_candidates, resolved, context.workspace_id, context.q, cap,
                        LEXICAL_SIGNALS[signal]) for signal in signals]
    if mode == "hybrid":
        channels = [_traced(trace, "vector", _vector, resolved, context, cap), *lexical,
                    _traced(trace, "recent", _recent, resolved, context, cap)]
    else:
        channels = lexical
    if early_reload is not None and mode == "hybrid" and not signals:
        share, waiting = cap // len(channels), _Countdown(len(channels))
        answers = run_all([partial(_then_reload, channel, early_reload, share, waiting) for channel in channels])
        reloaded = {row_id: row for _, rows in answers for row_id, row in rows.items()}
        return interleave([ids for ids, _ in answers], cap), {}, reloaded
    results = run_all(channels)
    stats = {}
    # The BM25 channels come right after the text channel, in ``signals`` order, and answer (stats, ids).
    position = channels.index(lexical[0]) + 1
    for offset, signal in enumerate(signals):
        stats[signal], results[position + offset] = results[position + offset]
    return interleave(results, cap), stats, {}


def _traced(trace: Trace, name: str, channel, resolved: ResolvedSource, *args) -> Callable:
    """``channel(resolved, *args)`` as one call, inside its trace stage unless untraced."""
    if trace is NO_TRACE:
        return partial(channel, resolved, *args)
    return partial(_in_stage, trace.stage, f"channel {name}", channel, resolved, *args)


def _in_stage(stage, name: str, channel, resolved: ResolvedSource, *args):
    with stage(name, resolved):
        return channel(resolved, *args)


class _Countdown:
    """How many channels have yet to answer, counted down by each as it does."""

    def __init__(self, count: int):
        self.count, self.lock = count, threading.Lock()

    def last_to_answer(self) -> bool:
        with self.lock:
            self.count -= 1
            return self.count == 0


def _then_reload(channel, early_reload, share: int, waiting: _Countdown) -> tuple[list[uuid.UUID], Reloaded]:
    """The channel's ids and the early reload of its first ``share``, unless it answered last
    (nothing runs beside that reload any more: the merged reload takes those ids along)."""
    ids = channel()
    return ids, ({} if waiting.last_to_answer() else early_reload(ids[:share]))


def _where(resolved: ResolvedSource, context: QueryContext) -> tuple[str, list]:
    scope_sql, scope_params = scope_clause(resolved, context.workspace_id)
    filter_sql, filter_params = filter_clause(resolved)
    return f"{scope_sql} AND {filter_sql}", scope_params + filter_params


def _vector(resolved: ResolvedSource, context: QueryContext, cap: int) -> list[uuid.UUID]:
    where, params = _where(resolved, context)
    query_params = [context.workspace_id, *params, vector_literal(context.vector), cap]
    # Comparing every record of a small scope is exact and cheaper than walking the HNSW graph
    # past the rows it excludes: other workspaces' and dead ones, which can end the approximate
    # walk short of the scope's own rows. A workspace that has written at most VECTOR_EXACT_MAX
    # records is small whatever the scope; a scope naming entities usually is, which one short
    # count decides.
    limit = memseek_setting("VECTOR_EXACT_MAX")
    exact = _workspace_at_most(context.workspace_id, limit) or (
        resolved.source.scope.entities is not None and _scope_at_most(where, params, limit))
    sql = nearest_sql(columns="r.id", space=context.space, dimensions=context.dimensions, where=where, exact=exact)
    with nearest_scan(cap, exact=exact) as cursor:
        cursor.execute(sql, query_params)
        return [row[0] for row in cursor.fetchall()]


_WRITTEN_AT_LEAST: dict[int, int] = {}  # workspace id: records it is known to have written


def _workspace_at_most(workspace_id: int, limit: int) -> bool:
    """Whether workspace ``workspace_id`` has written at most ``limit`` records (every row ever
    inserted, ``source_totals``). That count only grows, so once a process has seen it pass a
    limit it does not ask again."""
    if limit <= 0 or _WRITTEN_AT_LEAST.get(workspace_id, 0) > limit:
        return False
    written = source_totals(workspace_id=workspace_id, collection_ids=None)[0]
    _WRITTEN_AT_LEAST[workspace_id] = written
    return written <= limit


def _scope_at_most(where: str, params: list, limit: int) -> bool:
    """Whether at most ``limit`` records satisfy ``where`` (one short scan of at most limit + 1)."""
    if limit <= 0:
        return False
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM (SELECT 1 FROM {RECORD} r WHERE {where} LIMIT %s) s",
                       [*params, limit + 1])
        return cursor.fetchone()[0] <= limit


def _text(resolved: ResolvedSource, context: QueryContext, cap: int) -> list[uuid.UUID]:
    return text_candidates(resolved, context.workspace_id, context.q, cap)


def _recent(resolved: ResolvedSource, context: QueryContext, cap: int) -> list[uuid.UUID]:
    where, params = _where(resolved, context)
    sql = f"SELECT r.id FROM {RECORD} r WHERE {where} ORDER BY r.occurred_at DESC, r.seq DESC LIMIT %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, cap])
        return [row[0] for row in cursor.fetchall()]


def _structured(resolved: ResolvedSource, context: QueryContext, cap: int) -> list[uuid.UUID]:
    where, params = _where(resolved, context)
    order, order_params = order_clause(resolved)
    sql = f"SELECT r.id FROM {RECORD} r WHERE {where} ORDER BY {order} LIMIT %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *order_params, cap])
        return [row[0] for row in cursor.fetchall()]


def reload_rows(resolved: ResolvedSource, context: QueryContext, ids: list[uuid.UUID],
                bm25: Mapping[str, Bm25Stats] | None = None, *, reads: frozenset[str], bodies: bool = True,
                reloaded: Reloaded | None = None) -> list[CanonicalRow]:
    """Fetch the proposed ids again under the source's scope, with the signals of ``reads`` (the
    rank's signal operators) among similarity, text_match and (given their statistics in
    ``bm25``, by signal) bm25 and bm25_en recomputed from canonical data where the mode has them;
    the others stay None. Order follows ``ids``. With ``bodies=False`` text and content are left
    out (None): ranking reads neither, and ``with_bodies`` fetches them for the rows that are kept. Ids in ``reloaded``
    (an earlier reload with the same arguments: ``reload_by_id``) are taken from it."""
    known = reloaded or {}
    found = reload_by_id(resolved, context, [i for i in ids if i not in known], bm25, reads=reads, bodies=bodies)
    rows = {**known, **found}
    return [row for i in ids if (row := rows.get(i)) is not None]


def reload_by_id(resolved: ResolvedSource, context: QueryContext, ids: list[uuid.UUID],
                 bm25: Mapping[str, Bm25Stats] | None = None, *, reads: frozenset[str],
                 bodies: bool = True) -> Reloaded:
    """``reload_rows``'s one statement: every id of ``ids``, mapped to its row, or to None when
    the record is out of the source's scope."""
    if not ids:
        return {}
    mode = resolved.source.mode
    scope_sql, scope_params = scope_clause(resolved, context.workspace_id)
    params: list = []
    if mode in ("vector", "hybrid") and "similarity" in reads:
        similarity = (f"(SELECT 1 - ({vector_distance(context.dimensions)}) FROM {EMBEDDING} e "
                      f"WHERE e.record_id = r.id AND e.space = %s)")
        params.extend([vector_literal(context.vector), context.space])
    else:
        similarity = "NULL::float8"
    if mode in ("text", "hybrid") and "text_match" in reads:
        # As text, parsed as the text format is: a float4 read in binary is its exact float32 value,
        # not the float its shortest decimal form parses to.
        text_match = f"ts_rank_cd(r.search_vector, {OR_QUERY})::text"
        params.append(distinct_words(context.q))
    else:
        text_match = "NULL::text"
    scores, joins, join_params = [], [], []
    for index, (signal, analyzer) in enumerate(LEXICAL_SIGNALS.items()):
        stats = (bm25 or {}).get(signal)
        if stats is None:
            scores.append(f"NULL::float8 AS {signal}")
            continue
        if stats.usable:
            join, more = terms_join(stats.terms, analyzer, f"b{index}")
            joins.append(join)
            join_params.extend(more)
        score_sql, score_params = score_expression(stats, f"b{index}")
        scores.append(f"{score_sql} AS {signal}")
        params.extend(score_params)
    # Read in binary (``_client_bound_rows``); jsonb comes as its text, which ``_canonical`` decodes.
    columns = CANONICAL_COLUMNS if bodies else CANONICAL_COLUMNS_NO_BODIES
    sql = (f"SELECT {columns}, {similarity} AS similarity, {text_match} AS text_match, {', '.join(scores)} "
           f"FROM {RECORD} r {' '.join(joins)} WHERE r.id = ANY(%s::uuid[]) AND {scope_sql}")
    found = _client_bound_rows(sql, [*params, *join_params, id_array(ids), *scope_params])
    rows = {row[0]: _canonical(row) for row in found}
    return {i: rows.get(i) for i in ids}


def _client_bound_rows(sql: str, params: list) -> list[tuple]:
    """Every row of ``sql``, its ``params`` bound into the statement text as Django's cursors bind
    them (so the server types and computes every value as it does for Django's statements: a
    float bound as a literal is ``numeric``), read in binary: the timestamps, ids and floats of
    a few hundred rows decode several times faster than from their text."""
    with connection.cursor() as cursor:
        statement = cursor.cursor.mogrify(sql, params)
    return binary_rows(statement, None)


def with_bodies(rows: list[CanonicalRow]) -> list[CanonicalRow]:
    """``rows`` with text and content read for those reloaded without them (a record's text and
    content never change after insert, so reading them after the reload is the same read)."""
    missing = [row.id for row in rows if row.content is None]
    if not missing:
        return rows
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT r.id, r.text, r.content FROM {RECORD} r WHERE r.id = ANY(%s::uuid[])",
                       [id_array(missing)])
        found = {row[0]: (row[1], json.loads(row[2])) for row in cursor.fetchall()}
    return [row if row.content is not None else replace(row, text=found[row.id][0], content=found[row.id][1])
            for row in rows]


def _canonical(row) -> CanonicalRow:
    # jsonb is read as its text (CANONICAL_COLUMNS) and decoded here.
    content = None if row[9] is None else json.loads(row[9])
    scores, annotations = _object(row[10]), _object(row[11])
    return CanonicalRow(*row[:9], content, scores, annotations, *row[12:17], similarity=_float(row[17]),
                        text_match=_float(row[18]), bm25=_float(row[19]), bm25_en=_float(row[20]))


def _object(text: str) -> dict:
    return {} if text == "{}" else json.loads(text)  # most records have no scores or annotations


def _float(value) -> float | None:
    return None if value is None else float(value)
