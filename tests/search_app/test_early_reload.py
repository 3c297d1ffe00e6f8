"""Hybrid candidates are reloaded in two steps (the pg backend's candidate_ids with early_reload):
each channel but the last to answer reloads its certain share as it answers, the merged reload
takes the rest. The rows must be exactly those of one reload of every candidate."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalog_app.catalog.runtime import catalog_for_workspace
from search_app.backends import pg as pg_backend
from search_app import pipeline as run_module
from search_app.engine.rank_expression import rank_signals
from search_app.engine.resolve import resolve_search
from search_app.services import search_spec_parse
from tests.search_app.search_factories import ingest_ready, item

pytestmark = pytest.mark.model

NOTES = ["Budget draft for the offsite", "The budget needs another review", "Budget approved by finance",
         "Maria confirmed the Q3 budget", "The hiking trail near the lake is closed",
         "Replace the bicycle chain before the race", "Finance asked for the travel review",
         "Lunch with the offsite planning team"]


def hybrid_source(workspace, q="budget review"):
    spec = search_spec_parse({"q": q, "mode": "hybrid", "k": 3})
    catalog = catalog_for_workspace(workspace)
    resolved = resolve_search(spec, catalog)[0]
    return resolved, run_module._context(workspace, spec, catalog, [resolved]), rank_signals(resolved.rank)


@pytest.mark.django_db(transaction=True)
def test_early_reloads_cover_every_channel_but_the_last_and_change_no_row(catalog, settings, monkeypatch):
    settings.MEMSEEK = {"TOUCH_ON_READ": False}
    # 40 records: more than a channel's share (cap 100 // 3 = 33), so some ids are left over
    notes = [f"{NOTES[i % len(NOTES)]} (note {i})" for i in range(40)]
    ingest_ready(catalog, [item(text, occurred_at=f"2026-07-{1 + i % 28:02d}T{i % 24:02d}:00:00Z")
                           for i, text in enumerate(notes)])
    resolved, context, reads = hybrid_source(catalog)
    answered = {}
    for name in ("_vector", "_text", "_recent"):
        def recording(*args, _real=getattr(pg_backend, name), _name=name):
            answered[_name] = _real(*args)
            return answered[_name]
        monkeypatch.setattr(pg_backend, name, recording)
    early = {}

    def early_reload(ids):
        early[tuple(ids)] = pg_backend.reload_by_id(resolved, context, ids, reads=reads, bodies=False)
        return early[tuple(ids)]

    ids, stats, reloaded = pg_backend.candidate_ids(resolved, context, early_reload=early_reload)
    assert stats == {} and len(ids) == 40  # cap 100: every record
    share = resolved.source.candidate_cap() // 3
    shares = {name: tuple(channel[:share]) for name, channel in answered.items()}
    assert len(early) == 2 and set(early) < set(shares.values())  # all channels but one reloaded their share
    assert set(reloaded) == {i for part in early for i in part} and set(reloaded) <= set(ids)
    one_reload = pg_backend.reload_rows(resolved, context, ids, reads=reads, bodies=False)
    merged_reloads = []
    real_reload_by_id = pg_backend.reload_by_id

    def recording_reload(resolved_, context_, ids_, *args, **kwargs):
        merged_reloads.append(list(ids_))
        return real_reload_by_id(resolved_, context_, ids_, *args, **kwargs)

    monkeypatch.setattr(pg_backend, "reload_by_id", recording_reload)
    two_step = pg_backend.reload_rows(resolved, context, ids, reads=reads, bodies=False, reloaded=reloaded)
    assert two_step == one_reload and all(row.similarity is not None for row in two_step)
    left = [i for i in ids if i not in reloaded]
    assert left and merged_reloads == [left]  # only the rest went to the database


@pytest.mark.django_db
def test_the_merged_reload_skips_ids_already_reloaded_even_when_out_of_scope(catalog):
    ids = ingest_ready(catalog, [item(text) for text in NOTES[:3]])
    resolved, context, reads = hybrid_source(catalog)
    known = pg_backend.reload_by_id(resolved, context, ids[1:], reads=reads)
    with CaptureQueriesContext(connection) as queries:
        # ids[0] was reloaded earlier and found out of scope (None): it is not read again
        rows = pg_backend.reload_rows(resolved, context, ids, reads=reads, reloaded={ids[0]: None, **known})
    assert len(queries.captured_queries) == 0
    assert [row.id for row in rows] == ids[1:]
    assert rows == pg_backend.reload_rows(resolved, context, ids[1:], reads=reads)
