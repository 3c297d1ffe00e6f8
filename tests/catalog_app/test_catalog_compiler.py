"""The catalog compiler and ``load_catalog``.

The first half is a table of broken catalogs: each row is the example catalog
(``fixtures/catalogs/example``) copied into ``tmp_path`` with one edit, or a static catalog
under ``fixtures/catalogs/broken/<case>/``, and the exact ``(file, dotted path, code)`` of every
issue it must produce. Edits add their own small definitions (collection ``notes``, processors
in ``conf/processors/probe.yaml``, a ``conf/models.yaml``) rather than rewrite the example's, so
the table does not depend on details of the example that other work may change.

The second half covers load semantics against the database: all-or-nothing writes,
idempotence, dry runs, ``(name, version)`` immutability, activation, processor revisions,
hashes, the workspace's ``catalog_revision``, the HNSW index, and the management command.
"""
from __future__ import annotations

import copy
import io
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from catalog_app.catalog import collections as collections_family
from catalog_app.catalog.compiler import compile_catalog
from catalog_app.catalog.errors import CatalogInvalid
from catalog_app.catalog.registry import Catalog
from catalog_app.models import Definition, Workspace
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.embedding_index import embedding_index_name

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "catalogs"
EXAMPLE = FIXTURES / "example"
BROKEN = FIXTURES / "broken"

NOTES = "collections/notes.yaml"
PROBE = "conf/processors/probe.yaml"
MODELS = "conf/models.yaml"
DROP = object()  # as a value in ``changed(...)``: remove the key


# --- building catalogs ----------------------------------------------------------------------

def changed(base: dict, changes: dict | None = None) -> dict:
    """A deep copy of ``base`` with ``{"dotted.path": value}`` applied (``DROP`` deletes)."""
    result = copy.deepcopy(base)
    for dotted, value in (changes or {}).items():
        *parents, last = dotted.split(".")
        node = result
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        if value is DROP:
            del node[last]
        else:
            node[last] = value
    return result


NOTES_BODY = {
    "name": "notes", "version": 1, "active": True, "mode": "event",
    "schema": {
        "type": "object", "required": ["text"],
        "properties": {
            "text": {"type": "string"},
            "title": {"type": "string"},
            "when": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "size": {"type": "integer", "minimum": 1},
            "ratio": {"type": "number"},
            "done": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "author": {"type": "object", "properties": {"name": {"type": "string"}}},
            "anything": True,
        },
    },
    "search_profile": "pg_default",
}

MODELS_BODY = {
    "providers": {
        "llm": {"adapter": "openai_compat", "base_url": "https://llm.example.com/v1", "api_key_env": "LLM_API_KEY"},
        "local": {"adapter": "sentence_transformers"},
    },
    "aliases": {"cheap": {"targets": ["llm:small"], "params": {"temperature": 0, "max_output_tokens": 1200},
                          "context_tokens": 60000}},
    "embedding": {"provider": "local", "model": "all-MiniLM-L6-v2", "dimensions": 384, "space": "minilm-l6-v2"},
    "defaults": {"derivation": "cheap", "fold": "cheap"},
}

REMOTE_EMBEDDING = {"provider": "llm", "model": "embed", "dimensions": 8, "space": "llm-v1"}

CLIENT_SCORE = {"name": "probe", "kind": "score", "source": "client", "input": {"collections": ["notes"]},
                "scale": [1, 10]}
CONSTANT_SCORE = {"name": "probe", "kind": "score", "source": "constant", "input": {"collections": ["notes"]},
                  "scale": [0, 1], "value": 0.5}
LLM_SCORE = {"name": "probe", "kind": "score", "source": "llm", "input": {"collections": ["notes"]},
             "scale": [1, 10], "default": 5, "model": "cheap", "prompt": "Rate 1-10."}
CLIENT_JSON = {"name": "probe", "kind": "json", "source": "client", "input": {"collections": ["notes"]},
               "output_schema": {"type": "object", "required": ["label"],
                                 "properties": {"label": {"type": "string"}, "weight": {"type": "number"},
                                                "detail": {"type": "object",
                                                           "properties": {"level": {"type": "integer"}}}}}}
CONSTANT_JSON = {**CLIENT_JSON, "source": "constant", "default_output": {"label": "none"}}
EMBEDDING = {"name": "probe", "kind": "embedding", "input": {"collections": ["notes"]}}


def put(rel: str, data):
    """An edit writing ``data`` (YAML-dumped, or raw ``str``/``bytes``) to ``rel``."""
    def edit(root: Path) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return edit


def notes(changes: dict | None = None, *more: dict, file: str = NOTES):
    """Collection file ``file`` holding ``notes`` (changed by ``changes``) and ``more`` bodies."""
    return put(file, {"collections": [changed(NOTES_BODY, changes), *more]})


def probe(*bodies: dict, file: str = PROBE):
    return put(file, {"processors": list(bodies)})


def models(changes: dict | None = None):
    return put(MODELS, changed(MODELS_BODY, changes))


def copy_file(source: str, target: str):
    def edit(root: Path) -> None:
        shutil.copyfile(root / source, root / target)
    return edit


def example_with(tmp_path: Path, *edits) -> Path:
    root = tmp_path / "catalog"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(EXAMPLE, root)
    for edit in edits:
        edit(root)
    return root


def issue_keys(invalid: CatalogInvalid) -> list[tuple[str, str, str]]:
    return sorted((issue.file, issue.path, issue.code) for issue in invalid.issues)


def definition_rows(workspace) -> list[tuple]:
    return sorted(Definition.objects.filter(workspace=workspace)
                  .values_list("family", "name", "version", "active", "hash"))


def actions(compiled) -> set[tuple[str, str, int, str]]:
    return {(c.family, c.name, c.version, c.action) for c in compiled.changes}


def _one_active_per_name(workspace) -> bool:
    names = Definition.objects.filter(workspace=workspace).order_by().values_list("family", "name").distinct()
    return all(Definition.objects.filter(workspace=workspace, family=family, name=name, active=True).count() == 1
               for family, name in names)


def _active_versions(workspace, name: str) -> list[int]:
    return list(Definition.objects.filter(workspace=workspace, family="collection", name=name, active=True)
                .values_list("version", flat=True))


# --- the table of broken catalogs ----------------------------------------------------------

@dataclass(frozen=True)
class Static:
    """A catalog used as it is: ``fixtures/catalogs/broken/<case>/``."""

    case: str


def static(case: str) -> Static:
    return Static(case)


def row(case_id: str, edits, *expected: tuple[str, str, str]):
    """One broken catalog: a ``Static`` one, or the example plus one edit (or a list of edits
    that together make one change), and every issue it must produce."""
    if callable(edits):
        edits = [edits]
    return pytest.param(edits, sorted(expected), id=case_id)


F = "collections[0].fields.f"  # the field every field row declares
TITLE_FIELD = {"path": "content.title", "type": "string"}
C0 = "collections[0]"
P0 = "processors[0]"

