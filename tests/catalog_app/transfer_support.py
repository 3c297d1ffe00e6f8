"""Shared by the export and import tests: a seeded workspace written the way production writes
(ingest, then real MiniLM enrichment), the requests whose answers must survive a round trip, and
the helpers that export through the route and compare answers."""
from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import time_machine
from django.db import connection
from rest_framework.test import APIClient

from catalog_app.lexical.tables import DOCUMENT, GROUP, GROUP_STATS, SOURCE_TOTALS
from catalog_app.record_sql import RECORD
from tests.retrieval_app.lexical_factories import body as lexical_body
from tests.search_app.search_factories import ingest, ingest_ready, item

T0 = datetime(2026, 7, 1, 10, 0, tzinfo=timezone.utc)
MARIA = "contact.maria"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def at(hours: float) -> str:
    return (T0 + timedelta(hours=hours)).isoformat()


def seed(workspace) -> dict[str, str]:
    """Turns in two threads, a keyed fact with a superseded value, a withdrawn fact, a draft, a
    derived note, another entity and one record still waiting for its embedding."""
    turns = ingest_ready(workspace, [
        item("Maria confirmed the Q3 budget for the offsite", entity=MARIA, type="message", occurred_at=at(0),
             content={"speaker": "maria", "thread": "t1"}),
        item("The budget review moves to Friday", entity=MARIA, type="message", occurred_at=at(1),
             content={"speaker": "bo", "thread": "t1"}),
        item("Book the lake hotel for the offsite", entity=MARIA, type="message", occurred_at=at(2),
             content={"speaker": "maria", "thread": "t2"}),
        item("Finance approved the travel budget", entity=MARIA, type="message", occurred_at=at(3),
             content={"speaker": "cy", "thread": "t2"}),
        item("Replace the bicycle chain before the race", entity="contact.bo", type="message",
             occurred_at=at(4), content={"speaker": "bo", "thread": "t9"}),
    ])
    facts = ingest_ready(workspace, [
        item(None, entity=MARIA, collection="profiles", type="fact", key="offsite", occurred_at=at(5),
             content={"title": "Offsite in Lisbon", "starts_at": "2026-09-01T09:00:00Z"}),
        item(None, entity=MARIA, collection="profiles", type="fact", key="offsite", occurred_at=at(6),
             content={"title": "Offsite in Porto", "starts_at": "2026-09-08T09:00:00Z"}),
        item(None, entity=MARIA, collection="profiles", type="fact", key="review", occurred_at=at(7),
             content={"title": "Budget review", "starts_at": "2026-07-10T09:00:00Z"}),
        item("Maria prefers Porto for the budget offsite", entity=MARIA, type="note", occurred_at=at(8),
             derived_from=[str(turns[0]), str(turns[2])], dedupe_key="note-porto"),
        item("Maybe the offsite moves to Faro", entity=MARIA, type="note", status="draft", occurred_at=at(9)),
    ])
    (withdrawn,) = ingest_ready(workspace, [item(None, entity=MARIA, collection="profiles", type="fact",
                                                 key="review", tombstone=True, occurred_at=at(10),
                                                 derived_from=[str(facts[2])])])
    # The workspace's own retrieval weights shape /retrieve's answers, so they travel too.
    workspace.settings = {"retrieval.tokenBudget": 2000, "retrieval.weights": {"recency": 0.3}}
    workspace.save(update_fields=["settings"])
    (pending,) = ingest(workspace, [item("A budget line still waiting for its vector", entity=MARIA,
                                         type="message", occurred_at=at(11),
                                         content={"speaker": "maria", "thread": "t3"})])
    return {"turn0": str(turns[0]), "lisbon": str(facts[0]), "porto": str(facts[1]), "note": str(facts[3]),
            "withdrawn": str(withdrawn), "pending": str(pending)}


