"""Every status of ``POST /search/lexical`` but 503 (test_lexical_slots.py): 400 with its code
and path for each request problem (the shared body rules too), 400 ``retrieval_scan_limit``
over a ceiling, 401, 413 over 65,536 bytes, and 500 for a detected record inconsistency."""
import json

import pytest
from django.core.management import call_command
from django.db import connection
from rest_framework.test import APIClient

from catalog_app.lexical.tables import GROUP, GROUP_STATS, PENDING, SOURCE_TOTALS
from catalog_app.models import Record

from .lexical_factories import body, lexical, load_lexical_catalog, note, write


@pytest.fixture
def ws(workspace, tmp_path):
    load_lexical_catalog(workspace, tmp_path)
    write(workspace, [note("alpha beta")])
    return workspace


def _query(**changes) -> dict:
    return body("alpha", **changes)


BAD_REQUESTS = [
    ("not an object", [], "lexical_request", None),
    ("unknown top-level key", {**_query(), "k": 5}, "lexical_request", "k"),
    ("missing query", {key: value for key, value in _query().items() if key != "query"}, "lexical_request", "query"),
    ("missing scope", {key: value for key, value in _query().items() if key != "scope"}, "lexical_request", "scope"),
    ("missing mode", {key: value for key, value in _query().items() if key != "mode"}, "lexical_request", "mode"),
    ("mode mismatch", {**_query(), "mode": "hybrid"}, "lexical_request", "mode"),
    ("contract version 2", {**_query(), "contract_version": 2}, "lexical_request", "contract_version"),
    ("contract version true", {**_query(), "contract_version": True}, "lexical_request", "contract_version"),
    ("contract version as text", {**_query(), "contract_version": "1"}, "lexical_request", "contract_version"),
    ("unknown query key", _query(episode_type=None), "lexical_request", "query.episode_type"),
    ("unknown scope key", body("alpha", {"project_id": "p"}), "lexical_request", "scope.project_id"),
    ("scope not an object", body("alpha", ["notes"]), "lexical_request", "scope"),
    ("unknown collection", body("alpha", {"collections": ["nope"]}), "lexical_request", "scope.collections[0]"),
    ("system collection", body("alpha", {"collections": ["_system"]}), "lexical_request", "scope.collections[0]"),
    ("bad scope status", body("alpha", {"status": "gone"}), "lexical_request", "scope.status"),
    ("missing text", {**_query(), "query": {"limit": 3}}, "lexical_request", "query.text"),
    ("text not a string", {**_query(), "query": {"text": 5}}, "lexical_request", "query.text"),
    ("blank text", body("   "), "lexical_request", "query.text"),
    ("punctuation-only text", body("?!... -- //"), "lexical_query_terms", "query.text"),
    ("underscores only", body("___"), "lexical_query_terms", "query.text"),
    ("text too long", body("a " * 4097), "lexical_request", "query.text"),
    ("limit zero", _query(limit=0), "lexical_request", "query.limit"),
    ("limit above 100", _query(limit=101), "lexical_request", "query.limit"),
    ("limit as text", _query(limit="5"), "lexical_request", "query.limit"),
    ("limit boolean", _query(limit=True), "lexical_request", "query.limit"),
    ("limit null", _query(limit=None), "lexical_request", "query.limit"),
    ("limit fractional", _query(limit=2.5), "lexical_request", "query.limit"),
    ("scan_limit zero", _query(scan_limit=0), "lexical_request", "query.scan_limit"),
    ("scan_bytes_limit negative", _query(scan_bytes_limit=-1), "lexical_request", "query.scan_bytes_limit"),
    ("after not a uuid", _query(after="row-5"), "lexical_request", "query.after"),
    ("after a number", _query(after=5), "lexical_request", "query.after"),
    ("type not a name", _query(type="Not A Type"), "lexical_request", "query.type"),
    ("tag not a string", _query(tag=["red"]), "lexical_request", "query.tag"),
    ("scan_limit above its ceiling", _query(scan_limit=2_000_001), "retrieval_scan_limit", "query.scan_limit"),
    ("scan_bytes_limit above its ceiling", _query(scan_bytes_limit=2**32 + 1), "retrieval_scan_limit",
     "query.scan_bytes_limit"),
]


