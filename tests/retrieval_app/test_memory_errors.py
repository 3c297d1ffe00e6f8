"""Every ``GET /memory/*`` route's bad input: a table of (query string → status, code, path),
hostile values included, each leaving the store unchanged; and workspace isolation: another
workspace's paths are 404, never an empty answer, and its records never reach yours."""
from __future__ import annotations

from urllib.parse import quote, urlencode

import pytest

from catalog_app.models import Record
from tests.catalog_app.factories import record_make

MARIA = "contact.maria"
RID = "0b8e54f6-59f5-4c43-9a55-0d2f1bd2a001"
P = f"passages/main/{MARIA}"

ROUTES = ("grep", "latest", "around", "read", "ls", "history")
ERRORS = [
    # Unknown, repeated and missing parameters
    *[(route, "bogus=1" + extra, 422, "request_schema", "bogus")
      for route, extra in (("grep", "&q=x"), ("latest", ""), ("around", f"&path={P}/{RID}"),
                           ("read", f"&path={P}/{RID}"), ("ls", ""), ("history", "&path=facts/main/e/k"))],
    ("grep", "q=a&q=b", 422, "request_schema", "q"),
    ("latest", "limit=1&limit=2", 422, "request_schema", "limit"),
    ("grep", "", 422, "request_schema", "q"),
    ("around", "", 422, "request_schema", "path"),
    ("read", "", 422, "request_schema", "path"),
    ("history", "", 422, "request_schema", "path"),
    # The phrase
    ("grep", "q=", 422, "request_schema", "q"),
    ("grep", "q=%20%20", 422, "request_schema", "q"),
    ("grep", "q=%21%3F%2D", 422, "request_schema", "q"),
    ("grep", "q=" + "x" * 513, 422, "request_schema", "q"),
    ("grep", "q=x&entity=", 422, "request_schema", "entity"),
    ("latest", "entity=" + "e" * 256, 422, "request_schema", "entity"),
    # Limits and cursors
    *[(route, f"limit={value}" + extra, 422, "request_schema", "limit")
      for route, extra in (("grep", "&q=x"), ("latest", ""), ("ls", ""), ("history", "&path=facts/main/e/k"))
      for value in ("0", "101", "-1", "ten", "1.5", "", "9" * 40)],
    ("around", f"path={P}/{RID}&before=51", 422, "request_schema", "before"),
    ("around", f"path={P}/{RID}&after=-1", 422, "request_schema", "after"),
    ("around", f"path={P}/{RID}&after=x", 422, "request_schema", "after"),
    *[("latest", f"cursor={value}", 422, "request_schema", "cursor")
      for value in ("abc", "1", "1.", ".1", "1.2.3", "1.-2", "9" * 19 + ".1", "1." + "9" * 19)],
    ("latest", "cursor=1%2E2%00", 422, "invalid_character", "cursor"),
    ("history", "path=facts/main/e/k&cursor=zzz", 422, "request_schema", "cursor"),
    ("ls", "path=passages/main&cursor=passages/tickets/x", 422, "request_schema", "cursor"),
    ("ls", "path=passages/main&cursor=passages/main", 422, "request_schema", "cursor"),
    ("ls", "path=passages/main&cursor=bad%2F%2Fpath", 422, "invalid_path", "cursor"),
    # Dates
    ("latest", "after=2023-05-02&before=2023-05-01", 422, "date_order", "after"),
    ("grep", "q=x&after=2023-05-01T10:00:00Z&before=2023-05-01T09:00:00Z", 422, "date_order", "after"),
    ("latest", "after=yesterday", 422, "request_schema", "after"),
    ("latest", "before=2023-13-01", 422, "request_schema", "before"),
    ("latest", "before=2023-05-01T10:00:00", 422, "request_schema", "before"),
    ("latest", "before=" + quote("2023-05-01 10:00:00+00:00"), 422, "request_schema", "before"),
    ("latest", "after=" + quote("0001-01-01T00:00:00+14:00"), 422, "datetime_out_of_range", "after"),
    ("latest", "before=9999-12-31", 422, "request_schema", "before"),
    # Paths
    ("latest", "path=memories", 422, "invalid_path", "path"),
    ("latest", "path=passages//x", 422, "invalid_path", "path"),
    ("latest", f"path={P}/{RID}", 422, "invalid_path", "path"),
    ("grep", "q=x&path=passages/Main", 422, "invalid_path", "path"),
    ("ls", f"path={P}/{RID}", 422, "invalid_path", "path"),
    ("ls", "path=" + "p" * 2000, 422, "invalid_path", "path"),
    ("ls", "path=passages/main/a%25zz", 422, "invalid_path", "path"),
    ("around", f"path={P}", 422, "invalid_path", "path"),
    ("around", "path=facts/main/e/k", 422, "invalid_path", "path"),
    ("around", f"path={P}/not-a-uuid", 422, "invalid_path", "path"),
    ("read", f"path={P}", 422, "invalid_path", "path"),
    ("read", "path=passages", 422, "invalid_path", "path"),
    ("history", f"path={P}/{RID}", 422, "invalid_path", "path"),
    ("history", f"path=facts/main/{MARIA}", 422, "invalid_path", "path"),
    # Nothing there
    ("latest", "path=passages/nosuch", 404, "path_not_found", "path"),
    ("ls", "path=facts/nosuch", 404, "path_not_found", "path"),
    ("ls", "path=passages/main/nobody", 404, "path_not_found", "path"),
    ("latest", "entity=nobody", 404, "path_not_found", "entity"),
    ("grep", "q=x&path=passages/main/nobody", 404, "path_not_found", "path"),
    ("around", f"path={P}/{RID}", 404, "path_not_found", "path"),
    ("read", f"path={P}/{RID}", 404, "path_not_found", "path"),
    ("read", f"path=facts/main/{MARIA}/nokey", 404, "path_not_found", "path"),
    ("history", f"path=facts/main/{MARIA}/nokey", 404, "path_not_found", "path"),
    ("history", "path=facts/nosuch/e/k", 404, "path_not_found", "path"),
]


