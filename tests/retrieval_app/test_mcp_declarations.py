"""``mcp/*.yaml``: a table of broken declarations, each with the exact (file, dotted path, code)
it must produce, and the load rules every versioned family keeps (immutable versions, one
active declaration)."""
from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
import yaml

from catalog_app.catalog.compiler import compile_catalog
from catalog_app.catalog.errors import CatalogInvalid
from catalog_app.catalog.registry import Catalog
from catalog_app.models import Definition
from catalog_app.services.catalog_load import catalog_load

EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "catalogs" / "example"
AGENT = "mcp/agent.yaml"
BASE = yaml.safe_load((EXAMPLE / AGENT).read_text())
T0 = "tools[0]"


def declared(changes: dict | None = None, drop: tuple[str, ...] = (), tools=None) -> dict:
    body = copy.deepcopy(BASE)
    for key in drop:
        del body[key]
    body.update(changes or {})
    if tools is not None:
        body["tools"] = tools
    return body


def tool(**fields) -> dict:
    return {"name": "open_record", "kind": "record", "description": "Open one record.", **fields}


def catalog_with(tmp_path: Path, *files: tuple[str, object]) -> Path:
    directory = tmp_path / "catalog"
    shutil.copytree(EXAMPLE, directory)
    for name, body in files:
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body if isinstance(body, str) else yaml.safe_dump(body, sort_keys=False))
    return directory


def issues(directory: Path) -> list[tuple[str, str, str]]:
    with pytest.raises(CatalogInvalid) as raised:
        compile_catalog(directory, Catalog())
    assert all(issue.message for issue in raised.value.issues)
    return sorted((issue.file, issue.path, issue.code) for issue in raised.value.issues)


BROKEN = [
    ("unknown-top-key", declared({"package": "x"}), ("package", "schema")),
    ("missing-title", declared(drop=("title",)), ("title", "schema")),
    ("missing-instructions", declared(drop=("instructions",)), ("instructions", "schema")),
    ("blank-title", declared({"title": "  "}), ("title", "schema")),
    ("name-uppercase", declared({"name": "Agent"}), ("name", "schema")),
    ("version-zero", declared({"version": 0}), ("version", "schema")),
    ("version-string", declared({"version": "1"}), ("version", "schema")),
    ("active-not-bool", declared({"active": "yes"}), ("active", "schema")),
    ("tools-empty", declared(tools=[]), ("tools", "schema")),
    ("tools-not-a-list", declared(tools={"a": 1}), ("tools", "schema")),
    ("tool-not-a-mapping", declared(tools=["open_record"]), (T0, "schema")),
    ("tool-unknown-key", declared(tools=[tool(scores={})]), (f"{T0}.scores", "schema")),
    ("tool-unknown-kind", declared(tools=[tool(kind="answer")]), (f"{T0}.kind", "schema")),
    ("tool-missing-description", declared(tools=[{"name": "x", "kind": "record"}]), (f"{T0}.description", "schema")),
    ("tool-name-with-space", declared(tools=[tool(name="open record")]), (f"{T0}.name", "schema")),
    ("tool-name-twice", declared(tools=[tool(), tool()]), ("tools[1].name", "duplicate")),
    ("view-tool-without-view", declared(tools=[tool(kind="view")]), (f"{T0}.view", "schema")),
    ("view-binding-bare-name", declared(tools=[tool(kind="view", view="customer_context")]), (f"{T0}.view", "schema")),
    ("view-binding-without-version", declared(tools=[tool(kind="view", view={"name": "customer_context"})]),
     (f"{T0}.view.version", "schema")),
    ("view-binding-unloaded-version", declared(tools=[tool(kind="view", view={"name": "customer_context",
                                                                               "version": 9})]),
     (f"{T0}.view", "reference")),
    ("view-binding-unknown-view", declared(tools=[tool(kind="view", view={"name": "nope", "version": 1})]),
     (f"{T0}.view", "reference")),
    ("ingest-without-collection", declared(tools=[tool(kind="ingest")]), (f"{T0}.collection", "schema")),
    ("ingest-unknown-collection", declared(tools=[tool(kind="ingest", collection={"name": "nope", "version": 1})]),
     (f"{T0}.collection", "reference")),
    ("record-tool-with-a-view", declared(tools=[tool(view={"name": "customer_context", "version": 1})]),
     (f"{T0}.view", "schema")),
    ("view-tool-with-a-collection", declared(tools=[tool(kind="view", view={"name": "customer_context", "version": 1},
                                                         collection={"name": "main", "version": 1})]),
     (f"{T0}.collection", "schema")),
    ("lookup-without-lookup", declared(tools=[tool(kind="lookup")]), (f"{T0}.lookup", "schema")),
    ("lookup-unknown", declared(tools=[tool(kind="lookup", lookup="delete")]), (f"{T0}.lookup", "schema")),
    ("description-too-long", declared(tools=[tool(description="x" * 2001)]), (f"{T0}.description", "schema")),
    ("forget-without-collection", declared(tools=[tool(kind="forget")]), (f"{T0}.collection", "schema")),
    ("forget-unknown-collection", declared(tools=[tool(kind="forget", collection={"name": "nope", "version": 1})]),
     (f"{T0}.collection", "reference")),
    ("feedback-with-a-collection", declared(tools=[tool(kind="feedback", collection={"name": "main", "version": 1})]),
     (f"{T0}.collection", "schema")),
    ("entity-prefix-on-a-record-tool", declared(tools=[tool(entity_prefix="contact.")]),
     (f"{T0}.entity_prefix", "schema")),
    ("entity-prefix-blank", declared(tools=[tool(kind="forget", collection={"name": "main", "version": 1},
                                                 entity_prefix=" ")]), (f"{T0}.entity_prefix", "schema")),
    ("entity-prefix-not-a-string", declared(tools=[tool(kind="forget", collection={"name": "main", "version": 1},
                                                        entity_prefix=7)]), (f"{T0}.entity_prefix", "schema")),
]


