"""The memory brief and the lookups through the SDK against a live server: ``POST
/memory/search`` in both shapes, and ``grep``, ``latest``, ``around``, ``read``, ``ls``,
``history`` with their cursor iterators. Each test runs when the server lists its route
(memory-brief-and-lookups.md; built on other branches this session)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memseek_client import MemseekClient, NotFound, RecordInput, Unprocessable
from memseek_client.models import Brief, MemoryAround, MemoryHit, MemoryRead

from .conftest import LIVE, require_route

pytestmark = LIVE
START = datetime(2026, 5, 1, 9, tzinfo=timezone.utc)
TURNS = ("I bought a blue lantern at the market.", "Which colour was the lantern?", "The blue lantern was cheap.",
         "We should hang the blue lantern outside.", "Dinner is at eight.")


@pytest.fixture(scope="module")
def kim(live):
    """Five turns of one conversation (alternating speakers) and two values of one fact."""
    with live.client() as memseek:
        turns = memseek.write_records([
            RecordInput(entity="contact.kim", collection="main", type="message", text=text,
                        content={"speaker": "kim" if index % 2 == 0 else "assistant", "thread": "t1"},
                        occurred_at=START + timedelta(hours=index)) for index, text in enumerate(TURNS)]).inserted
        facts = [memseek.write_records([RecordInput(
            entity="contact.kim", collection="main", type="fact", key="city", text=text,
            occurred_at=START + timedelta(days=day))]).inserted[0] for day, text in ((1, "Kim lives in Oslo."),
                                                                                  (2, "Kim lives in Bergen."))]
    return [turn.id for turn in turns], [fact.id for fact in facts]


def _path(record_id: str) -> str:
    return f"passages/main/contact.kim/{record_id}"


def test_the_brief_and_the_ranked_list(client, listed_routes, kim):
    require_route(listed_routes, "POST", "/memory/search")
    turns, facts = kim
    brief = client.memory_search("Where does Kim live?", entity="contact.kim")
    assert isinstance(brief, Brief) and brief.found == len(brief.hits)
    assert all(isinstance(hit, MemoryHit) and hit.path.startswith("passages/") for hit in brief.hits)
    assert brief.known and any("Bergen" in line.line for line in brief.known)
    ranked = client.memory_search("blue lantern", entity="contact.kim", scope="passages/main",
                                  after=START.date())
    assert ranked.known is None and ranked.worked_out is None and ranked.held is None and ranked.notes is None
    assert ranked.hits and {hit.id for hit in ranked.hits} <= set(turns) | set(facts)


def test_grep_finds_every_passage_with_the_phrase_page_by_page(client, listed_routes, kim):
    require_route(listed_routes, "GET", "/memory/grep")
    turns, _ = kim
    first = client.memory_grep("BLUE LANTERN", entity="contact.kim", limit=1)
    assert len(first.hits) == 1 and first.next_cursor is not None
    hits = list(client.iter_memory_grep("blue lantern", entity="contact.kim", limit=1))
    assert [hit.id for hit in hits] == [turns[3], turns[2], turns[0]]  # newest first


def test_latest_lists_the_newest_passages_under_a_path(client, listed_routes, kim):
    require_route(listed_routes, "GET", "/memory/latest")
    turns, _ = kim
    hits = list(client.iter_memory_latest(path="passages/main/contact.kim", limit=2,
                                          before=START + timedelta(hours=10)))
    assert [hit.id for hit in hits if hit.id in turns] == list(reversed(turns))


def test_around_read_ls_and_history(client, listed_routes, kim):
    for route in ("around", "read", "ls", "history"):
        require_route(listed_routes, "GET", f"/memory/{route}")
    turns, facts = kim
    around = client.memory_around(_path(turns[2]), before=1, after=1)
    assert isinstance(around, MemoryAround) and around.passage.id == turns[2]
    assert [hit.id for hit in around.before] == [turns[1]] and [hit.id for hit in around.after] == [turns[3]]
    read = client.memory_read(_path(turns[0]))
    assert isinstance(read, MemoryRead) and read.text == TURNS[0] and read.roles == ("kim",)
    entries = list(client.iter_memory_ls("passages/main", limit=1))
    assert "contact.kim" in {entry.name for entry in entries}
    versions = list(client.iter_memory_history("facts/main/contact.kim/city", limit=1))
    assert [version.id for version in versions] == facts  # oldest first
    assert versions[0].superseded_by == facts[1]


def test_a_bad_path_names_itself_and_another_workspaces_path_is_not_found(client, live, listed_routes, kim):
    require_route(listed_routes, "GET", "/memory/read")
    turns, _ = kim
    with pytest.raises(Unprocessable) as caught:
        client.memory_read("elsewhere/main")
    assert caught.value.path == "path"
    with MemseekClient(live.url, live.other_key) as other:
        with pytest.raises(NotFound):
            other.memory_read(_path(turns[0]))
