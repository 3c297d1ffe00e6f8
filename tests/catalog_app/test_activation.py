"""Activating a definition version: DefinitionActivation (check, execute), the re-validation
that refuses a catalog that would not load, the audit row, the catalog revision, and the
activate_view / activate_collection commands."""
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command

from catalog_app.catalog.revalidate import catalog_revalidate
from catalog_app.catalog.runtime import catalog_for_workspace, load_stored_catalog
from catalog_app.models import ActivationAudit, Definition, Workspace
from catalog_app.services.activation import ActivationPlan, ActivationRefused, DefinitionActivation
from catalog_app.services.catalog_load import catalog_load

# A catalog where activation flags matter to validation:
# - the graph view reads the ACTIVE version of its edge collection `links`: links@2 drops
#   `filter: true` from the predicate field `rel` (graph_field), links@3 is a compatible edit;
# - a search view over notes and facts takes each collection's search profile from its ACTIVE
#   version: notes@2 moves to another profile (search_profile), even for a view pinned to notes@1.
# (Field declarations are checked over every loaded version at load already, so activating a
# version cannot break them.)

def _collection(name, version, *, mode="event", fields=None, profile="pg_default", active=False, props=()):
    properties = {"text": {"type": "string"}, **{prop: {"type": "string"} for prop in props}}
    body = {"name": name, "version": version, "active": active, "mode": mode,
            "schema": {"type": "object", "required": ["text", *props], "properties": properties},
            "search_profile": profile}
    if fields:
        body["fields"] = fields
    return body


def _role(name, *, filter=True):
    return {"path": f"content.{name}", "type": "string", "filter": filter}


_ROLES = ("src", "dst", "rel")
FLAGGED_CATALOG = {
    "conf/search_profiles.yaml": {"profiles": {"pg_archive": {"backend": "pg"}}},
    "collections/links.yaml": {"collections": [
        _collection("links", 1, active=True, props=_ROLES, fields={r: _role(r) for r in _ROLES}),
        _collection("links", 2, props=_ROLES, fields={"src": _role("src"), "dst": _role("dst"),
                                                      "rel": _role("rel", filter=False)}),
        _collection("links", 3, props=(*_ROLES, "note"), fields={**{r: _role(r) for r in _ROLES},
                                                                 "note": _role("note")}),
    ]},
    "collections/notes.yaml": {"collections": [
        _collection("notes", 1, mode="keyed", active=True),
        _collection("notes", 2, mode="keyed", profile="pg_archive"),
        _collection("facts", 1, mode="keyed", active=True),
    ]},
    "views/views.yaml": {"views": [
        {"name": "link_graph", "version": 1, "active": True, "kind": "graph",
         "graph": {"edges": "links", "subject": "src", "object": "dst", "predicate": "rel"},
         "parameters": {"seed": {"type": "string", "required": True},
                        "predicates": {"type": "string_array", "default": []},
                        "direction": {"type": "string", "default": "out"},
                        "depth": {"type": "integer", "default": 1},
                        "limit": {"type": "integer", "default": 20}}},
        {"name": "notes_and_facts", "version": 1, "active": True,
         "parameters": {"q": {"type": "string", "required": True}},
         "query": {"q": "{{q}}", "mode": "text",
                   "scope": {"collections": ["notes", "facts"], "collection_versions": {"notes": [1]}}}},
    ]},
}


def write_catalog(directory: Path, files: dict[str, dict]) -> Path:
    for relative, document in files.items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return directory


@pytest.fixture
def flagged(workspace, tmp_path):
    catalog_load(workspace=workspace, directory=write_catalog(tmp_path / "flagged", FLAGGED_CATALOG))
    workspace.refresh_from_db()
    return workspace


def activation(workspace, family, name, version, actor="alice"):
    return DefinitionActivation(workspace=workspace, family=family, name=name, version=version, actor=actor)