BROKEN_CATALOGS = [
    # YAML and files
    row("yaml-duplicate-key", static("duplicate_yaml_key"), (NOTES, "", "yaml")),
    row("yaml-duplicate-key-nested",
        put(NOTES, yaml.safe_dump({"collections": [NOTES_BODY]}, sort_keys=False)
            .replace("  text:\n        type: string\n", "  text:\n        type: string\n        type: integer\n")),
        (NOTES, "", "yaml")),
    row("yaml-syntax-error", put(NOTES, "collections: [\n"), (NOTES, "", "yaml")),
    row("yaml-two-documents", put(NOTES, "collections: []\n---\ncollections: []\n"), (NOTES, "", "yaml")),
    row("yaml-not-utf8", put(NOTES, b"\xff\xfecollections: []\n"), (NOTES, "", "yaml")),
    row("yaml-infinite-number", probe(changed(CLIENT_SCORE, {"scale": [1, float("inf")]})), (PROBE, "", "yaml")),
    row("yaml-non-string-key", put(NOTES, "collections:\n  - 1: one\n"), (NOTES, "", "yaml")),
    row("yaml-python-tag", put(NOTES, "collections: !!python/object/apply:os.getcwd []\n"), (NOTES, "", "yaml")),
    row("file-in-unread-folder", static("file_in_unread_folder"), ("misc/notes.yaml", "", "file_path")),
    row("file-in-nested-collections-folder", notes(file="collections/archive/notes.yaml"),
        ("collections/archive/notes.yaml", "", "file_path")),
    row("file-beside-conf-files", put("conf/extras.yaml", {"extras": []}), ("conf/extras.yaml", "", "file_path")),
    row("shape-top-key-not-collections", static("top_key_not_collections"), (NOTES, "", "shape")),
    row("mcp-tool-bound-to-an-unloaded-view", static("mcp_unbound_view"), ("mcp/agent.yaml", "tools[0].view",
                                                                          "reference")),
    row("shape-extra-top-key", put(NOTES, {"collections": [NOTES_BODY], "views": []}), (NOTES, "", "shape")),
    row("shape-top-level-list", put(NOTES, [NOTES_BODY]), (NOTES, "", "shape")),
    row("shape-empty-file", put(NOTES, ""), (NOTES, "", "shape")),
    row("shape-empty-list", put(NOTES, {"collections": []}), (NOTES, "collections", "shape")),
    row("shape-processors-not-list", put(PROBE, {"processors": CLIENT_SCORE}), (PROBE, "processors", "shape")),
    row("shape-definition-not-mapping", put(NOTES, {"collections": ["notes"]}), (NOTES, C0, "schema")),

    # Collections: keys, identity, mode
    row("collection-unknown-key", notes({"description": "Free text."}), (NOTES, f"{C0}.description", "schema")),
    row("collection-definition-hash-key", notes({"definition_hash": "0" * 64}),
        (NOTES, f"{C0}.definition_hash", "schema")),
    row("collection-missing-search-profile", notes({"search_profile": DROP}),
        (NOTES, f"{C0}.search_profile", "schema")),
    row("collection-missing-mode", notes({"mode": DROP}), (NOTES, f"{C0}.mode", "schema")),
    row("collection-name-uppercase", notes({"name": "Notes"}), (NOTES, f"{C0}.name", "schema")),
    row("collection-name-leading-digit", notes({"name": "9notes"}), (NOTES, f"{C0}.name", "schema")),
    row("collection-name-too-long", notes({"name": "n" * 65}), (NOTES, f"{C0}.name", "schema")),
    row("collection-name-reserved", notes({"name": "_system"}), (NOTES, f"{C0}.name", "schema")),
    row("collection-version-0", notes({"version": 0}), (NOTES, f"{C0}.version", "schema")),
    row("collection-version-string", notes({"version": "1"}), (NOTES, f"{C0}.version", "schema")),
    row("collection-version-bool", notes({"version": True}), (NOTES, f"{C0}.version", "schema")),
    row("collection-version-float", notes({"version": 1.5}), (NOTES, f"{C0}.version", "schema")),
    row("collection-active-not-bool", notes({"active": "yes"}), (NOTES, f"{C0}.active", "schema")),
    row("collection-answerable-not-bool", notes({"answerable": "no"}), (NOTES, f"{C0}.answerable", "schema")),
    row("collection-bad-mode", notes({"mode": "stream"}), (NOTES, f"{C0}.mode", "schema")),

    # Collections: the content schema
    row("schema-not-mapping", notes({"schema": "object"}), (NOTES, f"{C0}.schema", "collection_schema")),
    row("schema-root-not-object", notes({"schema.type": "array"}), (NOTES, f"{C0}.schema.type", "collection_schema")),
    row("schema-invalid-json-schema", notes({"schema.properties": 5}), (NOTES, f"{C0}.schema", "collection_schema")),
    row("schema-text-not-string", notes({"schema.properties.text": {"type": "integer"}}),
        (NOTES, f"{C0}.schema.properties.text", "collection_schema")),
    row("schema-text-missing", notes({"schema.properties.text": DROP, "schema.required": ["title"]}),
        (NOTES, f"{C0}.schema.properties.text", "collection_schema")),
    row("schema-text-not-required", notes({"schema.required": ["title"]}),
        (NOTES, f"{C0}.schema.required", "collection_schema")),
    row("text-projection-unknown-property", notes({"text_projection": "{{title}} by {{writer}}"}),
        (NOTES, f"{C0}.text_projection", "template_reference")),
    row("text-projection-blank", notes({"text_projection": "  "}), (NOTES, f"{C0}.text_projection", "schema")),

    # Collections: declared fields
    row("fields-not-mapping", notes({"fields": [{"path": "content.title", "type": "string"}]}),
        (NOTES, f"{C0}.fields", "schema")),
    row("field-name-bad", notes({"fields": {"Title": {"path": "content.title", "type": "string"}}}),
        (NOTES, f"{C0}.fields.Title", "schema")),
    row("field-unknown-key", notes({"fields.f": {"path": "content.title", "type": "string", "index": True}}),
        (NOTES, f"{F}.index", "schema")),
    row("field-missing-type", notes({"fields.f": {"path": "content.title"}}), (NOTES, f"{F}.type", "schema")),
    row("field-flag-not-bool", notes({"fields.f": {"path": "content.title", "type": "string", "filter": "yes"}}),
        (NOTES, f"{F}.filter", "schema")),
    row("field-path-other-root", notes({"fields.f": {"path": "body.title", "type": "string"}}),
        (NOTES, f"{F}.path", "field_path")),
    row("field-path-bare-root", notes({"fields.f": {"path": "content", "type": "string"}}),
        (NOTES, f"{F}.path", "field_path")),
    row("field-path-empty-segment", notes({"fields.f": {"path": "content..title", "type": "string"}}),
        (NOTES, f"{F}.path", "field_path")),
    row("field-path-not-string", notes({"fields.f": {"path": ["content", "title"], "type": "string"}}),
        (NOTES, f"{F}.path", "field_path")),
    row("field-path-unknown-property", notes({"fields.f": {"path": "content.missing", "type": "string"}}),
        (NOTES, f"{F}.path", "field_path")),
    row("field-path-unknown-nested-property", notes({"fields.f": {"path": "content.author.email", "type": "string"}}),
        (NOTES, f"{F}.path", "field_path")),
    row("field-path-through-scalar", notes({"fields.f": {"path": "content.title.first", "type": "string"}}),
        (NOTES, f"{F}.path", "field_path")),
    row("field-path-over-boolean-subschema", notes({"fields.f": {"path": "content.anything", "type": "string"}}),
        (NOTES, f"{F}.path", "field_path")),
    row("field-annotation-unknown-processor",
        notes({"fields.f": {"path": "annotations.ghost.label", "type": "string"}}),
        (NOTES, f"{F}.path", "field_path")),
    row("field-annotation-of-score-processor",
        [probe(CLIENT_SCORE), notes({"fields.f": {"path": "annotations.probe.label", "type": "string"},
                                     "optional_processors": ["probe"]})],
        (NOTES, f"{F}.path", "field_path")),
    row("field-annotation-path-not-in-output-schema",
        [probe(CLIENT_JSON), notes({"fields.f": {"path": "annotations.probe.missing", "type": "string"},
                                    "optional_processors": ["probe"]})],
        (NOTES, f"{F}.path", "field_path")),
    row("field-annotation-type-mismatch",
        [probe(CLIENT_JSON), notes({"fields.f": {"path": "annotations.probe.detail.level", "type": "string"},
                                    "optional_processors": ["probe"]})],
        (NOTES, f"{F}.type", "field_type")),
    row("field-type-mismatch", notes({"fields.f": {"path": "content.size", "type": "string"}}),
        (NOTES, f"{F}.type", "field_type")),
    row("field-integer-over-number", notes({"fields.f": {"path": "content.ratio", "type": "integer"}}),
        (NOTES, f"{F}.type", "field_type")),
    row("field-boolean-over-string", notes({"fields.f": {"path": "content.title", "type": "boolean"}}),
        (NOTES, f"{F}.type", "field_type")),
    row("field-type-unknown", notes({"fields.f": {"path": "content.title", "type": "text"}}),
        (NOTES, f"{F}.type", "field_type")),
    row("field-type-two-element-list", notes({"fields.f": {"path": "content.tags", "type": ["string", "number"]}}),
        (NOTES, f"{F}.type", "field_type")),
    row("field-datetime-on-plain-string", notes({"fields.f": {"path": "content.title", "type": "datetime"}}),
        (NOTES, f"{F}.type", "field_type")),
    row("field-datetime-on-date-format", notes({"fields.f": {"path": "content.day", "type": "datetime"}}),
        (NOTES, f"{F}.type", "field_type")),
    row("field-array-sortable", notes({"fields.f": {"path": "content.tags", "type": ["string"], "sort": True}}),
        (NOTES, f"{F}.sort", "field_type")),
    row("field-array-over-scalar", notes({"fields.f": {"path": "content.title", "type": ["string"]}}),
        (NOTES, f"{F}.type", "field_type")),
    row("field-array-item-type-mismatch", notes({"fields.f": {"path": "content.tags", "type": ["integer"]}}),
        (NOTES, f"{F}.type", "field_type")),
    row("field-array-with-boolean-items-schema",
        notes({"schema.properties.bag": {"type": "array", "items": True},
               "fields.f": {"path": "content.bag", "type": ["string"]}}),
        (NOTES, f"{F}.type", "field_type")),
    row("field-scalar-over-array", notes({"fields.f": {"path": "content.tags", "type": "string"}}),
        (NOTES, f"{F}.type", "field_type")),

    # Collections: who spoke and conversation threads
    row("role-field-undeclared", notes({"role_field": "title"}), (NOTES, f"{C0}.role_field", "reference")),
    row("role-field-not-a-name", notes({"fields.f": TITLE_FIELD, "role_field": "F"}),
        (NOTES, f"{C0}.role_field", "schema")),
    row("role-field-not-a-string", notes({"fields.f": TITLE_FIELD, "role_field": ["f"]}),
        (NOTES, f"{C0}.role_field", "schema")),
    row("role-field-integer-field", notes({"fields.f": {"path": "content.size", "type": "integer"}, "role_field": "f"}),
        (NOTES, f"{C0}.role_field", "field_type")),
    row("role-field-array-field", notes({"fields.f": {"path": "content.tags", "type": ["string"]}, "role_field": "f"}),
        (NOTES, f"{C0}.role_field", "field_type")),
    row("thread-field-undeclared", notes({"thread_field": "ghost"}), (NOTES, f"{C0}.thread_field", "reference")),
    row("thread-field-null", notes({"fields.f": TITLE_FIELD, "thread_field": None}),
        (NOTES, f"{C0}.thread_field", "schema")),
    row("thread-field-boolean-field", notes({"fields.f": {"path": "content.done", "type": "boolean"},
                                             "thread_field": "f"}), (NOTES, f"{C0}.thread_field", "field_type")),
    row("thread-field-datetime-field", notes({"fields.f": {"path": "content.when", "type": "datetime"},
                                              "thread_field": "f"}), (NOTES, f"{C0}.thread_field", "field_type")),

    # Collections: processors
    row("required-processor-unknown", notes({"required_processors": ["ghost"]}),
        (NOTES, f"{C0}.required_processors[0]", "reference")),
    row("optional-processor-unknown", notes({"optional_processors": ["ghost"]}),
        (NOTES, f"{C0}.optional_processors[0]", "reference")),
    row("processor-name-pattern-in-list", notes({"required_processors": ["Ghost"]}),
        (NOTES, f"{C0}.required_processors[0]", "schema")),
    row("processor-listed-twice", [probe(CLIENT_SCORE), notes({"required_processors": ["probe", "probe"]})],
        (NOTES, f"{C0}.required_processors", "schema")),
    row("processor-scope-required",
        [probe(changed(CLIENT_SCORE, {"input.collections": ["main"]})), notes({"required_processors": ["probe"]})],
        (NOTES, f"{C0}.required_processors[0]", "processor_scope")),
    row("processor-scope-optional",
        [probe(changed(CLIENT_SCORE, {"input.collections": ["main"]})), notes({"optional_processors": ["probe"]})],
        (NOTES, f"{C0}.optional_processors[0]", "processor_scope")),
    row("required-processor-narrows-types",
        [probe(changed(CLIENT_SCORE, {"input.types": ["event"]})), notes({"required_processors": ["probe"]})],
        (NOTES, f"{C0}.required_processors[0]", "required_processor_scope")),
    row("required-json-processor-without-default-output",
        [probe(CLIENT_JSON), notes({"required_processors": ["probe"]})],
        (NOTES, f"{C0}.required_processors[0]", "required_processor_default")),
    row("processor-both-required-and-optional",
        [probe(CLIENT_SCORE), notes({"required_processors": ["probe"], "optional_processors": ["probe"]})],
        (NOTES, f"{C0}.optional_processors", "schema")),

    # Collections: search profiles
    row("unknown-search-profile", notes({"search_profile": "elastic"}),
        (NOTES, f"{C0}.search_profile", "search_profile")),
    row("search-profile-not-a-name", notes({"search_profile": ["pg_default"]}),
        (NOTES, f"{C0}.search_profile", "schema")),
    row("unknown-allowed-search-profile", notes({"allowed_search_profiles": ["pg_default", "elastic"]}),
        (NOTES, f"{C0}.allowed_search_profiles[1]", "search_profile")),

    # Collections: versions across the catalog
    row("active-collision-same-file", notes({}, changed(NOTES_BODY, {"version": 2})),
        (NOTES, "collections[1]", "active_collision")),
    row("active-collision-across-files",
        [notes(), notes({"version": 2}, file="collections/notes_v2.yaml")],
        ("collections/notes_v2.yaml", C0, "active_collision")),
    row("active-missing", notes({"active": False}), (NOTES, C0, "active_missing")),
    row("active-missing-two-versions", notes({"active": False}, changed(NOTES_BODY, {"version": 2, "active": False})),
        (NOTES, C0, "active_missing")),
    row("duplicate-version-same-file", notes({}, changed(NOTES_BODY, {"active": False})),
        (NOTES, "collections[1]", "duplicate")),
    row("duplicate-version-across-files", [notes(), notes(file="collections/notes_copy.yaml")],
        ("collections/notes_copy.yaml", C0, "duplicate")),
    row("duplicate-of-an-example-collection", copy_file("collections/main.yaml", "collections/main_copy.yaml"),
        ("collections/main_copy.yaml", C0, "duplicate")),

    # Processors: keys and the kind/source matrix
    row("processor-not-mapping", probe("probe"), (PROBE, P0, "schema")),
    row("processor-unknown-key", probe(changed(CLIENT_SCORE, {"priority": 1})), (PROBE, f"{P0}.priority", "schema")),
    row("processor-bad-name", probe(changed(CLIENT_SCORE, {"name": "Probe"})), (PROBE, f"{P0}.name", "schema")),
    row("processor-name-with-dot", probe(changed(CLIENT_SCORE, {"name": "probe.v1"})), (PROBE, f"{P0}.name", "schema")),
    row("processor-unknown-kind", probe(changed(CLIENT_SCORE, {"kind": "vector"})), (PROBE, f"{P0}.kind", "schema")),
    row("processor-missing-input", probe(changed(CLIENT_SCORE, {"input": DROP})), (PROBE, f"{P0}.input", "schema")),
    row("processor-input-without-collections", probe(changed(CLIENT_SCORE, {"input": {"types": ["event"]}})),
        (PROBE, f"{P0}.input.collections", "schema")),
    row("processor-input-unknown-key", probe(changed(CLIENT_SCORE, {"input.statuses": ["active"]})),
        (PROBE, f"{P0}.input.statuses", "schema")),
    row("score-without-source", probe(changed(CLIENT_SCORE, {"source": DROP})), (PROBE, f"{P0}.source", "schema")),
    row("score-unknown-source", probe(changed(CLIENT_SCORE, {"source": "human"})), (PROBE, f"{P0}.source", "schema")),
    row("embedding-with-source", probe(changed(EMBEDDING, {"source": "client"})), (PROBE, f"{P0}.source", "schema")),
    row("embedding-with-scale", probe(changed(EMBEDDING, {"scale": [0, 1]})), (PROBE, f"{P0}.scale", "schema")),
    row("llm-score-without-default", [models(), probe(changed(LLM_SCORE, {"default": DROP}))],
        (PROBE, f"{P0}.default", "schema")),
    row("llm-score-without-prompt", [models(), probe(changed(LLM_SCORE, {"prompt": DROP}))],
        (PROBE, f"{P0}.prompt", "schema")),
    row("llm-score-default-outside-scale", [models(), probe(changed(LLM_SCORE, {"default": 11}))],
        (PROBE, f"{P0}.default", "schema")),
    row("constant-score-without-value", probe(changed(CONSTANT_SCORE, {"value": DROP})),
        (PROBE, f"{P0}.value", "schema")),
    row("constant-score-value-outside-scale", probe(changed(CONSTANT_SCORE, {"value": 1.5})),
        (PROBE, f"{P0}.value", "schema")),
    row("constant-score-with-default", probe(changed(CONSTANT_SCORE, {"default": 0.5})),
        (PROBE, f"{P0}.default", "schema")),
    row("client-score-with-default", probe(changed(CLIENT_SCORE, {"default": 5})), (PROBE, f"{P0}.default", "schema")),
    row("client-score-with-model", probe(changed(CLIENT_SCORE, {"model": "cheap"})), (PROBE, f"{P0}.model", "schema")),
    row("score-with-output-schema", probe(changed(CLIENT_SCORE, {"output_schema": {"type": "object"}})),
        (PROBE, f"{P0}.output_schema", "schema")),
    row("score-scale-reversed", probe(changed(CLIENT_SCORE, {"scale": [10, 1]})), (PROBE, f"{P0}.scale", "schema")),
    row("score-scale-one-number", probe(changed(CLIENT_SCORE, {"scale": [10]})), (PROBE, f"{P0}.scale", "schema")),
    row("score-scale-not-numbers", probe(changed(CLIENT_SCORE, {"scale": ["low", "high"]})),
        (PROBE, f"{P0}.scale[0]", "schema")),
    row("json-with-scale", probe(changed(CLIENT_JSON, {"scale": [0, 1]})), (PROBE, f"{P0}.scale", "schema")),
    row("json-without-output-schema", probe(changed(CLIENT_JSON, {"output_schema": DROP})),
        (PROBE, f"{P0}.output_schema", "schema")),
    row("json-constant-without-default-output", probe(changed(CONSTANT_JSON, {"default_output": DROP})),
        (PROBE, f"{P0}.default_output", "schema")),
    row("json-output-schema-not-object", probe(changed(CLIENT_JSON, {"output_schema": {"type": "array"}})),
        (PROBE, f"{P0}.output_schema", "output_schema")),
    row("json-output-schema-invalid", probe(changed(CLIENT_JSON, {"output_schema.required": "label"})),
        (PROBE, f"{P0}.output_schema", "output_schema")),
    row("default-output-invalid", probe(changed(CONSTANT_JSON, {"default_output": {"weight": 1}})),
        (PROBE, f"{P0}.default_output", "default_output")),
    row("default-output-too-large", probe(changed(CONSTANT_JSON, {"default_output": {"label": "x" * 40_000}})),
        (PROBE, f"{P0}.default_output", "default_output")),
    row("score-fields-not-mapping", probe(changed(CLIENT_JSON, {"score_fields": [{"weight": "weight"}]})),
        (PROBE, f"{P0}.score_fields", "schema")),
    row("score-field-path-not-numeric", probe(changed(CLIENT_JSON, {"score_fields": {"probe_label": "label"}})),
        (PROBE, f"{P0}.score_fields.probe_label", "score_field")),
    row("score-field-path-missing", probe(changed(CLIENT_JSON, {"score_fields": {"probe_x": "detail.missing"}})),
        (PROBE, f"{P0}.score_fields.probe_x", "score_field")),
    row("score-field-path-object", probe(changed(CLIENT_JSON, {"score_fields": {"probe_x": "detail"}})),
        (PROBE, f"{P0}.score_fields.probe_x", "score_field")),
    row("score-field-bad-name", probe(changed(CLIENT_JSON, {"score_fields": {"Weight": "weight"}})),
        (PROBE, f"{P0}.score_fields.Weight", "schema")),
    row("llm-processor-undeclared-alias", [models(), probe(changed(LLM_SCORE, {"model": "strong"}))],
        (PROBE, f"{P0}.model", "reference")),
    row("llm-processor-without-models-file", probe(LLM_SCORE), (PROBE, f"{P0}.model", "reference")),
    row("processor-duplicate-same-file", probe(CLIENT_SCORE, CLIENT_SCORE), (PROBE, "processors[1]", "duplicate")),
    row("processor-duplicate-across-files",
        [probe(CLIENT_SCORE), probe(CLIENT_SCORE, file="conf/processors/probe_copy.yaml")],
        ("conf/processors/probe_copy.yaml", P0, "duplicate")),

    # Processors: checks over the whole family
    row("score-collision-with-score-field",
        probe(changed(CLIENT_JSON, {"name": "zz_json", "score_fields": {"zz_score": "weight"}}),
              changed(CLIENT_SCORE, {"name": "zz_score"})),
        (PROBE, "processors", "score_collision")),
    row("too-many-score-names", static("too_many_score_names"),
        ("conf/processors/scores.yaml", "processors", "limit")),
    row("too-many-score-names-with-the-example",
        probe(*(changed(CLIENT_SCORE, {"name": f"zz_score_{i}"}) for i in range(9))),
        (PROBE, "processors", "limit")),
    row("too-many-llm-scorers", static("too_many_llm_scorers"), ("conf/processors.yaml", "processors", "limit")),
    row("supersedes-unknown", probe(changed(CLIENT_SCORE, {"supersedes": "ghost"})),
        (PROBE, "processors", "supersedes")),
    row("supersedes-different-kind",
        probe(changed(CLIENT_SCORE, {"supersedes": "probe_old"}), changed(CLIENT_JSON, {"name": "probe_old"})),
        (PROBE, "processors", "supersedes")),
    row("supersedes-itself", probe(changed(CLIENT_SCORE, {"supersedes": "probe"})),
        (PROBE, "processors", "supersedes")),
    row("supersedes-cycle", static("supersedes_cycle"),
        ("conf/processors.yaml", "processors", "supersedes"), ("conf/processors.yaml", "processors", "supersedes")),
    row("supersedes-branching",
        probe(changed(CLIENT_SCORE, {"name": "tone_v1"}),
              changed(CLIENT_SCORE, {"name": "tone_v2", "supersedes": "tone_v1"}),
              changed(CLIENT_SCORE, {"name": "tone_v3", "supersedes": "tone_v1"})),
        (PROBE, "processors", "supersedes")),

    # conf/models.yaml
    row("models-unknown-key", models({"timeout": 30}), (MODELS, "timeout", "schema")),
    row("models-unknown-alias-key", models({"aliases.cheap.fallback": "strong"}),
        (MODELS, "aliases.cheap.fallback", "schema")),
    row("models-unknown-alias-param", models({"aliases.cheap.params.top_p": 0.9}),
        (MODELS, "aliases.cheap.params.top_p", "schema")),
    row("models-unknown-provider-key", models({"providers.llm.region": "eu"}),
        (MODELS, "providers.llm.region", "schema")),
    row("models-missing-embedding", models({"embedding": DROP}), (MODELS, "embedding", "schema")),
    row("models-not-mapping", put(MODELS, ["providers"]), (MODELS, "", "schema")),
    row("models-providers-empty", models({"providers": {}}), (MODELS, "providers", "provider")),
    row("models-providers-list", models({"providers": [{"llm": {"adapter": "openai_compat"}}]}),
        (MODELS, "providers", "schema")),
    row("models-provider-bad-adapter", models({"providers.llm.adapter": "anthropic"}),
        (MODELS, "providers.llm.adapter", "provider")),
    row("models-local-provider-with-options", models({"providers.local.base_url": "http://127.0.0.1:9/v1"}),
        (MODELS, "providers.local", "provider")),
    row("models-alias-named-embed", models({"aliases.embed": {"targets": ["llm:small"]}}),
        (MODELS, "aliases.embed", "schema")),
    row("models-alias-bad-name", models({"aliases.Cheap": {"targets": ["llm:small"]}}),
        (MODELS, "aliases.Cheap", "schema")),
    row("models-alias-without-targets", models({"aliases.cheap.targets": []}),
        (MODELS, "aliases.cheap.targets", "schema")),
    row("models-target-unknown-provider", models({"aliases.cheap.targets": ["openai:gpt"]}),
        (MODELS, "aliases.cheap.targets[0]", "reference")),
    row("models-target-without-model", models({"aliases.cheap.targets": ["llm"]}),
        (MODELS, "aliases.cheap.targets[0]", "reference")),
    row("models-target-local-provider", models({"aliases.cheap.targets": ["llm:small", "local:all-MiniLM-L6-v2"]}),
        (MODELS, "aliases.cheap.targets[1]", "provider")),
    row("models-base-url-http-remote", models({"providers.llm.base_url": "http://llm.example.com/v1"}),
        (MODELS, "providers.llm.base_url", "provider")),
    row("models-base-url-localhost-lookalike", models({"providers.llm.base_url": "http://localhost.example.com/v1"}),
        (MODELS, "providers.llm.base_url", "provider")),
    row("models-base-url-loopback-lookalike", models({"providers.llm.base_url": "http://127.0.0.1.nip.io/v1"}),
        (MODELS, "providers.llm.base_url", "provider")),
    row("models-base-url-localhost-userinfo", models({"providers.llm.base_url": "http://localhost@example.com/v1"}),
        (MODELS, "providers.llm.base_url", "provider")),
    row("models-base-url-other-scheme", models({"providers.llm.base_url": "ftp://llm.example.com/v1"}),
        (MODELS, "providers.llm.base_url", "provider")),
    row("models-base-url-without-host", models({"providers.llm.base_url": "https:///v1"}),
        (MODELS, "providers.llm.base_url", "provider")),
    row("models-base-url-missing", models({"providers.llm.base_url": DROP}),
        (MODELS, "providers.llm.base_url", "schema")),
    row("models-api-key-env-bad-name", models({"providers.llm.api_key_env": "llm-key"}),
        (MODELS, "providers.llm.api_key_env", "schema")),
    row("models-bad-json-capability", models({"providers.llm.json_capability": "tools"}),
        (MODELS, "providers.llm.json_capability", "provider")),
    row("models-bad-token-limit-field", models({"providers.llm.token_limit_field": "max_length"}),
        (MODELS, "providers.llm.token_limit_field", "provider")),
    row("models-temperature-above-2", models({"aliases.cheap.params.temperature": 2.5}),
        (MODELS, "aliases.cheap.params.temperature", "schema")),
    row("models-temperature-negative", models({"aliases.cheap.params.temperature": -0.1}),
        (MODELS, "aliases.cheap.params.temperature", "schema")),
    row("models-context-tokens-below-4096", models({"aliases.cheap.context_tokens": 4095}),
        (MODELS, "aliases.cheap.context_tokens", "schema")),
    row("models-max-output-tokens-zero", models({"aliases.cheap.params.max_output_tokens": 0}),
        (MODELS, "aliases.cheap.params.max_output_tokens", "schema")),
    row("models-embedding-dimensions-below-8",
        models({"embedding": {"provider": "llm", "model": "embed", "dimensions": 4, "space": "llm-v1"}}),
        (MODELS, "embedding.dimensions", "schema")),
    row("models-embedding-dimensions-above-4096",
        models({"embedding": {"provider": "llm", "model": "embed", "dimensions": 4097, "space": "llm-v1"}}),
        (MODELS, "embedding.dimensions", "schema")),
    row("models-embedding-dimensions-above-the-hnsw-limit",
        models({"embedding": {"provider": "llm", "model": "embed", "dimensions": 2001, "space": "llm-v1"}}),
        (MODELS, "embedding.dimensions", "provider")),
    row("models-embedding-unknown-provider", models({"embedding.provider": "openai"}),
        (MODELS, "embedding.provider", "reference")),
    row("models-embedding-provider-not-a-name", models({"embedding.provider": ["local"]}),
        (MODELS, "embedding.provider", "schema")),
    row("models-embedding-local-other-model", models({"embedding.model": "all-mpnet-base-v2"}),
        (MODELS, "embedding.model", "provider")),
    row("models-embedding-bad-space", models({"embedding.space": "MiniLM"}), (MODELS, "embedding.space", "schema")),
    row("models-embedding-batch-above-256", models({"embedding.batch": 257}), (MODELS, "embedding.batch", "schema")),
    *(row(f"models-embedding-params-override-{key}", models({"embedding": {**REMOTE_EMBEDDING, "params": {key: 1}}}),
          (MODELS, f"embedding.params.{key}", "schema"))
      for key in ("model", "input", "dimensions", "encoding_format")),
    row("models-embedding-params-not-a-mapping", models({"embedding": {**REMOTE_EMBEDDING, "params": ["x"]}}),
        (MODELS, "embedding.params", "schema")),
    row("models-embedding-params-on-the-bundled-model", models({"embedding.params": {"input_type": "document"}}),
        (MODELS, "embedding.params", "provider")),
    row("models-default-undeclared-alias", models({"defaults.fold": "strong"}), (MODELS, "defaults.fold", "reference")),
    row("models-default-not-a-name", models({"defaults.fold": ["cheap"]}), (MODELS, "defaults.fold", "schema")),
    row("models-default-unknown-key", models({"defaults.answer": "cheap"}), (MODELS, "defaults.answer", "schema")),
    row("models-two-files", [models(), put("conf/models.yml", changed(MODELS_BODY))],
        ("conf/models.yml", "", "duplicate")),
]


