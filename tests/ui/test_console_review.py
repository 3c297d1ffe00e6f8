"""The console's access rules and the draft review screen: staff only, CSRF on every POST,
approve/reject through the review services with their refusals shown, pagination."""
import uuid

import pytest
from django.test import Client
from django.urls import reverse

from catalog_app.models import Record, ReviewAudit, Workspace
from catalog_app.services.record_ingest import record_ingest_batch
from tests.catalog_app.factories import record_make

from .conftest import csrf_token

MARIA = "contact.maria"


def write(workspace, **fields) -> Record:
    item = {"entity": MARIA, "collection": "main", "type": "fact", "key": "role", **fields}
    return Record.objects.get(pk=record_ingest_batch(workspace=workspace, items=[item]).inserted[0].id)


def console_urls(workspace: str, record_id: str) -> list[str]:
    return [reverse("console:index"), reverse("console:drafts", args=[workspace]),
            reverse("console:records", args=[workspace]), reverse("console:record", args=[workspace, record_id]),
            reverse("console:definitions", args=[workspace]), reverse("console:playground", args=[workspace])]


def test_anonymous_users_are_sent_to_the_admin_login(catalog):
    record = record_make(catalog)
    for url in console_urls(catalog.name, record.id):
        response = Client().get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/admin/login/?next=/console/"), url


def test_users_who_are_not_staff_are_refused(catalog, plain, plain_user):
    record = record_make(catalog)
    for url in console_urls(catalog.name, record.id):
        response = plain.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/"), url
    draft = write(catalog, status="draft", text="Maria is the CEO.")
    lax = Client()  # no CSRF check, so only the staff rule can refuse the POST
    lax.force_login(plain_user)
    response = lax.post(reverse("console:draft-approve", args=[catalog.name, draft.id]))
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert not ReviewAudit.objects.exists() and Record.objects.count() == 2


def test_index_lists_workspaces_with_their_screens(staff, catalog):
    page = staff.get(reverse("console:index")).content.decode()
    assert "acme" in page
    assert reverse("console:drafts", args=["acme"]) in page
    assert reverse("console:playground", args=["acme"]) in page


def test_admin_index_links_to_the_console(staff):
    page = staff.get(reverse("admin:index")).content.decode()
    assert 'href="/console/"' in page and "Memseek console" in page


def test_unknown_workspace_is_404(staff, db):
    assert staff.get(reverse("console:drafts", args=["nope"])).status_code == 404


def test_drafts_show_each_draft_beside_the_active_value_with_a_diff(staff, catalog):
    current = write(catalog, text="Maria is the CFO.", content={"speaker": "maria"})
    proposal = write(catalog, status="draft", text="Maria is the CEO.", content={"speaker": "maria", "tags": ["exec"]})
    page = staff.get(reverse("console:drafts", args=[catalog.name])).content.decode()
    assert f'data-draft="{proposal.id}"' in page
    assert "Maria is the CFO." in page and "Maria is the CEO." in page
    assert '<span class="del">-Maria is the CFO.' in page and '<span class="add">+Maria is the CEO.' in page
    assert "tags" in page and "[&quot;exec&quot;]" in page
    assert reverse("console:record", args=[catalog.name, current.id]) in page


def post_decision(client, workspace, draft, decision, *, token=True, next_url=None):
    page = client.get(reverse("console:drafts", args=[workspace.name]))
    data = {"csrfmiddlewaretoken": csrf_token(page)} if token else {}
    if next_url is not None:
        data["next"] = next_url
    return client.post(reverse(f"console:draft-{decision}", args=[workspace.name, draft.id]), data)


def test_approve_writes_the_successor_and_the_slot_leaves_the_list(staff, catalog):
    write(catalog, text="Maria is the CFO.")
    proposal = write(catalog, status="draft", text="Maria is the CEO.")
    response = post_decision(staff, catalog, proposal, "approve")
    assert response.status_code == 302 and response["Location"] == reverse("console:drafts", args=[catalog.name])
    successor = Record.objects.get(status="active", derived_from__contains=[proposal.id])
    assert successor.text == "Maria is the CEO."
    assert ReviewAudit.objects.get().actor == "opal"
    page = staff.get(response["Location"]).content.decode()
    assert "approved; wrote active successor" in page
    assert f'data-draft="{proposal.id}"' not in page and 'id="no-drafts"' in page
    write(catalog, text="Maria is the COO.")  # a later active value does not bring the approved draft back
    page = staff.get(response["Location"]).content.decode()
    assert f'data-draft="{proposal.id}"' not in page