def active_versions(workspace, family, name):
    return list(Definition.objects.filter(workspace=workspace, family=family, name=name, active=True)
                .values_list("version", flat=True))


def snapshot(workspace):
    """Everything an activation may write."""
    return (sorted(Definition.objects.filter(workspace=workspace).values_list("family", "name", "version", "active")),
            Workspace.objects.get(pk=workspace.pk).catalog_revision,
            ActivationAudit.objects.filter(workspace=workspace).count())


# --- Happy path ------------------------------------------------------------------------------

def test_view_activation_moves_the_active_flag_audits_and_bumps_the_revision(api, catalog):
    revision = catalog.catalog_revision
    action = activation(catalog, "view", "customer_context", 2)

    plan = action.check()
    assert plan == ActivationPlan(catalog.pk, "view", "customer_context", 1, 2)
    assert active_versions(catalog, "view", "customer_context") == [1]  # check() writes nothing

    audit = action.execute()
    assert active_versions(catalog, "view", "customer_context") == [2]
    assert (audit.workspace_id, audit.family, audit.name, audit.from_version, audit.to_version, audit.actor) == \
        (catalog.pk, "view", "customer_context", 1, 2, "alice")
    assert ActivationAudit.objects.filter(workspace=catalog).count() == 1
    assert Workspace.objects.get(pk=catalog.pk).catalog_revision == revision + 1
    assert catalog.catalog_revision == revision + 1  # the caller's instance is refreshed
    assert catalog_for_workspace(catalog).get("view", "customer_context").version == 2

    listed = {(v["name"], v["version"]): v["active"] for v in api.get("/views").json()["views"]}
    assert listed[("customer_context", 1)] is False
    assert listed[("customer_context", 2)] is True


def test_activating_back_restores_the_previous_version(catalog):
    activation(catalog, "view", "customer_context", 2).execute()
    audit = activation(catalog, "view", "customer_context", 1, actor="cli").execute()
    assert (audit.from_version, audit.to_version, audit.actor) == (2, 1, "cli")
    assert active_versions(catalog, "view", "customer_context") == [1]
    assert ActivationAudit.objects.filter(workspace=catalog).count() == 2


def test_a_compatible_collection_version_activates(flagged):
    audit = activation(flagged, "collection", "links", 3).execute()
    assert (audit.from_version, audit.to_version) == (1, 3)
    assert active_versions(flagged, "collection", "links") == [3]


def test_activation_only_touches_its_own_workspace(catalog, other_workspace_api):
    other = Workspace.objects.get(name="other-co")
    activation(catalog, "view", "customer_context", 2).execute()
    assert active_versions(other, "view", "customer_context") == [1]


# --- Refusals --------------------------------------------------------------------------------

@pytest.mark.parametrize(("family", "name", "version", "code", "words"), [
    ("view", "customer_context", 1, "already_active", "already active"),
    ("view", "customer_context", 9, "definition_not_found", "loaded versions: 1, 2"),
    ("view", "no_such_view", 1, "definition_not_found", "no view named 'no_such_view'"),
    ("collection", "main", 2, "definition_not_found", "loaded versions: 1"),
    ("processor", "importance", 1, "unsupported_family", "only collection and view"),
    ("view", "customer_context", 0, "invalid_version", "positive integer"),
])
def test_refusals_name_the_reason_and_write_nothing(catalog, family, name, version, code, words):
    before = snapshot(catalog)
    for step in ("check", "execute"):
        with pytest.raises(ActivationRefused) as refused:
            getattr(activation(catalog, family, name, version), step)()
        assert refused.value.code == code
        assert words in refused.value.message
        assert refused.value.issues == ()
    assert snapshot(catalog) == before


