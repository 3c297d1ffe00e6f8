"""The catalog compiler: reads a catalog directory, validates everything, merges it with
what a workspace already has, and returns the new catalog plus a plan of changes.

Nothing is written here. Rules kept: every YAML file belongs to a registered family;
duplicate keys and unknown keys are errors; every error names its file and dotted path;
``(name, version)`` of a versioned family is immutable (only ``active`` may change); after the
merge every name of a versioned family has exactly one active version.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from memseek_site.errors import ApiError

from .errors import CatalogError, CatalogInvalid, CatalogIssue
from .hashing import definition_hash
from .registry import Catalog, Definition, Family, Validated, families_in_order
from .yaml_io import parse_yaml


@dataclass(frozen=True, slots=True)
class Change:
    family: str
    name: str
    version: int
    action: str  # "add", "unchanged", "activate", "deactivate"


@dataclass
class Compiled:
    catalog: Catalog
    changes: list[Change] = field(default_factory=list)
    sources: dict[tuple[str, str, int], str] = field(default_factory=dict)  # YAML text per new definition


@dataclass(frozen=True, slots=True)
class _Incoming:
    file: str
    path: str
    validated: Validated
    text: str


def compile_catalog(directory: Path, stored: Catalog) -> Compiled:
    """Validate the catalog in ``directory`` against ``stored``; raise ``CatalogInvalid``."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CatalogInvalid.of([CatalogIssue(str(directory), "", "file_path", "is not a directory")])
    issues: list[CatalogIssue] = []
    families = families_in_order()
    claimed = _claim_files(directory, families, issues)
    catalog = Catalog(dict(stored.definitions))
    compiled = Compiled(catalog)
    for family in families:
        incoming = []
        for file in claimed.get(family.name, []):
            incoming.extend(_read_family_file(directory, file, family, catalog, issues))
        _merge_family(family, incoming, stored, compiled, issues)
        if family.check_family is not None:
            for file, error in family.check_family(catalog):
                issues.append(CatalogIssue(file, error.path, error.code, error.message))
    if issues:
        raise CatalogInvalid.of(issues)
    return compiled


def _claim_files(directory: Path, families: list[Family], issues: list[CatalogIssue]) -> dict[str, list[str]]:
    claimed: dict[str, list[str]] = {}
    owner: dict[str, str] = {}
    for family in families:
        for pattern in _with_yml(family.patterns):
            for path in sorted(directory.glob(pattern)):
                relative = path.relative_to(directory).as_posix()
                if relative in owner:
                    continue
                owner[relative] = family.name
                claimed.setdefault(family.name, []).append(relative)
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(directory).as_posix()
        if path.is_file() and path.suffix in (".yaml", ".yml") and relative not in owner:
            issues.append(CatalogIssue(relative, "", "file_path",
                                       "no definition family reads this file; "
                                       "see the catalog layout in docs/concepts.md"))
    return claimed


def _with_yml(patterns: tuple[str, ...]):
    """Each pattern, followed by its ``.yml`` spelling: both suffixes are YAML files."""
    for pattern in patterns:
        yield pattern
        if pattern.endswith(".yaml"):
            yield pattern.removesuffix(".yaml") + ".yml"


def _read_family_file(directory: Path, file: str, family: Family, catalog: Catalog,
                      issues: list[CatalogIssue]) -> list[_Incoming]:
    try:
        text = (directory / file).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        issues.append(CatalogIssue(file, "", "yaml", f"not UTF-8 text: {error.reason} at byte {error.start}"))
        return []
    try:
        document = parse_yaml(text)
    except CatalogError as error:
        issues.append(CatalogIssue(file, error.path, error.code, error.message))
        return []
    items = _split(document, file, family, issues)
    result = []
    for path, raw in items:
        try:
            validated = family.validate(raw, path, catalog)
        except ApiError as error:  # a validator's error of any class is a problem of this file
            issues.append(CatalogIssue(file, error.path or path, error.code, error.message))
            continue
        result.append(_Incoming(file, path, validated, text))
    return result


def _split(document, file: str, family: Family, issues: list[CatalogIssue]) -> list[tuple[str, object]]:
    if family.shape == "single":
        return [("", document)]
    if not isinstance(document, dict) or set(document) != {family.top_key}:
        issues.append(CatalogIssue(file, "", "shape", f"the file must be a mapping with exactly one key "
                                   f"{family.top_key!r}"))
        return []
    body = document[family.top_key]
    if family.shape == "list":
        if not isinstance(body, list) or not body:
            issues.append(CatalogIssue(file, family.top_key, "shape", "must be a non-empty list"))
            return []
        return [(f"{family.top_key}[{index}]", item) for index, item in enumerate(body)]
    if not isinstance(body, dict) or not body:
        issues.append(CatalogIssue(file, family.top_key, "shape", "must be a non-empty mapping of name to definition"))
        return []
    return [(f"{family.top_key}.{name}", {"__name__": name, **item} if isinstance(item, dict) else item)
            for name, item in body.items()]


