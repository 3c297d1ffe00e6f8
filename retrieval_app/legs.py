"""The five candidate legs of a retrieval, each a SQL query with the compiled scope inside it.

Every leg's WHERE starts from ``CompiledScope.memory`` (workspace, readiness, collections,
entities, types, tags, visibility, time slice, supersession; see ``retrieval_app.scope``), so
nothing outside the caller's scope is ever proposed. Legs return ranked ``LegHit`` lists:

* ``vector``: cosine similarity to the query embedding over the space's HNSW index (the
  pgvector iterative scan keeps filtered searches full), keeping similarity >=
  ``retrieval.minVectorSimilarity``; raw score = similarity;
* ``text``: the OR of the query's English lexemes, ranked by ``ts_rank_cd``; raw score = it;
* ``graph``: records whose key or entity is a 1-hop neighbour (either direction) of a strong
  match's key or entity over the live links of every active graph view's edge collection
  (``LinkStore``), plus those link records themselves; links are followed only when the caller
  may see them and they lie within the time cut. Ordered by the strong match they came from,
  then recency;
* ``entity``: the other records of the strong matches' entities, most recent first;
* ``derivatives``: records with depth > 0 derived (through ``derived_from``, recursively up to
  ``MAX_DERIVATION_DEPTH`` levels) from a strong match, nearest level first, then by the strong
  match, then recency.

The structural legs (graph, entity, derivatives) have no raw score; each hit names the strong
match that led to it (``via``). ``run_parallel`` runs independent legs concurrently on the process's
pool of threads with persistent connections (``memseek_site.parallel``), or one after another
where that module says so.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from django.db import connection

from catalog_app.catalog.registry import Catalog
from catalog_app.record_sql import RECORD
from memseek_site.conf import memseek_setting
from memseek_site.parallel import run_all
from search_app.backends import retrieval_backend
from search_app.graph.store import LinkStore

from .scope import CompiledScope

LEGS = ("vector", "text", "graph", "entity", "derivatives")
STRUCTURAL_SCAN = 1000  # rows a structural leg reads before ordering them in Python


@dataclass(frozen=True, slots=True)
class LegHit:
    id: uuid.UUID
    raw: float | None  # similarity (vector), ts_rank_cd (text); None for structural legs
    key: str | None
    entity: str
    via: uuid.UUID | None = None  # the strong match that led a structural leg here


@dataclass(frozen=True, slots=True)
class QueryVector:
    values: list[float]
    space: str
    dimensions: int


def vector_leg(scope: CompiledScope, vector: QueryVector, *, min_similarity: float, cap: int) -> list[LegHit]:
    matches = retrieval_backend().vector_matches(scope.memory, scope.workspace_id, vector.values, vector.space,
                                                 vector.dimensions, cap=cap, min_similarity=min_similarity)
    return [LegHit(*match) for match in matches]


def text_leg(scope: CompiledScope, query: str, *, cap: int) -> list[LegHit]:
    return [LegHit(*match) for match in retrieval_backend().text_matches(scope.memory, query, cap=cap)]


def graph_leg(scope: CompiledScope, catalog: Catalog, strong: list[LegHit], *, cap: int) -> list[LegHit]:
    seeds = _node_seeds(strong)
    if not seeds:
        return []
    links = []
    for view in sorted(catalog.active_values("view").values(), key=lambda v: v.name):
        if view.kind != "graph":
            continue
        mapping = {"subject": view.graph.subject, "object": view.graph.object, "predicate": view.graph.predicate}
        store = LinkStore(workspace_id=scope.workspace_id, catalog=catalog, edges=view.graph.edges, mapping=mapping)
        links.extend(store.links_touching(set(seeds), direction="both", predicates=()))
    followable = _followable(scope, {record.link.id for record in links})
    reached: dict[str, tuple[int, uuid.UUID]] = {}  # neighbour name -> (seed position, strong id)
    via_link: dict[str, tuple[int, uuid.UUID]] = {}  # link id -> (seed position, strong id)
    for record in links:
        link = record.link
        if link.id not in followable:
            continue
        for here, there in ((link.subject, link.object), (link.object, link.subject)):
            if here in seeds:
                reached[there] = min(reached.get(there, seeds[here]), seeds[here])
                via_link[link.id] = min(via_link.get(link.id, seeds[here]), seeds[here])
    if not reached:
        return []
    names = sorted(reached)
    sql = (f"SELECT r.id, r.key, r.entity FROM {RECORD} r WHERE {scope.memory.sql} AND (r.key = ANY(%s) "
           f"OR r.entity = ANY(%s) OR r.id = ANY(%s::uuid[])) ORDER BY r.occurred_at DESC, r.seq DESC LIMIT %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*scope.memory.params, names, names, sorted(via_link), STRUCTURAL_SCAN])
        rows = cursor.fetchall()
    hits = []
    for recency, (record_id, key, entity) in enumerate(rows):
        origins = [reached[name] for name in (key, entity) if name in reached]
        if str(record_id) in via_link:
            origins.append(via_link[str(record_id)])
        position, via = min(origins)
        hits.append(((position, recency), LegHit(record_id, None, key, entity, via)))
    return [hit for _, hit in sorted(hits, key=lambda pair: pair[0])][:cap]


def _node_seeds(strong: list[LegHit]) -> dict[str, tuple[int, uuid.UUID]]:
    """Graph node names of the strong matches (keys and entities) -> (best position, strong id)."""
    seeds: dict[str, tuple[int, uuid.UUID]] = {}
    for position, hit in enumerate(strong):
        for name in (hit.key, hit.entity):
            if name is not None and name not in seeds:
                seeds[name] = (position, hit.id)
    return seeds


def _followable(scope: CompiledScope, link_ids: set[str]) -> set[str]:
    if not link_ids:
        return set()
    sql = f"SELECT r.id FROM {RECORD} r WHERE r.id = ANY(%s::uuid[]) AND {scope.traverse.sql}"
    with connection.cursor() as cursor:
        cursor.execute(sql, [sorted(link_ids), *scope.traverse.params])
        return {str(row[0]) for row in cursor.fetchall()}


def entity_leg(scope: CompiledScope, strong: list[LegHit], *, cap: int) -> list[LegHit]:
    first: dict[str, uuid.UUID] = {}
    for hit in strong:
        first.setdefault(hit.entity, hit.id)
    if not first:
        return []
    sql = (f"SELECT r.id, r.key, r.entity FROM {RECORD} r WHERE {scope.memory.sql} AND r.entity = ANY(%s) "
           f"AND NOT r.id = ANY(%s::uuid[]) ORDER BY r.occurred_at DESC, r.seq DESC LIMIT %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*scope.memory.params, sorted(first), [str(hit.id) for hit in strong], cap])
        return [LegHit(row[0], None, row[1], row[2], first[row[2]]) for row in cursor.fetchall()]


def derivatives_leg(scope: CompiledScope, strong: list[LegHit], *, cap: int) -> list[LegHit]:
    if not strong:
        return []
    levels = memseek_setting("MAX_DERIVATION_DEPTH")
    sql = (f"WITH RECURSIVE lineage(id, via, position, level) AS ("
           f" SELECT c.id, s.via, s.position, 1 FROM unnest(%s::uuid[], %s::int[]) AS s(via, position)"
           f" JOIN {RECORD} c ON c.derived_from @> ARRAY[s.via] AND c.workspace_id = %s AND c.depth > 0"
           f" UNION"
           f" SELECT c.id, l.via, l.position, l.level + 1 FROM lineage l"
           f" JOIN {RECORD} c ON c.derived_from @> ARRAY[l.id] AND c.workspace_id = %s AND c.depth > 0"
           f" WHERE l.level < %s)"
           f" SELECT r.id, r.key, r.entity, (array_agg(l.via ORDER BY l.level, l.position))[1]"
           f" FROM lineage l JOIN {RECORD} r ON r.id = l.id WHERE {scope.memory.sql}"
           f" GROUP BY r.id ORDER BY min(l.level), min(l.position), r.occurred_at DESC, r.seq DESC LIMIT %s")
    params = [[str(hit.id) for hit in strong], list(range(len(strong))), scope.workspace_id, scope.workspace_id,
              levels, *scope.memory.params, cap]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [LegHit(row[0], None, row[1], row[2], row[3]) for row in cursor.fetchall()]


def policy_drop_count(scope: CompiledScope, query: str, vector: QueryVector | None, *, min_similarity: float,
                      cap: int) -> int:
    """How many records the query legs would have proposed but the caller may not see (a count
    only: their ids never leave this function)."""
    if scope.hidden is None:
        return 0
    return retrieval_backend().match_count(scope.hidden, scope.workspace_id, query,
                                           None if vector is None else (vector.values, vector.space, vector.dimensions),
                                           min_similarity=min_similarity, cap=cap)


def run_parallel(tasks: dict[str, Callable[[], object]]) -> dict[str, tuple[object, float]]:
    """Run ``tasks`` (name -> callable) through ``memseek_site.parallel.run_all``; returns
    name -> (result, milliseconds), in the order given. The first failure is raised."""
    def timed(task):
        started = time.perf_counter()
        result = task()
        return result, round((time.perf_counter() - started) * 1000, 3)

    results = run_all([partial(timed, task) for task in tasks.values()])
    return dict(zip(tasks, results))
