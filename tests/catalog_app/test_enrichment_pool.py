"""A worker's task drains the pending pool first: claims of ``ENRICH_CLAIM`` records of similar
text length from the ``pool`` oldest fresh pending records, while any of its own records waits
there (real PostgreSQL and the real MiniLM model)."""
import threading

import pytest
from django.db import connection, transaction

from catalog_app.embedding import EmbeddingUnavailable
from catalog_app.models import Record, RecordEmbedding
from catalog_app.services import enrichment
from catalog_app.services.enrichment import records_enrich
from tests.catalog_app.factories import pending_record

SPACE = "minilm-l6-v2"
pytestmark = pytest.mark.model


@pytest.fixture
def embed_calls(monkeypatch):
    """The texts of every ``embed_texts`` call, in call order (the real model still runs)."""
    calls = []
    real = enrichment.embed_texts

    def recording(config, texts):
        calls.append(sorted(texts))
        return real(config, texts)

    monkeypatch.setattr(enrichment, "embed_texts", recording)
    return calls


def pending_ids() -> set:
    return set(Record.objects.filter(enriched_at__isnull=True).values_list("id", flat=True))


def held_elsewhere(record: Record):
    """A context that holds ``record``'s row lock in another connection, as another worker's
    claim does, until it exits."""
    claimed, release = threading.Event(), threading.Event()

    def other_worker():
        try:
            with transaction.atomic():
                list(Record.objects.select_for_update().filter(pk=record.pk))
                claimed.set()
                release.wait(30)
        finally:
            connection.close()

    class Held:
        def __enter__(self):
            self.thread = threading.Thread(target=other_worker)
            self.thread.start()
            assert claimed.wait(30)

        def __exit__(self, *exc):
            release.set()
            self.thread.join()

    return Held()


def test_a_pooled_call_also_enriches_other_fresh_pending_records_in_one_embedding_pass(catalog, embed_calls):
    asked = pending_record(catalog, collection="main", text="The customer asked for a refund.")
    others = [pending_record(catalog, collection="main", text=f"Follow-up call number {i}.") for i in range(3)]
    outcome = records_enrich(record_ids=[asked.id], pool=10)
    assert [len(texts) for texts in embed_calls] == [4]
    assert sorted(outcome.ready) == sorted(str(r.id) for r in [asked, *others])
    assert pending_ids() == set()
    assert RecordEmbedding.objects.filter(space=SPACE).count() == 4


def test_the_pool_is_a_window_of_the_oldest_fresh_pending_records_without_old_or_failed_ones(catalog, settings):
    settings.MEMSEEK = {"PENDING_RECOVERY_AGE_S": 60, "ENRICH_CLAIM": 10}
    asked = pending_record(catalog, collection="main", text="Asked for.")
    first, second, third = (pending_record(catalog, collection="main", text=f"Fresh {i}.") for i in range(3))
    old = pending_record(catalog, collection="main", text="Pending for two minutes.", age_s=120)
    failed = pending_record(catalog, collection="main", text="Waits for a provider.",
                            enrichment_error={"embedding_v1": {"code": "embedding_unavailable"}})
    outcome = records_enrich(record_ids=[asked.id], pool=3)
    assert sorted(outcome.ready) == sorted(str(r.id) for r in [asked, first, second])
    assert pending_ids() == {third.id, old.id, failed.id}


def test_a_claim_takes_the_oldest_record_and_those_nearest_to_it_in_text_length(catalog, settings, embed_calls):
    settings.MEMSEEK = {"ENRICH_CLAIM": 2}
    short = pending_record(catalog, collection="main", text="Short note.")
    long = pending_record(catalog, collection="main", text="A much longer note about the delivery " * 4)
    shortish = pending_record(catalog, collection="main", text="Short notes.")
    longish = pending_record(catalog, collection="main", text="A much longer note about the delivery " * 4 + "!")
    outcome = records_enrich(record_ids=[short.id, long.id], pool=10)
    # Oldest first (short), with the pending record nearest in length; then the oldest left (long).
    assert embed_calls == [sorted([short.text, shortish.text]), sorted([long.text, longish.text])]
    assert sorted(outcome.ready) == sorted(str(r.id) for r in [short, long, shortish, longish])


def test_the_drain_stops_once_the_tasks_own_records_are_done(catalog, settings, embed_calls):
    settings.MEMSEEK = {"ENRICH_CLAIM": 2}
    asked = pending_record(catalog, collection="main", text="Asked for.")
    others = [pending_record(catalog, collection="main", text=f"Someone else's record {i}.") for i in range(4)]
    outcome = records_enrich(record_ids=[asked.id], pool=10)
    assert len(embed_calls) == 1 and len(outcome.ready) == 2
    assert str(asked.id) in outcome.ready
    assert len(pending_ids() & {record.id for record in others}) == 3


@pytest.mark.django_db(transaction=True)
def test_the_pool_skips_records_another_worker_holds(catalog):
    asked = pending_record(catalog, collection="main", text="Asked for.")
    held = pending_record(catalog, collection="main", text="Claimed elsewhere.")
    with held_elsewhere(held):
        outcome = records_enrich(record_ids=[asked.id], pool=10)
    assert outcome.ready == [str(asked.id)]
    assert pending_ids() == {held.id}


@pytest.mark.django_db(transaction=True)
def test_a_task_whose_own_record_is_held_drains_at_most_pool_plus_its_own_count(catalog, settings):
    settings.MEMSEEK = {"ENRICH_CLAIM": 1}
    asked = pending_record(catalog, collection="main", text="Held by another worker.")
    others = [pending_record(catalog, collection="main", text=f"Fresh {i}.") for i in range(5)]
    with held_elsewhere(asked):
        outcome = records_enrich(record_ids=[asked.id], pool=2)
    # The own record stays in the pool (held), so the drain runs until its budget of 2 + 1 records.
    assert sorted(outcome.ready) == sorted(str(r.id) for r in others[:3])
    assert outcome.skipped == [str(asked.id)]
    assert pending_ids() == {asked.id, others[3].id, others[4].id}


def test_a_provider_failure_leaves_pool_records_pending_and_only_the_own_record_fails_finally(catalog, monkeypatch):
    asked = pending_record(catalog, collection="main", text="Asked for.")
    other = pending_record(catalog, collection="main", text="Someone else's record.")

    def failing(config, texts):
        raise EmbeddingUnavailable("embedding_unavailable", "provider down")

    monkeypatch.setattr(enrichment, "embed_texts", failing)
    outcome = records_enrich(record_ids=[asked.id], pool=10, final_attempt=True)
    asked.refresh_from_db()
    other.refresh_from_db()
    assert outcome.deferred == [] and outcome.ready == [str(asked.id)]
    assert asked.annotation_meta["embedding_v1"]["status"] == "failed"
    assert asked.enrichment_error["embedding_v1"]["code"] == "embedding_unavailable"
    assert not other.ready and other.annotation_meta == {} and not other.enrichment_error
