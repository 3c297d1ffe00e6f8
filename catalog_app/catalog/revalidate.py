"""Re-validating a whole stored catalog, as a load would validate it.

A load validates each definition with its family's ``validate`` against the catalog it is
merged into, family by family in load order, then runs each family's ``check_family``. Changing
only ``active`` flags (an activation) changes what bare names resolve to — a graph view's edge
collection, the search profile of a view's collections — so a catalog that loaded may stop
being loadable. ``catalog_revalidate`` answers "would this catalog load?" for a catalog built
from stored definitions: every version of every versioned family and the active revision of
every unversioned family (older revisions are history nothing resolves and no load carries)
is validated again, from the YAML it was loaded from, against the catalog itself.

Pure: no database access. The caller supplies the source YAML per definition.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping

from memseek_site.errors import ApiError

from .errors import CatalogError, CatalogIssue
from .registry import Catalog, Definition, Family, families_in_order
from .yaml_io import parse_yaml


def catalog_revalidate(catalog: Catalog, sources: Mapping[tuple[str, str, int], str]) -> list[CatalogIssue]:
    """Return every problem that would stop ``catalog`` from loading (empty: it loads).

    ``sources`` maps ``(family, name, version)`` to the text of the YAML file the definition
    was loaded from (the load stores it). A definition whose source is missing, or no longer
    holds it, cannot be re-validated and is reported as a ``source_missing`` problem rather
    than passed unchecked.
    """
    issues: list[CatalogIssue] = []
    parsed: dict[str, object] = {}  # one parse per source file text
    for family in families_in_order():
        for definition in catalog.all(family.name):
            if not family.versioned and not definition.active:
                continue
            found = _raw_item(family, definition, sources.get((family.name, definition.name, definition.version)),
                              parsed)
            if isinstance(found, CatalogIssue):
                issues.append(found)
                continue
            path, raw = found
            try:
                family.validate(raw, path, catalog)
            except ApiError as error:  # a validator's error of any class is a problem of this file
                issues.append(CatalogIssue(definition.source_file, error.path or path, error.code, error.message))
        if family.check_family is not None:
            for file, error in family.check_family(catalog):
                issues.append(CatalogIssue(file, error.path, error.code, error.message))
    return issues


def _raw_item(family: Family, definition: Definition, text: str | None, parsed: dict[str, object]):
    """The raw YAML item of ``definition`` (with its dotted path) as the loader hands it to the
    validator, its ``active`` flag set to the one in the catalog being checked; or a
    ``CatalogIssue`` when its source is missing or no longer parses."""
    label = definition.name if not family.versioned else f"{definition.name}@{definition.version}"
    missing = CatalogIssue(definition.source_file, "", "source_missing",
                           f"the YAML {family.name} {label} was loaded from is not stored; "
                           "load the catalog directory again so it can be re-validated")
    if not text:
        return missing
    if text not in parsed:
        try:
            parsed[text] = parse_yaml(text)
        except CatalogError as error:
            parsed[text] = CatalogIssue(definition.source_file, error.path, error.code, error.message)
    document = parsed[text]
    if isinstance(document, CatalogIssue):
        return document
    found = _find(family, definition, document)
    if found is None:
        return missing
    path, raw = found
    raw = copy.deepcopy(raw)  # validators may take the item apart; the parse is shared
    if family.versioned and isinstance(raw, dict):
        raw = {**raw, "active": definition.active}
    return path, raw


def _find(family: Family, definition: Definition, document):
    if family.shape == "single":
        return "", document
    body = document.get(family.top_key) if isinstance(document, dict) else None
    if family.shape == "mapping":
        if isinstance(body, dict) and definition.name in body:
            item = body[definition.name]
            return f"{family.top_key}.{definition.name}", ({"__name__": definition.name, **item}
                                                           if isinstance(item, dict) else item)
        return None
    for index, item in enumerate(body if isinstance(body, list) else []):
        if not isinstance(item, dict) or item.get("name") != definition.name:
            continue
        if family.versioned and item.get("version") != definition.version:
            continue
        return f"{family.top_key}[{index}]", dict(item)
    return None
