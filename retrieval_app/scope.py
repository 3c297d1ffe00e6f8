"""The caller's scope, compiled into SQL once and applied by every leg before it runs.

A record is a candidate only when all of these hold, in SQL (alias ``r``), so a record the
caller may not see is never a candidate of any leg, and the canonical reload re-applies them:

* search scope, through the engine's own ``resolve_search`` → ``scope_clause`` +
  ``filter_clause``: this workspace (tenant isolation), ready, not retracted, ``active``
  status, the named collections (all when none are named), ``entities``, ``types``, and the
  ``tags`` filters (``eq``/``in``, ``contains_any`` on list fields) over declared fields. A tag
  field must be declared filterable in at least one collection in scope; collection versions
  that do not declare every tag field cannot match and are left out. Collections indexed by
  different search profiles are resolved separately and OR-ed;
* visibility (``conf/retrieval.yaml``): a record whose visibility is ``private`` is visible
  only when its owner field equals the request's ``agentId`` (never without one); a missing
  visibility value counts as ``shared``;
* time and supersession on the chosen axis (``catalog_app.record_sql``'s ``as_of_cut`` and
  ``current_in_lane``). Valid axis (default): ``occurred_at <= asOf``, and
  a keyed record is superseded by a record of its lane ((entity, collection, key, status),
  ready or not, tombstones included) with a later ``(occurred_at, seq)`` — only such records
  with ``occurred_at <= asOf`` count. Transaction axis: ``created_at <= asOf``, superseded by
  a later ``seq`` created at or before ``asOf``. Superseded records are hidden unless
  ``includeSuperseded`` (or the workspace turned ``retrieval.hideSuperseded`` off). Events
  are never superseded.

Policy collections (``policy: true``) never reach the legs: they form the ``policies``
section, selected with the same scope except ``tags`` (a topic filter never hides a policy).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from catalog_app.catalog.registry import Catalog
from catalog_app.record_sql import FALSE, TRUE, Clause, as_of_cut, current_in_lane
from memseek_site.errors import ApiError
from search_app.engine.resolve import FieldAccess, ResolveError, field_paths, operand_matches, resolve_search
from search_app.engine.spec import Condition, Scope, SearchSpec, Source
from search_app.backends.pg_scope import filter_clause, scope_clause, value_expression

from .policy import RetrievalPolicy, retrieval_policy
from .request import RetrieveRequest


@dataclass(frozen=True, slots=True)
class CompiledScope:
    workspace_id: int
    memory: Clause  # every leg's WHERE (non-policy collections, tags applied)
    policies: Clause  # the policies section's WHERE
    hidden: Clause | None  # in memory scope but invisible to this caller (policy drops), None: nothing can be
    traverse: Clause  # links the graph leg may follow: visible, within the time cut
    axis: str
    as_of: datetime | None
    show_superseded: bool
    embed: bool  # some collection version in memory scope is embedded
    policy: RetrievalPolicy = field(repr=False)


def compile_scope(*, workspace_id: int, request: RetrieveRequest, catalog: Catalog,
                  hide_superseded: bool) -> CompiledScope:
    """Compile ``request``'s scope; raises ``ApiError`` with request paths for catalog problems."""
    policy = retrieval_policy(catalog)
    names = _collections(request, catalog)
    policy_names = tuple(name for name in names if name in policy.policy_collections)
    memory_names = tuple(name for name in names if name not in policy.policy_collections)
    eligible = _eligible_versions(request, catalog, memory_names)
    memory = _groups(workspace_id, request, catalog, eligible, with_tags=True)
    policies = _groups(workspace_id, request, catalog,
                       {name: [d.version for d in catalog.versions("collection", name)] for name in policy_names},
                       with_tags=False)
    visible = _visibility(request, catalog, policy, names)
    show_superseded = request.include_superseded or not hide_superseded
    temporal = _temporal(request, show_superseded)
    hidden = None if visible is TRUE or memory is FALSE else memory & temporal & Clause(f"NOT ({visible.sql})",
                                                                                         visible.params)
    return CompiledScope(
        workspace_id=workspace_id, memory=memory & visible & temporal, policies=policies & visible & temporal,
        # Links may live in a collection the request did not name: their visibility still applies.
        hidden=hidden, traverse=Clause("r.workspace_id = %s", (workspace_id,)) & _time_cut(request)
        & _visibility(request, catalog, policy, tuple(catalog.names("collection"))),
        axis=request.as_of_axis, as_of=request.as_of, show_superseded=show_superseded,
        embed=_embedded(catalog, eligible), policy=policy)


def _collections(request: RetrieveRequest, catalog: Catalog) -> tuple[str, ...]:
    if request.collections is None:
        return tuple(catalog.names("collection"))
    for index, name in enumerate(request.collections):
        if not catalog.versions("collection", name):
            raise ApiError("unknown_collection", f"collections[{index}]: unknown collection {name!r}",
                           path=f"collections[{index}]")
    return request.collections


def _eligible_versions(request: RetrieveRequest, catalog: Catalog, names) -> dict[str, list[int]]:
    """Per collection, the loaded versions declaring every tag field (all versions without tags).
    Checks each tag against every declaration in scope: filterable, and its values of the
    declared type."""
    declared_somewhere = {tag.field: False for tag in request.tags}
    eligible: dict[str, list[int]] = {}
    for name in names:
        for definition in catalog.versions("collection", name):
            collection = definition.value
            fits = True
            for tag in request.tags:
                declared = collection.fields.get(tag.field)
                if declared is None:
                    fits = False
                    continue
                declared_somewhere[tag.field] = True
                _check_tag(tag, declared, collection)
            if fits:
                eligible.setdefault(name, []).append(collection.version)
    for field_name, found in declared_somewhere.items():
        if not found:
            raise ApiError("field_reference", f"tags.{field_name}: no collection in scope declares a field "
                           f"{field_name!r}", path=f"tags.{field_name}")
    return eligible


