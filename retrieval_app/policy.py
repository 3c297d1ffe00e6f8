"""``conf/retrieval.yaml``: policy fields per collection, the ``retrieval_policy`` catalog family.

Shape (one file, like ``conf/models.yaml``)::

    collections:
      <collection>:
        visibility: <field name> | shared | private        # default shared
        owner_agent_id: <field name>                        # required when records can be private
        classification: <field name> | <literal text>      # default none (null)
        policy: true | false                                # default false

A value that names a declared field of the collection is read from that field; anything else
is a literal. Every field named must be a declared single-valued ``string`` field in every
loaded version of the collection (checked when the file loads and again whenever the catalog
changes, so a new collection version cannot silently drop it). ``policy: true`` marks a
collection whose records form the ``policies`` section of a retrieved context: never truncated,
always included when in scope. Without the file every collection is ``shared``, with no owner
and classification ``null``, and nothing is a policy collection.

Registered from ``RetrievalAppConfig.ready()`` after collections (order 70), so ``catalog_app``
never imports this app.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from catalog_app.catalog import checks
from catalog_app.catalog.errors import CatalogError
from catalog_app.catalog.registry import Catalog, Family, Validated, register_family

FAMILY = "retrieval_policy"
VISIBILITIES = ("shared", "private")
_KEYS = {"visibility", "owner_agent_id", "classification", "policy"}


@dataclass(frozen=True, slots=True)
class Source:
    """Where a policy value comes from: a declared field, or a literal (None: absent)."""

    field: str | None = None
    literal: str | None = None


@dataclass(frozen=True, slots=True)
class CollectionPolicy:
    visibility: Source
    owner_agent_id: str | None  # a field name
    classification: Source
    policy: bool


SHARED = CollectionPolicy(Source(literal="shared"), None, Source(), False)


@dataclass(frozen=True, slots=True)
class RetrievalPolicy:
    collections: MappingProxyType  # name -> CollectionPolicy

    def of(self, collection: str) -> CollectionPolicy:
        return self.collections.get(collection, SHARED)

    @property
    def policy_collections(self) -> frozenset[str]:
        return frozenset(name for name, spec in self.collections.items() if spec.policy)


def default_body() -> dict:
    return {"collections": {}}


def validate(raw, path: str, catalog: Catalog) -> Validated:
    doc = checks.mapping(raw, path, allowed={"collections"}, required={"collections"})
    collections = checks.mapping(doc["collections"], "collections")
    body = {}
    for name, spec in collections.items():
        body[name] = _collection(name, spec, f"collections.{name}", catalog)
    return Validated(FAMILY, None, True, {"collections": body})


def _collection(name, spec, path: str, catalog: Catalog) -> dict:
    if not isinstance(name, str) or not catalog.versions("collection", name):
        raise CatalogError("reference", f"no collection named {name!r} is loaded", path)
    doc = checks.mapping(spec if spec is not None else {}, path, allowed=_KEYS)
    fields = _declared_anywhere(catalog, name)
    visibility = doc.get("visibility", "shared")
    checks.string(visibility, checks.at(path, "visibility"))
    if visibility in fields:
        _check_field(catalog, name, visibility, checks.at(path, "visibility"))
        visibility_body = {"field": visibility}
    elif visibility in VISIBILITIES:
        visibility_body = {"literal": visibility}
    else:
        raise CatalogError("schema",
                           f"{visibility!r} is neither a declared field of {name} nor one of shared, private",
                           checks.at(path, "visibility"))
    owner = doc.get("owner_agent_id")
    if owner is not None:
        checks.string(owner, checks.at(path, "owner_agent_id"))
        _check_field(catalog, name, owner, checks.at(path, "owner_agent_id"))
    elif visibility_body != {"literal": "shared"}:
        raise CatalogError("schema",
                           "records that can be private need owner_agent_id: the field naming their owning agent",
                           checks.at(path, "owner_agent_id"))
    classification = doc.get("classification")
    classification_body = None
    if classification is not None:
        checks.string(classification, checks.at(path, "classification"))
        if classification in fields:
            _check_field(catalog, name, classification, checks.at(path, "classification"))
            classification_body = {"field": classification}
        else:
            classification_body = {"literal": classification}
    return {"visibility": visibility_body, "owner_agent_id": owner, "classification": classification_body,
            "policy": checks.boolean(doc.get("policy", False), checks.at(path, "policy"))}


def _declared_anywhere(catalog: Catalog, collection: str) -> set[str]:
    return {field for definition in catalog.versions("collection", collection) for field in definition.value.fields}


def _check_field(catalog: Catalog, collection: str, field: str, path: str) -> None:
    for definition in catalog.versions("collection", collection):
        declared = definition.value.fields.get(field)
        if declared is None or declared.type != "string" or declared.is_array:
            raise CatalogError("field_reference", f"{field!r} must be a declared single-valued string field "
                               f"in every version of {collection}; version {definition.version} does not have it", path)


def check_family(catalog: Catalog) -> list[tuple[str, CatalogError]]:
    """The stored file still holds against the catalog as it is now (collections change)."""
    definition = catalog.get(FAMILY, FAMILY)
    if definition is None or definition.version == 0:  # the built-in default names nothing
        return []
    issues = []
    for name, spec in definition.body["collections"].items():
        path = f"collections.{name}"
        if not catalog.versions("collection", name):
            issues.append((definition.source_file, CatalogError("reference", f"no collection named {name!r} is loaded",
                                                                path)))
            continue
        for key in ("visibility", "classification"):
            source = spec[key] or {}
            if "field" in source:
                issues.extend(_field_issue(definition.source_file, catalog, name, source["field"], f"{path}.{key}"))
        if spec["owner_agent_id"] is not None:
            issues.extend(_field_issue(definition.source_file, catalog, name, spec["owner_agent_id"],
                                       f"{path}.owner_agent_id"))
    return issues


def _field_issue(file: str, catalog: Catalog, collection: str, field: str, path: str):
    try:
        _check_field(catalog, collection, field, path)
    except CatalogError as error:
        return [(file, error)]
    return []


def build(body: dict) -> RetrievalPolicy:
    def source(value) -> Source:
        return Source(**value) if value else Source()

    return RetrievalPolicy(MappingProxyType({
        name: CollectionPolicy(source(spec["visibility"]), spec["owner_agent_id"], source(spec["classification"]),
                               spec["policy"])
        for name, spec in body["collections"].items()}))


def retrieval_policy(catalog: Catalog) -> RetrievalPolicy:
    return catalog.value(FAMILY, FAMILY)


def register() -> None:
    register_family(Family(
        name=FAMILY, order=70, patterns=("conf/retrieval.yaml",), shape="single", top_key=None, single_name=FAMILY,
        versioned=False, validate=validate, build=build, default_body=default_body, check_family=check_family))
