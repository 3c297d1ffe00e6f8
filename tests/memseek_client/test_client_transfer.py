"""The SDK's export and import against a live server: ``iter_export`` streams the workspace's
JSON Lines and resumes from a line's cursor, ``import_export`` writes them into another workspace
once (a second import adds nothing), and refusals are typed errors."""
from __future__ import annotations

import json

import pytest

from memseek_client import Conflict, MemseekClient, RetryPolicy, Unauthorized, Unprocessable
from memseek_client.models import ImportResult

from .conftest import LIVE
from .scripted_server import RecordingSleep, Reply, ScriptedServer

pytestmark = LIVE


@pytest.fixture(scope="module")
def written(live):
    with live.client() as memseek:
        memseek.write_records([{"entity": "contact.eve", "collection": "main", "type": "note", "text": f"Eve note {i}"}
                               for i in range(3)])
    return live


def test_the_export_streams_every_line_and_resumes_after_any_cursor(written):
    with written.client() as memseek:
        lines = list(memseek.iter_export())
        kinds = [json.loads(line)["kind"] for line in lines]
        assert kinds[0] == "header" and kinds[-1] == "end" and kinds.count("record") >= 3
        assert all(line.endswith("\n") for line in lines)
        middle = next(index for index, kind in enumerate(kinds) if kind == "record")
        rest = list(memseek.iter_export(cursor=json.loads(lines[middle])["cursor"]))
        assert lines[:middle + 1] + rest == lines
        eve = [json.loads(line) for line in memseek.iter_export(entity="contact.eve")]
        assert {line["entity"] for line in eve if line["kind"] == "record"} == {"contact.eve"}


def test_an_import_writes_once_into_another_workspace(written):
    with written.client() as memseek:
        export = "".join(memseek.iter_export(entity="contact.eve"))
    with MemseekClient(written.url, written.other_key) as other:
        first = other.import_export(export, ids="remap")
        assert isinstance(first, ImportResult) and first.records_added == 3
        again = other.import_export(export.encode(), ids="remap")
        assert (again.records_added, again.records_unchanged, again.definitions_added) == (0, 3, 0)
        assert other.timeline("contact.eve").records[0].text == "Eve note 2"


def test_refusals_are_typed_errors(written):
    with written.client() as memseek:
        export = "".join(memseek.iter_export(entity="contact.eve"))
        with pytest.raises(Conflict) as taken:
            memseek.import_export(export.replace('"text":"Eve note 0"', '"text":"changed"'))
        assert (taken.value.code, taken.value.status) == ("import_conflict", 409)
        with pytest.raises(Unprocessable) as cut:
            memseek.import_export(export.rsplit("\n", 2)[0] + "\n")
        assert cut.value.code == "import_incomplete"
        with pytest.raises(Unprocessable) as cursor:
            list(memseek.iter_export(cursor="nonsense"))
        assert (cursor.value.code, cursor.value.path) == ("invalid_cursor", "cursor")
    with MemseekClient(written.url, "not-a-key") as stranger, pytest.raises(Unauthorized):
        list(stranger.iter_export())


HEADER = '{"kind":"header","format":"memseek-export/1"}\n'
DEFINITION = '{"kind":"definition","name":"main","cursor":"x1.d.1"}\n'
RECORDS = ['{"kind":"record","seq":1,"cursor":"x1.r.1"}\n', '{"kind":"record","seq":2,"cursor":"x1.r.2"}\n']
END = '{"kind":"end","records":2}\n'


@pytest.mark.parametrize("broken_after", [HEADER, HEADER + DEFINITION + RECORDS[0]])
def test_a_stream_that_breaks_resumes_from_the_last_cursor_without_repeating_a_line(broken_after):
    """A real server on loopback sends part of an export and closes; the client asks again from
    the last cursor it read (or from the start, skipping the header it already gave)."""
    whole = HEADER + DEFINITION + "".join(RECORDS) + END
    sent = len(broken_after)
    cursor = None if broken_after == HEADER else "x1.r.1"
    rest = whole if cursor is None else "".join(RECORDS[1:]) + END
    sleep, quick = RecordingSleep(), RetryPolicy(backoff_base=0.01, backoff_max=0.01)
    with ScriptedServer(Reply(body=whole.encode(), cut_after=sent), Reply(body=rest.encode())) as server, \
            MemseekClient(server.url, "key", sleep=sleep, retry=quick) as memseek:
        lines = list(memseek.iter_export())
    assert "".join(lines) == whole
    again = "/export" if cursor is None else f"/export?cursor={cursor}"
    assert [seen.path for seen in server.seen] == ["/export", again]
    assert len(sleep.waits) == 1
