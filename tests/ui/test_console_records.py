"""The record browser, the record page and the definitions list: filters that only narrow,
keyset pages whose query count does not grow with the table, workspace isolation."""
import re
import shutil
from datetime import datetime, timezone
from html import unescape

from django.urls import reverse

from catalog_app.models import RecordEmbedding
from catalog_app.services.catalog_load import catalog_load
from search_app.catalog_families import BUILTIN_RANK_WARNING
from tests.catalog_app.factories import record_make
from tests.conftest import EXAMPLE_CATALOG

MARIA = "contact.maria"


def records_url(workspace) -> str:
    return reverse("console:records", args=[workspace.name])


def listed_ids(response) -> list[str]:
    """Short ids of the rows on a record browser page, in page order."""
    return re.findall(r'/records/([0-9a-f-]{36})">', response.content.decode())


def short(record) -> str:
    return str(record.id)


def test_filters_narrow_the_list(staff, catalog):
    jan = datetime(2026, 1, 15, tzinfo=timezone.utc)
    mar = datetime(2026, 3, 15, tzinfo=timezone.utc)
    event = record_make(catalog, entity=MARIA, type="event", text="Maria called.", occurred_at=jan)
    fact = record_make(catalog, entity=MARIA, type="fact", key="role", text="Maria is the CFO.", occurred_at=mar)
    draft = record_make(catalog, entity=MARIA, type="fact", key="role", status="draft", text="CEO?", occurred_at=mar)
    pending = record_make(catalog, entity="contact.ivan", type="event", ready=False, occurred_at=mar)
    ticket = record_make(catalog, entity="contact.ivan", collection="tickets", type="ticket",
                         content={"channel": "email"}, occurred_at=jan)
    url = records_url(catalog)
    cases = [
        ({}, [ticket, pending, draft, fact, event]),
        ({"collection": "tickets"}, [ticket]),
        ({"entity": MARIA}, [draft, fact, event]),
        ({"type": "fact"}, [draft, fact]),
        ({"key": "role", "status": "active"}, [fact]),
        ({"status": "draft"}, [draft]),
        ({"readiness": "pending"}, [pending]),
        ({"readiness": "ready", "entity": "contact.ivan"}, [ticket]),
        ({"occurred_after": "2026-02-01T00:00:00Z"}, [pending, draft, fact]),
        ({"occurred_before": "2026-02-01T00:00"}, [ticket, event]),
        ({"occurred_after": "2026-01-01", "occurred_before": "2026-02-01", "entity": MARIA}, [event]),
    ]
    for query, expected in cases:
        response = staff.get(url, query)
        assert response.status_code == 200, query
        assert listed_ids(response) == [short(r) for r in expected], query


def test_an_unreadable_filter_shows_its_error_and_no_rows(staff, catalog):
    record_make(catalog)
    for query in ({"occurred_after": "last tuesday"}, {"status": "gone"}, {"before_seq": "-4"},
                  {"before_seq": "9", "after_seq": "3"}):
        response = staff.get(records_url(catalog), query)
        page = response.content.decode()
        assert response.status_code == 200 and 'id="filter-error"' in page, query
        assert listed_ids(response) == [], query


def test_keyset_pages_walk_the_table_by_seq(staff, catalog):
    records = [record_make(catalog, text=f"note {index}") for index in range(60)]
    newest_first = [short(r) for r in reversed(records)]
    url = records_url(catalog)
    first = staff.get(url)
    assert listed_ids(first) == newest_first[:25]
    older = re.search(r'href="(\?[^"]*before_seq=\d+)" rel="next"', first.content.decode()).group(1)
    second = staff.get(url + older.replace("&amp;", "&"))
    assert listed_ids(second) == newest_first[25:50]
    third_link = re.search(r'href="(\?[^"]*)" rel="next"', second.content.decode()).group(1).replace("&amp;", "&")
    third = staff.get(url + third_link)
    assert listed_ids(third) == newest_first[50:]
    assert 'rel="next"' not in third.content.decode()
    back = re.search(r'href="(\?[^"]*after_seq=\d+)" rel="prev"', third.content.decode()).group(1)
    assert listed_ids(staff.get(url + back.replace("&amp;", "&"))) == newest_first[25:50]
    assert listed_ids(staff.get(url, {"per_page": 50})) == newest_first[:50]


def test_pages_keep_the_filters(staff, catalog):
    for index in range(60):
        record_make(catalog, entity=MARIA if index % 2 else "contact.ivan", text=f"n{index}")
    first = staff.get(records_url(catalog), {"entity": MARIA, "per_page": 25}).content.decode()
    older = re.search(r'href="(\?entity=contact.maria&amp;per_page=25&amp;before_seq=\d+)" rel="next"', first)
    second = staff.get(records_url(catalog) + older.group(1).replace("&amp;", "&"))
    assert len(listed_ids(second)) == 5  # Maria's 30 records: 25, then 5
    assert "contact.ivan" not in second.content.decode().split('id="records"')[1]


