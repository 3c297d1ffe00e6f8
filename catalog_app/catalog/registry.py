"""Definition families and the in-memory catalog they compile into.

A family (collections, processors, models; views and the rest registered by the apps above)
says which files hold its definitions, how to split them into named definitions, how to
validate one, and how to build its typed value. ``catalog_app`` never imports the apps that
register families; they call ``register_family`` from their ``AppConfig.ready()``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import CatalogError
from .hashing import definition_hash


@dataclass(frozen=True, slots=True)
class Validated:
    """What a family's validator returns for one definition."""

    name: str
    version: int | None  # None for unversioned families: the loader assigns a revision
    active: bool
    body: dict  # normalised body, without ``active``
    contract_hash: str = ""


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    order: int
    patterns: tuple[str, ...]
    # "list": a top-level key holding a list of definitions; "mapping": a top-level key
    # holding {name: body}; "single": the whole file is one definition called ``single_name``.
    shape: str
    top_key: str | None
    versioned: bool
    validate: Callable[[Any, str, "Catalog"], Validated]
    build: Callable[[dict], Any]
    single_name: str | None = None
    default_body: Callable[[], dict] | None = None
    # Checks over the whole family once every definition validated: yields CatalogErrors
    # paired with the file they belong to.
    check_family: Callable[["Catalog"], list[tuple[str, CatalogError]]] | None = None
    # A "single" family with a ``default_body`` may say why running on that built-in default is a
    # problem: the sentence ``load_catalog`` and the console show while a workspace does.
    builtin_warning: str | None = None


FAMILIES: dict[str, Family] = {}
BUILTIN_SOURCE = "(built-in default)"  # the ``source_file`` of a family's built-in default definition


def register_family(family: Family) -> None:
    FAMILIES[family.name] = family


def families_in_order() -> list[Family]:
    return sorted(FAMILIES.values(), key=lambda family: family.order)


@dataclass(frozen=True, slots=True)
class Definition:
    family: str
    name: str
    version: int
    active: bool
    body: dict
    hash: str
    contract_hash: str
    source_file: str
    value: Any  # the family's typed value, built from ``body``


@dataclass
class Catalog:
    """Every loaded definition of one workspace, indexed for lookups.

    ``get(family, name)`` resolves the active version; ``get(family, name, version)`` an exact one.
    """

    definitions: dict[tuple[str, str, int], Definition] = field(default_factory=dict)
    _derived: dict = field(default_factory=dict, repr=False, compare=False)

    def add(self, definition: Definition) -> None:
        self.definitions[(definition.family, definition.name, definition.version)] = definition
        self._derived.clear()

    def derived(self, key, build: Callable[[], Any]) -> Any:
        """``build()``, computed once per ``key`` for this set of definitions and shared by every
        caller (who must not mutate it): a new catalog revision compiles a new ``Catalog``, so a
        value derived from definitions never outlives them. ``key`` names the value and any
        setting it depends on."""
        if key not in self._derived:
            self._derived[key] = build()
        return self._derived[key]

    def get(self, family: str, name: str, version: int | None = None) -> Definition | None:
        if version is not None:
            return self.definitions.get((family, name, version))
        for (fam, nm, _), definition in self.definitions.items():
            if fam == family and nm == name and definition.active:
                return definition
        default = FAMILIES[family].default_body if family in FAMILIES else None
        if default is not None and FAMILIES[family].single_name == name:
            return self._default_definition(FAMILIES[family])
        return None

    def value(self, family: str, name: str, version: int | None = None):
        definition = self.get(family, name, version)
        return definition.value if definition else None

    def versions(self, family: str, name: str) -> list[Definition]:
        return sorted((d for (fam, nm, _), d in self.definitions.items() if fam == family and nm == name),
                      key=lambda d: d.version)

    def names(self, family: str) -> list[str]:
        return sorted({nm for (fam, nm, _) in self.definitions if fam == family})

    def active_values(self, family: str) -> dict[str, Any]:
        return {d.name: d.value for d in self.definitions.values() if d.family == family and d.active}

    def all(self, family: str) -> list[Definition]:
        return sorted((d for d in self.definitions.values() if d.family == family),
                      key=lambda d: (d.name, d.version))

    @property
    def hash(self) -> str:
        return definition_hash(sorted(
            [d.family, d.name, d.version, d.hash, d.active] for d in self.definitions.values()))

    @staticmethod
    def _default_definition(family: Family) -> Definition:
        body = family.default_body()
        return Definition(family.name, family.single_name, 0, True, body, definition_hash(body), "",
                          BUILTIN_SOURCE, family.build(body))


def builtin_default_warnings(catalog: Catalog) -> list[str]:
    """The ``builtin_warning`` of every family that declares one and that ``catalog`` leaves on
    its built-in default (no file of the family was ever loaded), in load order."""
    warnings = []
    for family in families_in_order():
        if family.builtin_warning is None or family.single_name is None:
            continue
        definition = catalog.get(family.name, family.single_name)
        if definition is not None and definition.source_file == BUILTIN_SOURCE:
            warnings.append(family.builtin_warning)
    return warnings