@pytest.mark.parametrize(("edits", "expected"), BROKEN_CATALOGS)
def test_broken_catalog_names_file_path_and_code(tmp_path, workspace, edits, expected):
    directory = BROKEN / edits.case if isinstance(edits, Static) else example_with(tmp_path, *edits)
    with pytest.raises(CatalogInvalid) as raised:
        catalog_load(workspace=workspace, directory=directory)
    assert issue_keys(raised.value) == expected, [str(issue) for issue in raised.value.issues]
    assert all(issue.message for issue in raised.value.issues)
    assert not Definition.objects.filter(workspace=workspace).exists()


def test_every_static_broken_catalog_is_in_the_table():
    used = {param.values[0].case for param in BROKEN_CATALOGS if isinstance(param.values[0], Static)}
    assert used == {path.name for path in BROKEN.iterdir() if path.is_dir()}


# --- valid variations that must compile -----------------------------------------------------

@pytest.mark.parametrize("edits", [
    pytest.param([], id="the-example-itself"),
    pytest.param([notes()], id="a-minimal-collection"),
    pytest.param([notes({"fields": {
        "title": {"path": "content.title", "type": "string", "filter": True, "sort": True, "project": True},
        "when": {"path": "content.when", "type": "datetime", "sort": True},
        "size": {"path": "content.size", "type": "integer", "filter": True},
        "size_as_number": {"path": "content.size", "type": "number"},
        "ratio": {"path": "content.ratio", "type": "number"},
        "done": {"path": "content.done", "type": "boolean"},
        "tags": {"path": "content.tags", "type": ["string"], "filter": True},
        "author": {"path": "content.author.name", "type": "string"}}})], id="every-field-type"),
    pytest.param([probe(CLIENT_JSON, changed(CONSTANT_SCORE, {"name": "probe_const"})),
                  notes({"required_processors": ["probe_const"], "optional_processors": ["probe"],
                         "fields.f": {"path": "annotations.probe.detail.level", "type": "integer", "filter": True}})],
                 id="annotation-field-on-a-json-processor"),
    pytest.param([probe(CONSTANT_JSON), notes({"required_processors": ["probe"]})],
                 id="required-json-processor-with-default-output"),
    pytest.param([probe(changed(CLIENT_SCORE, {"input.types": ["event"]})), notes({"optional_processors": ["probe"]})],
                 id="optional-processor-may-narrow-types"),
    pytest.param([models(), probe(LLM_SCORE)], id="llm-scorer-with-an-alias"),
    pytest.param([probe(changed(CLIENT_SCORE, {"name": "tone_v1"}),
                        changed(CLIENT_SCORE, {"name": "tone_v2", "supersedes": "tone_v1"}),
                        changed(CLIENT_SCORE, {"name": "tone_v3", "supersedes": "tone_v2"}))],
                 id="linear-supersedes-chain"),
    pytest.param([notes(), notes({"version": 2, "active": False}, file="collections/notes_v2.yaml")],
                 id="two-versions-in-two-files"),
    pytest.param([notes({"text_projection": "{{ title }} at {{when}}"})], id="text-projection"),
    pytest.param([notes({"allowed_search_profiles": ["pg_default"], "answerable": True})], id="bindings"),
    pytest.param([notes({"fields.f": TITLE_FIELD, "fields.n": {"path": "content.size", "type": "integer"},
                         "role_field": "f", "thread_field": "n"})], id="role-and-integer-thread-fields"),
    pytest.param([notes(file="collections/notes.yml")], id="yml-suffix"),
    pytest.param([models({"providers.llm.base_url": "http://localhost:8080/v1"})], id="http-localhost"),
    pytest.param([models({"providers.llm.base_url": "http://127.0.0.1:8080/v1"})], id="http-loopback-v4"),
    pytest.param([models({"providers.llm.base_url": "http://[::1]:8080/v1"})], id="http-loopback-v6"),
    pytest.param([models({"embedding": {"provider": "llm", "model": "embed", "dimensions": 8, "space": "llm-v1"}})],
                 id="remote-embedding-8-dimensions"),
    pytest.param([models({"aliases.cheap.params.temperature": 2, "aliases.cheap.context_tokens": 4096})],
                 id="model-limits-inclusive"),
    pytest.param([models({"embedding": {**REMOTE_EMBEDDING, "params": {"input_type": "document", "truncate": "END"}}})],
                 id="remote-embedding-provider-params"),
])
def test_valid_catalog_compiles(tmp_path, edits):
    compiled = compile_catalog(example_with(tmp_path, *edits), Catalog())
    assert compiled.changes and {change.action for change in compiled.changes} == {"add"}


