"""The lexical index follows every visibility change in the writer's own transaction: write,
readiness, supersession (also by an unready value), tombstones, draft approve and reject,
rollback; and no other workspace changes a workspace's statistics. After each scenario the
check finds no difference."""
import pytest
from django.db import transaction

from catalog_app.lexical.check import lexical_check
from catalog_app.lexical.query import IndexScope, index_top_k, source_totals
from catalog_app.services.enrichment import records_enrich
from catalog_app.services.review import draft_approve, draft_reject
from catalog_app.services.workspaces import workspace_create
from tests.catalog_app.lexical_support import load_lexical_catalog, maintain_both_analyzers, write


@pytest.fixture(autouse=True)
def _both_analyzers(settings):
    maintain_both_analyzers(settings)


@pytest.fixture
def ws(workspace, tmp_path):
    """The workspace with the tests' catalog; afterwards the check finds no difference."""
    load_lexical_catalog(workspace, tmp_path / "catalog")
    yield workspace
    assert lexical_check(workspace_id=workspace.pk) == []


def top(ws, *terms, statuses=("active",), analyzer="bm25_v1"):
    return index_top_k(workspace_id=ws.pk, analyzer=analyzer, terms=terms, k=10, scope=IndexScope(statuses=statuses))


def ids(result):
    return [uid for uid, _ in result.hits]


def test_a_ready_write_is_searchable_at_once(ws):
    (a,) = write(ws, {"text": "Quarterly budget review"})
    assert ids(top(ws, "budget")) == [a]
    assert top(ws, "budget").n == 1


def test_an_unready_write_is_searchable_once_enrichment_makes_it_ready(ws):
    (a,) = write(ws, {"text": "pending budget", "collection": "slow"})
    assert top(ws, "budget").n == 0
    outcome = records_enrich(record_ids=[a])
    assert outcome.ready == [str(a)]
    assert ids(top(ws, "budget")) == [a]


def test_a_newer_value_supersedes_the_old_one(ws):
    (old,) = write(ws, {"text": "works at Acme", "type": "fact", "key": "employer"})
    (new,) = write(ws, {"text": "works at Globex", "type": "fact", "key": "employer"})
    assert ids(top(ws, "works")) == [new]
    assert top(ws, "acme").dfs == (0,) and top(ws, "globex").dfs == (1,)
    assert top(ws, "works").n == 1 and old != new


def test_an_unready_newer_value_hides_the_old_one_until_ready(ws):
    (old,) = write(ws, {"text": "lives in Lisbon", "collection": "slow", "type": "fact", "key": "city"})
    records_enrich(record_ids=[old])
    assert ids(top(ws, "lives")) == [old]
    (new,) = write(ws, {"text": "lives in Oslo", "collection": "slow", "type": "fact", "key": "city"})
    assert top(ws, "lives").n == 0
    records_enrich(record_ids=[new])
    assert ids(top(ws, "lives")) == [new]


def test_several_values_of_one_lane_in_a_batch_index_only_the_last(ws):
    _, _, last = write(ws, *({"text": f"value {i}", "type": "fact", "key": "k"} for i in range(3)))
    assert ids(top(ws, "value")) == [last]


def test_a_tombstone_withdraws_the_value(ws):
    (fact,) = write(ws, {"text": "prefers email", "type": "fact", "key": "channel"})
    write(ws, {"type": "fact", "key": "channel", "tombstone": True, "derived_from": [str(fact)]})
    result = top(ws, "email")
    assert (result.n, result.hits) == (0, ())


def test_draft_approval_adds_the_active_successor_and_keeps_the_draft_in_its_lane(ws):
    (draft,) = write(ws, {"text": "moved to Berlin", "type": "fact", "key": "city", "status": "draft"})
    assert top(ws, "berlin").n == 0
    assert ids(top(ws, "berlin", statuses=("draft",))) == [draft]
    successor = draft_approve(workspace=ws, draft_id=draft, actor="test")
    assert ids(top(ws, "berlin")) == [successor.id]
    assert ids(top(ws, "berlin", statuses=("draft",))) == [draft]


def test_draft_rejection_removes_the_draft(ws):
    (draft,) = write(ws, {"text": "moved to Madrid", "type": "fact", "key": "city", "status": "draft"})
    draft_reject(workspace=ws, draft_id=draft, actor="test")
    assert top(ws, "madrid", statuses=("active", "draft")).n == 0


def test_a_rolled_back_batch_leaves_nothing(ws):
    (kept,) = write(ws, {"text": "kept row", "type": "fact", "key": "k"})
    with pytest.raises(RuntimeError), transaction.atomic():
        write(ws, {"text": "doomed row", "type": "fact", "key": "k"}, {"text": "doomed event"})
        assert top(ws, "doomed").n == 2
        raise RuntimeError("the caller's transaction fails after the write")
    assert ids(top(ws, "row")) == [kept]
    assert top(ws, "doomed").dfs == (0,)
    assert source_totals(workspace_id=ws.pk, collection_ids=None)[0] == 1


def test_the_english_analyzer_indexes_lexemes(ws):
    (a,) = write(ws, {"text": "The runners were running quickly"})
    result = top(ws, "run", analyzer="english")
    assert ids(result) == [a] and result.n == 1


def test_another_workspace_never_changes_the_statistics(ws, tmp_path):
    write(ws, {"text": "shared words alpha"}, {"text": "alpha only"})
    before = top(ws, "alpha", "shared")
    other, _ = workspace_create(name="other-co")
    load_lexical_catalog(other, tmp_path / "other")
    write(other, *({"text": "alpha shared shared"} for _ in range(5)))
    after = top(ws, "alpha", "shared")
    assert (after.n, after.dfs, after.average_length, after.hits) == (before.n, before.dfs, before.average_length,
                                                                     before.hits)
    assert top(other, "alpha").n == 5
    assert lexical_check(workspace_id=other.pk) == []


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_to_shared_terms_and_lanes_neither_deadlock_nor_lose_a_statistic(tmp_path):
    """Four threads, each on its own connection, write overlapping batches (the same terms, the
    same keyed lanes superseded back and forth) at once; every batch commits and the index
    agrees with the records."""
    import threading

    from django.db import connection as main_connection

    from catalog_app.models import Workspace

    space, _ = workspace_create(name="racers")
    load_lexical_catalog(space, tmp_path / "catalog")
    errors = []

    def writer(number):
        from django.db import connection

        try:
            for round_ in range(4):
                write(Workspace.objects.get(pk=space.pk),
                      *({"text": f"shared common words round {round_} writer {number} item {i}", "type": "fact",
                         "key": f"k{i % 3}", "entity": f"e{i % 2}"} for i in range(6)),
                      {"text": f"an event from writer {number}", "entity": "e9"})
        except Exception as error:  # reported below: the assertion names it
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert lexical_check(workspace_id=space.pk) == []
    result = top(space, "shared", "event")
    assert result.n == 2 * 3 + 4 * 4  # six keyed lanes hold one current value each, plus 16 events
    main_connection.close()
