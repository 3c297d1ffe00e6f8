"""Load-time checks of ``views/*.yaml`` (views-and-search.md "What is checked, and when",
reference 4.4 "Search views", "Graph views", "Parameters").

Each case copies the example catalog into ``tmp_path``, adds one ``views/broken.yaml`` holding a
single deliberately broken view (plus, for some cases, a small collection or profile file of its
own), loads it over the already loaded example catalog, and asserts the one issue it must
produce — file, dotted path and code — and that nothing was written.
"""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from catalog_app.catalog.errors import CatalogInvalid
from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.models import Definition, Workspace
from catalog_app.services.catalog_load import catalog_load
from search_app.views.definitions import GraphMapping
from tests.conftest import EXAMPLE_CATALOG

BROKEN = "views/broken.yaml"

# An event collection whose one field is declared but neither filterable, sortable nor returnable.
NOTES = {"collections/notes.yaml": """
    collections:
      - name: notes
        version: 1
        active: true
        mode: event
        schema: {type: object, required: [text], properties: {text: {type: string}, label: {type: string}}}
        fields:
          label: {path: content.label, type: string}
        search_profile: pg_default
"""}

# Two versions of one collection declaring ``label`` with different types.
CHANGES = {"collections/changes.yaml": """
    collections:
      - name: changes
        version: 1
        active: true
        mode: event
        schema: {type: object, required: [text], properties: {text: {type: string}, label: {type: string}}}
        fields:
          label: {path: content.label, type: string, filter: true}
        search_profile: pg_default
      - name: changes
        version: 2
        mode: event
        schema: {type: object, required: [text], properties: {text: {type: string}, label: {type: integer}}}
        fields:
          label: {path: content.label, type: integer, filter: true}
        search_profile: pg_default
"""}

# An edge collection whose role fields carry the default names subject, object and predicate.
LINKS = {"collections/links.yaml": """
    collections:
      - name: links
        version: 1
        active: true
        mode: event
        schema:
          type: object
          required: [text, subject, object, predicate]
          properties: {text: {type: string}, subject: {type: string}, object: {type: string},
                       predicate: {type: string}}
        fields:
          subject: {path: content.subject, type: string, filter: true}
          object: {path: content.object, type: string, filter: true}
          predicate: {path: content.predicate, type: string, filter: true}
        search_profile: pg_default
"""}

# A collection bound to a turbopuffer profile: it loads, but no backend in this build serves it.
TURBOPUFFER = {
    "conf/search_profiles.yaml": """
        profiles:
          remote: {backend: turbopuffer}
    """,
    "collections/remote.yaml": """
        collections:
          - name: remote
            version: 1
            active: true
            mode: event
            schema: {type: object, required: [text], properties: {text: {type: string}}}
            search_profile: remote
    """,
}

GRAPH_PARAMETERS = """
      seed: {type: string, required: true}
      predicates: {type: string_array, default: []}
      direction: {type: string, default: out}
      depth: {type: integer, default: 1}
      limit: {type: integer, default: 20}
"""

# A valid search view; the control case proves the cases below fail for their one edit only.
VALID = """
views:
  - name: probe
    version: 1
    active: true
    parameters:
      entity: {type: string, required: true}
      task: {type: string, required: true}
    query:
      q: "{{task}}"
      mode: hybrid
      scope: {collections: [main], entities: ["{{entity}}"]}
      where: {speaker: {eq: maria}}
      fields: [speaker]
"""


def search_view(query: str, parameters: str = "task: {type: string, required: true}", extra: str = "") -> str:
    """A one-view file: ``query`` and ``parameters`` are YAML mapping bodies (flow or block)."""
    return (f"views:\n  - name: probe\n    version: 1\n    active: true\n{extra}"
            f"    parameters:\n{textwrap.indent(textwrap.dedent(parameters).strip(), ' ' * 6)}\n"
            f"    query:\n{textwrap.indent(textwrap.dedent(query).strip(), ' ' * 6)}\n")


def graph_view(graph: str, kind: str = "graph", parameters: str = GRAPH_PARAMETERS) -> str:
    return (f"views:\n  - name: probe\n    version: 1\n    active: true\n    kind: {kind}\n"
            f"    parameters:\n{textwrap.indent(textwrap.dedent(parameters).strip(), ' ' * 6)}\n"
            f"    graph: {graph}\n")


HYBRID_MAIN = "q: '{{task}}'\nmode: hybrid\nscope: {collections: [main]}\n"
EDGES = "{edges: dependencies, subject: from_node, object: to_node, predicate: relationship}"

