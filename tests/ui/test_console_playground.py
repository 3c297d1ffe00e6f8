"""The search playground: a form generated from the view's input schema, runs through
``view_query`` / ``search_run`` as the workspace, the response shown unchanged, and every
``ApiError`` shown with its code, path and detail. Structured views need no embeddings, so these
tests run without the model; the browser test runs a hybrid view with the real one."""
import html
import json
import re

import pytest
from django.urls import reverse
from django.utils.html import escape

from search_app.views.service import view_query
from tests.catalog_app.factories import record_make

from .conftest import csrf_token

MARIA = "contact.maria"


def playground_url(workspace) -> str:
    return reverse("console:playground", args=[workspace.name])


def run(client, workspace, data: dict, *, view: str | None = None):
    page = client.get(playground_url(workspace), {"view": view} if view else {})
    return client.post(playground_url(workspace), {"csrfmiddlewaretoken": csrf_token(page), **data})


@pytest.fixture
def tickets(catalog):
    rows = [record_make(catalog, entity=MARIA, collection="tickets", type="ticket", text=text,
                        content={"channel": channel, "priority": priority, "opened_at": "2026-02-01T00:00:00Z"})
            for text, channel, priority in [("Invoice question", "email", 2), ("Login broken", "chat", 1),
                                            ("Call me back", "call", 3)]]
    return catalog, rows


def test_the_form_follows_the_input_schema(staff, catalog):
    page = staff.get(playground_url(catalog), {"view": "open_tickets"}).content.decode()
    assert '<option value="open_tickets" selected>' in page
    assert re.search(r'<select name="channels"[^>]*multiple', page)
    for channel in ("email", "call", "chat"):
        assert f'<option value="{channel}">{channel}</option>' in page
    assert 'name="opened_after"' in page and "RFC 3339 datetime" in page
    assert "entity *" in page  # required
    first = staff.get(playground_url(catalog)).content.decode()
    assert 'name="task"' in first and 'name="k"' in first and "default 20" in first


def test_running_a_view_shows_hits_and_the_rendered_text_exactly(staff, tickets):
    workspace, rows = tickets
    response = run(staff, workspace, {"mode": "view", "view": "open_tickets", "entity": MARIA,
                                      "channels": ["email", "chat"]}, view="open_tickets")
    page = response.content.decode()
    expected = view_query(workspace=workspace, name="open_tickets", body={"entity": MARIA,
                                                                          "channels": ["email", "chat"]})
    assert [hit["id"] for hit in expected["hits"]] == [str(rows[1].id), str(rows[0].id)]
    hits = page[page.index('id="hits"'):page.index("</table>", page.index('id="hits"'))]
    assert hits.index(str(rows[1].id)[:8]) < hits.index(str(rows[0].id)[:8])
    assert "Call me back" not in hits
    rendered = re.search(r'<pre id="rendered">\n(.*?)</pre>', page, re.S).group(1)
    assert html.unescape(rendered) == expected["rendered"]
    assert '&quot;channels&quot;: [\n    &quot;email&quot;,\n    &quot;chat&quot;' in page  # the request body shown


def test_a_missing_required_parameter_is_shown_as_the_api_error(staff, catalog):
    page = run(staff, catalog, {"mode": "view", "view": "customer_context", "entity": MARIA}).content.decode()
    error = page[page.index('id="error"'):]
    assert "<code>view_parameter</code>" in error and "<code>task</code>" in error and "is required" in error
    assert 'id="hits"' not in page


def test_a_value_of_the_wrong_type_is_passed_to_the_binder(staff, catalog):
    page = run(staff, catalog, {"mode": "view", "view": "customer_context", "entity": MARIA, "task": "x",
                                "k": "ten"}).content.decode()
    assert "<code>view_parameter</code>" in page and "<code>k</code>" in page and "expected an integer" in page
    page = run(staff, catalog, {"mode": "view", "view": "customer_context", "entity": MARIA, "task": "x",
                                "k": "500"}).content.decode()
    assert "must be at most 100" in page


def test_a_searchspec_runs_through_post_search(staff, tickets):
    workspace, rows = tickets
    spec = {"mode": "structured", "scope": {"collections": ["tickets"]}, "order_by": [{"field": "priority"}],
            "include": ["text"], "k": 2, "render": True}
    page = run(staff, workspace, {"mode": "spec", "spec": json.dumps(spec)}).content.decode()
    hits = page[page.index('id="hits"'):]
    assert "Login broken" in hits and "Invoice question" in hits and "Call me back" not in hits.split("</table>")[0]
    assert "POST /search" in page


@pytest.mark.parametrize(("spec", "code", "path"), [
    ("{not json", "invalid_json", None),
    ('{"q": "x", "mode": "text", "colour": 1}', "request_schema", "colour"),
    ('{"q": "x", "mode": "text", "scope": {"collections": ["nope"]}}', "unknown_collection", "scope.collections[0]"),
])
def test_searchspec_errors_are_shown_with_code_and_path(staff, catalog, spec, code, path):
    page = run(staff, catalog, {"mode": "spec", "spec": spec}).content.decode()
    error = page[page.index('id="error"'):]
    assert "refused: <code>" in error
    if code:
        assert f"<code>{code}</code>" in error
    if path:
        assert f"at <code>{path}</code>" in error
    assert escape(spec) in page  # the text stays in the box for fixing


def test_runs_need_the_csrf_token(staff, catalog):
    response = staff.post(playground_url(catalog), {"mode": "spec", "spec": '{"q": "x", "mode": "text"}'})
    assert response.status_code == 403


def test_a_workspace_without_views_still_takes_a_searchspec(staff, workspace):
    page = staff.get(playground_url(workspace)).content.decode()
    assert "No active views in this workspace" in page and 'id="spec-form"' in page
