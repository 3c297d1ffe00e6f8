"""The ``GET /memory/*`` lookups on the example catalog: what each returns, in which order, and
that every result carries an ``id`` and a ``path`` the next call can use."""
from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from urllib.parse import urlencode

from catalog_app.models import Record
from tests.catalog_app.factories import record_make

MARIA = "contact.maria"
T0 = datetime(2023, 5, 1, 9, 0, tzinfo=timezone.utc)


def get(api, route: str, **params):
    response = api.get(f"/memory/{route}?{urlencode(params)}")
    assert response.status_code == 200, response.json()
    return response.json()


def turn(catalog, text, minutes, *, entity=MARIA, speaker="user", thread="t1", **fields):
    return record_make(catalog, entity=entity, type="message", text=text, occurred_at=T0 + timedelta(minutes=minutes),
                       content={"speaker": speaker, "thread": thread}, **fields)


def test_latest_is_newest_first_and_pages_by_cursor(api, catalog):
    turns = [turn(catalog, f"turn {i}", i) for i in range(5)]
    first = get(api, "latest", path=f"passages/main/{MARIA}", limit=2)
    assert [hit["id"] for hit in first["hits"]] == [str(turns[4].id), str(turns[3].id)]
    assert first["hits"][0]["path"] == f"passages/main/{MARIA}/{turns[4].id}"
    assert first["hits"][0]["roles"] == ["user"] and first["hits"][0]["content"] == "stored"
    rest = []
    cursor = first["next_cursor"]
    while cursor:
        page = get(api, "latest", path=f"passages/main/{MARIA}", limit=2, cursor=cursor)
        rest += [hit["text"] for hit in page["hits"]]
        cursor = page["next_cursor"]
    assert rest == ["turn 2", "turn 1", "turn 0"]


def test_latest_between_two_dates_keeps_whole_days(api, catalog):
    old = record_make(catalog, entity=MARIA, text="april",
                      occurred_at=datetime(2023, 4, 30, 23, 59, tzinfo=timezone.utc))
    may1 = record_make(catalog, entity=MARIA, text="may 1 late", occurred_at=datetime(2023, 5, 1, 23, 59,
                                                                                      tzinfo=timezone.utc))
    record_make(catalog, entity=MARIA, text="may 2", occurred_at=datetime(2023, 5, 2, tzinfo=timezone.utc))
    body = get(api, "latest", after="2023-05-01", before="2023-05-01")
    assert [hit["id"] for hit in body["hits"]] == [str(may1.id)]
    assert str(old.id) in {hit["id"] for hit in get(api, "latest", before="2023-04-30T23:59:00Z")["hits"]}


def test_latest_hides_superseded_facts_drafts_unready_and_tombstones(api, catalog):
    record_make(catalog, entity=MARIA, key="role", type="fact", text="Maria is the CFO.", occurred_at=T0)
    current = record_make(catalog, entity=MARIA, key="role", type="fact", text="Maria is the CEO.", occurred_at=T0)
    record_make(catalog, entity=MARIA, key="city", type="fact", text="Porto", status="draft")
    record_make(catalog, entity=MARIA, text="pending", ready=False)
    record_make(catalog, entity=MARIA, key="plan", type="fact", text="basic")
    record_make(catalog, entity=MARIA, key="plan", type="fact", tombstone=True)
    assert [hit["id"] for hit in get(api, "latest")["hits"]] == [str(current.id)]