# (case id, view file text, extra files, expected dotted path, expected code)
CASES = [
    ("placeholder_names_undeclared_parameter",
     search_view("q: '{{tsk}}'\nmode: text\nscope: {collections: [main]}"),
     {}, "views[0].query.q", "template_reference"),
    ("sample_fills_list_operand_from_string",
     search_view(HYBRID_MAIN + "where: {speaker: {in: '{{who}}'}}",
                 "task: {type: string, required: true}\nwho: {type: string, required: true}"),
     {}, "views[0].query.where.speaker.in", "search_spec"),
    ("unknown_searchspec_key",
     search_view("q: '{{task}}'\nmode: hybrid\nscope: {colections: [main]}"),
     {}, "views[0].query.scope.colections", "search_spec"),
    ("source_without_collections",
     search_view("q: '{{task}}'\nmode: hybrid\nscope: {entities: [maria]}"),
     {}, "views[0].query.scope.collections", "search_scope"),
    ("system_collection",
     search_view("q: '{{task}}'\nmode: hybrid\nscope: {collections: [_system]}"),
     {}, "views[0].query.scope.collections[0]", "reserved"),
    ("unknown_collection",
     search_view("q: '{{task}}'\nmode: hybrid\nscope: {collections: [main, mian]}"),
     {}, "views[0].query.scope.collections[1]", "unknown_collection"),
    ("pinned_collection_version_missing",
     search_view("q: '{{task}}'\nmode: hybrid\nscope: {collections: [main], collection_versions: {main: [1, 7]}}"),
     {}, "views[0].query.scope.collection_versions.main[1]", "unknown_collection"),
    ("required_capability_on_unusable_backend",
     search_view("q: '{{task}}'\nmode: text\nscope: {collections: [remote]}",
                 extra="    required_capabilities: [structured]\n"),
     TURBOPUFFER, "views[0].query.scope.collections", "search_backend_unavailable"),
    ("unknown_rank_operator",
     search_view(HYBRID_MAIN + "rank: [sum, [[similarity], [bogus]]]"),
     {}, "views[0].query.rank[1][1][0]", "search_spec"),
    ("unknown_score_name",
     search_view(HYBRID_MAIN + "rank: [score, urgency]"),
     {}, "views[0].query.rank[1]", "search_spec"),
    ("similarity_in_text_mode",
     search_view("q: '{{task}}'\nmode: text\nscope: {collections: [main]}\nrank: [similarity]"),
     {}, "views[0].query.rank", "search_spec"),
    ("filter_on_undeclared_field",
     search_view(HYBRID_MAIN + "where: {mood: {eq: happy}}"),
     {}, "views[0].query.where.mood", "field_reference"),
    ("field_signature_differs_across_versions",
     search_view("q: '{{task}}'\nmode: text\nscope: {collections: [changes]}\nwhere: {label: {exists: true}}"),
     CHANGES, "views[0].query.where.label", "field_compatibility"),
    ("filter_on_field_not_filterable",
     search_view("q: '{{task}}'\nmode: text\nscope: {collections: [notes]}\nwhere: {label: {eq: x}}"),
     NOTES, "views[0].query.where.label", "field_permission"),
    ("range_operator_on_string_field",
     search_view(HYBRID_MAIN + "where: {speaker: {gt: m}}"),
     {}, "views[0].query.where.speaker.gt", "field_operator"),
    ("projected_field_not_returnable",
     search_view("q: '{{task}}'\nmode: text\nscope: {collections: [notes]}\nfields: [label]"),
     NOTES, "views[0].query.fields[0]", "field_permission"),
    ("annotation_not_required",
     search_view(HYBRID_MAIN + "annotations: [importance]"),
     {}, "views[0].query.annotations[0]", "required_annotation"),
    ("fence_without_render",
     search_view(HYBRID_MAIN + "fence: {tag: records}"),
     {}, "views[0].query.fence", "search_spec"),
    ("fence_tag_not_public_name",
     search_view(HYBRID_MAIN + "render: true\nfence: {tag: Records}"),
     {}, "views[0].query.fence.tag", "search_spec"),
    ("parameter_required_with_default",
     search_view(HYBRID_MAIN, "task: {type: string, required: true, default: plan}"),
     {}, "views[0].parameters.task.default", "view_parameter"),
    ("minimum_on_string_parameter",
     search_view(HYBRID_MAIN, "task: {type: string, required: true, minimum: 3}"),
     {}, "views[0].parameters.task.minimum", "view_parameter"),
    ("default_outside_enum",
     search_view(HYBRID_MAIN, "task: {type: string, default: later, enum: [now, soon]}"),
     {}, "views[0].parameters.task.default", "view_parameter"),
    ("graph_view_with_wrong_fixed_parameters",
     graph_view(EDGES, parameters=GRAPH_PARAMETERS.replace("default: 20", "default: 25")),
     {}, "views[0].parameters.limit.default", "graph_view"),
    ("graph_edges_collection_keyed",
     graph_view("{edges: profiles, subject: title, object: title, predicate: title}"),
     {}, "views[0].graph.edges", "graph_edge_collection"),
    ("graph_role_field_not_filterable",
     graph_view("{edges: notes, subject: label, object: label, predicate: label}"),
     NOTES, "views[0].graph.subject", "graph_field"),
    ("graph_seed_longer_than_the_fixed_bound",
     graph_view(EDGES, parameters=GRAPH_PARAMETERS.replace("required: true}", "required: true, max_length: 256}")),
     {}, "views[0].parameters.seed.max_length", "graph_view"),
    ("graph_default_role_field_not_declared",
     graph_view("{edges: dependencies}"),
     {}, "views[0].graph.subject", "graph_field"),
    ("orphan_nodes_collection_is_event",
     graph_view(EDGES[:-1] + ", nodes: tickets}", kind="graph_orphans",
                parameters="limit: {type: integer, default: 50}"),
     {}, "views[0].graph.nodes", "graph_node_collection"),
    ("unknown_key_in_view",
     search_view(HYBRID_MAIN, extra="    descripton: a typo\n"),
     {}, "views[0].descripton", "schema"),
    ("duplicate_yaml_key",
     search_view("q: '{{task}}'\nmode: hybrid\nmode: text\nscope: {collections: [main]}"),
     {}, "", "yaml"),
]


