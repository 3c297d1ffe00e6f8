"""POST /memory/search: strong hits lend to the passages beside them in their conversation
(``brief_neighbours``), over a small constructed conversation embedded by the real MiniLM.
The answer turn shares no word with the question; its neighbour, the question turn, does."""
from __future__ import annotations

import pytest
from django.test import override_settings

from tests.retrieval_app.memory_brief_factories import load, turn, write

QUESTION = "Did Maria go to the lighthouse festival in Portland?"


@pytest.fixture
def ids(workspace):
    load(workspace)
    written = write(workspace, [
        turn("Did you make it to the lighthouse festival in Portland?", "Bob", "2024-06-10T10:00:00Z"),
        turn("The bakery on our street closes at noon on Sundays", "Maria", "2024-06-10T10:00:30Z", session=7),
        turn("Yes! We took the kids and stayed until the fireworks.", "Maria", "2024-06-10T10:01:00Z"),
        turn("My brother repairs old bicycles in his garage", "Maria", "2024-06-10T10:02:00Z"),
        turn("Portland has a lovely harbour walk", "Maria", "2024-05-02T09:00:00Z", session=2),
        turn("I watched a documentary about festivals in Brazil", "Maria", "2024-05-03T09:00:00Z", session=3),
        turn("Sunday is when we usually go hiking", "Maria", "2024-05-04T09:00:00Z", session=4),
        turn("Yes! The answer came a day late.", "Maria", "2024-06-11T10:00:00Z")])
    return dict(zip(["asked", "other_thread", "answer", "after_answer", "harbour", "brazil", "hiking", "next_day"],
                    written))


def hit_ids(api, body, *, hits: int, share: float) -> list[str]:
    with override_settings(MEMSEEK={"MEMORY_SEARCH_HITS": hits, "MEMORY_NEIGHBOUR_SHARE": share}):
        response = api.post("/memory/search", body, format="json")
    assert response.status_code == 200, response.content
    return [hit["id"] for hit in response.json()["hits"]]


def test_the_turn_after_a_strong_hit_joins_the_hits_it_would_miss(api, ids):
    body = {"query": QUESTION, "entity": "maria"}
    fused = hit_ids(api, body, hits=3, share=0.0)
    lent = hit_ids(api, body, hits=3, share=0.5)
    assert fused[0] == ids["asked"] and ids["answer"] not in fused
    assert lent[0] == ids["asked"] and ids["answer"] in lent


def test_a_passage_of_another_thread_between_them_is_no_neighbour(api, ids):
    lent = hit_ids(api, {"query": QUESTION, "entity": "maria"}, hits=3, share=0.5)
    assert ids["other_thread"] not in lent


def test_a_neighbour_after_before_is_never_lent_in(api, ids):
    body = {"query": QUESTION, "entity": "maria",
            "before": "2024-06-10"}
    lent = hit_ids(api, body, hits=8, share=1.0)
    assert ids["next_day"] not in lent and ids["answer"] in lent