def test_a_page_costs_the_same_queries_whatever_the_table_size(staff, catalog, django_assert_max_num_queries):
    for index in range(300):
        record_make(catalog, entity=MARIA, text=f"note {index}")
    staff.get(records_url(catalog))  # compile and cache the catalog
    with django_assert_max_num_queries(6) as captured:
        response = staff.get(records_url(catalog), {"entity": MARIA, "before_seq": 10**12})
    assert len(listed_ids(response)) == 25
    record_sql = [q["sql"] for q in captured.captured_queries if "catalog_app_record" in q["sql"]]
    assert len(record_sql) == 1 and "LIMIT 26" in record_sql[0] and "COUNT" not in record_sql[0].upper()


def test_the_record_page_shows_content_provenance_chain_and_embedding(staff, catalog):
    v1 = record_make(catalog, entity=MARIA, type="fact", key="role", text="Maria is the CFO.")
    v2 = record_make(catalog, entity=MARIA, type="fact", key="role", text="Maria is the CEO.", derived_from=[v1.id],
                     content={"speaker": "maria"}, scores={"importance": 7}, annotations={"mood": {"x": 1}}, depth=1)
    v3 = record_make(catalog, entity=MARIA, type="fact", key="role", text="Maria is the COO.")
    child = record_make(catalog, entity=MARIA, text="Summary citing v2", derived_from=[v2.id], depth=2)
    RecordEmbedding.objects.create(record=v2, workspace=catalog, space="minilm-l6-v2", embedding=[0.1] * 384)

    page = staff.get(reverse("console:record", args=[catalog.name, v2.id])).content.decode()

    assert "&quot;speaker&quot;: &quot;maria&quot;" in page and "&quot;importance&quot;: 7" in page
    assert "&quot;mood&quot;" in page
    provenance = page[page.index('id="provenance"'):page.index('id="chain"')]
    assert reverse("console:record", args=[catalog.name, v1.id]) in provenance
    assert reverse("console:record", args=[catalog.name, child.id]) in provenance
    chain = page[page.index('id="chain"'):]
    assert [m for m in re.findall(r"<td>(\d+)</td>", chain)] == [str(v3.seq), str(v2.seq), str(v1.seq)]
    assert re.search(rf'<tr class="current">\s*<td>{v2.seq}</td>', chain)
    assert "minilm-l6-v2</td><td>384</td>" in page


def test_embedding_status_pending_or_none(staff, catalog):
    pending = record_make(catalog, ready=False)
    assert '<span class="badge warn">pending</span> <span class="muted">enrichment' in staff.get(
        reverse("console:record", args=[catalog.name, pending.id])).content.decode()
    ready = record_make(catalog)
    assert '<span class="badge">none</span>' in staff.get(
        reverse("console:record", args=[catalog.name, ready.id])).content.decode()


def test_another_workspaces_record_is_404(staff, catalog, other_workspace_api):
    from catalog_app.models import Workspace

    foreign = record_make(Workspace.objects.get(name="other-co"))
    assert staff.get(reverse("console:record", args=[catalog.name, foreign.id])).status_code == 404
    assert staff.get(reverse("console:record", args=["other-co", foreign.id])).status_code == 200
    assert staff.get(f"/console/{catalog.name}/records/not-a-uuid").status_code == 404


def test_definitions_list_versions_with_kind_hash_and_reads(staff, catalog):
    page = staff.get(reverse("console:definitions", args=[catalog.name])).content.decode()
    rows = re.findall(r"<tr>\s*<td>(view|collection)</td>\s*<td><strong>([a-z_]+)</strong></td>\s*<td>(\d+)</td>\s*"
                      r"<td><span class=\"badge[^\"]*\">(active|inactive)</span>", page)
    assert ("view", "customer_context", "2", "inactive") in rows and ("view", "customer_context", "1", "active") in rows
    assert rows.index(("view", "customer_context", "2", "inactive")) < rows.index(
        ("view", "customer_context", "1", "active"))
    assert ("collection", "main", "1", "active") in rows
    assert "YAML &amp; parsed" in page and "activate…" in page
    assert ">mixed<" in page and ">search<" in page


def test_definitions_are_paginated(staff, catalog):
    from catalog_app.models import Definition

    base = Definition.objects.filter(workspace=catalog, family="view").first()
    for version in range(10, 40):
        Definition.objects.create(workspace=catalog, family="view", name="zz_many", version=version, body=base.body,
                                  hash=f"{version:064d}")
    url = reverse("console:definitions", args=[catalog.name])
    first = staff.get(url).content.decode()
    assert "page 1 of 2" in first and "?page=2" in first
    assert "zz_many" in staff.get(url, {"page": 2}).content.decode()


def test_definitions_say_when_the_built_in_rank_formula_ranks(staff, workspace, tmp_path):
    directory = tmp_path / "catalog"
    shutil.copytree(EXAMPLE_CATALOG, directory)
    (directory / "conf" / "rank_default.yaml").unlink()
    catalog_load(workspace=workspace, directory=directory)
    page = staff.get(reverse("console:definitions", args=[workspace.name])).content.decode()
    warnings = re.findall(r'<ul class="messages" id="builtin-defaults"><li class="warning">([^<]+)</li></ul>', page)
    assert [unescape(text) for text in warnings] == [BUILTIN_RANK_WARNING]


def test_definitions_of_a_catalog_with_a_rank_default_carry_no_warning(staff, catalog):
    page = staff.get(reverse("console:definitions", args=[catalog.name])).content.decode()
    assert "builtin-defaults" not in page and "built-in formula" not in page
