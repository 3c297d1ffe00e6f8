"""Query strings are decoded strictly (memseek_site.query_text): bytes that are not UTF-8 are
``400 invalid_encoding`` at the parameter's name on every keyed GET route, never replaced with
U+FFFD and searched for."""
from __future__ import annotations

import uuid

import pytest

from memseek_site.errors import ApiError
from memseek_site.query_text import check_query_encoding
from tests.memseek_site.api_routes import keyed_api_operations

NOT_UTF8 = {
    "truncated": "%C3%28",
    "cesu8_surrogates": "%ED%A0%80%ED%B0%80",
    "overlong_slash": "%C0%AF",
    "lone_continuation": "%80",
    "latin1": "caf%E9",
    "past_u10ffff": "%F4%90%80%80",
}
GET_ROUTES = sorted({route for method, route, _ in keyed_api_operations() if method == "GET"})


def _url(route: str) -> str:
    return "/" + route.replace("<str:id>", str(uuid.uuid4())).replace("<str:name>", "any")


@pytest.mark.parametrize("name, raw", NOT_UTF8.items())
def test_the_decoder_names_the_parameter_whose_bytes_are_not_utf8(name, raw):
    with pytest.raises(ApiError) as raised:
        check_query_encoding(f"limit=5&q={raw}")
    assert (raised.value.code, raised.value.path, raised.value.status) == ("invalid_encoding", "q", 400)


def test_valid_utf8_and_plain_text_pass():
    check_query_encoding("q=caf%C3%A9+na%C3%AFve&path=passages%2Fturns&&empty=&%F0%9F%98%80=%E2%82%AC")


def test_a_parameter_name_that_is_not_utf8_is_named_as_well_as_it_can_be():
    with pytest.raises(ApiError) as raised:
        check_query_encoding("x%C3%28=1")
    assert raised.value.code == "invalid_encoding" and raised.value.path == "x\ufffd("


@pytest.mark.parametrize("route", GET_ROUTES)
@pytest.mark.parametrize("raw", [NOT_UTF8["truncated"], NOT_UTF8["cesu8_surrogates"]])
def test_every_get_route_refuses_a_query_string_that_is_not_utf8(api, route, raw):
    response = api.get(f"{_url(route)}?q={raw}")
    assert response.status_code == 400, (route, response.content)
    assert response.json() == {"error": "invalid_encoding", "detail": response.json()["detail"], "path": "q"}


def test_grep_searches_valid_text_as_before(api, catalog):
    response = api.get("/memory/grep?q=caf%C3%A9")
    assert response.status_code == 200, response.content
    assert response.json()["query"] == "café"
