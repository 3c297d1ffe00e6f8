"""The one transport and parsing layer: every rule of ``memseek_site.json_body`` as a table of
hostile inputs, decoded directly and sent to every body-reading route (status, code, path, and
nothing written), the text rule on query strings and path segments, the body-size limit, and
the largest documented batch accepted."""
import io
import json

import pytest

from catalog_app.models import Record
from memseek_site.conf import DEFAULTS
from memseek_site.errors import ApiError
from memseek_site.json_body import MAX_JSON_DEPTH, StrictJSONParser, decode_json_body
from retrieval_app.models import Receipt


def rejected(raw: bytes) -> dict:
    with pytest.raises(ApiError) as caught:
        decode_json_body(raw)
    return {"status": caught.value.status, **caught.value.envelope()}


def nested(opener: str, closer: str, depth: int) -> str:
    return opener * depth + closer * depth


# --- the rules, decoded directly --------------------------------------------------------------

DECODE_CASES = [
    # (name, raw body, status, code, path)
    ("duplicate key", '{"mode": "text", "mode": "vector"}', 422, "duplicate_key", "mode"),
    ("duplicate nested key", '{"records": [{"entity": "a", "entity": "b"}]}', 422, "duplicate_key",
     "records[0].entity"),
    ("duplicate key deep in content", '{"r": [{}, {"c": {"x": 1, "y": 2, "x": 3}}]}', 422, "duplicate_key",
     "r[1].c.x"),
    ("NUL in a string", '{"entity": "a\\u0000"}', 422, "invalid_character", "entity"),
    ("NUL in a list item", '{"tags": ["ok", "b\\u0000c"]}', 422, "invalid_character", "tags[1]"),
    ("NUL in a key", '{"a": {"k\\u0000": 1}}', 422, "invalid_character", "a.k\\u0000"),
    ("lone high surrogate", '{"q": "\\ud800"}', 422, "invalid_character", "q"),
    ("lone low surrogate", '{"q": "x\\udfffy"}', 422, "invalid_character", "q"),
    ("reversed surrogate pair", '{"q": "\\ude00\\ud83d"}', 422, "invalid_character", "q"),
    ("upper-case lone surrogate", '{"q": ["ok", "\\uDFFF"]}', 422, "invalid_character", "q[1]"),
    ("400-digit integer", '{"scores": {"s": ' + "4" * 400 + "}}", 422, "number_out_of_range", "scores.s"),
    ("bigint max + 1", '{"n": 9223372036854775808}', 422, "number_out_of_range", "n"),
    ("bigint min - 1", '{"n": -9223372036854775809}', 422, "number_out_of_range", "n"),
    ("float overflow", '{"n": [1e400]}', 422, "number_out_of_range", "n[0]"),
    ("negative float overflow", '{"n": -1e400}', 422, "number_out_of_range", "n"),
    ("NaN", '{"n": NaN}', 422, "number_out_of_range", "n"),
    ("Infinity", '{"n": -Infinity}', 422, "number_out_of_range", "n"),
    ("year 1 at +14:00", '{"occurred_at": "0001-01-01T00:00:00+14:00"}', 422, "datetime_out_of_range",
     "occurred_at"),
    ("year 9999 at -14:00", '{"asOf": "9999-12-31T23:59:59-14:00"}', 422, "datetime_out_of_range", "asOf"),
    ("arrays 65 deep", nested("[", "]", MAX_JSON_DEPTH + 1), 422, "json_too_deep", "[0]" * MAX_JSON_DEPTH),
    ("objects 65 deep", '{"a": ' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1), 422, "json_too_deep",
     ".".join(["a"] * MAX_JSON_DEPTH)),
    ("arrays 10,000 deep", nested("[", "]", 10_000), 422, "json_too_deep", "[0]" * MAX_JSON_DEPTH),
    ("objects 10,000 deep", '{"a": ' * 10_000 + "1" + "}" * 10_000, 422, "json_too_deep",
     ".".join(["a"] * MAX_JSON_DEPTH)),
    ("mixed 10,000 deep", '{"x": [1, ' + '{"b": [' * 5_000 + "]}" * 5_000 + "]}", 422, "json_too_deep",
     "x[1]" + ".b[0]" * 31),
    ("not JSON", "{", 422, "invalid_json", None),
    ("not UTF-8", b'{"q": "\xff"}', 422, "invalid_json", None),
    ("trailing garbage", '{"q": 1} x', 422, "invalid_json", None),
]


@pytest.mark.parametrize(("raw", "status", "code", "path"), [case[1:] for case in DECODE_CASES],
                         ids=[case[0] for case in DECODE_CASES])
def test_each_rule_rejects_with_its_code_and_path(raw, status, code, path):
    body = rejected(raw if isinstance(raw, bytes) else raw.encode())
    assert (body["status"], body["error"], body.get("path")) == (status, code, path)
    json.dumps(body, ensure_ascii=False).encode("utf-8")  # the envelope itself is always sendable


