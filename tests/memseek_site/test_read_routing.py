"""Read routing without a replica (the replica-backed tests are in ``test_replicas.py``): every
keyed route declares how it uses the database, write responses carry the consistency token, a
malformed token is a 400 naming its header, and LSNs read and write as PostgreSQL's."""
import pytest
from django.db import DEFAULT_DB_ALIAS, connection
from hypothesis import given
from hypothesis import strategies as st

from memseek_site import replicas
from memseek_site.consistency import (SERVED_BY_HEADER, TOKEN_HEADER, database_use, workspace_last_write,
                                      workspace_last_write_raise)
from memseek_site.replicas import DATABASE_ACCESS, ReplicaRouter, lsn_format, lsn_parse
from tests.memseek_site.api_routes import keyed_api_operations

# How each route uses the database. A read route may be served by a replica; a write route is
# served by the primary. A new route fails test_every_keyed_route_is_in_the_table until listed.
DATABASE = {
    ("GET", "collections"): "read",
    ("GET", "context"): "read",
    ("GET", "document"): "read",
    ("GET", "document/history"): "read",
    ("POST", "erase"): "write",
    ("POST", "evaluate"): "read",
    ("GET", "export"): "read",
    ("POST", "import"): "write",
    ("POST", "mcp"): "write",  # its tool calls may write; each is then routed as its own route
    ("GET", "memory/around"): "read",
    ("GET", "memory/grep"): "read",
    ("GET", "memory/history"): "read",
    ("GET", "memory/latest"): "read",
    ("GET", "memory/ls"): "read",
    ("GET", "memory/read"): "read",
    ("POST", "memory/search"): "read",  # its model-call budget is written on the primary
    ("GET", "rank/schema"): "read",
    ("GET", "receipts/<str:id>"): "read",
    ("POST", "receipts/<str:id>/feedback"): "write",
    ("POST", "records"): "write",
    ("GET", "records/<str:id>"): "read",
    ("DELETE", "records/<str:id>"): "write",
    ("POST", "records/<str:id>/approve"): "write",
    ("POST", "records/<str:id>/reject"): "write",
    ("POST", "retrieve"): "read",  # its receipt is written on the primary
    ("GET", "search"): "read",
    ("POST", "search"): "read",
    ("POST", "search/lexical"): "read",
    ("GET", "timeline"): "read",
    ("GET", "tools"): "read",
    ("GET", "views"): "read",
    ("POST", "views/<str:name>/query"): "read",
}
# A record of the example catalog that needs no model (client-scored, no embedding processor).
OUTCOME = {"entity": "e", "collection": "outcomes", "type": "outcome", "text": "won", "scores": {"confidence": 0.5}}


def test_every_keyed_route_declares_how_it_uses_the_database():
    undeclared = [(method, route, view.__name__) for method, route, view in keyed_api_operations()
                  if database_use(view, method) not in DATABASE_ACCESS]
    assert not undeclared, f"declare database = 'read' or 'write' on: {undeclared}"


def test_every_keyed_route_is_in_the_table():
    assert {(method, route): database_use(view, method) for method, route, view in keyed_api_operations()} == DATABASE


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_an_lsn_reads_back_as_written(position):
    assert lsn_parse(lsn_format(position)) == position


@given(st.integers(min_value=0, max_value=2**64 - 1), st.integers(min_value=0, max_value=2**64 - 1))
def test_lsns_order_as_positions(a, b):
    # The oracle: PostgreSQL's pg_lsn orders by (high, low) words, which is integer order.
    high_low = lambda n: (n >> 32, n & 0xFFFFFFFF)  # noqa: E731
    assert (lsn_parse(lsn_format(a)) < lsn_parse(lsn_format(b))) == (high_low(a) < high_low(b))


@pytest.mark.django_db
def test_an_lsn_from_postgresql_parses_to_its_numeric_value():
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()::text, pg_current_wal_lsn() - '0/0'::pg_lsn")
        text, numeric = cursor.fetchone()
    assert lsn_parse(text) == int(numeric) and lsn_format(int(numeric)) == text


@pytest.mark.parametrize("text", ["", "0", "/", "0/", "/0", "x/1", "1/g", "123456789/0", "0/123456789", "0//1",
                                  "-1/0", "0/ 1", "0x1/0", "\u0661/0", "1.5/0"])
def test_what_is_not_an_lsn_is_refused(text):
    with pytest.raises(ValueError):
        lsn_parse(text)


@pytest.mark.parametrize("replayed, position, reached", [
    (0x160C7FF0, 0x160C8000, True),    # 16 bytes left: too few for a record's header, so none is there
    (0x160C7FF0, 0x160C8001, False),   # past the page's end: the next record is not replayed
    (0x160C7FE8, 0x160C8000, False),   # 24 bytes left: room for a record's header the standby lacks
    (0x160C7FF0, 0x160C7FF8, True),
    (0x160C7FF0, 0x160C7FFF, True),
    (0x160C8000, 0x160C8000, True),
    (0x160C8000, 0x160C8018, False),
    (0x160C8000, 0x160C7FFF, True),
])
def test_a_replay_at_a_pages_unusable_end_reaches_the_page_end(replayed, position, reached):
    assert replicas.replay_reaches(replayed, position) is reached