def _check_tag(tag, declared, collection) -> None:
    path = f"tags.{tag.field}"
    if not declared.filter:
        raise ApiError("field_permission", f"{path}: field {tag.field!r} is not declared filterable in "
                       f"{collection.name} version {collection.version}", path=path)
    for index, value in enumerate(tag.values):
        if not operand_matches(declared.type, value):
            value_path = f"{path}[{index}]" if tag.many else path
            raise ApiError("field_operand", f"{value_path}: {value!r} is not a {declared.type} value "
                           f"({collection.name} version {collection.version})", path=value_path)


def _condition(tag, is_array: bool) -> Condition:
    if is_array:
        return Condition(tag.field, "contains_any", tuple(tag.values))
    if tag.many:
        return Condition(tag.field, "in", tuple(tag.values))
    return Condition(tag.field, "eq", tag.values[0])


def _groups(workspace_id: int, request: RetrieveRequest, catalog: Catalog, versions: dict[str, list[int]],
            *, with_tags: bool) -> Clause:
    """OR of ``scope_clause AND filter_clause`` over groups of collections that share a search
    profile and the same tag operators (one resolved search source per group)."""
    groups: dict[tuple, dict[str, list[int]]] = {}
    for name, numbers in versions.items():
        active = catalog.value("collection", name) or catalog.value("collection", name, numbers[-1])
        first = catalog.value("collection", name, numbers[0])
        ops = tuple(_condition(tag, first.fields[tag.field].is_array) for tag in request.tags) if with_tags else ()
        groups.setdefault((active.search_profile, ops), {})[name] = numbers
    parts = []
    for (_, conditions), members in sorted(groups.items(), key=lambda item: sorted(item[1])):
        scope = Scope(collections=tuple(sorted(members)),
                      collection_versions=tuple((name, tuple(members[name])) for name in sorted(members)),
                      entities=request.entities, types=request.types, status="active", versions="all")
        source = Source(name=None, mode="text", scope=scope, where=conditions, order_by=(), rank=None,
                        candidates=None, k=20)
        spec = SearchSpec(q=request.query, sources=(source,), rank_constant=None, boost=None, k=20, include=(),
                          fields=(), annotations=(), render=False, fence=None, rerank=None, graph_boost=None)
        try:
            (resolved,) = resolve_search(spec, catalog)
        except ResolveError as error:
            raise error.relocated(_request_path(error.path)) from None
        scope_sql, scope_params = scope_clause(resolved, workspace_id)
        filter_sql, filter_params = filter_clause(resolved)
        parts.append(Clause(f"{scope_sql} AND {filter_sql}", tuple(scope_params + filter_params)))
    if not parts:
        return FALSE
    return Clause(" OR ".join(f"({part.sql})" for part in parts), tuple(p for part in parts for p in part.params))


def _request_path(path: str) -> str | None:
    """A resolver path (SearchSpec words) in the request's words."""
    if path.startswith("where."):
        return "tags." + path.removeprefix("where.").split(".")[0]
    if path.startswith("scope.collection"):
        return "collections"
    return path or None


def _field_value(catalog: Catalog, collection: str, field_name: str) -> str:
    """SQL text of a declared string field of ``collection`` on row ``r``, per collection version."""
    whens = []
    for definition in catalog.versions("collection", collection):
        declared = definition.value.fields.get(field_name)
        if declared is not None:
            access = FieldAccess(declared, field_paths(declared, catalog))
            whens.append(f"WHEN r.collection_version = {int(definition.version)} "
                         f"THEN ({value_expression(access, 'r')} #>> '{{}}')")
    return f"(CASE {' '.join(whens)} END)" if whens else "NULL::text"


def _visibility(request: RetrieveRequest, catalog: Catalog, policy: RetrievalPolicy, names) -> Clause:
    parts, params = [], []
    for name in names:
        spec = policy.of(name)
        if spec.visibility.literal == "shared":
            continue
        owner = _field_value(catalog, name, spec.owner_agent_id) if spec.owner_agent_id else "NULL::text"
        # COALESCE: a missing owner must make the clause FALSE, never NULL, so NOT(visible) holds too.
        owned = f"COALESCE({owner} = %s, FALSE)" if request.agent_id is not None else "FALSE"
        if spec.visibility.field is not None:
            seen = f"({_field_value(catalog, name, spec.visibility.field)} IS DISTINCT FROM 'private' OR {owned})"
        else:
            seen = owned
        parts.append(f"(r.collection <> %s OR {seen})")
        params.append(name)
        if request.agent_id is not None:
            params.append(request.agent_id)
    if not parts:
        return TRUE
    return Clause(" AND ".join(parts), tuple(params))


def _time_cut(request: RetrieveRequest) -> Clause:
    return as_of_cut(request.as_of_axis, request.as_of)


def _temporal(request: RetrieveRequest, show_superseded: bool) -> Clause:
    cut = _time_cut(request)
    if show_superseded:
        return cut
    return cut & current_in_lane(axis=request.as_of_axis, as_of=request.as_of, newer="n")


def _embedded(catalog: Catalog, eligible: dict[str, list[int]]) -> bool:
    for name, numbers in eligible.items():
        for number in numbers:
            for processor_name in catalog.value("collection", name, number).processors:
                processor = catalog.value("processor", processor_name)
                if processor is not None and processor.kind == "embedding":
                    return True
    return False
