"""``GET /memory/grep`` served by the lexical index equals an exact scan (the oracle, kept here):
random corpora with restated and retracted facts, drafts, unready rows, two entities and two
workspaces, random phrases (word-aligned or cut mid-word, with punctuation), every page."""
from __future__ import annotations

import random
import re
from datetime import datetime, timedelta, timezone
from urllib.parse import urlencode

from catalog_app.models import Record, Workspace
from tests.catalog_app.factories import record_make

# "\u212aelvin" starts with the Kelvin sign, which Python lowercases to an ASCII "k"
WORDS = ("alpha", "beta", "Gamma", "E-42", "e-421", "x_y", "Ünïcode", "42", "budget", "Q3", "self-care", "ok!",
         "de-risk", "ALPHA", "kelvin", "\u212aelvin")
ENTITIES = ("contact.maria", "contact.ana")
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def visible_passages(workspace: Workspace, entity: str | None) -> list[Record]:
    """Every passage of ``workspace`` (live, active, current in its lane by ``seq``) of
    ``entity`` (any when None), oldest first."""
    rows = list(Record.objects.filter(workspace=workspace).order_by("seq"))
    newest_in_lane = {}
    for row in rows:
        if row.key is not None:
            newest_in_lane[(row.entity, row.collection, row.key, row.status)] = row.seq
    return [row for row in rows if row.enriched_at is not None and not row.tombstone and row.status == "active"
            and (row.key is None or newest_in_lane[(row.entity, row.collection, row.key, row.status)] == row.seq)
            and (entity is None or row.entity == entity)]


def scan_oracle(workspace: Workspace, phrase: str, entity: str | None) -> list[str]:
    """Every passage of ``workspace`` of ``entity`` (``visible_passages``) whose lowercased text
    holds the lowercased phrase, with no letter or digit glued to either end of it where that
    end is a letter or digit; newest first by seq (the order writes arrived)."""
    needle = phrase.lower()

    def glued(char: str) -> bool:
        return char.isalnum()  # a letter or a digit, as bm25_v1's [^\W_] for these words

    def holds(text: str) -> bool:
        text = text.lower()
        start = text.find(needle)
        while start >= 0:
            end = start + len(needle)
            left_ok = not glued(needle[0]) or start == 0 or not glued(text[start - 1])
            right_ok = not glued(needle[-1]) or end == len(text) or not glued(text[end])
            if left_ok and right_ok:
                return True
            start = text.find(needle, start + 1)
        return False

    visible = [row for row in visible_passages(workspace, entity) if holds(row.text)]
    return [str(row.id) for row in sorted(visible, key=lambda row: row.seq, reverse=True)]


def grep_pages(api, params: dict, limit: int) -> tuple[list[str], bool]:
    """Every page of ``GET /memory/grep`` with ``params``: the ids in order, and whether every
    page was complete (an entity without passages is a 404: no ids)."""
    found, cursor, complete = [], None, True
    while True:
        page = {**params, "limit": limit, **({"cursor": cursor} if cursor else {})}
        response = api.get(f"/memory/grep?{urlencode(page)}")
        if response.status_code == 404:
            return found, complete
        body = response.json()
        assert response.status_code == 200, body
        found += [hit["id"] for hit in body["hits"]]
        complete = complete and body["complete"]
        cursor = body["next_cursor"]
        if cursor is None:
            return found, complete


def grep_all(api, phrase: str, entity: str | None, limit: int) -> tuple[list[str], bool]:
    return grep_pages(api, {"q": phrase, **({"entity": entity} if entity else {})}, limit)


def _text(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, 8))]
    return "".join(word + rng.choice((" ", " ", "-", ", ", "/")) for word in words).strip()


def _phrase(rng: random.Random, texts: list[str]) -> str:
    if texts and rng.random() < 0.7:
        text = rng.choice(texts)
        start = rng.randrange(len(text))
        return text[start:start + rng.randint(1, 20)]
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 2)))


def test_index_served_grep_equals_the_scan_oracle(api, catalog, other_workspace_api):
    rng = random.Random(2024)
    other = Workspace.objects.get(name="other-co")
    texts: list[str] = []
    for step in range(120):
        text = _text(rng)
        texts.append(text)
        kind = rng.random()
        fields = {"entity": rng.choice(ENTITIES), "text": text, "occurred_at": T0 + timedelta(hours=rng.randint(0, 50))}
        if kind < 0.3:
            fields.update(key=rng.choice(("role", "city")), type="fact")
            if rng.random() < 0.15:
                fields.update(tombstone=True)
            elif rng.random() < 0.15:
                fields.update(status="draft")
        elif kind < 0.35:
            fields.update(ready=False)
        record_make(other if rng.random() < 0.2 else catalog, **fields)
    checked = 0
    for _ in range(60):
        phrase = _phrase(rng, texts).strip()
        if not re.search(r"[^\W_]", phrase):
            continue
        entity = rng.choice((None, *ENTITIES))
        expected = scan_oracle(catalog, phrase, entity)
        found, complete = grep_all(api, phrase, entity, rng.choice((1, 3, 20)))
        assert found == expected, (phrase, entity)
        assert complete
        checked += bool(expected)
    assert checked >= 20  # most phrases matched something, so the comparison had substance


def test_a_reached_candidate_bound_says_so(api, catalog, settings):
    settings.MEMSEEK = {"MEMORY_GREP_CANDIDATES": 3}
    made = [record_make(catalog, entity="contact.maria", text=f"budget line {i}", occurred_at=T0 + timedelta(i))
            for i in range(5)]
    body = api.get("/memory/grep?q=budget&limit=10").json()
    assert body["complete"] is False and [hit["id"] for hit in body["hits"]] == [str(r.id) for r in made[:1:-1]]
    assert api.get("/memory/grep?q=budget&limit=10&entity=contact.maria&after=2024-01-04").json()["complete"] is False


def test_a_rare_phrase_behind_many_candidates_is_found_across_widening_reads(api, catalog):
    oldest = record_make(catalog, entity="contact.maria", text="beta alpha", occurred_at=T0)
    for i in range(150):
        record_make(catalog, entity="contact.maria", text=f"alpha beta {i}", occurred_at=T0 + timedelta(minutes=i))
    middle = record_make(catalog, entity="contact.ana", text="so beta alpha", occurred_at=T0)
    first = api.get("/memory/grep?q=beta+alpha&limit=1").json()
    assert [hit["id"] for hit in first["hits"]] == [str(middle.id)] and first["complete"] is True
    rest = api.get(f"/memory/grep?q=beta+alpha&limit=1&cursor={first['next_cursor']}").json()
    assert [hit["id"] for hit in rest["hits"]] == [str(oldest.id)] and rest["next_cursor"] is None


def test_a_text_that_lowercases_to_the_phrase_only_in_python_is_found(api, catalog):
    """The SQL prefilter of the candidates (``PhraseMatcher.may_hold``) compares ASCII
    lowercase; a text whose Python lowercase holds the phrase through a non-ASCII letter is
    still a match, and a text without the phrase is still none."""
    kelvin = record_make(catalog, entity="contact.maria", text="300 \u212aELVIN scale", occurred_at=T0)
    record_make(catalog, entity="contact.maria", text="300 kelvins scale", occurred_at=T0)
    plain = record_make(catalog, entity="contact.ana", text="300 KELVIN scale", occurred_at=T0)
    body = api.get("/memory/grep?q=300+kelvin").json()
    assert [hit["id"] for hit in body["hits"]] == [str(plain.id), str(kelvin.id)]
