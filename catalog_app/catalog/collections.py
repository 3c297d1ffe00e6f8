"""``collections/*.yaml``: versioned record contracts.

The contract (hashed into every record as ``collection_hash``) is ``name, version, mode,
schema, text_projection, fields, required_processors``; the bindings ``active,
optional_processors, search_profile, allowed_search_profiles, answerable, role_field,
thread_field`` are not part of it, so editing them never strands stored rows.

``role_field`` names the declared field whose value says who spoke a passage (its role or
speaker); ``thread_field`` names the declared field whose value identifies a conversation
thread. Both only say how stored rows are read (the memory lookups and brief), never what a
record may hold, which is why they are bindings. Each must name a declared scalar field
(``role_field``: a string; ``thread_field``: a string or an integer). They enter the stored body
only when set, so definitions stored before the keys existed keep their hash.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from types import MappingProxyType

import jsonschema

from . import checks
from .errors import CatalogError
from .hashing import definition_hash
from .processors import schema_leaf
from .registry import Catalog, Validated

MODES = ("event", "keyed", "mixed")
FIELD_TYPES = ("string", "number", "integer", "boolean", "datetime")
FIELD_PATH = re.compile(r"^(content|annotations)\.[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
PLACEHOLDER = re.compile(r"\{\{\s*([^{}\s]+)\s*\}\}")
BUILTIN_PROFILES = ("pg_default",)
CONTRACT_KEYS = ("name", "version", "mode", "schema", "text_projection", "fields", "required_processors")
_ALLOWED = {"name", "version", "active", "mode", "schema", "text_projection", "fields", "required_processors",
            "optional_processors", "search_profile", "allowed_search_profiles", "answerable", "role_field",
            "thread_field"}
_READING_FIELD_TYPES = {"role_field": ("string",), "thread_field": ("string", "integer")}


@dataclass(frozen=True, slots=True)
class DeclaredField:
    name: str
    path: tuple[str, ...]  # ("content", "channel") or ("annotations", "sentiment", "label")
    type: str  # one of FIELD_TYPES
    is_array: bool
    filter: bool
    sort: bool
    project: bool

    @property
    def signature(self) -> tuple:
        return (self.type, self.is_array, self.filter, self.sort)


@dataclass(frozen=True, slots=True)
class Collection:
    name: str
    version: int
    mode: str
    schema: MappingProxyType
    text_projection: str | None
    fields: MappingProxyType  # name -> DeclaredField
    required_processors: tuple[str, ...]
    optional_processors: tuple[str, ...]
    search_profile: str
    allowed_search_profiles: tuple[str, ...]
    answerable: bool
    contract_hash: str
    role_field: str | None  # the declared field holding who spoke (module docstring)
    thread_field: str | None  # the declared field identifying a conversation thread

    @property
    def processors(self) -> tuple[str, ...]:
        return self.required_processors + self.optional_processors


def validate(raw, path: str, catalog: Catalog) -> Validated:
    doc = checks.mapping(raw, path, allowed=_ALLOWED, required={"name", "version", "mode", "schema", "search_profile"})
    name = checks.name(doc["name"], checks.at(path, "name"))
    if name.startswith("_"):
        raise CatalogError("reserved", "collection names starting with _ are reserved", checks.at(path, "name"))
    version = checks.integer(doc["version"], checks.at(path, "version"), minimum=1)
    active = checks.boolean(doc.get("active", False), checks.at(path, "active"))
    mode = doc["mode"]
    if mode not in MODES:
        raise CatalogError("schema", f"must be one of {', '.join(MODES)}", checks.at(path, "mode"))
    schema = _schema(doc["schema"], checks.at(path, "schema"))
    projection = doc.get("text_projection")
    if projection is not None:
        checks.string(projection, checks.at(path, "text_projection"))
        for ref in PLACEHOLDER.findall(projection):
            if ref not in schema.get("properties", {}):
                raise CatalogError("template_reference", f"{{{{{ref}}}}} is not a property of the schema",
                                   checks.at(path, "text_projection"))
    required = checks.name_list(doc.get("required_processors", []), checks.at(path, "required_processors"),
                                checks.PROCESSOR_NAME)
    optional = checks.name_list(doc.get("optional_processors", []), checks.at(path, "optional_processors"),
                                checks.PROCESSOR_NAME)
    overlap = set(required) & set(optional)
    if overlap:
        raise CatalogError("schema", f"{', '.join(sorted(overlap))} cannot be both required and optional",
                           checks.at(path, "optional_processors"))
    for key, names in (("required_processors", required), ("optional_processors", optional)):
        for index, processor_name in enumerate(names):
            _check_processor(catalog, name, processor_name, key == "required_processors",
                             checks.at(path, f"{key}[{index}]"))
    fields = _fields(doc.get("fields") or {}, checks.at(path, "fields"), schema, catalog, required)
    profiles = _known_profiles(catalog)
    profile = checks.name(doc["search_profile"], checks.at(path, "search_profile"))
    if profile not in profiles:
        raise CatalogError("search_profile", f"unknown search profile {profile!r}", checks.at(path, "search_profile"))
    allowed_profiles = checks.name_list(doc.get("allowed_search_profiles", []),
                                        checks.at(path, "allowed_search_profiles"),
                                        re.compile(r"^[a-z][a-z0-9_.-]{0,63}$"))
    for index, other in enumerate(allowed_profiles):
        if other not in profiles:
            raise CatalogError("search_profile", f"unknown search profile {other!r}",
                               checks.at(path, f"allowed_search_profiles[{index}]"))
    body = {"name": name, "version": version, "mode": mode, "schema": schema, "text_projection": projection,
            "fields": fields, "required_processors": required, "optional_processors": optional,
            "search_profile": profile, "allowed_search_profiles": allowed_profiles,
            "answerable": checks.boolean(doc.get("answerable", False), checks.at(path, "answerable"))}
    for key in _READING_FIELD_TYPES:
        if key in doc:
            body[key] = _reading_field(key, doc[key], checks.at(path, key), fields)
    return Validated(name, version, active, body, contract_hash(body))


def contract_hash(body: dict) -> str:
    return definition_hash({key: body[key] for key in CONTRACT_KEYS})


def _schema(schema, path: str) -> dict:
    if not isinstance(schema, dict):
        raise CatalogError("collection_schema", "must be a JSON Schema mapping", path)
    problem = _meta_schema_problem(json.dumps(schema))
    if problem is not None:
        raise CatalogError("collection_schema", f"not a valid JSON Schema 2020-12: {problem}", path)
    if schema.get("type") != "object":
        raise CatalogError("collection_schema", "the root must be type: object", checks.at(path, "type"))
    text = (schema.get("properties") or {}).get("text")
    if not isinstance(text, dict) or text.get("type") != "string":
        raise CatalogError("collection_schema", "the schema must declare a string property text",
                           checks.at(path, "properties.text"))
    if "text" not in (schema.get("required") or []):
        raise CatalogError("collection_schema", "text must be required", checks.at(path, "required"))
    return schema


@functools.lru_cache(maxsize=256)
def _meta_schema_problem(schema_json: str) -> str | None:
    """The message of the first error of the schema ``schema_json`` (its JSON, in its own key
    order, which decides which error comes first) against the 2020-12 meta-schema, or ``None``.
    A pure function of the schema, cached: checking against the meta-schema is the slow part of
    compiling a catalog, and every load compiles the same schemas again."""
    try:
        jsonschema.Draft202012Validator.check_schema(json.loads(schema_json))
    except jsonschema.SchemaError as error:
        return error.message
    return None


def _check_processor(catalog: Catalog, collection: str, processor_name: str, required: bool, path: str) -> None:
    processor = catalog.value("processor", processor_name)
    if processor is None:
        raise CatalogError("reference", f"unknown processor {processor_name!r}", path)
    if collection not in processor.input_collections:
        raise CatalogError("processor_scope",
                           f"processor {processor_name} does not list {collection} in input.collections", path)
    if required and processor.input_types:
        raise CatalogError("required_processor_scope",
                           f"required processor {processor_name} narrows input.types; it must apply to every record",
                           path)
    if required and processor.kind == "json" and processor.default_output is None:
        raise CatalogError("required_processor_default",
                           f"required json processor {processor_name} must declare default_output", path)


def _fields(raw, path: str, schema: dict, catalog: Catalog, required: list[str]) -> dict:
    checks.mapping(raw, path)
    result = {}
    for field_name, spec in raw.items():
        field_path = checks.at(path, field_name)
        checks.name(field_name, field_path, checks.FIELD_NAME)
        spec = checks.mapping(spec, field_path, allowed={"path", "type", "filter", "sort", "project"},
                              required={"path", "type"})
        dotted = spec["path"]
        if not isinstance(dotted, str) or not FIELD_PATH.fullmatch(dotted):
            raise CatalogError("field_path",
                               "must be content.<name>[.<name>...] or annotations.<processor>[.<name>...]",
                               checks.at(field_path, "path"))
        declared_type, is_array = _field_type(spec["type"], checks.at(field_path, "type"))
        flags = {flag: checks.boolean(spec.get(flag, False), checks.at(field_path, flag))
                 for flag in ("filter", "sort", "project")}
        if is_array and flags["sort"]:
            raise CatalogError("field_type", "array fields cannot be sortable", checks.at(field_path, "sort"))
        leaf = _resolve(dotted, schema, catalog, checks.at(field_path, "path"))
        if not _type_matches(leaf, declared_type, is_array):
            raise CatalogError("field_type", f"{dotted} is not declared as {spec['type']} in its schema",
                               checks.at(field_path, "type"))
        result[field_name] = {"path": dotted, "type": spec["type"], **flags}
    return result


def _reading_field(key: str, value, path: str, fields: dict) -> str:
    """``role_field`` / ``thread_field``: the name of a declared scalar field of an allowed type."""
    field_name = checks.name(value, path, checks.FIELD_NAME)
    spec = fields.get(field_name)
    if spec is None:
        declared = ", ".join(sorted(fields)) or "none declared"
        raise CatalogError("reference", f"{field_name!r} is not a declared field (declared: {declared})", path)
    allowed = _READING_FIELD_TYPES[key]
    if spec["type"] not in allowed:
        raise CatalogError("field_type", f"field {field_name} is {spec['type']}; {key} needs a "
                           f"{' or '.join(allowed)} field", path)
    return field_name


def _field_type(value, path: str) -> tuple[str, bool]:
    if isinstance(value, list) and len(value) == 1 and value[0] in FIELD_TYPES:
        return value[0], True
    if value in FIELD_TYPES:
        return value, False
    raise CatalogError("field_type", f"must be one of {', '.join(FIELD_TYPES)} or a one-element list of one", path)


def _resolve(dotted: str, schema: dict, catalog: Catalog, path: str) -> dict:
    parts = dotted.split(".")
    if parts[0] == "content":
        leaf = schema_leaf(schema, parts[1:])
    else:
        processor = catalog.value("processor", parts[1]) if len(parts) > 1 else None
        if processor is None or processor.kind != "json":
            raise CatalogError("field_path", f"annotations.{parts[1] if len(parts) > 1 else ''} "
                                             "is not a json processor", path)
        output_schema = dict(processor.output_schema)
        leaf = schema_leaf(output_schema, parts[2:]) if len(parts) > 2 else output_schema
    if leaf is None:
        raise CatalogError("field_path", f"{dotted} does not resolve in the schema", path)
    return leaf


def _type_matches(leaf: dict, declared: str, is_array: bool) -> bool:
    if is_array:
        items = leaf.get("items")
        return leaf.get("type") == "array" and isinstance(items, dict) and _type_matches(items, declared, False)
    json_type = leaf.get("type")
    if declared == "datetime":
        return json_type == "string" and leaf.get("format") == "date-time"
    if declared == "number":
        return json_type in ("number", "integer")
    return json_type == declared


def _known_profiles(catalog: Catalog) -> set[str]:
    return set(BUILTIN_PROFILES) | set(catalog.active_values("search_profile"))


def build(body: dict) -> Collection:
    fields = {}
    for field_name, spec in body["fields"].items():
        is_array = isinstance(spec["type"], list)
        fields[field_name] = DeclaredField(field_name, tuple(spec["path"].split(".")),
                                           spec["type"][0] if is_array else spec["type"], is_array,
                                           spec["filter"], spec["sort"], spec["project"])
    return Collection(
        name=body["name"], version=body["version"], mode=body["mode"], schema=MappingProxyType(body["schema"]),
        text_projection=body["text_projection"], fields=MappingProxyType(fields),
        required_processors=tuple(body["required_processors"]),
        optional_processors=tuple(body["optional_processors"]), search_profile=body["search_profile"],
        allowed_search_profiles=tuple(body["allowed_search_profiles"]), answerable=body["answerable"],
        contract_hash=contract_hash(body), role_field=body.get("role_field"), thread_field=body.get("thread_field"))