@pytest.mark.parametrize("label,payload,code,path", BAD_REQUESTS, ids=[case[0] for case in BAD_REQUESTS])
def test_request_problems_are_400_with_code_and_path(api, ws, label, payload, code, path):
    error = lexical(api, payload, status=400)
    assert error["error"] == code
    assert error.get("path") == path
    assert error["detail"]


def test_ceilings_are_settings(api, ws, settings):
    settings.MEMSEEK = {"LEXICAL_SCAN_ROWS_MAX": 10, "LEXICAL_SCAN_BYTES_MAX": 1000}
    assert lexical(api, _query(scan_limit=10, scan_bytes_limit=1000))["page"]["scanned_records"] == 1
    assert lexical(api, _query(scan_limit=11), status=400)["error"] == "retrieval_scan_limit"
    assert lexical(api, _query(scan_bytes_limit=1001), status=400)["error"] == "retrieval_scan_limit"


def _raw(api, text: str, content_type: str = "application/json"):
    return api.post("/search/lexical", data=text.encode("utf-8"), content_type=content_type)


HOSTILE = [
    ("invalid JSON", '{"contract_version": 1,', None),
    ("NaN", '{"contract_version": NaN}', None),
    ("duplicate key", '{"contract_version": 1, "mode": "lexical", "mode": "lexical", "scope": {}, '
                      '"query": {"text": "alpha"}}', "mode"),
    ("duplicate query key", '{"contract_version": 1, "mode": "lexical", "scope": {}, '
                            '"query": {"text": "alpha", "text": "beta"}}', "query.text"),
    ("NUL in text", json.dumps(body("alpha\u0000beta")), "query.text"),
    ("lone surrogate", '{"contract_version": 1, "mode": "lexical", "scope": {}, "query": {"text": "\\ud800"}}',
     "query.text"),
    ("deep nesting", '{"contract_version": 1, "mode": "lexical", "scope": {}, "query": {"text": "a", "tag": '
                     + "[" * 80 + "]" * 80 + "}}", None),
    ("number out of range", '{"contract_version": 1, "mode": "lexical", "scope": {}, '
                            '"query": {"text": "a", "limit": 1e999}}', "query.limit"),
    ("huge integer", '{"contract_version": 1, "mode": "lexical", "scope": {}, '
                     '"query": {"text": "a", "scan_limit": ' + "9" * 40 + "}}", "query.scan_limit"),
]


@pytest.mark.parametrize("label,text,path", HOSTILE, ids=[case[0] for case in HOSTILE])
def test_hostile_bodies_are_400_never_500(api, ws, label, text, path):
    response = _raw(api, text)
    assert response.status_code == 400, response.json()
    assert response.json()["error"] == "lexical_request"
    if path is not None:
        assert response.json()["path"] == path
    if label == "deep nesting":
        assert response.json()["path"].startswith("query.tag")


def test_a_body_over_65536_bytes_is_413_and_one_at_the_limit_is_read(api, ws):
    payload = json.dumps(body("alpha"))
    at_limit = payload[:-2] + ', "tag": "' + "x" * 10 + '"}}'
    at_limit = at_limit[:-3] + "x" * (65_536 - len(at_limit.encode())) + at_limit[-3:]
    assert len(at_limit.encode()) == 65_536
    # Read and parsed: the long tag is a request problem, not a transport one.
    assert _raw(api, at_limit).json()["path"] == "query.tag"
    over = at_limit[:-3] + "x" + at_limit[-3:]
    response = _raw(api, over)
    assert response.status_code == 413 and response.json()["error"] == "body_too_large"


def test_another_routes_body_limit_is_unchanged(api, ws):
    # POST /records still reads bodies far larger than the lexical route's limit.
    records = {"records": [note("gamma " * 8000) for _ in range(3)]}
    assert len(json.dumps(records)) > 65_536
    assert api.post("/records", records, format="json").status_code in (200, 201)


def test_a_non_json_body_is_415(api, ws):
    assert _raw(api, "text=alpha", "application/x-www-form-urlencoded").status_code == 415