def _merge_family(family: Family, incoming: list[_Incoming], stored: Catalog, compiled: Compiled,
                  issues: list[CatalogIssue]) -> None:
    seen: dict[tuple[str, int | None], _Incoming] = {}
    for item in incoming:
        identity = (item.validated.name, item.validated.version)
        if identity in seen:
            name, version = identity
            label = name if version is None else f"{name}@{version}"
            issues.append(CatalogIssue(item.file, item.path, "duplicate",
                                       f"{family.name} {label} is also defined in {seen[identity].file} "
                                       f"at {seen[identity].path}"))
            continue
        seen[identity] = item
    if family.versioned:
        _merge_versioned(family, list(seen.values()), stored, compiled, issues)
    else:
        _merge_revisions(family, list(seen.values()), stored, compiled)


def _merge_versioned(family: Family, incoming: list[_Incoming], stored: Catalog, compiled: Compiled,
                     issues: list[CatalogIssue]) -> None:
    catalog = compiled.catalog
    by_name: dict[str, list[_Incoming]] = {}
    for item in incoming:
        by_name.setdefault(item.validated.name, []).append(item)
    for name, items in by_name.items():
        for item in items:
            v = item.validated
            body_hash = definition_hash(v.body)
            existing = stored.get(family.name, name, v.version)
            if existing is not None and existing.hash != body_hash:
                issues.append(CatalogIssue(item.file, item.path, "immutable_definition",
                                           f"{family.name} {name}@{v.version} is already loaded with a different "
                                           f"body; definitions are immutable, publish version "
                                           f"{max(d.version for d in stored.versions(family.name, name)) + 1} instead"))
                continue
            catalog.add(Definition(family.name, name, v.version, v.active, v.body, body_hash, v.contract_hash,
                                   item.file, family.build(v.body)))
            if existing is None:
                compiled.changes.append(Change(family.name, name, v.version, "add"))
                compiled.sources[(family.name, name, v.version)] = item.text
        declared_active = [item for item in items if item.validated.active]
        if len(declared_active) > 1:
            first, second = declared_active[0], declared_active[1]
            issues.append(CatalogIssue(second.file, second.path, "active_collision",
                                       f"{family.name} {name} has two active versions: "
                                       f"{first.validated.version} and {second.validated.version}"))
            continue
        if declared_active:
            # The loaded catalog decides: every other stored version of the name is deactivated.
            # Versions present in this load already carry their declared flag; the loop below
            # records their change, so only versions absent from the load are handled here.
            present = {item.validated.version for item in items}
            for definition in stored.versions(family.name, name):
                if definition.version not in present and definition.active:
                    _set_active(compiled, definition, False)
        actives = [d for d in catalog.versions(family.name, name) if d.active]
        if not actives:
            issues.append(CatalogIssue(items[0].file, items[0].path, "active_missing",
                                       f"{family.name} {name} has no active version; set active: true on one"))
        for item in items:
            existing = stored.get(family.name, name, item.validated.version)
            if existing is not None and existing.active != item.validated.active:
                compiled.changes.append(Change(family.name, name, existing.version,
                                               "activate" if item.validated.active else "deactivate"))
            elif existing is not None:
                compiled.changes.append(Change(family.name, name, existing.version, "unchanged"))


def _set_active(compiled: Compiled, definition: Definition, active: bool) -> None:
    compiled.catalog.add(Definition(definition.family, definition.name, definition.version, active,
                                    definition.body, definition.hash, definition.contract_hash,
                                    definition.source_file, definition.value))
    compiled.changes.append(Change(definition.family, definition.name, definition.version,
                                   "activate" if active else "deactivate"))


def _merge_revisions(family: Family, incoming: list[_Incoming], stored: Catalog, compiled: Compiled) -> None:
    for item in incoming:
        v = item.validated
        body_hash = definition_hash(v.body)
        revisions = stored.versions(family.name, v.name)
        current = next((d for d in revisions if d.active), None)
        if current is not None and current.hash == body_hash:
            compiled.changes.append(Change(family.name, v.name, current.version, "unchanged"))
            continue
        version = max((d.version for d in revisions), default=0) + 1
        if current is not None:
            _set_active(compiled, current, False)
        compiled.catalog.add(Definition(family.name, v.name, version, True, v.body, body_hash, v.contract_hash,
                                        item.file, family.build(v.body)))
        compiled.changes.append(Change(family.name, v.name, version, "add"))
        compiled.sources[(family.name, v.name, version)] = item.text