@pytest.mark.parametrize("raw", [
    '{"n": 9223372036854775807, "m": -9223372036854775808, "f": 1.7976931348623157e308, "z": -0.0}',
    nested("[", "]", MAX_JSON_DEPTH),
    '{"t": ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00-14:00", "9999-12-31T23:59:59+14:00", "2026-07-01"]}',
    '{"text": "0001-01-01T00:00:00+14:00 is a date nobody can store", "emoji": "\\ud83d\\ude00 \U0001f600"}',
    '{"a": {"x": 1}, "b": {"x": 1}, "list": [{"x": 1}, {"x": 2}]}',
    '{"backslash then u0000": "\\\\u0000", "and ud800": ["\\\\ud800"]}',
])
def test_values_inside_every_limit_decode_as_the_standard_library_does(raw):
    assert decode_json_body(raw.encode()) == json.loads(raw)


def test_a_decoded_body_holds_plain_dicts():
    body = decode_json_body(b'{"a": [{"b": {}}]}')
    assert type(body) is dict and type(body["a"][0]) is dict and type(body["a"][0]["b"]) is dict


def test_the_first_broken_rule_in_document_order_is_reported():
    assert rejected(b'{"a": "\\u0000", "b": 1e400, "a": 2}')["path"] == "a"
    assert rejected(b'{"a": [1, 1e400], "b": "\\u0000"}')["path"] == "a[1]"


# --- body size ---------------------------------------------------------------------------------

class _Unreadable(io.BytesIO):
    def read(self, *args):
        raise AssertionError("the body was read")


class _Request:
    def __init__(self, length: int):
        self.META = {"CONTENT_LENGTH": str(length)}


def test_a_declared_length_over_the_limit_is_413_before_reading(settings):
    settings.MEMSEEK = {"MAX_BODY_BYTES": 1000}
    with pytest.raises(ApiError) as caught:
        StrictJSONParser().parse(_Unreadable(), "application/json", {"request": _Request(1001)})
    assert (caught.value.status, caught.value.code) == (413, "body_too_large")
    assert "1001 bytes" in caught.value.detail and "MAX_BODY_BYTES" in caught.value.detail


def test_never_more_than_the_limit_is_read(settings):
    settings.MEMSEEK = {"MAX_BODY_BYTES": 10}
    stream = io.BytesIO(b'["' + b"x" * 100 + b'"]')
    with pytest.raises(ApiError) as caught:
        StrictJSONParser().parse(stream, "application/json", {"request": _Request(0)})
    assert caught.value.code == "body_too_large" and stream.tell() == 11


def test_the_default_fits_the_largest_documented_batch_however_it_is_escaped():
    per_record = DEFAULTS["MAX_TEXT_CHARS"] * 6 + DEFAULTS["MAX_CONTENT_BYTES"] + DEFAULTS["MAX_ANNOTATION_BYTES"]
    assert DEFAULTS["MAX_BODY_BYTES"] == DEFAULTS["MAX_BATCH"] * (per_record + 4096)


# --- every body-reading route ------------------------------------------------------------------

# (route, body with {} where the hostile member goes, path prefix of that member, its depth)
ROUTES = [
    ("/records", '{"records": [{"entity": "e", "type": "event", "text": "x", %s}]}', "records[0].", 3),
    ("/search", '{"q": "budget", %s}', "", 1),
    ("/retrieve", '{"query": "budget", %s}', "", 1),
    ("/evaluate", '{"queries": [{"query": "budget", "relevant": {}}], %s}', "", 1),
    ("/views/customer_context/query", '{"entity": "e", "task": "t", %s}', "", 1),
]
# (rule, member, status, code, path below the member's object; None: deep, computed from depth)
MEMBERS = [
    ("duplicate key", '"z": 1, "z": 2', 422, "duplicate_key", "z"),
    ("NUL", '"z": "a\\u0000b"', 422, "invalid_character", "z"),
    ("lone surrogate", '"z": ["ok", "\\ud800"]', 422, "invalid_character", "z[1]"),
    ("huge integer", '"z": {"s": ' + "9" * 400 + "}", 422, "number_out_of_range", "z.s"),
    ("float overflow", '"z": 1e999', 422, "number_out_of_range", "z"),
    ("year 1 at +14:00", '"z": "0001-01-01T00:00:00+14:00"', 422, "datetime_out_of_range", "z"),
    ("year 9999 at -14:00", '"z": "9999-12-31T23:59:59-14:00"', 422, "datetime_out_of_range", "z"),
    ("nested 10,000 deep", '"z": ' + nested("[", "]", 10_000), 422, "json_too_deep", None),
    ("nested 100 deep", '"z": ' + nested("[", "]", 100), 422, "json_too_deep", None),
]


def counts() -> tuple[int, int]:
    return Record.objects.count(), Receipt.objects.count()