def test_without_a_key_or_with_a_bad_key_it_is_401(ws):
    anonymous = APIClient()
    assert anonymous.post("/search/lexical", _query(), format="json").status_code == 401
    wrong = APIClient()
    wrong.credentials(HTTP_AUTHORIZATION="Bearer not-a-key")
    response = wrong.post("/search/lexical", _query(), format="json")
    assert (response.status_code, response.json()["error"]) == (401, "unauthorized")


def _fails_for(api, payload, record_id) -> None:
    response = api.post("/search/lexical", payload, format="json")
    assert response.status_code == 500
    assert response.json()["error"] == "retrieval_inconsistency" and record_id in response.json()["detail"]


def test_a_scanned_hit_whose_stored_terms_disagree_with_its_text_fails_with_500(api, ws):
    (record_id,) = write(ws, [note("alpha gamma")])
    scanned = body("alpha", {"versions": "all"})  # every version of a lane: only the scan answers it
    assert len(lexical(api, scanned)["page"]["hits"]) == 2
    Record.objects.filter(pk=record_id).update(bm25_tf={"alpha": 7, "gamma": 1})
    _fails_for(api, scanned, record_id)


def _rewrite_latest_pending(ws, term: str, byte: int, value: int) -> None:
    """Overwrite the int4 at ``byte`` (1-based) of the newest write's ``bm25_v1`` pending row of ``term``:
    13 is the first posting's tf, 17 its length (big-endian (seq, group, tf, length) rows)."""
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {PENDING} SET data = overlay(data PLACING int4send(%s) FROM %s) "
                       f"WHERE workspace_id = %s AND analyzer = 1 AND term = %s AND change_id = (SELECT max(change_id) "
                       f"FROM {PENDING} WHERE workspace_id = %s AND analyzer = 1 AND term = %s)",
                       [value, byte, ws.pk, term, ws.pk, term])
        assert cursor.rowcount >= 1


def test_an_indexed_hit_whose_posting_disagrees_with_its_record_fails_with_500(api, ws):
    (record_id,) = write(ws, [note("alpha gamma")])
    assert len(lexical(api, _query())["page"]["hits"]) == 2
    # A longer length than the record's keeps every pruning bound valid, so only the recheck
    # against the record's text can see it.
    _rewrite_latest_pending(ws, "alpha", 17, 9)
    _fails_for(api, _query(), record_id)


def test_a_statistic_the_index_itself_finds_inconsistent_fails_with_500(api, ws):
    write(ws, [note("alpha gamma")])
    with connection.cursor() as cursor:  # the group statistics count fewer records than match
        cursor.execute(f"UPDATE {GROUP_STATS} SET docs = 1 WHERE group_id IN "
                       f"(SELECT id FROM {GROUP} WHERE workspace_id = %s)", [ws.pk])
    response = api.post("/search/lexical", _query(), format="json")
    assert (response.status_code, response.json()["error"]) == (500, "lexical_index_inconsistent")


def test_a_rejected_request_changes_nothing(api, ws):
    before = list(Record.objects.order_by("pk").values_list("pk", "last_accessed", "access_count"))
    lexical(api, _query(limit=0), status=400)
    lexical(api, _query())
    assert list(Record.objects.order_by("pk").values_list("pk", "last_accessed", "access_count")) == before


def test_records_the_index_has_not_been_built_for_are_answered_by_the_scan(api, workspace, tmp_path):
    load_lexical_catalog(workspace, tmp_path)
    ids = write(workspace, [note("alpha beta"), note("alpha")])
    with connection.cursor() as cursor:  # the index has not counted these rows: as if written before it existed
        cursor.execute(f"DELETE FROM {SOURCE_TOTALS} WHERE workspace_id = %s", [workspace.pk])
    page = lexical(api, _query())["page"]
    assert {hit["record"]["id"] for hit in page["hits"]} == set(ids)
    assert (page["scanned_records"], page["corpus_records"], page["exhaustive"]) == (2, 2, True)
    call_command("lexical_backfill", "--workspace", str(workspace.pk))
    assert lexical(api, _query())["page"] == page
