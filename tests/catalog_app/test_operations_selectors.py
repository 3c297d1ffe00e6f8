"""The Operations page's record figures against real rows: ingest-to-ready lag per minute and
records per collection over the hour equal a plain Python count of the same rows (the oracle),
for rows placed at random times inside, before and after the hour."""
import random
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from catalog_app.models import Record
from catalog_app.operations.selectors import WINDOW_MINUTES, hour_minutes, ingest_lag, records_per_collection
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.record_ingest import record_ingest_batch
from catalog_app.services.workspaces import workspace_create
from tests.conftest import EXAMPLE_CATALOG


def percentile_cont(values: list[float], q: float) -> float | None:
    """PostgreSQL's percentile_cont: linear interpolation between the two nearest ranks."""
    if not values:
        return None
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@pytest.fixture
def rows(catalog):
    """Eighteen records: acme's main and tickets collections and beta's main collection."""
    beta, _ = workspace_create(name="beta")
    catalog_load(workspace=beta, directory=EXAMPLE_CATALOG)
    items = [(catalog, "main", "fact"), (catalog, "tickets", "ticket"), (beta, "main", "event")]
    for number in range(18):
        workspace, collection, kind = items[number % 3]
        item = {"entity": f"user-{number}", "collection": collection, "type": kind, "text": f"note {number}"}
        if kind == "fact":
            item["key"] = f"k{number}"
        if kind == "ticket":
            item["content"] = {"channel": "email", "priority": 1, "opened_at": "2026-02-01T09:00:00Z"}
        record_ingest_batch(workspace=workspace, items=[item])
    return list(Record.objects.select_related("workspace").order_by("seq"))


def place(rows, seed: int, now):
    """Give each row a random written time (before, inside or just after the hour) and a random
    ready time (or none); return ``{id: (created_at, enriched_at)}``."""
    rng = random.Random(seed)
    start = hour_minutes(now)[0]
    placed = {}
    for row in rows:
        created = start + timedelta(seconds=rng.uniform(-3600, WINDOW_MINUTES * 60 + 30))
        enriched = None if rng.random() < 0.25 else created + timedelta(seconds=rng.choice([0, 0.4, 3, 75.5, 900]))
        placed[row.id] = (created, enriched)
    with connection.cursor() as cursor:
        for record_id, (created, enriched) in placed.items():
            cursor.execute(f"UPDATE {Record._meta.db_table} SET created_at = %s, enriched_at = %s WHERE id = %s",
                           [created, enriched, record_id])
    return placed


@pytest.mark.parametrize("seed", range(6))
def test_ingest_lag_per_minute_equals_the_rows(rows, seed):
    now = timezone.now()
    placed = place(rows, seed, now)
    minutes = hour_minutes(now)
    found = ingest_lag(now=now)
    assert [m.minute for m in found] == list(minutes)
    for point in found:
        inside = [(c, e) for c, e in placed.values() if point.minute <= c < point.minute + timedelta(minutes=1)]
        lags = [(e - c).total_seconds() for c, e in inside if e is not None]
        assert (point.written, point.ready) == (len(inside), len(lags))
        for got, q in ((point.p50_s, 0.5), (point.p95_s, 0.95)):
            expected = percentile_cont(lags, q)
            assert got == expected if expected is None else got == pytest.approx(expected, abs=1e-6)
    assert sum(p.written for p in found) == sum(minutes[0] <= c < minutes[-1] + timedelta(minutes=1)
                                                for c, _ in placed.values())


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("top", [1, 2, 3])
def test_records_per_collection_over_the_hour_equal_the_rows(rows, seed, top):
    now = timezone.now()
    placed = place(rows, seed, now)
    labels = {row.id: f"{row.workspace.name}/{row.collection}" for row in rows}
    ends = [minute + timedelta(minutes=1) for minute in hour_minutes(now)]
    expected = {label: tuple(sum(1 for rid, (c, _) in placed.items() if labels[rid] == label and c < end)
                             for end in ends) for label in set(labels.values())}
    ranked = sorted(expected, key=lambda label: (-sum(1 for v in labels.values() if v == label), label))
    wanted = [(label, expected[label]) for label in ranked[:top]]
    if ranked[top:]:
        wanted.append((f"other ({len(ranked) - top} collections)",
                       tuple(sum(expected[label][i] for label in ranked[top:]) for i in range(WINDOW_MINUTES))))
    assert [(s.label, s.totals) for s in records_per_collection(now=now, top=top)] == wanted


def test_nothing_written_gives_zeros_and_no_series(db):
    now = timezone.now()
    assert all((p.written, p.ready, p.p50_s, p.p95_s) == (0, 0, None, None) for p in ingest_lag(now=now))
    assert records_per_collection(now=now) == []