def test_an_edge_collection_version_that_breaks_a_graph_view_is_refused(flagged):
    before = snapshot(flagged)
    with pytest.raises(ActivationRefused) as refused:
        activation(flagged, "collection", "links", 2).execute()
    assert refused.value.code == "would_not_load"
    assert "would leave a catalog that does not load" in refused.value.message
    [issue] = refused.value.issues
    assert (issue.file, issue.path, issue.code) == ("views/views.yaml", "views[0].graph.predicate", "graph_field")
    assert "views/views.yaml: views[0].graph.predicate: [graph_field]" in refused.value.message
    assert snapshot(flagged) == before


def test_a_search_profile_split_is_refused_even_for_a_pinned_view(flagged):
    # notes@1 stays pinned by the view, but its search profile is read from the active version.
    before = snapshot(flagged)
    with pytest.raises(ActivationRefused) as refused:
        activation(flagged, "collection", "notes", 2).check()
    [issue] = refused.value.issues
    assert (issue.file, issue.code) == ("views/views.yaml", "search_profile")
    assert issue.path.startswith("views[1].query.scope.collections")
    assert snapshot(flagged) == before


def test_problems_already_in_the_stored_catalog_are_called_out(flagged):
    # Simulate a catalog that no longer loads as stored: its graph view's YAML is lost.
    Definition.objects.filter(workspace=flagged, family="view", name="link_graph").update(source_text="")
    with pytest.raises(ActivationRefused) as refused:
        activation(flagged, "collection", "links", 3).check()
    assert [issue.code for issue in refused.value.issues] == ["source_missing"]
    assert "already affect the stored catalog" in refused.value.message


# --- Re-validation ---------------------------------------------------------------------------

def stored_sources(workspace):
    return {(f, n, v): t for f, n, v, t in Definition.objects.filter(workspace=workspace)
            .values_list("family", "name", "version", "source_text")}


def test_a_loaded_catalog_revalidates_cleanly(catalog, flagged):
    assert catalog_revalidate(load_stored_catalog(catalog), stored_sources(catalog)) == []


def test_revalidation_checks_inactive_versions_too(flagged):
    # A view version that is not active still has to load: break its source and see it reported.
    sources = stored_sources(flagged)
    sources[("view", "notes_and_facts", 1)] = sources[("view", "notes_and_facts", 1)].replace(
        "- facts", "- nowhere")
    Definition.objects.filter(workspace=flagged, family="view", name="notes_and_facts").update(active=False)
    issues = catalog_revalidate(load_stored_catalog(flagged), sources)
    assert [(issue.path, issue.code) for issue in issues] == [("views[1].query.scope.collections[1]",
                                                               "unknown_collection")]


# --- Commands --------------------------------------------------------------------------------

def test_activate_view_command(catalog):
    out = StringIO()
    call_command("activate_view", "customer_context", "2", "--workspace", "acme", stdout=out)
    assert "activated view customer_context@2 in acme (was @1)" in out.getvalue()
    assert active_versions(catalog, "view", "customer_context") == [2]
    assert ActivationAudit.objects.get(workspace=catalog).actor == "cli"


def test_activate_collection_command(flagged):
    out = StringIO()
    call_command("activate_collection", "links", "3", "--workspace", "acme", stdout=out)
    assert "activated collection links@3 in acme (was @1)" in out.getvalue()
    assert active_versions(flagged, "collection", "links") == [3]


def test_activate_collection_command_prints_the_refusal(flagged):
    err = StringIO()
    before = snapshot(flagged)
    with pytest.raises(CommandError, match="not activated: activating collection links@2 would leave"):
        call_command("activate_collection", "links", "2", "--workspace", "acme", stderr=err)
    assert "[graph_field]" in err.getvalue()
    assert snapshot(flagged) == before


@pytest.mark.parametrize(("args", "message"), [
    (["customer_context", "1", "--workspace", "acme"], "already active"),
    (["customer_context", "2", "--workspace", "nowhere"], "workspace 'nowhere' does not exist"),
])
def test_activate_view_command_refusals(catalog, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("activate_view", *args)
    assert active_versions(catalog, "view", "customer_context") == [1]