@pytest.mark.parametrize(("route", "template", "prefix", "depth"), ROUTES, ids=[route[0] for route in ROUTES])
@pytest.mark.parametrize(("member", "status", "code", "path"), [m[1:] for m in MEMBERS], ids=[m[0] for m in MEMBERS])
def test_every_route_rejects_hostile_bodies_and_writes_nothing(api, catalog, route, template, prefix, depth, member,
                                                               status, code, path):
    before = counts()
    response = api.generic("POST", route, (template % member).encode(), content_type="application/json")
    if path is None:  # z's value is a container at depth + 1; the first one too deep is at 65
        path = "z" + "[0]" * (MAX_JSON_DEPTH - depth)
    assert response.status_code == status, response.content[:300]
    assert (response.json()["error"], response.json()["path"]) == (code, prefix + path)
    assert counts() == before


def test_duplicate_mode_in_a_search_is_rejected_not_last_one_wins(api, catalog):
    response = api.generic("POST", "/search", b'{"q": "budget", "mode": "text", "mode": "vector"}',
                           content_type="application/json")
    assert response.status_code == 422
    assert (response.json()["error"], response.json()["path"]) == ("duplicate_key", "mode")


@pytest.mark.parametrize("route", [route for route, *_ in ROUTES])
def test_a_body_over_max_body_bytes_is_413_with_the_envelope(api, catalog, settings, route):
    settings.MEMSEEK = {"MAX_BODY_BYTES": 4096}
    before = counts()
    body = json.dumps({"records": [{"entity": "e", "type": "event", "text": "x" * 5000}]})
    response = api.generic("POST", route, body.encode(), content_type="application/json")
    assert response.status_code == 413 and response.json()["error"] == "body_too_large"
    assert "4096" in response.json()["detail"]
    assert counts() == before


def test_the_largest_documented_batch_is_accepted_escaped_as_json(api, catalog):
    """100 records of 60,000 characters, every one of them sent as a \\uXXXX escape or a
    two-character escape (and within MAX_CONTENT_BYTES as UTF-8): Django's own 2.5 MB body
    limit made this a 500."""
    text = "é\n" * 30_000
    body = json.dumps({"records": [{"entity": "e", "type": "event", "text": f"{index} {text}"[:60_000]}
                                   for index in range(100)]}, ensure_ascii=True).encode()
    assert len(body) > 20_000_000
    before = Record.objects.count()
    response = api.generic("POST", "/records", body, content_type="application/json")
    assert response.status_code == 200, response.content[:300]
    assert len(response.json()["inserted"]) == 100 and Record.objects.count() == before + 100
    stored = Record.objects.filter(workspace=catalog).order_by("seq").values_list("text", flat=True)
    assert len(stored) == 100 and stored[0] == f"0 {text}"[:60_000]


# --- query strings and path segments -----------------------------------------------------------

QUERY_CASES = [
    ("/timeline", {"entity": "a\x00"}, "entity"),
    ("/document", {"entity": "a\x00"}, "entity"),
    ("/document/history", {"entity": "a", "collection": "main", "key": "k\x00"}, "key"),
    ("/context", {"entity": "a", "task": "t\x00", "budget": "10"}, "task"),
    ("/search", {"q": "\x00"}, "q"),
    ("/timeline", {"entity": "a", "x\x00": "1"}, "x\\u0000"),
]


@pytest.mark.parametrize(("route", "params", "path"), QUERY_CASES)
def test_nul_in_a_query_string_is_422_at_the_parameter(api, catalog, route, params, path):
    response = api.get(route, params)
    assert response.status_code == 422, response.content[:300]
    assert (response.json()["error"], response.json()["path"]) == ("invalid_character", path)


def test_a_percent_encoded_nul_is_rejected_in_the_raw_query_string(api, catalog):
    response = api.get("/timeline?entity=a%00")
    assert response.status_code == 422 and response.json()["path"] == "entity"


def test_an_encoded_surrogate_in_a_query_string_is_400_at_its_parameter(api, catalog):
    # Query strings are decoded strictly (memseek_site.query_text): CESU-8's encoded surrogate is
    # not UTF-8, so it is refused rather than searched for as a replacement character.
    response = api.get("/timeline?entity=%ED%A0%80")
    assert response.status_code == 400
    assert (response.json()["error"], response.json()["path"]) == ("invalid_encoding", "entity")


@pytest.mark.parametrize(("method", "url", "path"), [
    ("get", "/records/a%00b", "id"),
    ("post", "/views/a%00b/query", "name"),
    ("get", "/receipts/%00", "id"),
])
def test_nul_in_a_path_segment_is_422_at_the_segment(api, catalog, method, url, path):
    before = counts()
    response = getattr(api, method)(url)
    assert response.status_code == 422
    assert (response.json()["error"], response.json()["path"]) == ("invalid_character", path)
    assert counts() == before


def test_the_admin_and_console_are_left_to_django(admin_client):
    assert admin_client.get("/admin/?q=a%00").status_code != 422