def test_unquoted_date_is_kept_as_a_string(tmp_path):
    text = yaml.safe_dump({"collections": [NOTES_BODY]}, sort_keys=False).replace(
        "format: date\n", "format: date\n        default: 2026-01-01\n")
    compiled = compile_catalog(example_with(tmp_path, put(NOTES, text)), Catalog())
    assert compiled.catalog.get("collection", "notes", 1).body["schema"]["properties"]["day"]["default"] == "2026-01-01"


def test_merge_key_values_can_be_overridden(tmp_path):
    text = ("collections:\n"
            "  - name: notes\n    version: 1\n    active: true\n    mode: event\n    search_profile: pg_default\n"
            "    schema:\n      type: object\n      required: [text]\n      properties:\n"
            "        text: &plain {type: string, maxLength: 100}\n"
            "        title: {<<: *plain, maxLength: 20}\n")
    compiled = compile_catalog(example_with(tmp_path, put(NOTES, text)), Catalog())
    properties = compiled.catalog.get("collection", "notes", 1).body["schema"]["properties"]
    assert properties["title"] == {"type": "string", "maxLength": 20}


def test_yml_files_are_read(tmp_path):
    compiled = compile_catalog(example_with(tmp_path, notes(file="collections/notes.yml")), Catalog())
    assert compiled.catalog.get("collection", "notes", 1).source_file == "collections/notes.yml"