def catalog_dir(tmp_path: Path, view_text: str, extra: dict[str, str] | None = None) -> Path:
    """The example catalog plus ``views/broken.yaml`` and any ``extra`` files."""
    directory = tmp_path / "catalog"
    shutil.copytree(EXAMPLE_CATALOG, directory)
    for relative, text in {BROKEN: view_text, **(extra or {})}.items():
        (directory / relative).parent.mkdir(parents=True, exist_ok=True)
        (directory / relative).write_text(textwrap.dedent(text))
    return directory


def load_issues(workspace: Workspace, directory: Path) -> list:
    """Load ``directory``, assert it fails and writes nothing, and return its issues."""
    rows = list(Definition.objects.filter(workspace=workspace).values_list("family", "name", "version", "active"))
    revision = Workspace.objects.get(pk=workspace.pk).catalog_revision
    with pytest.raises(CatalogInvalid) as failure:
        catalog_load(workspace=workspace, directory=directory)
    after = list(Definition.objects.filter(workspace=workspace).values_list("family", "name", "version", "active"))
    assert sorted(after) == sorted(rows)
    assert Workspace.objects.get(pk=workspace.pk).catalog_revision == revision
    return failure.value.issues


def test_the_control_view_loads_with_its_collections(catalog, tmp_path):
    catalog_load(workspace=catalog, directory=catalog_dir(tmp_path, VALID))
    catalog.refresh_from_db()
    view = catalog_for_workspace(catalog).value("view", "probe")
    assert view.kind == "search"
    assert view.collections == ("main",)
    assert Definition.objects.get(workspace=catalog, family="view", name="probe").source_file == BROKEN