def test_grep_finds_exact_phrases_ids_and_codes_case_ignored(api, catalog):
    hit = record_make(catalog, entity=MARIA, text="Printer says ERROR E-4021 again", occurred_at=T0)
    record_make(catalog, entity=MARIA, text="error E-40213 is different", occurred_at=T0 + timedelta(1))
    newer = record_make(catalog, entity="contact.ana", collection="tickets", text="saw e-4021 too",
                        content={"channel": "chat"}, occurred_at=T0 + timedelta(2))
    body = get(api, "grep", q="E-4021")
    assert [h["id"] for h in body["hits"]] == [str(newer.id), str(hit.id)] and body["complete"] is True
    assert get(api, "grep", q="error e-4021", path="passages/main")["hits"][0]["id"] == str(hit.id)
    assert get(api, "grep", q="printer says error")["found"] == 1
    assert get(api, "grep", q="printer error")["found"] == 0  # a phrase, not a bag of words
    assert get(api, "grep", q="rint")["found"] == 0  # whole words at the phrase's ends
    assert get(api, "grep", q="E-4021", entity="contact.ana")["hits"][0]["path"].startswith("passages/tickets/")


def test_grep_pages_newest_first(api, catalog):
    made = [record_make(catalog, entity=MARIA, text=f"ticket ZX-9 note {i}", occurred_at=T0 + timedelta(minutes=i))
            for i in range(5)]
    record_make(catalog, entity=MARIA, text="unrelated", occurred_at=T0 + timedelta(minutes=9))
    seen, cursor = [], None
    while True:
        page = get(api, "grep", q="zx-9", limit=2, **({"cursor": cursor} if cursor else {}))
        seen += [hit["id"] for hit in page["hits"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == [str(record.id) for record in reversed(made)]


def test_around_returns_neighbouring_turns_of_the_same_thread_in_order(api, catalog):
    turns = [turn(catalog, f"t1 turn {i}", i * 2, speaker=("user", "assistant")[i % 2]) for i in range(6)]
    turn(catalog, "other thread", 5, thread="t2")
    turn(catalog, "other person", 5, entity="contact.ana")
    record_make(catalog, entity=MARIA, key="role", type="fact", text="a fact, not a turn",
                occurred_at=T0 + timedelta(minutes=5))
    body = get(api, "around", path=f"passages/main/{MARIA}/{turns[3].id}", before=2, after=1)
    assert body["passage"]["id"] == str(turns[3].id) and body["passage"]["roles"] == ["assistant"]
    assert [hit["text"] for hit in body["before"]] == ["t1 turn 1", "t1 turn 2"]
    assert [hit["text"] for hit in body["after"]] == ["t1 turn 4"]
    edge = get(api, "around", path=f"passages/main/{MARIA}/{turns[0].id}", before=3, after=0)
    assert edge["before"] == [] and edge["after"] == []


def test_around_without_a_thread_field_is_the_collection_and_entity(api, catalog):
    made = [record_make(catalog, collection="tickets", entity=MARIA, text=f"ticket {i}", content={"channel": "chat"},
                        occurred_at=T0 + timedelta(minutes=i)) for i in range(3)]
    body = get(api, "around", path=f"passages/tickets/{MARIA}/{made[1].id}")
    assert [hit["id"] for hit in body["before"] + body["after"]] == [str(made[0].id), str(made[2].id)]


def test_read_a_passage_and_a_fact_whole(api, catalog):
    long_text = "word " * 400
    event = turn(catalog, long_text, 1)
    passage = get(api, "read", path=f"passages/main/{MARIA}/{event.id}")
    assert passage["text"] == long_text and passage["roles"] == ["user"] and passage["current"] is True
    assert passage["content"] == {"speaker": "user", "thread": "t1", "text": long_text}
    old = record_make(catalog, entity=MARIA, key="role", type="fact", text="CFO")
    new = record_make(catalog, entity=MARIA, key="role", type="fact", text="CEO")
    fact = get(api, "read", path=f"facts/main/{MARIA}/role")
    assert (fact["id"], fact["text"], fact["path"]) == (str(new.id), "CEO", f"facts/main/{MARIA}/role")
    assert fact["passage_path"] == f"passages/main/{MARIA}/{new.id}" and fact["fact_path"] == fact["path"]
    superseded = get(api, "read", path=f"passages/main/{MARIA}/{old.id}")
    assert superseded["text"] == "CFO" and superseded["current"] is False


def test_history_lists_every_value_oldest_first_with_state_and_successor(api, catalog):
    day = timedelta(days=1)
    first = record_make(catalog, entity=MARIA, key="role", type="fact", text="CFO", occurred_at=T0)
    second = record_make(catalog, entity=MARIA, key="role", type="fact", text="CEO", occurred_at=T0 + day)
    gone = record_make(catalog, entity=MARIA, key="role", type="fact", tombstone=True, occurred_at=T0 + 2 * day)
    body = get(api, "history", path=f"facts/main/{MARIA}/role")
    assert [(v["id"], v["status"], v["superseded_by"], v["said_on"]) for v in body["versions"]] == [
        (str(first.id), "superseded", str(second.id), "2023-05-01"),
        (str(second.id), "superseded", str(gone.id), "2023-05-02"),
        (str(gone.id), "retracted", None, "2023-05-03")]
    page = get(api, "history", path=f"facts/main/{MARIA}/role", limit=2)
    assert len(page["versions"]) == 2
    rest = get(api, "history", path=f"facts/main/{MARIA}/role", cursor=page["next_cursor"])
    assert [v["id"] for v in rest["versions"]] == [str(gone.id)] and rest["next_cursor"] is None


def test_history_marks_the_newest_ready_value_current_and_unready_pending(api, catalog):
    ready = record_make(catalog, entity=MARIA, key="plan", type="fact", text="basic")
    body = get(api, "history", path=f"facts/main/{MARIA}/plan")
    assert [v["status"] for v in body["versions"]] == ["current"]
    record_make(catalog, entity=MARIA, key="plan", type="fact", text="pro", ready=False)
    body = get(api, "history", path=f"facts/main/{MARIA}/plan")
    assert [(v["id"], v["status"]) for v in body["versions"]][0] == (str(ready.id), "superseded")
    assert body["versions"][1]["status"] == "pending"


def test_ls_walks_from_the_root_to_passages_and_facts(api, catalog):
    turn(catalog, "hello", 1)
    turn(catalog, "again", 2)
    record_make(catalog, entity="contact.ana", text="ana", content={"speaker": "user"})
    fact = record_make(catalog, entity=MARIA, key="role", type="fact", text="CEO")
    root = get(api, "ls")
    assert [(e["name"], e["path"], e["count"], e["id"]) for e in root["entries"]] == [
        ("passages", "passages", 4, None), ("facts", "facts", 1, None)]
    collections = {e["name"]: e["count"] for e in get(api, "ls", path="passages")["entries"]}
    assert collections["main"] == 4 and collections["tickets"] == 0
    entities = get(api, "ls", path="passages/main")["entries"]
    assert [(e["name"], e["count"], e["path"]) for e in entities] == [
        ("contact.ana", 1, "passages/main/contact.ana"), (MARIA, 3, f"passages/main/{MARIA}")]
    passages = get(api, "ls", path=f"passages/main/{MARIA}", limit=2)
    assert [e["kind"] for e in passages["entries"]] == ["passage", "passage"]
    assert [e["text"] for e in passages["entries"]] == ["CEO", "again"]
    more = get(api, "ls", path=f"passages/main/{MARIA}", cursor=passages["next_cursor"])
    assert [e["text"] for e in more["entries"]] == ["hello"] and more["next_cursor"] is None
    facts = get(api, "ls", path=f"facts/main/{MARIA}")["entries"]
    assert facts == [{"name": "role", "kind": "fact", "path": f"facts/main/{MARIA}/role", "id": str(fact.id),
                      "text": "CEO", "versions": 1, "occurred_at": fact.occurred_at.isoformat()}]


def test_ls_pages_the_root_and_collections_by_cursor(api, catalog):
    root = get(api, "ls", limit=1)
    assert [e["name"] for e in root["entries"]] == ["passages"] and root["next_cursor"] == "passages"
    assert [e["name"] for e in get(api, "ls", cursor="passages")["entries"]] == ["facts"]
    names = []
    page = get(api, "ls", path="facts", limit=2)
    while True:
        names += [e["name"] for e in page["entries"]]
        if page["next_cursor"] is None:
            break
        page = get(api, "ls", path="facts", limit=2, cursor=page["next_cursor"])
    assert names == sorted(names) and "main" in names and "tickets" in names


def test_ls_pages_entities_by_cursor(api, catalog):
    for name in ("a", "b", "c"):
        record_make(catalog, entity=name, text=name)
    first = get(api, "ls", path="passages/main", limit=2)
    assert [e["name"] for e in first["entries"]] == ["a", "b"] and first["next_cursor"] == "passages/main/b"
    assert [e["name"] for e in get(api, "ls", path="passages/main", cursor="passages/main/b")["entries"]] == ["c"]


def test_entities_with_slashes_round_trip_through_their_paths(api, catalog):
    record = record_make(catalog, entity="team/north%1", text="slashed")
    [hit] = get(api, "latest", entity="team/north%1")["hits"]
    assert hit["path"] == f"passages/main/team%2Fnorth%251/{record.id}"
    assert get(api, "read", path=hit["path"])["entity"] == "team/north%1"
    assert get(api, "ls", path="passages/main")["entries"][0]["path"] == "passages/main/team%2Fnorth%251"


def test_lookups_write_nothing(api, catalog):
    record = turn(catalog, "hello", 1)
    before = list(Record.objects.values_list("id", "last_accessed", "access_count"))
    for route, params in (("latest", {}), ("grep", {"q": "hello"}), ("ls", {"path": f"passages/main/{MARIA}"}),
                          ("read", {"path": f"passages/main/{MARIA}/{record.id}"}),
                          ("around", {"path": f"passages/main/{MARIA}/{record.id}"})):
        get(api, route, **params)
    assert list(Record.objects.values_list("id", "last_accessed", "access_count")) == before


def test_ls_counts_from_the_index_equal_a_count_of_the_rows(api, catalog):
    rng = random.Random(5)
    for _ in range(60):
        fields = {"entity": rng.choice(("a", "b", "c")), "text": rng.choice(("x y", "z", "!!", "Q3"))}
        roll = rng.random()
        if roll < 0.4:
            fields.update(key=rng.choice(("role", "city")), type="fact", tombstone=rng.random() < 0.2)
            if rng.random() < 0.2:
                fields.update(status="draft")
        elif roll < 0.5:
            fields.update(ready=False)
        keyed_home = "profiles" if "key" in fields and rng.random() < 0.5 else "main"
        record_make(catalog, collection=keyed_home, **fields)
    visible = [row for row in Record.objects.filter(workspace=catalog, status="active", tombstone=False,
                                                    enriched_at__isnull=False)
               if row.key is None or not Record.objects.filter(workspace=catalog, entity=row.entity,
                                                               collection=row.collection, key=row.key,
                                                               status="active", seq__gt=row.seq).exists()]
    root = {e["name"]: e["count"] for e in get(api, "ls")["entries"]}
    assert root == {"passages": len(visible), "facts": sum(row.key is not None for row in visible)}
    for kind in ("passages", "facts"):
        counts = {e["name"]: e["count"] for e in get(api, "ls", path=kind)["entries"]}
        assert counts == {name: sum(row.collection == name and (kind == "passages" or row.key is not None)
                                    for row in visible) for name in counts}


def test_grep_and_latest_under_facts_see_only_current_facts(api, catalog):
    record_make(catalog, entity=MARIA, text="plan Z-9 discussed", occurred_at=T0)
    record_make(catalog, entity=MARIA, key="plan", type="fact", text="old plan Z-9", occurred_at=T0)
    current = record_make(catalog, entity=MARIA, key="plan", type="fact", text="plan Z-9 signed", occurred_at=T0)
    assert [hit["id"] for hit in get(api, "grep", q="z-9", path="facts")["hits"]] == [str(current.id)]
    assert [hit["id"] for hit in get(api, "latest", path=f"facts/main/{MARIA}")["hits"]] == [str(current.id)]
    assert get(api, "grep", q="z-9", path="passages")["found"] == 2
