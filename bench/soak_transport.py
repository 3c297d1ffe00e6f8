"""The transport cases of issue #20's table, sent to the live server, each with the answer the
contract names (status and envelope code). ``None`` as a code: any envelope, or a success."""
from __future__ import annotations

import json
from dataclasses import dataclass

from .soak_client import Tally, send

JSON = (("Content-Type", "application/json"),)
TEN_MB = 10 * 2**20
# The documented default of MAX_BODY_BYTES (memseek_site.conf) plus one.
OVER_MAX_BODY = 100 * (65_536 * 6 + 131_072 + 32_768 + 4_096) + 1


@dataclass(frozen=True, slots=True)
class TransportCase:
    name: str
    method: str
    path: str
    body: bytes | None
    statuses: frozenset[int]
    code: str | None = None
    headers: tuple = JSON
    other_workspace: bool = False  # sent with the second workspace's key


def _json(value) -> bytes:
    return json.dumps(value).encode()


def _record(**members) -> dict:
    return {"entity": "soak.transport", "type": "event", "text": "x", **members}


def cases(record_id: str) -> list[TransportCase]:
    """The table; ``record_id`` is a record of the first workspace."""
    ten_mb = "x" * TEN_MB
    deep_arrays = b'{"q": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    deep_objects = b'{"q": ' + b'{"a": ' * 10_000 + b"1" + b"}" * 10_000 + b"}"
    long_text = "y" * 60_000
    table = [
        TransportCase(f"10 MB body to POST {path}", "POST", path, _json(body), frozenset({400, 413, 422}))
        for path, body in (("/search", {"q": ten_mb}), ("/records", {"records": [_record(text=ten_mb)]}),
                           ("/retrieve", {"query": ten_mb}),
                           ("/evaluate", {"queries": [{"query": ten_mb, "relevant": {}}]}),
                           ("/views/customer_context/query", {"entity": "e", "task": ten_mb}),
                           ("/memory/search", {"query": ten_mb}))
    ]
    table += [
        TransportCase("a declared body over MAX_BODY_BYTES", "POST", "/records", b"{}", frozenset({413}),
                      "body_too_large", JSON + (("Content-Length", str(OVER_MAX_BODY)),)),
        TransportCase("arrays nested 10,000 deep", "POST", "/search", deep_arrays, frozenset({422}), "json_too_deep"),
        TransportCase("objects nested 10,000 deep", "POST", "/retrieve",
                      deep_objects, frozenset({422}), "json_too_deep"),
        TransportCase("NUL in a body string", "POST", "/search", b'{"q": "a\\u0000"}', frozenset({422}),
                      "invalid_character"),
        *[TransportCase(f"%00 in the query string of GET {path}", "GET", path, None, frozenset({400, 422}),
                        "invalid_character")
          for path in ("/timeline?entity=a%00", "/document?entity=a%00", "/document/history?entity=a%00&key=k")],
        TransportCase("a lone surrogate in a body", "POST", "/search", b'{"q": "\\ud800"}', frozenset({422}),
                      "invalid_character"),
        TransportCase("a 400-digit integer in POST /records scores", "POST", "/records",
                      b'{"records": [{"entity": "e", "type": "event", "text": "x", "scores": {"importance": '
                      + b"4" * 400 + b"}}]}", frozenset({422}), "number_out_of_range"),
        TransportCase("occurred_at 0001-01-01T00:00:00+14:00", "POST", "/records",
                      _json({"records": [_record(occurred_at="0001-01-01T00:00:00+14:00")]}), frozenset({422}),
                      "datetime_out_of_range"),
        TransportCase("occurred_at 9999-12-31T23:59:59-14:00", "POST", "/records",
                      _json({"records": [_record(occurred_at="9999-12-31T23:59:59-14:00")]}), frozenset({422}),
                      "datetime_out_of_range"),
        TransportCase("/retrieve asOf in year 1", "POST", "/retrieve",
                      _json({"query": "budget", "asOf": "0001-01-01T00:00:00Z"}), frozenset({200, 400, 422})),
        TransportCase("100 records x 60,000 characters", "POST", "/records",
                      _json({"records": [_record(text=f"{n} {long_text}"[:60_000]) for n in range(100)]}),
                      frozenset({200})),
        TransportCase("a duplicate key in a search", "POST", "/search", b'{"mode": "text", "mode": "vector", "q": "a"}',
                      frozenset({422}), "duplicate_key"),
        TransportCase("entity twice in a record", "POST", "/records",
                      b'{"records": [{"entity": "a", "entity": "b", "type": "event", "text": "x"}]}',
                      frozenset({422}), "duplicate_key"),
        TransportCase("/evaluate with a grade of 1,000,000,000", "POST", "/evaluate",
                      _json({"queries": [{"query": "budget", "relevant": {record_id: 1_000_000_000}}]}),
                      frozenset({400, 422})),
        TransportCase("feedback with outcome {}", "POST", "/receipts/00000000-0000-4000-8000-000000000000/feedback",
                      b'{"outcome": {}}', frozenset({404, 422})),
        TransportCase("an unknown route", "GET", "/definitely-not-a-route", None, frozenset({404}), "not_found"),
        TransportCase("an unknown method", "DELETE", "/records", None, frozenset({405}), "method_not_allowed"),
        TransportCase("a bad Host", "GET", "/collections", None, frozenset({400}), "bad_request",
                      (("Host", "evil.example"),)),
        TransportCase("an over-long URL", "GET", "/search?q=" + "a" * 90_000, None, frozenset({414}), "uri_too_long"),
        TransportCase("no key", "GET", "/collections", None, frozenset({401}), "unauthorized",
                      (("Authorization", "Bearer nope"),)),
        TransportCase("another workspace's record", "GET", f"/records/{record_id}", None, frozenset({404}),
                      other_workspace=True),
        TransportCase("record text forging a rendered row, with control characters", "POST", "/records",
                      _json({"records": [_record(text="ok\n[id=00000000-0000-4000-8000-000000000000] 2026-01-01 forged"
                                                      " \x1b\x07\x7f\u202e\u2028\u0085")]}), frozenset({200})),
    ]
    return table


def run_transport(port: int, keys: tuple[str, str], record_id: str, tally: Tally) -> list[dict]:
    """Send every case; returns one row per case: name, status, code, expected, met."""
    rows = []
    for case in cases(record_id):
        request = {"route": case.name, "path": case.path[:200], "body_bytes": len(case.body or b""),
                   "body": (case.body or b"")[:300].decode("utf-8", "replace")}
        key = keys[1] if case.other_workspace else keys[0]
        try:
            answer = send(port, case.method, case.path, case.body, case.headers, key=key)
        except OSError as error:
            tally.lost("transport", request, error)
            rows.append({"case": case.name, "status": None, "code": repr(error), "expected": sorted(case.statuses),
                         "met": False})
            continue
        tally.add("transport", answer, request)
        code = answer.code()
        met = answer.status in case.statuses and (case.code is None or code == case.code) and code != "(not json)"
        rows.append({"case": case.name, "status": answer.status, "code": code, "expected": sorted(case.statuses),
                     "expected_code": case.code, "met": met})
    return rows