@pytest.mark.parametrize(("body", "expected"), [pytest.param(body, expected, id=case) for case, body, expected in
                                                BROKEN])
def test_broken_declaration_names_file_path_and_code(tmp_path, body, expected):
    assert issues(catalog_with(tmp_path, (AGENT, body))) == [(AGENT, *expected)]


def test_an_empty_file_is_a_schema_issue_of_the_file(tmp_path):
    assert issues(catalog_with(tmp_path, (AGENT, ""))) == [(AGENT, "", "schema")]


def test_two_active_declarations_collide(tmp_path):
    second = declared({"name": "helper"})
    assert issues(catalog_with(tmp_path, ("mcp/helper.yaml", second))) == [("mcp/helper.yaml", "active",
                                                                            "active_collision")]


def test_a_declaration_binds_an_inactive_view_version_when_it_is_loaded(tmp_path):
    body = declared(tools=[tool(name="old_search", kind="view", view={"name": "customer_context", "version": 2})])
    compiled = compile_catalog(catalog_with(tmp_path, (AGENT, body)), Catalog())
    interface = compiled.catalog.get("mcp", "agent").value
    assert interface.tools[0].target == ("customer_context", 2)


def test_nothing_is_exported_without_a_declaration(tmp_path):
    directory = catalog_with(tmp_path)
    (directory / AGENT).unlink()
    assert compile_catalog(directory, Catalog()).catalog.all("mcp") == []


def test_a_loaded_version_is_immutable(tmp_path, workspace):
    catalog_load(workspace=workspace, directory=catalog_with(tmp_path / "one"))
    changed = declared({"title": "Another title"})
    with pytest.raises(CatalogInvalid) as raised:
        catalog_load(workspace=workspace, directory=catalog_with(tmp_path / "two", (AGENT, changed)))
    assert [(i.file, i.path, i.code) for i in raised.value.issues] == [(AGENT, "", "immutable_definition")]


def test_a_new_version_replaces_the_active_one(tmp_path, workspace):
    catalog_load(workspace=workspace, directory=catalog_with(tmp_path / "one"))
    catalog_load(workspace=workspace, directory=catalog_with(tmp_path / "two", (AGENT, declared({"version": 2}))))
    rows = Definition.objects.filter(workspace=workspace, family="mcp").order_by("version")
    assert [(row.version, row.active) for row in rows] == [(1, False), (2, True)]


def test_activating_another_view_version_keeps_the_declaration_loadable(catalog, api):
    """Activation re-validates every stored definition, the declaration too; its view tool then
    names a version that is no longer active, which ``GET /tools`` shows and calls refuse."""
    from catalog_app.services.activation import DefinitionActivation

    DefinitionActivation(workspace=catalog, family="view", name="customer_context", version=2, actor="cli").execute()
    tools = {tool["name"]: tool for tool in api.get("/tools").json()["tools"]}
    assert tools["customer_context"]["binding"]["version"] == 1
    assert tools["customer_context"]["binding"]["active"] is False
