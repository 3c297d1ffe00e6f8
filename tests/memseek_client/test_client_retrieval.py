"""The SDK's context side against a live server: ``GET /context``, ``POST /retrieve``, receipts
and feedback, ``POST /evaluate``."""
from __future__ import annotations

import pytest

from memseek_client import BadRequest, Conflict, MemseekClient, NotFound, RecordInput, Unprocessable
from memseek_client.models import ContextResponse, Evaluation, Feedback, MemoryContext, Receipt, RetrievedEntry

from .conftest import LIVE

pytestmark = LIVE
TEXTS = ("Lena renewed the support contract for two years.", "Lena asked for an invoice in euros.",
         "Lena's office moved to Graz.")


@pytest.fixture(scope="module")
def ids(live):
    with live.client() as memseek:
        inserted = memseek.write_records([RecordInput(entity="contact.lena", collection="main", type="note",
                                                      text=text) for text in TEXTS]).inserted
    return [outcome.id for outcome in inserted]


def test_context_fits_the_budget_and_names_its_records(client, ids):
    context = client.context("contact.lena", "the support contract", 500, collections=["main"])
    assert isinstance(context, ContextResponse) and context.tokens <= 500 and context.budget == 500
    assert set(context.input_record_ids) <= set(ids) and context.input_record_ids
    assert context.components.search.ids and "contract" in context.rendered


def test_retrieve_then_its_receipt_then_feedback_with_a_dedupe_key(client, ids):
    memory = client.retrieve("support contract renewal", entity="contact.lena", token_budget=1000, raw=True)
    assert isinstance(memory, MemoryContext) and memory.as_of_axis == "valid" and memory.as_of is None
    delivered = [entry for section in (memory.sections.facts, memory.sections.events, memory.sections.derived)
                 for entry in section]
    assert delivered and all(isinstance(entry, RetrievedEntry) for entry in delivered)
    assert {entry.id for entry in delivered} <= set(ids) and delivered[0].valid_from
    receipt = client.receipt(memory.receipt_id)
    assert isinstance(receipt, Receipt) and receipt.id == memory.receipt_id and receipt.raw is True
    feedback = client.send_feedback(memory.receipt_id, "success", record_ids=[delivered[0].id], dedupe_key="run-1")
    assert isinstance(feedback, Feedback) and feedback.record_ids == (delivered[0].id,)
    assert feedback.score == 1.0 and not feedback.deduplicated
    again = client.send_feedback(memory.receipt_id, "success", record_ids=[delivered[0].id], dedupe_key="run-1")
    assert again.deduplicated and again.id == feedback.id
    with pytest.raises(Conflict) as caught:
        client.send_feedback(memory.receipt_id, "failure", record_ids=[delivered[0].id], dedupe_key="run-1")
    assert caught.value.code == "dedupe_conflict"


def test_retrieve_errors_are_typed(client, live, ids):
    with pytest.raises(BadRequest) as caught:
        client.retrieve("contract", entity="contact.lena", mode="deterministic", rerank=True)
    assert (caught.value.status, caught.value.code) == (400, "mode_conflict")
    with pytest.raises(Unprocessable) as caught:
        client.retrieve("contract", entity="contact.lena", top_n=0)
    assert caught.value.path == "topN"
    memory = client.retrieve("contract", entity="contact.lena")
    with pytest.raises(Unprocessable) as caught:
        client.send_feedback(memory.receipt_id, "success", record_ids=["00000000-0000-4000-8000-000000000000"])
    assert caught.value.code == "record_not_in_receipt"
    with MemseekClient(live.url, live.other_key) as other:
        with pytest.raises(NotFound) as caught:
            other.receipt(memory.receipt_id)
        assert caught.value.code == "receipt_not_found"


def test_evaluate_scores_graded_queries(client, ids):
    evaluation = client.evaluate([{"query": "office moved to Graz", "relevant": {ids[2]: 2},
                                   "entity": "contact.lena"}], k=3)
    assert isinstance(evaluation, Evaluation) and evaluation.k == 3
    assert evaluation.queries[0]["ranking"][0] == ids[2] and evaluation.overall["mrr"] == 1.0
