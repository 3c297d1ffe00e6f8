"""Memory addresses: the canonical spellings, the prefix parser's error table, and a random
round trip (escape, parse, unescape) over hostile entity and key text."""
from __future__ import annotations

import random
import uuid
from types import SimpleNamespace

import pytest

from memseek_site.errors import ApiError
from retrieval_app.memory.addresses import (MAX_PATH_CHARS, MemoryPath, fact_path, parse_path, passage_path,
                                            record_path)

RID = uuid.UUID("0b8e54f6-59f5-4c43-9a55-0d2f1bd2a001")


def rec(*, entity="contact.maria", collection="tickets", key=None, status="active", id=RID):
    return SimpleNamespace(id=id, collection=collection, entity=entity, key=key, status=status)


def test_passage_and_fact_paths():
    assert passage_path(rec()) == f"passages/tickets/contact.maria/{RID}"
    assert fact_path(rec(collection="profiles", key="role")) == "facts/profiles/contact.maria/role"


def test_record_path_gives_active_keyed_records_their_fact_path():
    assert record_path(rec(key="role")) == "facts/tickets/contact.maria/role"
    assert record_path(rec(key="role", status="draft")) == f"passages/tickets/contact.maria/{RID}"
    assert record_path(rec()) == f"passages/tickets/contact.maria/{RID}"


def test_event_has_no_fact_path():
    with pytest.raises(ValueError):
        fact_path(rec())


def test_slash_percent_and_control_characters_are_escaped():
    record = rec(entity="team/a%b\nc", key="x/y")
    assert fact_path(record) == "facts/tickets/team%2Fa%25b%0Ac/x%2Fy"
    parsed = parse_path(fact_path(record), field="path")
    assert (parsed.entity, parsed.leaf) == ("team/a%b\nc", "x/y")


@pytest.mark.parametrize(("text", "expected"), [
    ("", MemoryPath()),
    ("/", MemoryPath()),
    ("passages", MemoryPath("passages")),
    ("passages/", MemoryPath("passages")),
    ("passages/tickets", MemoryPath("passages", "tickets")),
    ("passages/tickets/contact.maria/", MemoryPath("passages", "tickets", "contact.maria")),
    ("facts/profiles/contact.maria", MemoryPath("facts", "profiles", "contact.maria")),
    ("facts/profiles/contact.maria/favourite colour", MemoryPath("facts", "profiles", "contact.maria",
                                                                  "favourite colour")),
    (f"passages/tickets/e/{str(RID).upper()}", MemoryPath("passages", "tickets", "e", str(RID))),
    ("passages/tickets/a%2fb", MemoryPath("passages", "tickets", "a/b")),
    ("passages/tickets/%41", MemoryPath("passages", "tickets", "A")),
])
def test_valid_paths(text, expected):
    assert parse_path(text, field="path") == expected


@pytest.mark.parametrize(("text", "kwargs", "fragment"), [
    ("memories/tickets", {}, "unknown root"),
    ("Passages", {}, "unknown root"),
    ("passages%2Ftickets", {}, "unknown root"),
    ("facts/x", {"kinds": ("passages",)}, "unknown root"),
    ("passages//x", {}, "empty segment"),
    ("/passages", {}, "empty segment"),
    ("passages//", {}, "empty segment"),
    ("passages/Tickets", {}, "not a collection name"),
    ("passages/_system", {}, "not a collection name"),
    ("passages/tickets/e/not-a-uuid", {}, "not a record id"),
    ("passages/tickets/e/x/y", {}, "more than four"),
    ("passages/tickets/%20%20", {}, "must not be blank"),
    ("passages/tickets/a%zz", {}, "not an escape"),
    ("passages/tickets/a%4", {}, "not an escape"),
    ("passages/tickets/a%", {}, "not an escape"),
    ("passages/tickets/a%00", {}, "not an escape"),
    ("passages/tickets/a%C3%A9", {}, "not an escape"),
    ("passages/tickets/a\x00b", {}, "NUL"),
    ("passages/tickets/" + "e" * 256, {}, "at most 255"),
    ("facts/t/e/" + "k" * 129, {}, "at most 128"),
    ("p" * (MAX_PATH_CHARS + 1), {}, f"at most {MAX_PATH_CHARS}"),
    ("passages/tickets/e", {"complete": True}, "must name one passage"),
    ("facts/t/e", {"complete": True}, "must name one fact"),
    ("", {"complete": True}, "must name one"),
    (5, {}, "must be a string"),
])
def test_invalid_paths(text, kwargs, fragment):
    with pytest.raises(ApiError) as raised:
        parse_path(text, field="scope", **kwargs)
    assert (raised.value.code, raised.value.path, raised.value.status) == ("invalid_path", "scope", 422)
    assert fragment in raised.value.message


def test_random_entities_and_keys_round_trip():
    rng = random.Random(17)
    alphabet = "ab/%.- \n\t\x7fé/%2F%25"
    for _ in range(500):
        entity = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        key = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        if not entity.strip() or not key.strip():
            continue
        record = rec(entity=entity, key=key, id=uuid.UUID(int=rng.getrandbits(128)))
        for text in (passage_path(record), fact_path(record)):
            parsed = parse_path(text, field="path", complete=True)
            assert parsed.text == text and parsed.entity == entity
            assert text.count("/") == 3
        assert parse_path(fact_path(record), field="path").leaf == key
        assert parse_path(passage_path(record), field="path").record_id == record.id


def test_child_extends_a_prefix_by_one_escaped_segment():
    assert MemoryPath("passages", "tickets").child("a/b").text == "passages/tickets/a%2Fb"
    with pytest.raises(ValueError):
        MemoryPath("facts", "t", "e", "k").child("x")