def test_replica_urls_become_aliases_in_their_order(monkeypatch):
    from memseek_site.database import replica_database_settings

    monkeypatch.setenv("DATABASE_REPLICA_URLS", " postgresql://u@10.0.0.5:5433/memseek ,,"
                                                "postgres://u@replica-b/memseek?connect_timeout=7 ")
    replicas_found = replica_database_settings()
    assert list(replicas_found) == ["replica_0", "replica_1"]
    first, second = replicas_found["replica_0"], replicas_found["replica_1"]
    assert (first["HOST"], first["PORT"], first["NAME"], first["OPTIONS"]) == ("10.0.0.5", "5433", "memseek",
                                                                               {"connect_timeout": "2"})
    assert (second["HOST"], second["OPTIONS"]) == ("replica-b", {"connect_timeout": "7"})
    assert first["TEST"] == {"MIRROR": "default"}  # tests never create or flush a database on a replica
    monkeypatch.setenv("DATABASE_REPLICA_URLS", "")
    assert replica_database_settings() == {}
    # A multi-host entry (every node of a failover cluster, docs/failover.md) stays one replica.
    monkeypatch.setenv("DATABASE_REPLICA_URLS", "postgresql://u@a:5432,b:5433,[::1]/m?target_session_attrs=prefer-standby,"
                                                "postgresql://u@c/m")
    replicas_found = replica_database_settings()
    assert list(replicas_found) == ["replica_0", "replica_1"]
    assert (replicas_found["replica_0"]["HOST"], replicas_found["replica_0"]["PORT"]) == ("a,b,::1", "5432,5433,")
    assert replicas_found["replica_0"]["OPTIONS"]["target_session_attrs"] == "prefer-standby"
    assert replicas_found["replica_1"]["HOST"] == "c"
    monkeypatch.setenv("DATABASE_REPLICA_URLS", "mysql://u@h/db")
    with pytest.raises(ValueError, match="postgresql://"):
        replica_database_settings()


def test_without_replicas_every_read_goes_to_the_primary():
    assert replicas.replica_aliases() == []
    assert ReplicaRouter.read_alias(None) == DEFAULT_DB_ALIAS and ReplicaRouter.read_alias(2**40) == DEFAULT_DB_ALIAS


@pytest.mark.parametrize("value", ["eventual", "", "PRIMARY"])
def test_an_unknown_read_consistency_stops_the_process_at_start(value):
    from django.core.exceptions import ImproperlyConfigured
    from django.test import override_settings

    from memseek_site.consistency import ReadRoutingMiddleware

    with override_settings(MEMSEEK={"READ_CONSISTENCY": value}), pytest.raises(ImproperlyConfigured):
        ReadRoutingMiddleware(lambda request: None)


def test_a_workspace_last_write_only_moves_forward():
    workspace_last_write_raise("ws-forward", 200)
    workspace_last_write_raise("ws-forward", 100)
    assert workspace_last_write("ws-forward") == 200
    workspace_last_write_raise("ws-forward", 300)
    assert workspace_last_write("ws-forward") == 300


@pytest.mark.django_db(transaction=True)
def test_a_write_response_carries_the_primary_wal_position(api, catalog):
    before = _current_lsn()
    response = api.post("/records", {"records": [OUTCOME]}, format="json")
    assert response.status_code in (200, 201), response.content
    token = lsn_parse(response[TOKEN_HEADER])
    assert before <= token <= _current_lsn()
    assert response[SERVED_BY_HEADER] == "primary"


@pytest.mark.django_db
def test_a_read_is_served_by_the_primary_without_replicas_and_carries_no_token(api, catalog):
    response = api.get("/collections", HTTP_MEMSEEK_CONSISTENCY_TOKEN="0/1")
    assert response.status_code == 200, response.content
    assert response[SERVED_BY_HEADER] == "primary" and TOKEN_HEADER not in response


@pytest.mark.django_db
@pytest.mark.parametrize("token", ["yesterday", "0/", "FFFFFFFFF/0", "1/2/3", "' OR 1=1 --", "0/1\u0000", "9" * 300])
@pytest.mark.parametrize("method, path", [("GET", "/collections"), ("POST", "/records")])
def test_a_malformed_token_is_400_naming_its_header_and_writes_nothing(api, catalog, token, method, path):
    from catalog_app.models import Record

    count = Record.objects.count()
    body = {"records": [OUTCOME]} if method == "POST" else None
    response = getattr(api, method.lower())(path, body, format="json", HTTP_MEMSEEK_CONSISTENCY_TOKEN=token)
    assert response.status_code == 400, response.content
    assert response.json()["error"] == "invalid_consistency_token"
    assert response.json()["path"] == "headers.Memseek-Consistency-Token"
    assert Record.objects.count() == count


def _current_lsn() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()::text")
        return lsn_parse(cursor.fetchone()[0])