def test_missing_directory_is_a_file_path_issue(tmp_path):
    with pytest.raises(CatalogInvalid) as raised:
        compile_catalog(tmp_path / "nowhere", Catalog())
    assert issue_keys(raised.value) == [(str(tmp_path / "nowhere"), "", "file_path")]


def test_every_problem_is_reported_not_just_the_first(tmp_path):
    root = example_with(tmp_path, notes({"mode": "stream"}), probe(changed(CLIENT_SCORE, {"priority": 1})),
                        put("misc/stray.yaml", {"a": 1}))
    with pytest.raises(CatalogInvalid) as raised:
        compile_catalog(root, Catalog())
    assert issue_keys(raised.value) == sorted([(NOTES, f"{C0}.mode", "schema"),
                                               (PROBE, f"{P0}.priority", "schema"),
                                               ("misc/stray.yaml", "", "file_path")])


# --- load semantics -------------------------------------------------------------------------

def test_example_loads_every_definition(tmp_path, workspace):
    compiled = catalog_load(workspace=workspace, directory=EXAMPLE)
    rows = definition_rows(workspace)
    assert {c.action for c in compiled.changes} == {"add"}
    assert [(f, n, v) for f, n, v, _, _ in rows] == sorted((c.family, c.name, c.version) for c in compiled.changes)
    assert _one_active_per_name(workspace)
    stored = Definition.objects.get(workspace=workspace, family="collection", name="main", version=1)
    assert stored.source_file == "collections/main.yaml"
    assert stored.source_text == (EXAMPLE / "collections" / "main.yaml").read_text()


