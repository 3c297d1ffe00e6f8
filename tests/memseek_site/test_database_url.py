"""``DATABASE_URL`` parsing (memseek_site/database.py): single- and multi-host URLs give Django
the hosts, ports and parameters libpq itself reads from the same URL; libpq's own parser
(``conninfo_to_dict``) is the oracle."""
from __future__ import annotations

from urllib.parse import quote

import psycopg
import pytest
from django.db import connection
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg.conninfo import conninfo_to_dict

from bench.processes import database_url
from memseek_site.database import _settings_from_url

_LABEL = st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True)
_HOST = st.one_of(
    st.lists(_LABEL, min_size=1, max_size=3).map(".".join),
    st.tuples(*[st.integers(0, 255)] * 4).map(lambda parts: ".".join(map(str, parts))),
    st.sampled_from(["::1", "fe80::1", "2001:db8::7"]).map(lambda address: f"[{address}]"),
)
_PORT = st.one_of(st.none(), st.integers(1, 65535))
_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=12)


def _url(user, password, members, name, attrs) -> str:
    auth = ""
    if user is not None:
        auth = quote(user, safe="") + (f":{quote(password, safe='')}" if password is not None else "") + "@"
    hosts = ",".join(host + (f":{port}" if port is not None else "") for host, port in members)
    query = f"?target_session_attrs={attrs}" if attrs else ""
    return f"postgresql://{auth}{hosts}/{quote(name, safe='')}{query}"


@settings(max_examples=300, deadline=None)
@given(user=st.one_of(st.none(), _TEXT), password=st.one_of(st.none(), _TEXT),
       members=st.lists(st.tuples(_HOST, _PORT), min_size=1, max_size=4), name=_TEXT,
       attrs=st.sampled_from([None, "read-write", "any", "prefer-standby", "standby"]))
def test_parsed_settings_equal_libpqs_reading_of_the_same_url(user, password, members, name, attrs):
    url = _url(user, password, members, name, attrs)
    parsed, oracle = _settings_from_url(url), conninfo_to_dict(url)
    assert parsed["HOST"] == oracle.get("host", "")
    assert parsed["PORT"] == oracle.get("port", "")
    assert parsed["NAME"] == oracle["dbname"]
    assert parsed["USER"] == oracle.get("user", "")
    assert parsed["PASSWORD"] == oracle.get("password", "")
    assert parsed["OPTIONS"] == ({"target_session_attrs": attrs} if attrs else {})


_CORE = ("HOST", "PORT", "NAME", "USER", "PASSWORD", "OPTIONS")


@settings(max_examples=200, deadline=None)
@given(user=st.one_of(st.none(), _TEXT), password=st.one_of(st.none(), _TEXT),
       members=st.lists(st.tuples(_HOST, _PORT), min_size=1, max_size=4), name=_TEXT,
       attrs=st.sampled_from([None, "read-write", "any"]))
def test_the_url_handed_to_child_processes_reads_back_as_the_same_settings(user, password, members, name, attrs):
    """``bench.processes.database_url`` (what gunicorn and the workers are started with) keeps
    every host, port and parameter of a multi-host URL."""
    parsed = _settings_from_url(_url(user, password, members, name, attrs))
    again = _settings_from_url(database_url(parsed))
    assert {key: again[key] for key in _CORE} == {key: parsed[key] for key in _CORE}


@pytest.mark.parametrize("host, port", [("/run/a", ""), ("/run/a,/run/b", "5432,5433"), ("/run/a", "6000")])
def test_socket_directories_travel_in_the_query(host, port):
    parsed = {"HOST": host, "PORT": port, "NAME": "memseek", "USER": "postgres", "PASSWORD": "",
              "OPTIONS": {"target_session_attrs": "read-write"}}
    again = _settings_from_url(database_url(parsed))
    assert {key: again[key] for key in _CORE} == {key: parsed[key] for key in _CORE}


def test_a_multi_host_url_keeps_every_host_and_port_in_order():
    parsed = _settings_from_url("postgresql://app:pw@10.0.0.1:5432,10.0.0.2:5433,[::1]/memseek"
                                "?target_session_attrs=read-write")
    assert (parsed["HOST"], parsed["PORT"]) == ("10.0.0.1,10.0.0.2,::1", "5432,5433,")
    assert parsed["OPTIONS"] == {"target_session_attrs": "read-write"}
    assert parsed["CONN_HEALTH_CHECKS"] is True  # a connection to a demoted primary is dropped, not reused


@pytest.mark.parametrize("url", ["postgresql://a:5432,b:port/db", "postgresql://a:54x2/db", "postgresql://[::1]:-1/db"])
def test_a_port_that_is_not_a_number_is_refused(url):
    with pytest.raises(ValueError, match="port that is not a number"):
        _settings_from_url(url)


def test_a_url_that_is_not_postgresql_is_refused():
    with pytest.raises(ValueError, match="must start with postgresql://"):
        _settings_from_url("mysql://a:1,b:2/db")


@pytest.mark.django_db
def test_a_multi_host_url_connects_to_the_host_that_answers():
    """The first host is a socket directory where nothing listens; libpq moves on to the test
    server's own and the settings Django would use connect there."""
    server = connection.settings_dict
    members = ["/nonexistent-memseek-socket", server["HOST"] or "localhost"]
    url = (f"postgresql://{quote(server['USER'] or '')}@/{server['NAME']}?host={quote(','.join(members))}"
           f"&port={server['PORT'] or ''}&target_session_attrs=read-write")
    parsed = _settings_from_url(url)
    assert parsed["HOST"] == ",".join(members)
    with psycopg.connect(dbname=parsed["NAME"], host=parsed["HOST"], user=parsed["USER"] or None,
                         port=parsed["PORT"] or None, **parsed["OPTIONS"]) as conn:
        assert conn.execute("SELECT NOT pg_is_in_recovery()").fetchone()[0] is True
        assert conn.info.host == members[1]