def client_for(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def export_text(api, **params) -> str:
    response = api.get("/export", params)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/x-ndjson"
    return b"".join(response.streaming_content).decode("utf-8")


def import_text(api, text: str, status: int = 200, **params) -> dict:
    query = "&".join(f"{name}={value}" for name, value in params.items())
    response = api.post(f"/import?{query}", text.encode("utf-8"), content_type="application/x-ndjson")
    assert response.status_code == status, response.content
    return response.json()


# One request per search mode, the lexical route, the brief and every lookup.
SEARCHES = {
    "vector": {"q": "budget offsite", "mode": "vector", "k": 10},
    "text": {"q": "budget offsite", "mode": "text", "k": 10},
    "hybrid": {"q": "budget offsite", "mode": "hybrid", "k": 10},
    "recent": {"mode": "recent", "k": 10},
    "structured": {"mode": "structured", "order_by": [{"field": "speaker"}], "k": 10,
                   "scope": {"collections": ["main"]}},
}
LOOKUPS = {
    "latest": {"path": f"passages/main/{MARIA}"},
    "grep": {"q": "budget"},
    "ls": {"path": "facts/profiles"},
}


# The instant every answer is computed at: rankings decay with the age of a record, so two
# workspaces answer alike only at the same instant.
ANSWERED_AT = datetime(2026, 7, 2, 10, 0, tzinfo=timezone.utc)


def answers(api, ids: dict[str, str]) -> dict[str, object]:
    """Every answer of the seeded workspace at ``ANSWERED_AT``, with what changes from call to
    call left out."""
    with time_machine.travel(ANSWERED_AT, tick=False):
        return _answers(api, ids)


def _answers(api, ids: dict[str, str]) -> dict[str, object]:
    found = {}
    for name, request in SEARCHES.items():
        found[f"search:{name}"] = _post(api, "/search", request)
    found["lexical"] = _post(api, "/search/lexical", lexical_body("budget offsite Porto"))
    found["brief"] = _post(api, "/memory/search", {"query": "Where is the budget offsite?", "entity": MARIA})
    for name, params in LOOKUPS.items():
        found[f"lookup:{name}"] = _get(api, f"/memory/{name}", params)
    found["lookup:around"] = _get(api, "/memory/around", {"path": f"passages/main/{MARIA}/{ids['turn0']}"})
    found["lookup:read"] = _get(api, "/memory/read", {"path": f"facts/profiles/{MARIA}/offsite"})
    found["lookup:history"] = _get(api, "/memory/history", {"path": f"facts/profiles/{MARIA}/offsite"})
    found["record"] = _get(api, f"/records/{ids['note']}", {})
    found["timeline"] = _get(api, "/timeline", {"entity": MARIA, "status": "all"})
    return found


def _post(api, route: str, body: dict):
    response = api.post(route, body, format="json")
    assert response.status_code == 200, (route, response.content)
    return _stable(response.json())


def _get(api, route: str, params: dict):
    response = api.get(route, params)
    assert response.status_code == 200, (route, response.content)
    return _stable(response.json())


_VOLATILE = {"timing", "took_ms", "receipt_id", "receiptId", "latencyMs", "retrieval_micros", "last_accessed",
             "access_count", "trace"}


def _stable(value):
    if isinstance(value, dict):
        return {key: _stable(item) for key, item in value.items() if key not in _VOLATILE}
    if isinstance(value, list):
        return [_stable(item) for item in value]
    return value


def mapped(value, mapping: dict[str, str]):
    """``value`` with every id of ``mapping`` written as the id it maps to."""
    text = json.dumps(value, sort_keys=True)
    return json.loads(UUID.sub(lambda match: mapping.get(match.group(0), match.group(0)), text))


def lexical_statistics(workspace_id: int) -> dict[str, list]:
    """The lexical index's statistics of a workspace, without its own ids: per analyzer and group
    (collection, version, type, status, keyed) the document count and total length, per
    collection the source totals, and every indexed document's group, length and text (with
    ``lexical_check`` finding no difference, the postings and so every term's document frequency
    follow from these)."""
    group = "g.collection, g.collection_version, g.type, g.status, g.keyed"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT s.analyzer, {group}, s.docs, s.total_length FROM {GROUP_STATS} s "
                       f"JOIN {GROUP} g ON g.id = s.group_id WHERE g.workspace_id = %s AND s.docs > 0 "
                       "ORDER BY 1, 2, 3, 4, 5, 6", [workspace_id])
        groups = cursor.fetchall()
        cursor.execute(f"SELECT collection, rows, bytes FROM {SOURCE_TOTALS} WHERE workspace_id = %s ORDER BY 1",
                       [workspace_id])
        totals = cursor.fetchall()
        cursor.execute(f"SELECT d.analyzer, {group}, d.length, r.text FROM {DOCUMENT} d "
                       f"JOIN {GROUP} g ON g.id = d.group_id JOIN {RECORD} r ON r.id = d.record_id "
                       "WHERE d.workspace_id = %s ORDER BY 1, 2, 3, 4, 5, 6, 7, 8", [workspace_id])
        documents = cursor.fetchall()
    return {"groups": groups, "totals": totals, "documents": documents}


def differences(left, right, path: str = "") -> list[str]:
    """Where ``left`` and ``right`` differ, as dotted paths with both values."""
    if isinstance(left, dict) and isinstance(right, dict):
        return [line for key in sorted(set(left) | set(right), key=str)
                for line in differences(left.get(key), right.get(key), f"{path}.{key}")]
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        return [line for index, (a, b) in enumerate(zip(left, right)) for line in differences(a, b, f"{path}[{index}]")]
    return [] if left == right else [f"{path}: {left!r:.200} != {right!r:.200}"]


def parents_unordered(value):
    """``value`` with every ``derived_from`` list sorted: a record stores its parents in id
    order, so remapped ids may list the same parents in another order."""
    if isinstance(value, dict):
        return {key: sorted((parents_unordered(item) for item in child), key=_sort_key)
                if key == "derived_from" and isinstance(child, list) else parents_unordered(child)
                for key, child in value.items()}
    if isinstance(value, list):
        return [parents_unordered(item) for item in value]
    return value


def _sort_key(value) -> str:
    return json.dumps(value, sort_keys=True)
