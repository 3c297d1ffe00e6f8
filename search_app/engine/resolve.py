"""Resolving a parsed SearchSpec against a workspace catalog (reference A.1 step 2).

For each source: the reachable collection versions (pinned ones, else every loaded version
of each named collection), exactly one search profile, backend capabilities, every filtered,
sorted and projected field declared compatibly in every reachable version, operators and
operands type-checked, annotations required everywhere, and the rank expression (explicit or
the deployment default for the mode) valid against declared score names. Pure over the
``Catalog`` object; raises ``ResolveError`` with a stable code and the dotted path.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType

from catalog_app.catalog.collections import Collection, DeclaredField
from catalog_app.catalog.processors import supersession_chain
from catalog_app.catalog.registry import Catalog
from memseek_site.errors import RequestError

from .profiles import search_profile
from .rank_expression import RankNode, validate_rank
from .spec import SYSTEM_COLLECTION, Condition, SearchSpec, Source

MODE_NEEDS = {"vector": ("vector",), "text": ("text",), "hybrid": ("vector", "text"), "recent": ("recent",),
              "structured": ("structured",)}
RANGE_OPERATORS = ("gt", "gte", "lt", "lte")
RANGE_TYPES = ("number", "integer", "datetime")


class ResolveError(RequestError):
    """A SearchSpec that breaks a rule of the catalog it runs against; ``code`` names the rule."""


@dataclass(frozen=True, slots=True)
class FieldAccess:
    """How one declared field is read on rows of one collection version: the declaration and
    the paths to try, newest annotation first (supersession fallbacks)."""

    field: DeclaredField
    paths: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class ResolvedSource:
    source: Source
    versions: tuple[Collection, ...]
    profile: str
    backend: str
    rank: RankNode | None  # None for structured
    # field name -> {(collection, version): FieldAccess}, for every field the source uses
    fields: MappingProxyType

    def access(self, field: str, collection: str, version: int) -> FieldAccess:
        return self.fields[field][(collection, version)]


def resolve_search(spec: SearchSpec, catalog: Catalog, *, view: bool = False) -> tuple[ResolvedSource, ...]:
    """Resolve every source of ``spec``; ``view`` applies the stricter view rules (explicit
    collections, no ``_system``)."""
    score_names = declared_score_names(catalog)
    rank_defaults = catalog.value("rank_default", "rank_default")
    resolved = []
    for index, source in enumerate(spec.sources):
        path = f"sources[{index}]" if spec.fused else ""
        resolved.append(_resolve_source(spec, source, path, catalog, score_names, rank_defaults, view))
    if spec.boost is not None:
        _validate_rank(spec.boost, "boost", mode=None, score_names=score_names, post_fusion=True)
    return tuple(resolved)


def declared_score_names(catalog: Catalog) -> frozenset[str]:
    return frozenset(name for processor in catalog.active_values("processor").values()
                     for name in processor.score_names)


def _at(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _resolve_source(spec, source: Source, path: str, catalog: Catalog, score_names, rank_defaults,
                    view: bool) -> ResolvedSource:
    versions = _versions(source, path, catalog, view)
    profile = _profile(versions, path, catalog)
    found = search_profile(catalog, profile)
    if found is None:  # _profile only names profiles the catalog (or the built-in) has
        raise ValueError(f"search profile {profile} vanished from the catalog")
    backend = found.backend
    if not found.usable:
        raise ResolveError("search_backend_unavailable",
                           f"search profile {profile} uses the {backend} backend, which is not available here",
                           _at(path, "scope.collections"))
    for needed in MODE_NEEDS[source.mode]:
        if needed not in found.capabilities:
            raise ResolveError("capability", f"search profile {profile} ({backend}) cannot run {source.mode} search",
                               _at(path, "mode"))
    if source.order_by and source.mode != "structured":
        raise ResolveError("field_order", "order_by is only used by structured search", _at(path, "order_by"))
    fields: dict[str, dict] = {}
    for condition in source.where:
        where_path = _at(path, f"where.{condition.field}")
        # exists only asks whether a value is present, so it may read an optional annotation.
        access = _field(condition.field, versions, catalog, where_path, fields, "filter",
                        annotation_must_be_required=condition.op != "exists")
        _check_operator(condition, next(iter(access.values())).field, _at(where_path, condition.op))
    for index, key in enumerate(source.order_by):
        _field(key.field, versions, catalog, _at(path, f"order_by[{index}].field"), fields, "sort")
    for index, name in enumerate(spec.fields):
        _field(name, versions, catalog, f"fields[{index}]", fields, "project")
    for index, name in enumerate(spec.annotations):
        _check_annotation(name, versions, catalog, f"annotations[{index}]")
    rank = None
    if source.mode != "structured":
        rank = source.rank if source.rank is not None else rank_defaults.variants[source.mode]
        _validate_rank(rank, _at(path, "rank"), mode=source.mode, score_names=score_names, post_fusion=False)
    return ResolvedSource(source, versions, profile, backend, rank,
                          MappingProxyType({name: MappingProxyType(by_version) for name, by_version in fields.items()}))


def scope_versions(source: Source, catalog: Catalog) -> tuple[Collection, ...]:
    """The collection versions an ad-hoc source's scope reaches (pinned ones, else every loaded
    version of each named collection, else of every collection). Raises ``ResolveError`` at
    ``scope.collections[i]`` / ``scope.collection_versions.<name>[i]``."""
    return _versions(source, "", catalog, view=False)


def _versions(source: Source, path: str, catalog: Catalog, view: bool) -> tuple[Collection, ...]:
    scope_path = _at(path, "scope.collections")
    names = source.scope.collections
    if not names and source.name is not None:
        raise ResolveError("search_scope", "each combined source must name its collections", scope_path)
    if not names:
        if view:
            raise ResolveError("search_scope", "a view must name its collections explicitly", scope_path)
        names = tuple(catalog.names("collection"))
        if not names:
            raise ResolveError("no_catalog", "this workspace has no collections yet", scope_path)
    versions: list[Collection] = []
    for index, name in enumerate(names):
        if name == SYSTEM_COLLECTION:
            raise ResolveError("reserved",
                               "run records are not searchable here" if not view else "a view may not read _system",
                               f"{scope_path}[{index}]")
        stored = catalog.versions("collection", name)
        if not stored:
            raise ResolveError("unknown_collection", f"unknown collection {name!r}", f"{scope_path}[{index}]")
        pinned = source.scope.pinned_versions(name)
        if pinned is None:
            versions.extend(definition.value for definition in stored)
            continue
        by_number = {definition.version: definition.value for definition in stored}
        for position, number in enumerate(pinned):
            if number not in by_number:
                raise ResolveError("unknown_collection", f"collection {name} has no version {number}",
                                   _at(path, f"scope.collection_versions.{name}[{position}]"))
            versions.append(by_number[number])
    return tuple(versions)


def _profile(versions, path: str, catalog: Catalog) -> str:
    profiles = set()
    for collection in versions:
        active = catalog.value("collection", collection.name)
        profiles.add((active or collection).search_profile)
    if len(profiles) != 1:
        raise ResolveError("search_profile", "these collections are indexed by different search profiles "
                           f"({', '.join(sorted(profiles))}); split them into separate sources",
                           _at(path, "scope.collections"))
    return profiles.pop()


_PERMISSION = {"filter": "filterable", "sort": "sortable", "project": "returnable"}


def _field(name: str, versions, catalog: Catalog, path: str, fields: dict, use: str, *,
           annotation_must_be_required: bool = True) -> dict:
    by_version, signature = {}, None
    for collection in versions:
        declared = collection.fields.get(name)
        if declared is None:
            raise ResolveError("field_reference", f"field {name!r} is not declared in collection "
                               f"{collection.name} version {collection.version}", path)
        if signature is not None and declared.signature != signature:
            raise ResolveError("field_compatibility", f"field {name!r} is declared differently across the "
                               "collection versions in scope", path)
        signature = declared.signature
        if not getattr(declared, use):
            raise ResolveError("field_permission", f"field {name!r} is not declared {_PERMISSION[use]} in "
                               f"{collection.name} version {collection.version}", path)
        by_version[(collection.name, collection.version)] = FieldAccess(declared, field_paths(declared, catalog))
    if use in ("filter", "sort") and annotation_must_be_required:
        _check_annotation_backed(name, by_version, versions, catalog, path)
    fields.setdefault(name, {}).update(by_version)
    return by_version


def field_paths(declared: DeclaredField, catalog: Catalog) -> tuple[tuple[str, ...], ...]:
    if declared.path[0] != "annotations":
        return (declared.path,)
    return tuple(("annotations", name) + declared.path[2:] for name in supersession_chain(catalog, declared.path[1]))


def _check_annotation_backed(name, by_version, versions, catalog, path: str) -> None:
    for collection in versions:
        access = by_version[(collection.name, collection.version)]
        if access.field.path[0] != "annotations":
            continue
        chain = {p[1] for p in access.paths}
        if not chain & set(collection.required_processors):
            raise ResolveError("required_annotation", f"field {name!r} reads an annotation that is not from a "
                               f"required processor of {collection.name} version {collection.version}", path)


def _check_annotation(name: str, versions, catalog: Catalog, path: str) -> None:
    if catalog.value("processor", name) is None:
        raise ResolveError("unknown_annotation", f"no processor named {name!r}", path)
    for collection in versions:
        if name not in collection.required_processors:
            raise ResolveError("required_annotation", f"{name} is not a required processor of "
                               f"{collection.name} version {collection.version}", path)


def _check_operator(condition: Condition, declared: DeclaredField, path: str) -> None:
    op, operand = condition.op, condition.operand
    if op in RANGE_OPERATORS and (declared.is_array or declared.type not in RANGE_TYPES):
        raise ResolveError("field_operator", f"{op} works on number, integer and datetime fields, not "
                           f"{_type_label(declared)}", path)
    if op in ("contains_any", "contains_all") and not declared.is_array:
        raise ResolveError("field_operator", f"{op} needs a list field; {condition.field} holds one value", path)
    if op == "in" and declared.is_array:
        raise ResolveError("field_operator", "in works on single values; use contains_any for lists", path)
    if op == "exists":
        return
    if op == "eq" and declared.is_array:
        if not isinstance(operand, tuple):
            raise ResolveError("field_operand", "eq on a list field compares the whole list; send a list", path)
        values = operand
    elif isinstance(operand, tuple):
        if op == "eq":
            raise ResolveError("field_operand", f"{condition.field} holds one value; send one value", path)
        values = operand
    else:
        values = (operand,)
    for position, value in enumerate(values):
        value_path = f"{path}[{position}]" if isinstance(operand, tuple) else path
        if not operand_matches(declared.type, value):
            raise ResolveError("field_operand", f"{value!r} is not a {declared.type} value", value_path)


def operand_matches(field_type: str, value) -> bool:
    """Whether a filter operand is a valid value of a declared field type."""
    if field_type == "string":
        return isinstance(value, str)
    if field_type == "boolean":
        return isinstance(value, bool)
    if field_type == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if field_type == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return parse_aware_datetime(value) is not None


def parse_aware_datetime(value) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value)
    except ValueError:
        return None
    return parsed if parsed.utcoffset() is not None else None


def _type_label(declared: DeclaredField) -> str:
    return f"[{declared.type}]" if declared.is_array else declared.type


def _validate_rank(node, path: str, *, mode, score_names, post_fusion: bool) -> None:
    validate_rank(node, mode=mode, score_names=score_names, post_fusion=post_fusion, path=path, error=ResolveError)
