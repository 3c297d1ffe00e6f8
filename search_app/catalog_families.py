"""Catalog families search adds: ``conf/search_profiles.yaml`` and ``conf/rank_default.yaml``
(views are in ``search_app.views.definitions``). Registered from ``SearchAppConfig.ready()``.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from types import MappingProxyType

from catalog_app.catalog import checks
from catalog_app.catalog.errors import CatalogError
from catalog_app.catalog.registry import Catalog, Family, Validated, register_family

from .engine.profiles import SearchProfile
from .engine.rank_expression import SHIPPED_DEFAULT_VARIANTS, parse_rank, rank_to_json, validate_rank
from .engine.resolve import declared_score_names

BACKENDS = ("pg", "turbopuffer")
RANK_MODES = ("hybrid", "vector", "text", "recent")


@dataclass(frozen=True, slots=True)
class RankDefaults:
    candidates: int
    variants: MappingProxyType  # mode -> RankNode


def _validate_profile(raw, path: str, catalog: Catalog) -> Validated:
    name = raw.pop("__name__") if isinstance(raw, dict) and "__name__" in raw else None
    checks.name(name, path)
    doc = checks.mapping(raw, path, allowed={"backend", "layout", "consistency", "enabled_if_credentials"},
                         required={"backend"}, code="backend_option")
    backend = doc["backend"]
    if backend not in BACKENDS:
        raise CatalogError("backend", f"backend must be one of {', '.join(BACKENDS)}", checks.at(path, "backend"))
    if backend == "pg" and set(doc) != {"backend"}:
        raise CatalogError("backend_option", "pg profiles take no options", path)
    layout = doc.get("layout")
    if layout not in (None, "shared", "per_collection"):
        raise CatalogError("backend_option", "must be shared or per_collection", checks.at(path, "layout"))
    consistency = doc.get("consistency")
    if consistency not in (None, "strong", "eventual"):
        raise CatalogError("backend_option", "must be strong or eventual", checks.at(path, "consistency"))
    enabled = checks.boolean(doc.get("enabled_if_credentials", False), checks.at(path, "enabled_if_credentials"))
    body = {"name": name, "backend": backend, "layout": layout, "consistency": consistency,
            "enabled_if_credentials": enabled}
    return Validated(name, None, True, body)


def _build_profile(body: dict) -> SearchProfile:
    return SearchProfile(body["name"], body["backend"], body["layout"], body["consistency"],
                         body["enabled_if_credentials"])


# Said by GET /rank/schema, load_catalog and the console while a workspace has no
# conf/rank_default.yaml: the built-in formula is the contract's, not a ranking anyone measured well.
BUILTIN_RANK_WARNING = (
    "This workspace ranks with the engine's built-in formula, N(max(similarity, text_match)) + "
    "D24(last_accessed), which ranks far worse than the measured default on the quality benches: add "
    "conf/rank_default.yaml to the catalog (python manage.py new_catalog writes one with the measured "
    "default) and load it again.")


def default_rank_body() -> dict:
    """The deployment default: normalised relevance plus a 24-hour decay on last_accessed
    (``recent``: the decay on occurred_at alone)."""
    return {"candidates": 200, "variants": copy.deepcopy(dict(SHIPPED_DEFAULT_VARIANTS))}


def _validate_rank_defaults(raw, path: str, catalog: Catalog) -> Validated:
    doc = checks.mapping(raw, path, allowed={"candidates", "variants"}, required={"candidates", "variants"})
    candidates = checks.integer(doc["candidates"], "candidates", minimum=1, maximum=1000)
    variants = checks.mapping(doc["variants"], "variants", allowed=set(RANK_MODES), required=set(RANK_MODES))
    score_names = declared_score_names(catalog)
    normal = {}
    for mode in RANK_MODES:
        node = parse_rank(variants[mode], f"variants.{mode}", error=CatalogError)
        validate_rank(node, mode=mode, score_names=score_names, path=f"variants.{mode}", error=CatalogError)
        normal[mode] = rank_to_json(node)
    return Validated("rank_default", None, True, {"candidates": candidates, "variants": normal})


def _build_rank_defaults(body: dict) -> RankDefaults:
    return RankDefaults(body["candidates"], MappingProxyType(
        {mode: parse_rank(tree, f"variants.{mode}") for mode, tree in body["variants"].items()}))


def register() -> None:
    from .views import definitions as views

    register_family(Family(
        name="rank_default", order=30, patterns=("conf/rank_default.yaml",), shape="single", top_key=None,
        single_name="rank_default", versioned=False, validate=_validate_rank_defaults, build=_build_rank_defaults,
        default_body=default_rank_body, builtin_warning=BUILTIN_RANK_WARNING))
    register_family(Family(
        name="search_profile", order=40, patterns=("conf/search_profiles.yaml", "conf/search_profiles/*.yaml"),
        shape="mapping", top_key="profiles", versioned=False, validate=_validate_profile, build=_build_profile))
    register_family(Family(
        name="view", order=60, patterns=("views/*.yaml",), shape="list", top_key="views", versioned=True,
        validate=views.validate, build=views.build))