def test_loading_twice_is_idempotent(tmp_path, workspace):
    root = example_with(tmp_path, notes(), probe(CLIENT_SCORE), models())
    first = catalog_load(workspace=workspace, directory=root)
    rows = definition_rows(workspace)
    second = catalog_load(workspace=workspace, directory=root)
    assert {c.action for c in second.changes} == {"unchanged"}
    assert {(c.family, c.name, c.version) for c in second.changes} == \
        {(c.family, c.name, c.version) for c in first.changes}
    assert definition_rows(workspace) == rows


def test_dry_run_writes_nothing(tmp_path, workspace):
    root = example_with(tmp_path, notes())
    before = Definition.objects.count()
    compiled = catalog_load(workspace=workspace, directory=root, dry_run=True)
    assert ("collection", "notes", 1, "add") in actions(compiled)
    assert Definition.objects.count() == before == 0
    workspace.refresh_from_db()
    assert workspace.catalog_revision == 0


def test_dry_run_of_a_change_leaves_the_stored_catalog_alone(tmp_path, workspace):
    catalog_load(workspace=workspace, directory=example_with(tmp_path, notes()))
    rows = definition_rows(workspace)
    root = example_with(tmp_path, notes({"active": False}, changed(NOTES_BODY, {"version": 2})))
    compiled = catalog_load(workspace=workspace, directory=root, dry_run=True)
    assert {("collection", "notes", 2, "add"), ("collection", "notes", 1, "deactivate")} <= actions(compiled)
    assert definition_rows(workspace) == rows