@pytest.mark.parametrize(("route", "query", "status", "code", "path"), ERRORS)
def test_bad_lookup_requests(api, catalog, route, query, status, code, path):
    record_make(catalog, entity=MARIA, text="hello", content={"speaker": "user"})
    before = list(Record.objects.values_list("id", "last_accessed", "access_count").order_by("seq"))
    response = api.get(f"/memory/{route}?{query}")
    body = response.json()
    assert (response.status_code, body["error"], body.get("path")) == (status, code, path), body
    assert body["detail"]
    assert list(Record.objects.values_list("id", "last_accessed", "access_count").order_by("seq")) == before


def test_every_route_is_in_the_table():
    assert {row[0] for row in ERRORS} == set(ROUTES)


@pytest.mark.parametrize("route", ROUTES)
def test_every_route_needs_a_key(client, db, route):
    response = client.get(f"/memory/{route}")
    assert (response.status_code, response.json()["error"]) == (401, "unauthorized")


@pytest.mark.parametrize("route", ROUTES)
def test_only_get_is_allowed(api, catalog, route):
    response = api.post(f"/memory/{route}", {}, format="json")
    assert (response.status_code, response.json()["error"]) == (405, "method_not_allowed")


def test_nul_in_a_query_string_is_refused(api, catalog):
    response = api.get("/memory/grep?q=a%00b")
    assert response.status_code == 422 and response.json()["error"] == "invalid_character"


def test_another_workspaces_paths_are_404_and_its_records_never_appear(api, catalog, other_workspace_api):
    from catalog_app.models import Workspace

    other = Workspace.objects.get(name="other-co")
    theirs = record_make(other, entity="contact.zoe", text="secret plan ZX-1", content={"speaker": "user"})
    fact = record_make(other, entity="contact.zoe", key="role", type="fact", text="Zoe is the CTO")
    mine = record_make(catalog, entity=MARIA, text="my plan ZX-1", content={"speaker": "user"})
    theirs_path = f"passages/main/contact.zoe/{theirs.id}"
    for route, params in (("read", {"path": theirs_path}), ("around", {"path": theirs_path}),
                          ("read", {"path": "facts/main/contact.zoe/role"}),
                          ("history", {"path": "facts/main/contact.zoe/role"}),
                          ("ls", {"path": "passages/main/contact.zoe"}),
                          ("latest", {"path": "passages/main/contact.zoe"}),
                          ("grep", {"q": "ZX-1", "path": "passages/main/contact.zoe"}),
                          ("latest", {"entity": "contact.zoe"})):
        response = api.get(f"/memory/{route}?{urlencode(params)}")
        assert (response.status_code, response.json()["error"]) == (404, "path_not_found"), (route, params)
    assert [hit["id"] for hit in api.get("/memory/grep?q=ZX-1").json()["hits"]] == [str(mine.id)]
    assert [hit["id"] for hit in api.get("/memory/latest").json()["hits"]] == [str(mine.id)]
    assert api.get("/memory/ls").json()["entries"][1]["count"] == 0  # their fact is not my fact
    assert [e["name"] for e in api.get("/memory/ls?path=passages/main").json()["entries"]] == [MARIA]
    # and the other way round: their view is theirs alone
    assert [hit["id"] for hit in other_workspace_api.get("/memory/grep?q=ZX-1").json()["hits"]] == [str(theirs.id)]
    assert other_workspace_api.get("/memory/read?path=facts/main/contact.zoe/role").json()["id"] == str(fact.id)
