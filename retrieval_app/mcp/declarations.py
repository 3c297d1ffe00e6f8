"""``mcp/*.yaml``: the agent tool allowlist, the ``mcp`` catalog family.

Shape (one declaration per file)::

    name: agent                 # public name
    version: 1                  # integer >= 1; (name, version) is immutable once loaded
    active: true
    title: Customer memory
    instructions: How an agent should use these tools.
    tools:
      - {name: customer_context, kind: view, view: {name: customer_context, version: 1},
         description: Search one customer's memory.}
      - {name: search_memory, kind: retrieve, description: ...}
      - {name: brief, kind: brief, description: ...}
      - {name: grep, kind: lookup, lookup: grep, description: ...}
      - {name: open_record, kind: record, description: ...}
      - {name: remember, kind: ingest, collection: {name: main, version: 1}, description: ...}
      - {name: forget, kind: forget, collection: {name: main, version: 1}, description: ...}
      - {name: rate_context, kind: feedback, description: ...}

Nothing is exported implicitly: only declared tools exist. ``view`` and ``ingest`` tools bind
an exact version that must be loaded; ``lookup`` tools name one lookup. A workspace has at most
one active declaration (the one ``/mcp`` and ``GET /tools`` serve). Registered from
``RetrievalAppConfig.ready()`` after views (order 80), so ``catalog_app`` never imports this app.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from catalog_app.catalog import checks
from catalog_app.catalog.errors import CatalogError
from catalog_app.catalog.registry import Catalog, Family, Validated, register_family
from catalog_app.record_limits import ENTITY_CHARS

FAMILY = "mcp"
KINDS = ("view", "retrieve", "brief", "lookup", "record", "ingest", "forget", "feedback")
LOOKUPS = ("grep", "latest", "around", "read", "ls", "history")
# What each kind binds: the key naming its target, and the catalog family of that target.
# A forget tool is bound to one collection: it erases an entity's records there and nowhere else.
BINDING_KEY = {"view": "view", "ingest": "collection", "forget": "collection", "lookup": "lookup"}
_TARGET_FAMILY = {"view": "view", "ingest": "collection", "forget": "collection"}
TOOL_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
MAX_TOOLS = 64
MAX_DESCRIPTION = 2000
MAX_INSTRUCTIONS = 8000
_KEYS = {"name", "version", "active", "title", "instructions", "tools"}
_TOOL_KEYS = {"name", "kind", "description", "title", "view", "collection", "lookup", "entity_prefix"}


@dataclass(frozen=True, slots=True)
class ToolDeclaration:
    name: str
    kind: str
    description: str
    title: str | None
    target: tuple[str, int] | None  # (name, version) of the bound view or collection
    lookup: str | None
    # A forget tool's entity scope: it erases only entities starting with this (None: any).
    entity_prefix: str | None = None


@dataclass(frozen=True, slots=True)
class Interface:
    name: str
    version: int
    title: str
    instructions: str
    tools: tuple[ToolDeclaration, ...]


def validate(raw, path: str, catalog: Catalog) -> Validated:
    doc = checks.mapping(raw, path, allowed=_KEYS, required={"name", "version", "title", "instructions", "tools"})
    name = checks.name(doc["name"], checks.at(path, "name"))
    version = checks.integer(doc["version"], checks.at(path, "version"), minimum=1)
    active = checks.boolean(doc.get("active", False), checks.at(path, "active"))
    title = _text(doc["title"], checks.at(path, "title"), 200)
    instructions = _text(doc["instructions"], checks.at(path, "instructions"), MAX_INSTRUCTIONS)
    tools = doc["tools"]
    if not isinstance(tools, list) or not tools or len(tools) > MAX_TOOLS:
        raise CatalogError("schema", f"must be a list of 1 to {MAX_TOOLS} tools", checks.at(path, "tools"))
    body_tools, seen = [], {}
    for index, tool in enumerate(tools):
        tool_path = checks.at(checks.at(path, "tools"), index)
        body = _tool(tool, tool_path, catalog)
        if body["name"] in seen:
            raise CatalogError("duplicate", f"tool {body['name']!r} is also declared at {seen[body['name']]}",
                               checks.at(tool_path, "name"))
        seen[body["name"]] = tool_path
        body_tools.append(body)
    body = {"name": name, "version": version, "title": title, "instructions": instructions, "tools": body_tools}
    return Validated(name, version, active, body)


def _text(value, path: str, limit: int) -> str:
    text = checks.string(value, path, max_length=limit)
    if not text.strip():
        raise CatalogError("schema", "must not be blank", path)
    return text


def _tool(raw, path: str, catalog: Catalog) -> dict:
    doc = checks.mapping(raw, path, allowed=_TOOL_KEYS, required={"name", "kind", "description"})
    name = checks.name(doc["name"], checks.at(path, "name"), TOOL_NAME)
    kind = doc["kind"]
    if kind not in KINDS:
        raise CatalogError("schema", f"must be one of {', '.join(KINDS)}", checks.at(path, "kind"))
    for key in ("view", "collection", "lookup"):
        if key in doc and BINDING_KEY.get(kind) != key:
            raise CatalogError("schema", f"a {kind} tool takes no {key}", checks.at(path, key))
    binding_key = BINDING_KEY.get(kind)
    if binding_key is not None and binding_key not in doc:
        raise CatalogError("schema", f"a {kind} tool needs {binding_key}", checks.at(path, binding_key))
    body = {"name": name, "kind": kind, "description": _text(doc["description"], checks.at(path, "description"),
                                                               MAX_DESCRIPTION),
            "title": _text(doc["title"], checks.at(path, "title"), 200) if "title" in doc else None,
            "target": None, "lookup": None}
    if kind == "lookup":
        lookup = doc["lookup"]
        if lookup not in LOOKUPS:
            raise CatalogError("schema", f"must be one of {', '.join(LOOKUPS)}", checks.at(path, "lookup"))
        body["lookup"] = lookup
    elif binding_key is not None:
        body["target"] = _target(doc[binding_key], checks.at(path, binding_key), _TARGET_FAMILY[kind], catalog)
    if "entity_prefix" in doc:
        where = checks.at(path, "entity_prefix")
        if kind != "forget":
            raise CatalogError("schema", f"a {kind} tool takes no entity_prefix", where)
        prefix = doc["entity_prefix"]
        if not isinstance(prefix, str) or not prefix.strip() or len(prefix) > ENTITY_CHARS:
            raise CatalogError("schema", f"must be a non-blank string of at most {ENTITY_CHARS} characters",
                               where)
        body["entity_prefix"] = prefix
    return body


def _target(raw, path: str, family: str, catalog: Catalog) -> dict:
    doc = checks.mapping(raw, path, allowed={"name", "version"}, required={"name", "version"})
    name = checks.name(doc["name"], checks.at(path, "name"))
    version = checks.integer(doc["version"], checks.at(path, "version"), minimum=1)
    if catalog.get(family, name, version) is None:
        loaded = [d.version for d in catalog.versions(family, name)]
        hint = f"loaded versions: {', '.join(map(str, loaded))}" if loaded else f"no {family} {name!r} is loaded"
        raise CatalogError("reference", f"{family} {name}@{version} is not loaded ({hint}); tools bind an exact "
                           "version", path)
    return {"name": name, "version": version}


def check_family(catalog: Catalog) -> list[tuple[str, CatalogError]]:
    """One active declaration per workspace: it is the allowlist ``/mcp`` serves."""
    active = [d for d in catalog.all(FAMILY) if d.active]
    if len(active) < 2:
        return []
    names = ", ".join(f"{d.name}@{d.version}" for d in active)
    return [(d.source_file, CatalogError("active_collision", f"only one MCP declaration may be active; active: "
                                         f"{names}", "active")) for d in active[1:]]


def build(body: dict) -> Interface:
    return Interface(body["name"], body["version"], body["title"], body["instructions"], tuple(
        ToolDeclaration(tool["name"], tool["kind"], tool["description"], tool["title"],
                        (tool["target"]["name"], tool["target"]["version"]) if tool["target"] else None,
                        tool["lookup"], tool.get("entity_prefix"))
        for tool in body["tools"]))


def active_interface(catalog: Catalog):
    """The active declaration's ``Definition`` (its ``value`` is an ``Interface``), or None."""
    return next((d for d in catalog.all(FAMILY) if d.active), None)


def register() -> None:
    register_family(Family(
        name=FAMILY, order=80, patterns=("mcp/*.yaml",), shape="single", top_key=None, versioned=True,
        validate=validate, build=build, check_family=check_family))