def test_failing_catalog_writes_nothing_even_its_valid_definitions(tmp_path, workspace):
    root = example_with(tmp_path, notes({"mode": "stream"}))
    with pytest.raises(CatalogInvalid):
        catalog_load(workspace=workspace, directory=root)
    assert Definition.objects.filter(workspace=workspace).count() == 0
    workspace.refresh_from_db()
    assert workspace.catalog_revision == 0


def test_failing_catalog_leaves_a_loaded_workspace_unchanged(tmp_path, workspace):
    catalog_load(workspace=workspace, directory=example_with(tmp_path, notes()))
    workspace.refresh_from_db()
    rows, revision = definition_rows(workspace), workspace.catalog_revision
    root = example_with(tmp_path, notes({"active": False}, changed(NOTES_BODY, {"version": 2})),
                        probe(CLIENT_SCORE), put("misc/stray.yaml", {"a": 1}))
    with pytest.raises(CatalogInvalid):
        catalog_load(workspace=workspace, directory=root)
    workspace.refresh_from_db()
    assert definition_rows(workspace) == rows
    assert workspace.catalog_revision == revision


def test_changed_body_under_a_loaded_version_is_immutable(tmp_path, workspace):
    catalog_load(workspace=workspace, directory=example_with(tmp_path, notes()))
    rows = definition_rows(workspace)
    root = example_with(tmp_path, notes({"schema.properties.extra": {"type": "string"}}),
                        notes({"name": "other"}, file="collections/other.yaml"))
    with pytest.raises(CatalogInvalid) as raised:
        catalog_load(workspace=workspace, directory=root)
    assert issue_keys(raised.value) == [(NOTES, C0, "immutable_definition")]
    assert "version 2" in raised.value.issues[0].message
    assert definition_rows(workspace) == rows


def test_activating_a_new_version_deactivates_the_old_one(tmp_path, workspace):
    catalog_load(workspace=workspace, directory=example_with(tmp_path, notes()))
    root = example_with(tmp_path, notes({"active": False}, changed(NOTES_BODY, {"version": 2, "mode": "keyed"})))
    compiled = catalog_load(workspace=workspace, directory=root)
    notes_changes = sorted((c.version, c.action) for c in compiled.changes if c.name == "notes")
    assert notes_changes == [(1, "deactivate"), (2, "add")]  # each change listed once
    assert _active_versions(workspace, "notes") == [2]
    assert _one_active_per_name(workspace)


def test_only_active_may_flip_on_loaded_versions(tmp_path, workspace):
    both = lambda v1, v2: notes({"active": v1}, changed(NOTES_BODY, {"version": 2, "active": v2}))  # noqa: E731
    catalog_load(workspace=workspace, directory=example_with(tmp_path, both(False, True)))
    assert _active_versions(workspace, "notes") == [2]
    compiled = catalog_load(workspace=workspace, directory=example_with(tmp_path, both(True, False)))
    assert sorted((c.version, c.action) for c in compiled.changes if c.name == "notes") == \
        [(1, "activate"), (2, "deactivate")]
    assert _active_versions(workspace, "notes") == [1]
    assert _one_active_per_name(workspace)
    assert Definition.objects.filter(workspace=workspace, name="notes").count() == 2


def test_activating_a_version_deactivates_stored_versions_missing_from_the_load(tmp_path, workspace):
    catalog_load(workspace=workspace, directory=example_with(tmp_path, notes()))
    compiled = catalog_load(workspace=workspace, directory=example_with(tmp_path, notes({"version": 2})))
    assert {("collection", "notes", 1, "deactivate"), ("collection", "notes", 2, "add")} <= actions(compiled)
    assert _active_versions(workspace, "notes") == [2]
    assert _one_active_per_name(workspace)


def test_stored_active_version_satisfies_a_load_that_only_adds_an_inactive_one(tmp_path, workspace):
    catalog_load(workspace=workspace, directory=example_with(tmp_path, notes()))
    catalog_load(workspace=workspace, directory=example_with(tmp_path, notes({"version": 2, "active": False})))
    assert _active_versions(workspace, "notes") == [1]


def test_deactivating_the_only_version_is_active_missing(tmp_path, workspace):
    catalog_load(workspace=workspace, directory=example_with(tmp_path, notes()))
    with pytest.raises(CatalogInvalid) as raised:
        catalog_load(workspace=workspace, directory=example_with(tmp_path, notes({"active": False})))
    assert issue_keys(raised.value) == [(NOTES, C0, "active_missing")]
    assert _active_versions(workspace, "notes") == [1]


def test_semantically_equal_numbers_hash_the_same(tmp_path, workspace):
    integers = example_with(tmp_path, notes({"schema.properties.size.minimum": 1}), probe(CLIENT_SCORE))
    catalog_load(workspace=workspace, directory=integers)
    rows = definition_rows(workspace)
    floats = example_with(tmp_path, notes({"schema.properties.size.minimum": 1.0}),
                          probe(changed(CLIENT_SCORE, {"scale": [1.0, 10.0]})))
    assert "minimum: 1.0" in (floats / NOTES).read_text() and "- 1.0" in (floats / PROBE).read_text()
    compiled = catalog_load(workspace=workspace, directory=floats)
    assert {c.action for c in compiled.changes} == {"unchanged"}
    assert definition_rows(workspace) == rows


def test_changing_a_processor_creates_an_active_revision(tmp_path, workspace):
    catalog_load(workspace=workspace, directory=example_with(tmp_path, probe(CLIENT_SCORE)))
    root = example_with(tmp_path, probe(changed(CLIENT_SCORE, {"scale": [0, 100]})))
    compiled = catalog_load(workspace=workspace, directory=root)
    assert {("processor", "probe", 1, "deactivate"), ("processor", "probe", 2, "add")} <= actions(compiled)
    revisions = list(Definition.objects.filter(workspace=workspace, family="processor", name="probe")
                     .order_by("version").values_list("version", "active"))
    assert revisions == [(1, False), (2, True)]
    assert Definition.objects.get(workspace=workspace, family="processor", name="probe", active=True) \
        .body["scale"] == [0, 100]
    again = catalog_load(workspace=workspace, directory=root)
    assert ("processor", "probe", 2, "unchanged") in actions(again)
    assert Definition.objects.filter(workspace=workspace, family="processor", name="probe").count() == 2