def test_reject_withdraws_the_draft_and_keeps_the_active_value(staff, catalog):
    current = write(catalog, text="Maria is the CFO.")
    proposal = write(catalog, status="draft", text="Maria is the CEO.")
    response = post_decision(staff, catalog, proposal, "reject")
    page = staff.get(response["Location"]).content.decode()
    assert "rejected; wrote withdrawal" in page
    assert f'data-draft="{proposal.id}"' not in page
    withdrawal = Record.objects.get(status="draft", tombstone=True)
    assert withdrawal.derived_from == [proposal.id]
    assert Record.objects.filter(status="active").get() == current


def test_a_stale_draft_is_marked_and_its_approval_refused(staff, catalog):
    write(catalog, text="Maria is the CFO.")
    proposal = write(catalog, status="draft", text="Maria is the CEO.")
    write(catalog, text="Maria is the COO.")  # the active value moves after the proposal
    page = staff.get(reverse("console:drafts", args=[catalog.name])).content.decode()
    assert "stale: the active value changed after this draft" in page
    before = Record.objects.count()
    response = post_decision(staff, catalog, proposal, "approve")
    page = staff.get(response["Location"]).content.decode()
    assert "Not approved: <code>promotion_stale</code>" in page
    assert Record.objects.count() == before and not ReviewAudit.objects.exists()


def test_decisions_need_the_csrf_token(staff, catalog):
    proposal = write(catalog, status="draft", text="Maria is the CEO.")
    for decision in ("approve", "reject"):
        assert post_decision(staff, catalog, proposal, decision, token=False).status_code == 403
    assert Record.objects.count() == 1


def test_decisions_are_post_only(staff, catalog):
    proposal = write(catalog, status="draft", text="Maria is the CEO.")
    assert staff.get(reverse("console:draft-approve", args=[catalog.name, proposal.id])).status_code == 405


def test_another_workspaces_draft_is_not_found(staff, catalog, other_workspace_api):
    foreign = write(Workspace.objects.get(name="other-co"), status="draft", text="elsewhere")
    response = post_decision(staff, catalog, foreign, "approve")
    page = staff.get(response["Location"]).content.decode()
    assert "<code>record_not_found</code>" in page
    assert Record.objects.filter(status="active").count() == 0


def test_next_must_stay_on_this_site(staff, catalog):
    proposal = write(catalog, status="draft", text="Maria is the CEO.")
    response = post_decision(staff, catalog, proposal, "reject", next_url="https://evil.example/")
    assert response["Location"] == reverse("console:drafts", args=[catalog.name])
    proposal = write(catalog, key="team", status="draft", text="Maria leads sales.")
    here = reverse("console:drafts", args=[catalog.name]) + "?entity=contact.maria&page=1"
    assert post_decision(staff, catalog, proposal, "reject", next_url=here)["Location"] == here


def test_drafts_are_paginated_and_filtered_by_entity(staff, catalog):
    for index in range(12):
        record_make(catalog, entity=MARIA, key=f"k{index:02d}", status="draft", text=f"draft {index}")
    record_make(catalog, entity="contact.ivan", key="role", status="draft", text="ivan draft")
    url = reverse("console:drafts", args=[catalog.name])
    first = staff.get(url).content.decode()
    assert first.count('class="slot"') == 10 and "page=2" in first and "ivan draft" in first
    second = staff.get(url, {"page": 2}).content.decode()
    assert second.count('class="slot"') == 3 and "draft 11" in second
    only_ivan = staff.get(url, {"entity": "contact.ivan"}).content.decode()
    assert only_ivan.count('class="slot"') == 1
    assert staff.get(url, {"page": "x"}).status_code == 200  # an unreadable page number means page 1


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_an_unknown_draft_id_is_reported(staff, catalog, decision):
    ghost = Record(id=uuid.uuid4())
    response = post_decision(staff, catalog, ghost, decision)
    assert "<code>record_not_found</code>" in staff.get(response["Location"]).content.decode()