@pytest.mark.parametrize(("view_text", "extra", "path", "code"), [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_broken_view_fails_at_load_naming_file_path_and_code(catalog, tmp_path, view_text, extra, path, code):
    issues = load_issues(catalog, catalog_dir(tmp_path, view_text, extra))
    assert [(issue.file, issue.path, issue.code) for issue in issues] == [(BROKEN, path, code)], issues


def test_broken_view_fails_on_an_empty_workspace_too(workspace, tmp_path):
    issues = load_issues(workspace, catalog_dir(tmp_path, search_view("q: '{{tsk}}'\nmode: text\n"
                                                                      "scope: {collections: [main]}")))
    assert [(issue.file, issue.path, issue.code) for issue in issues] == [(BROKEN, "views[0].query.q",
                                                                          "template_reference")]
    assert not Definition.objects.filter(workspace=workspace).exists()


def test_messages_say_what_to_do(catalog, tmp_path):
    scope = load_issues(catalog, catalog_dir(tmp_path, search_view("q: '{{task}}'\nmode: text\nscope: {}")))
    assert "explicitly" in scope[0].message
    system = load_issues(catalog, catalog_dir(tmp_path / "s", search_view(
        "q: '{{task}}'\nmode: text\nscope: {collections: [_system]}")))
    assert "_system" in system[0].message


def test_every_view_in_a_file_is_checked_with_its_index(catalog, tmp_path):
    second = search_view("q: '{{tsk}}'\nmode: text\nscope: {collections: [main]}")
    second = second.replace("name: probe", "name: second")
    issues = load_issues(catalog, catalog_dir(tmp_path, VALID + second.removeprefix("views:\n")))
    assert [(issue.file, issue.path, issue.code) for issue in issues] == [(BROKEN, "views[1].query.q",
                                                                          "template_reference")]


def test_a_turbopuffer_collection_loads_but_no_view_can_read_it(catalog, tmp_path):
    # Only pg runs in this build: the profile and its collection load (a deployment may bind
    # them later), while a view over them fails at load, with or without required_capabilities,
    # because it could never run here.
    plain = catalog_dir(tmp_path / "plain", VALID, TURBOPUFFER)
    catalog_load(workspace=catalog, directory=plain)
    catalog.refresh_from_db()
    assert catalog_for_workspace(catalog).value("collection", "remote").search_profile == "remote"
    issues = load_issues(catalog, catalog_dir(tmp_path / "view", search_view(
        "q: '{{task}}'\nmode: text\nscope: {collections: [remote]}"), TURBOPUFFER))
    assert [(issue.path, issue.code) for issue in issues] == [("views[0].query.scope.collections",
                                                               "search_backend_unavailable")]
    assert "turbopuffer" in issues[0].message


def test_required_capabilities_the_pg_backend_has_load(catalog, tmp_path):
    text = search_view(HYBRID_MAIN, extra="    required_capabilities: [vector, text, recent, structured]\n")
    catalog_load(workspace=catalog, directory=catalog_dir(tmp_path, text))
    catalog.refresh_from_db()
    view = catalog_for_workspace(catalog).value("view", "probe")
    assert view.required_capabilities == ("vector", "text", "recent", "structured")


def test_an_unknown_capability_is_a_schema_error(catalog, tmp_path):
    text = search_view(HYBRID_MAIN, extra="    required_capabilities: [telepathy]\n")
    issues = load_issues(catalog, catalog_dir(tmp_path, text))
    assert [(issue.path, issue.code) for issue in issues] == [("views[0].required_capabilities", "schema")]


@pytest.mark.parametrize(("text", "collections"), [
    (graph_view(EDGES), ("dependencies",)),
    (graph_view(EDGES[:-1] + ", nodes: profiles}", kind="graph_orphans",
                parameters="limit: {type: integer, default: 50, maximum: 100, description: How many.}"),
     ("dependencies", "profiles")),
], ids=["graph", "graph_orphans"])
def test_graph_views_with_the_fixed_contract_load(catalog, tmp_path, text, collections):
    catalog_load(workspace=catalog, directory=catalog_dir(tmp_path, text))
    catalog.refresh_from_db()
    view = catalog_for_workspace(catalog).value("view", "probe")
    assert view.collections == collections
    assert view.query is None and view.graph.edges == "dependencies"


def test_a_graph_view_may_bound_its_seed_within_the_fixed_range(catalog, tmp_path):
    parameters = GRAPH_PARAMETERS.replace("required: true}", "required: true, min_length: 1, max_length: 128}")
    catalog_load(workspace=catalog, directory=catalog_dir(tmp_path, graph_view(EDGES, parameters=parameters)))
    catalog.refresh_from_db()
    seed = catalog_for_workspace(catalog).value("view", "probe").parameters[0]
    assert (seed.name, seed.min_length, seed.max_length) == ("seed", 1, 128)


@pytest.mark.parametrize(("graph", "kind", "parameters", "nodes"), [
    ("{edges: links}", "graph", GRAPH_PARAMETERS, None),
    ("{edges: links, nodes: profiles}", "graph_orphans", "limit: {type: integer, default: 50}", "profiles"),
], ids=["graph", "graph_orphans"])
def test_graph_roles_default_to_the_fields_subject_object_and_predicate(catalog, tmp_path, graph, kind,
                                                                       parameters, nodes):
    text = graph_view(graph, kind=kind, parameters=parameters)
    catalog_load(workspace=catalog, directory=catalog_dir(tmp_path, text, LINKS))
    catalog.refresh_from_db()
    view = catalog_for_workspace(catalog).value("view", "probe")
    assert view.graph == GraphMapping("links", "subject", "object", "predicate", nodes)
