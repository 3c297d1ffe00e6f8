"""The hostile question table (bench/hostile_texts.py) over every route and MCP tool that takes
text, in-process on the example catalog: every answer is a JSON envelope, 2xx or 4xx (or the
deadline's 503), never HTML and never another status of 500 or more. The same table against
gunicorn, timed, is ``bench hostile``."""
from __future__ import annotations

import json

import pytest

from bench.hostile_texts import (
    ENTITY,
    HOSTILE,
    INVALID_UTF8_BODY,
    INVALID_UTF8_QUERY,
    MCP_TOOLS,
    ORDINARY,
    ROUTES,
    acceptable,
    mcp_call,
)
from catalog_app.services.enrichment import records_enrich

RECORDS = [
    {"entity": ENTITY, "collection": "main", "type": "event", "text": "Maria confirmed the Q3 budget."},
    {"entity": ENTITY, "collection": "main", "type": "event", "text": "Maria moved the budget review to Tuesday 9999."},
    {"entity": ENTITY, "collection": "main", "type": "fact", "key": "role", "text": "Maria is the CFO since May 2023."},
]


@pytest.fixture
def loaded(catalog, api, settings):
    settings.MEMSEEK = {"TOUCH_ON_READ": False}
    response = api.post("/records", {"records": RECORDS}, format="json")
    assert response.status_code == 200, response.content
    records_enrich(record_ids=[outcome["id"] for outcome in response.json()["inserted"]])
    return api


def _send(api, method: str, path: str, payload):
    if method == "GET":
        return api.get(path, payload)
    return api.post(path, payload, format="json")


def _broken(response) -> str | None:
    return acceptable(response.status_code, response.get("Content-Type", ""), response.content)


@pytest.mark.parametrize("route", ROUTES)
def test_every_hostile_text_on_every_route_answers_a_json_envelope(loaded, route):
    method, path, build = ROUTES[route]
    ordinary = _send(loaded, method, path, build(ORDINARY))
    assert ordinary.status_code == 200, ordinary.content  # the route works: the table tests text, not setup
    failures = {name: why for name, text in HOSTILE.items()
                if (why := _broken(_send(loaded, method, path, build(text)))) is not None}
    assert failures == {}


@pytest.mark.parametrize("tool", MCP_TOOLS)
def test_every_hostile_text_on_every_mcp_tool_answers_a_json_result(loaded, tool):
    failures = {}
    for name, text in {"ordinary": ORDINARY, **HOSTILE}.items():
        body, headers = mcp_call(tool, MCP_TOOLS[tool](text))
        meta = {f"HTTP_{key.upper().replace('-', '_')}": value for key, value in headers.items()}
        response = loaded.post("/mcp", data=json.dumps(body), content_type="application/json", **meta)
        if (why := _broken(response)) is not None:
            failures[name] = why
        elif response.status_code != 200 or "result" not in response.json():
            failures[name] = f"{response.status_code} without a tool result: {response.content[:200]!r}"
        elif name == "ordinary":
            assert not response.json()["result"].get("isError"), response.content
    assert failures == {}


@pytest.mark.parametrize("route", [name for name, (method, _, _) in ROUTES.items() if method == "GET"])
@pytest.mark.parametrize("raw", INVALID_UTF8_QUERY)
def test_invalid_utf8_in_a_get_route_is_400_at_the_parameter(loaded, route, raw):
    _, path, build = ROUTES[route]
    text_parameter = next(name for name, value in build("\x01").items() if value == "\x01")
    response = loaded.get(f"{path}?{text_parameter}={raw}&entity={ENTITY}")
    assert (response.status_code, response.json()["error"], response.json()["path"]) == (
        400, "invalid_encoding", text_parameter)


@pytest.mark.parametrize("route", [name for name, (method, _, _) in ROUTES.items() if method == "POST"])
@pytest.mark.parametrize("raw", INVALID_UTF8_BODY)
def test_invalid_utf8_in_a_post_body_is_a_4xx_envelope(loaded, route, raw):
    _, path, _ = ROUTES[route]
    response = loaded.post(path, data=raw, content_type="application/json")
    assert 400 <= response.status_code < 500 and _broken(response) is None, response.content


@pytest.mark.parametrize("route, path", [("search_text", "q"), ("search_hybrid", "q"), ("retrieve", "query"),
                                         ("memory_search", "query"), ("context", "task")])
def test_a_question_of_too_many_distinct_terms_is_422_at_its_field(loaded, settings, route, path):
    settings.MEMSEEK = {"MAX_QUERY_TERMS": 20}
    method, url, build = ROUTES[route]
    words = HOSTILE["distinct_words_max_length"].split()
    assert _send(loaded, method, url, build(" ".join(words[:20] * 5))).status_code == 200  # 20 distinct: allowed
    response = _send(loaded, method, url, build(" ".join(words[:21])))
    assert response.status_code == 422, response.content
    assert (response.json()["error"], response.json()["path"]) == ("query_terms", path)
