"""``conf/processors.yaml`` (or ``conf/processors/*.yaml``): enrichment processors.

Kinds: ``embedding`` (vector into the active space), ``score`` (a number in ``scale``) and
``json`` (an object valid against ``output_schema``). Sources: ``llm`` (a model alias),
``client`` (supplied in ``POST /records``), ``constant``. At most 8 score names in all and at
most 4 llm score processors.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import jsonschema

from memseek_site.conf import memseek_setting

from . import checks
from .errors import CatalogError
from .hashing import canonical_json
from .registry import Catalog, Validated

MAX_SCORE_NAMES = 8
MAX_LLM_SCORERS = 4

_COMMON = {"name", "kind", "input", "supersedes"}
_ALLOWED = {
    ("embedding", None): _COMMON,
    ("score", "llm"): _COMMON | {"source", "scale", "default", "render", "model", "prompt"},
    ("score", "client"): _COMMON | {"source", "scale", "render"},
    ("score", "constant"): _COMMON | {"source", "scale", "value", "render"},
    ("json", "llm"): _COMMON | {"source", "output_schema", "default_output", "score_fields", "model", "prompt"},
    ("json", "client"): _COMMON | {"source", "output_schema", "default_output", "score_fields"},
    ("json", "constant"): _COMMON | {"source", "output_schema", "default_output", "score_fields"},
}
_REQUIRED = {
    ("score", "llm"): {"scale", "default", "model", "prompt"},
    ("score", "client"): {"scale"},
    ("score", "constant"): {"scale", "value"},
    ("json", "llm"): {"output_schema", "model", "prompt"},
    ("json", "client"): {"output_schema"},
    ("json", "constant"): {"output_schema", "default_output"},
}


@dataclass(frozen=True, slots=True)
class Processor:
    name: str
    kind: str
    source: str | None
    input_collections: tuple[str, ...]
    input_types: tuple[str, ...]
    supersedes: str | None
    scale: tuple[float, float] | None
    default: float | None
    value: float | None
    render: bool
    model: str | None
    prompt: str | None
    output_schema: MappingProxyType | None
    default_output: object
    score_fields: MappingProxyType

    def applies_to(self, record_type: str) -> bool:
        return not self.input_types or record_type in self.input_types

    def clamp(self, score: float) -> float:
        low, high = self.scale
        return min(max(score, low), high)

    @property
    def score_names(self) -> tuple[str, ...]:
        own = (self.name,) if self.kind == "score" else ()
        return own + tuple(self.score_fields)


def validate(raw, path: str, catalog: Catalog) -> Validated:
    if not isinstance(raw, dict):
        raise CatalogError("schema", "a processor must be a mapping", path)
    kind = raw.get("kind")
    if kind not in ("embedding", "score", "json"):
        raise CatalogError("schema", "must be embedding, score or json", checks.at(path, "kind"))
    source = raw.get("source") if kind != "embedding" else None
    if kind != "embedding" and source not in ("llm", "client", "constant"):
        raise CatalogError("schema", "must be llm, client or constant", checks.at(path, "source"))
    checks.mapping(raw, path, allowed=_ALLOWED[(kind, source)],
                   required={"name", "kind", "input"} | _REQUIRED.get((kind, source), set()))
    name = checks.name(raw["name"], checks.at(path, "name"), checks.PROCESSOR_NAME)
    inp = checks.mapping(raw["input"], checks.at(path, "input"), allowed={"collections", "types"},
                         required={"collections"})
    body = {"name": name, "kind": kind, "source": source,
            "input": {"collections": checks.name_list(inp["collections"], checks.at(path, "input.collections")),
                      "types": checks.name_list(inp.get("types", []), checks.at(path, "input.types"))},
            "supersedes": raw.get("supersedes")}
    if body["supersedes"] is not None:
        checks.name(body["supersedes"], checks.at(path, "supersedes"), checks.PROCESSOR_NAME)
    if kind == "score":
        body.update(_score_body(raw, path, source))
    if kind == "json":
        body.update(_json_body(raw, path, source))
    if source == "llm":
        body["model"] = checks.name(raw["model"], checks.at(path, "model"), checks.PROCESSOR_NAME)
        body["prompt"] = checks.string(raw["prompt"], checks.at(path, "prompt"))
        models = catalog.value("models", "models")
        if body["model"] not in models.aliases:
            raise CatalogError("reference", f"model alias {body['model']!r} is not declared in conf/models.yaml",
                               checks.at(path, "model"))
    return Validated(name, None, True, body)


def _score_body(raw: dict, path: str, source: str) -> dict:
    scale = raw["scale"]
    if not isinstance(scale, list) or len(scale) != 2:
        raise CatalogError("schema", "must be [low, high]", checks.at(path, "scale"))
    low, high = (checks.number(v, checks.at(path, f"scale[{i}]")) for i, v in enumerate(scale))
    if low >= high:
        raise CatalogError("schema", "low must be below high", checks.at(path, "scale"))
    body = {"scale": [low, high], "render": checks.boolean(raw.get("render", False), checks.at(path, "render"))}
    for key in ("default", "value"):
        if key in raw:
            value = checks.number(raw[key], checks.at(path, key))
            if not low <= value <= high:
                raise CatalogError("schema", f"must lie within the scale [{low}, {high}]", checks.at(path, key))
            body[key] = value
    return body


def _json_body(raw: dict, path: str, source: str) -> dict:
    schema = raw["output_schema"]
    schema_path = checks.at(path, "output_schema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise CatalogError("output_schema", "must be a JSON Schema with type: object at the root", schema_path)
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        raise CatalogError("output_schema", error.message, schema_path) from None
    body = {"output_schema": schema, "score_fields": {}}
    if "default_output" in raw:
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(raw["default_output"]))
        if errors:
            raise CatalogError("default_output", errors[0].message, checks.at(path, "default_output"))
        if len(canonical_json(raw["default_output"]).encode()) > memseek_setting("MAX_ANNOTATION_BYTES"):
            raise CatalogError("default_output", "exceeds MAX_ANNOTATION_BYTES", checks.at(path, "default_output"))
        body["default_output"] = raw["default_output"]
    fields = raw.get("score_fields") or {}
    checks.mapping(fields, checks.at(path, "score_fields"))
    for score_name, dotted in fields.items():
        field_path = checks.at(path, f"score_fields.{score_name}")
        checks.name(score_name, field_path, checks.PROCESSOR_NAME)
        leaf = schema_leaf(schema, str(dotted).split("."))
        if leaf is None or leaf.get("type") not in ("number", "integer"):
            raise CatalogError("score_field", f"{dotted!r} is not a numeric leaf of output_schema", field_path)
        body["score_fields"][score_name] = dotted
    return body


def schema_leaf(schema: dict, parts: list[str]) -> dict | None:
    """The subschema at ``parts`` under object ``properties``, or None (also for a boolean
    subschema such as ``true``, which declares no type to check against)."""
    node = schema
    for part in parts:
        if not isinstance(node, dict) or node.get("type") != "object":
            return None
        node = (node.get("properties") or {}).get(part)
        if node is None:
            return None
    return node if isinstance(node, dict) else None


def check_family(catalog: Catalog) -> list[tuple[str, CatalogError]]:
    """Score-name limits and uniqueness, and ``supersedes`` chains (linear, same kind, acyclic)."""
    problems = []
    processors = {d.name: d for d in catalog.all("processor") if d.active}
    owners: dict[str, str] = {}
    llm_scorers = 0
    # A limit is reported in the file of the processor that first went past it: processors
    # may live in conf/processors/*.yaml, so conf/processors.yaml need not exist.
    over_names_file = over_llm_file = None
    for definition in processors.values():
        processor = definition.value
        for score_name in processor.score_names:
            if score_name in owners:
                problems.append((definition.source_file, CatalogError(
                    "score_collision", f"score name {score_name!r} is produced by both {owners[score_name]} and "
                    f"{processor.name}", "processors")))
            owners[score_name] = processor.name
            if len(owners) > MAX_SCORE_NAMES and over_names_file is None:
                over_names_file = definition.source_file
        llm_scorers += processor.kind == "score" and processor.source == "llm"
        if llm_scorers > MAX_LLM_SCORERS and over_llm_file is None:
            over_llm_file = definition.source_file
    if over_names_file is not None:
        problems.append((over_names_file, CatalogError("limit", f"{len(owners)} score names; at most {MAX_SCORE_NAMES}",
                                                       "processors")))
    if over_llm_file is not None:
        problems.append((over_llm_file, CatalogError(
            "limit", f"{llm_scorers} llm score processors; at most {MAX_LLM_SCORERS}", "processors")))
    superseded_by: dict[str, str] = {}
    for definition in processors.values():
        processor = definition.value
        if processor.supersedes is None:
            continue
        older = processors.get(processor.supersedes)
        error = None
        if older is None:
            error = f"supersedes unknown processor {processor.supersedes!r}"
        elif older.value.kind != processor.kind:
            error = f"supersedes {older.name}, which is a {older.value.kind} processor, not {processor.kind}"
        elif processor.supersedes in superseded_by:
            error = f"{processor.supersedes} is already superseded by {superseded_by[processor.supersedes]}"
        elif _chain_has_cycle(processors, processor.name):
            error = "the supersedes chain is cyclic"
        if error:
            problems.append((definition.source_file, CatalogError("supersedes", f"{processor.name}: {error}",
                                                                  "processors")))
        superseded_by[processor.supersedes] = processor.name
    return problems


def _chain_has_cycle(processors: dict, start: str) -> bool:
    seen = {start}
    current = processors[start].value.supersedes
    while current is not None and current in processors:
        if current in seen:
            return True
        seen.add(current)
        current = processors[current].value.supersedes
    return False


def build(body: dict) -> Processor:
    scale = tuple(body["scale"]) if "scale" in body else None
    return Processor(
        name=body["name"], kind=body["kind"], source=body["source"],
        input_collections=tuple(body["input"]["collections"]), input_types=tuple(body["input"]["types"]),
        supersedes=body["supersedes"], scale=scale, default=body.get("default"), value=body.get("value"),
        render=body.get("render", False), model=body.get("model"), prompt=body.get("prompt"),
        output_schema=MappingProxyType(body["output_schema"]) if "output_schema" in body else None,
        default_output=body.get("default_output"), score_fields=MappingProxyType(body.get("score_fields", {})))


def supersession_chain(catalog: Catalog, name: str) -> tuple[str, ...]:
    """``name`` followed by every processor it supersedes, newest first (fallback order)."""
    chain = [name]
    processor = catalog.value("processor", name)
    while processor is not None and processor.supersedes and processor.supersedes not in chain:
        chain.append(processor.supersedes)
        processor = catalog.value("processor", processor.supersedes)
    return tuple(chain)