def test_changing_models_creates_a_revision(tmp_path, workspace):
    catalog_load(workspace=workspace, directory=example_with(tmp_path, models()))
    catalog_load(workspace=workspace, directory=example_with(tmp_path, models({"aliases.cheap.context_tokens": 8192})))
    assert list(Definition.objects.filter(workspace=workspace, family="models").order_by("version")
                .values_list("version", "active")) == [(1, False), (2, True)]


def _notes_definition(tmp_path, *edits):
    return compile_catalog(example_with(tmp_path, *edits), Catalog()).catalog.get("collection", "notes", 1)


BINDING_EDITS = {
    "active": [notes({"active": False}, changed(NOTES_BODY, {"version": 2}))],
    "optional_processors": [probe(CLIENT_SCORE), notes({"optional_processors": ["probe"]})],
    "allowed_search_profiles": [notes({"allowed_search_profiles": ["pg_default"]})],
    "answerable": [notes({"answerable": True})],
    "search_profile": [put("conf/search_profiles.yaml", {"profiles": {"pg_alt": {"backend": "pg"}}}),
                       notes({"search_profile": "pg_alt"})],
}
CONTRACT_EDITS = {
    "schema": [notes({"schema.properties.extra": {"type": "string"}})],
    "fields": [notes({"fields.f": {"path": "content.title", "type": "string"}})],
    "field-flags": [notes({"fields.f": {"path": "content.title", "type": "string", "filter": True}})],
    "mode": [notes({"mode": "keyed"})],
    "text_projection": [notes({"text_projection": "{{title}}"})],
    "required_processors": [probe(CLIENT_SCORE), notes({"required_processors": ["probe"]})],
}


@pytest.mark.parametrize("key", sorted(BINDING_EDITS))
def test_contract_hash_ignores_bindings(tmp_path, key):
    base = _notes_definition(tmp_path, notes())
    edited = _notes_definition(tmp_path, *BINDING_EDITS[key])
    assert edited.contract_hash == base.contract_hash == edited.value.contract_hash
    if key == "active":
        assert edited.hash == base.hash and not edited.active
    else:
        assert edited.hash != base.hash


@pytest.mark.parametrize("key", sorted(CONTRACT_EDITS))
def test_contract_hash_changes_with_the_contract(tmp_path, key):
    base = _notes_definition(tmp_path, notes())
    edited = _notes_definition(tmp_path, *CONTRACT_EDITS[key])
    assert edited.contract_hash != base.contract_hash
    assert edited.hash != base.hash


@pytest.mark.parametrize("key", ["role_field", "thread_field"])
def test_reading_fields_are_bindings_outside_the_contract(tmp_path, key):
    base = _notes_definition(tmp_path, notes({"fields.f": TITLE_FIELD}))
    edited = _notes_definition(tmp_path, notes({"fields.f": TITLE_FIELD, key: "f"}))
    assert edited.contract_hash == base.contract_hash and edited.hash != base.hash
    assert getattr(edited.value, key) == "f" and getattr(base.value, key) is None
    assert key not in base.body  # unset keys stay out of the body, so older stored bodies keep their hash


def test_example_main_collection_declares_speaker_and_thread():
    main = compile_catalog(EXAMPLE, Catalog()).catalog.value("collection", "main")
    assert (main.role_field, main.thread_field) == ("speaker", "thread")


def test_contract_hash_function_covers_only_contract_keys():
    body = compile_catalog(EXAMPLE, Catalog()).catalog.get("collection", "main", 1).body
    other = {**body, "search_profile": "memory_tpuf", "allowed_search_profiles": ["pg_default"],
             "optional_processors": ["x"], "answerable": not body["answerable"]}
    assert collections_family.contract_hash(other) == collections_family.contract_hash(body)
    assert collections_family.contract_hash({**body, "version": 2}) != collections_family.contract_hash(body)


def test_catalog_revision_increases_only_when_something_changed(tmp_path, workspace):
    workspace.refresh_from_db()
    start = workspace.catalog_revision
    catalog_load(workspace=workspace, directory=EXAMPLE)
    workspace.refresh_from_db()
    after_first = workspace.catalog_revision
    assert after_first > start
    catalog_load(workspace=workspace, directory=EXAMPLE)
    workspace.refresh_from_db()
    assert workspace.catalog_revision == after_first
    catalog_load(workspace=workspace, directory=example_with(tmp_path, notes()))
    workspace.refresh_from_db()
    assert workspace.catalog_revision > after_first


def _index_definition(space: str) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [embedding_index_name(space)])
        found = cursor.fetchone()
    return found[0] if found else None


def test_hnsw_index_of_the_default_space_exists_after_a_load(workspace):
    catalog_load(workspace=workspace, directory=EXAMPLE)
    definition = _index_definition("minilm-l6-v2")
    assert definition is not None
    assert "USING hnsw" in definition and "vector_cosine_ops" in definition and "vector(384)" in definition


def test_hnsw_index_follows_the_configured_embedding_space(tmp_path, workspace):
    space = "probe-space-v1"
    root = example_with(tmp_path, models({"embedding": {"provider": "llm", "model": "embed", "dimensions": 64,
                                                        "space": space}}))
    assert _index_definition(space) is None
    catalog_load(workspace=workspace, directory=root, dry_run=True)
    assert _index_definition(space) is None
    catalog_load(workspace=workspace, directory=root)
    definition = _index_definition(space)
    assert definition is not None and "vector(64)" in definition and "USING hnsw" in definition


# --- the management command -----------------------------------------------------------------

def test_command_prints_every_issue_and_fails(tmp_path, workspace):
    root = example_with(tmp_path, notes({"mode": "stream"}), probe(changed(CLIENT_SCORE, {"priority": 1})))
    with pytest.raises(CatalogInvalid) as raised:
        compile_catalog(root, Catalog())
    expected = [f"{i.file}: {i.path}: [{i.code}] {i.message}" for i in raised.value.issues]
    assert len(expected) == 2
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match=r"2 problem"):
        call_command("load_catalog", str(root), workspace=workspace.name, stdout=out, stderr=err)
    assert err.getvalue().splitlines() == expected
    assert any(re.fullmatch(r"collections/notes\.yaml: collections\[0\]\.mode: \[schema\] .+", line)
               for line in expected)
    assert not Definition.objects.filter(workspace=workspace).exists()


def test_command_loads_and_reports_changes(tmp_path, workspace):
    out = io.StringIO()
    call_command("load_catalog", str(EXAMPLE), workspace=workspace.name, stdout=out)
    count = Definition.objects.filter(workspace=workspace).count()
    assert count > 0
    assert out.getvalue().splitlines()[-1] == f"loaded {count} definition(s) into {workspace.name}"
    assert re.search(r"^\s+add  collection main@1$", out.getvalue(), re.MULTILINE)


def test_command_dry_run_writes_nothing(workspace):
    out = io.StringIO()
    call_command("load_catalog", str(EXAMPLE), workspace=workspace.name, dry_run=True, stdout=out)
    assert "would load" in out.getvalue()
    assert not Definition.objects.filter(workspace=workspace).exists()


def test_command_unknown_workspace_fails(db):
    with pytest.raises(CommandError, match="does not exist"):
        call_command("load_catalog", str(EXAMPLE), workspace="nobody", stdout=io.StringIO())
    assert not Definition.objects.exists()
    assert not Workspace.objects.filter(name="nobody").exists()

