"""``grep`` finds an exact phrase that meaning-based search ranks low, on a real conversation:
LoCoMo dev ``conv-26``'s first four sessions (``/work/shared/bench/locomo``), embedded by the
real MiniLM (``memory_brief_factories``).

The phrase is chosen by a rule, not by hand: in conversation order, the three-word windows of
each turn's own words that occur in that one turn only (by an in-test scan, grep's definition);
the first whose turn ``POST /search`` in vector mode, asked the phrase itself, does not put in
its top ``TOP``. Both halves are asserted: such a phrase exists among the first ``TRIES``
windows, and grep returns its turn, and only it."""
from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest

from tests.retrieval_app.memory_brief_factories import LOCOMO, load, locomo_turns, write

SAMPLE = "conv-26"
ENTITY = f"locomo.{SAMPLE}"
TOP, TRIES = 5, 40
_WORD = re.compile(r"[^\W_]+")

pytestmark = pytest.mark.skipif(not LOCOMO.exists(), reason=f"the LoCoMo dev split is not at {LOCOMO}")


def holds(text: str, phrase: str) -> bool:
    """grep's match (lookups.phrase_matcher's definition, written out): the lowercased phrase in
    the lowercased text, no letter or digit glued to its ends."""
    return re.search(r"(?<![^\W_])" + re.escape(phrase.lower()) + r"(?![^\W_])", text.lower()) is not None


def unique_windows(turns: list[tuple[str, str]]):
    """(record id, phrase) for each three-word window of a turn's spoken words (its text after
    'X said, ') that no other turn holds, in conversation order."""
    for record_id, text in turns:
        spoken = text.split("said, ", 1)[-1]
        words = _WORD.findall(spoken)
        for start in range(len(words) - 2):
            phrase = " ".join(words[start:start + 3])
            if holds(spoken, phrase) and [rid for rid, other in turns if holds(other, phrase)] == [record_id]:
                yield record_id, phrase


def test_grep_finds_an_exact_phrase_that_vector_search_ranks_low(api, workspace):
    load(workspace)
    items = locomo_turns(SAMPLE, range(1, 5))
    ids = write(workspace, items)
    turns = list(zip(ids, (item["text"] for item in items)))
    chosen = None
    for tries, (record_id, phrase) in enumerate(unique_windows(turns)):
        assert tries < TRIES, f"vector search put every one of the first {TRIES} unique phrases' turns in its top {TOP}"
        response = api.post("/search", {"mode": "vector", "q": phrase, "k": TOP,
                                        "scope": {"collections": ["turns"], "entities": [ENTITY]}}, format="json")
        assert response.status_code == 200, response.content
        ranked = [hit["id"] for hit in response.json()["hits"]]
        assert len(ranked) == TOP  # the conversation has far more turns than that
        if record_id not in ranked:
            chosen = record_id, phrase
            break
    assert chosen is not None
    record_id, phrase = chosen
    body = api.get(f"/memory/grep?{urlencode({'q': phrase, 'path': f'passages/turns/{ENTITY}'})}").json()
    assert [hit["id"] for hit in body["hits"]] == [record_id], phrase
    assert body["complete"] is True
