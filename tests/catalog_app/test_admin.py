"""The admin: read-only pages for every model, the "Activate selected version" action through
DefinitionActivation (CSRF-protected, permission-gated), and record pages whose query count
does not grow with the table."""
import re
import uuid

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from catalog_app.admin import BoundedCountPaginator
from catalog_app.models import ActivationAudit, ApiKey, Definition, Record, ReviewAudit, Workspace
from catalog_app.services.review import draft_reject

from .factories import record_make
from .test_activation import FLAGGED_CATALOG, write_catalog

ACTIVATE = "activate_selected"


@pytest.fixture
def staff(db):
    """A staff user who may view everything in catalog_app and activate definitions."""
    user = User.objects.create_user("olga", password="pw", is_staff=True)
    codenames = [f"view_{model}" for model in ("workspace", "apikey", "definition", "record", "activationaudit",
                                               "reviewaudit", "erasureaudit")] + ["change_definition"]
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="catalog_app", codename__in=codenames))
    return user


@pytest.fixture
def browser(staff):
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    return client


def definition(workspace, family, name, version) -> Definition:
    return Definition.objects.get(workspace=workspace, family=family, name=name, version=version)


def active_versions(workspace, family, name):
    return list(Definition.objects.filter(workspace=workspace, family=family, name=name, active=True)
                .values_list("version", flat=True))


def run_action(browser, *definitions, token=True):
    """Submit the changelist action form the way a browser does (CSRF token from the page)."""
    url = reverse("admin:catalog_app_definition_changelist")
    page = browser.get(url)
    assert page.status_code == 200
    data = {"action": ACTIVATE, "index": 0, "_selected_action": [str(d.pk) for d in definitions]}
    if token:
        data["csrfmiddlewaretoken"] = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"',
                                                page.content.decode()).group(1)
    return browser.post(url, data, follow=True)


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


# --- The activation action -------------------------------------------------------------------

def test_action_activates_and_audits_with_the_username(browser, catalog):
    response = run_action(browser, definition(catalog, "view", "customer_context", 2))
    assert messages_of(response) == ["Activated view customer_context@2 in acme (was @1)."]
    assert active_versions(catalog, "view", "customer_context") == [2]
    audit = ActivationAudit.objects.get()
    assert (audit.from_version, audit.to_version, audit.actor) == (1, 2, "olga")
    assert Workspace.objects.get(pk=catalog.pk).catalog_revision == catalog.catalog_revision + 1


def test_action_reports_a_refusal_and_changes_nothing(browser, workspace, tmp_path):
    from catalog_app.services.catalog_load import catalog_load

    catalog_load(workspace=workspace, directory=write_catalog(tmp_path / "flagged", FLAGGED_CATALOG))
    response = run_action(browser, definition(workspace, "collection", "links", 2))
    [message] = messages_of(response)
    assert message.startswith("Not activated: activating collection links@2 would leave a catalog that does not load")
    assert "[graph_field]" in message
    assert active_versions(workspace, "collection", "links") == [1]
    assert not ActivationAudit.objects.exists()


def test_action_on_the_active_version_is_refused(browser, catalog):
    response = run_action(browser, definition(catalog, "view", "customer_context", 1))
    assert messages_of(response) == ["Not activated: view customer_context@1 is already active; nothing to do"]
    assert not ActivationAudit.objects.exists()


def test_action_refuses_two_versions_of_one_name(browser, catalog):
    response = run_action(browser, definition(catalog, "view", "customer_context", 1),
                          definition(catalog, "view", "customer_context", 2))
    assert "Select one version per name" in messages_of(response)[0]
    assert active_versions(catalog, "view", "customer_context") == [1]
    assert not ActivationAudit.objects.exists()


def test_action_needs_the_csrf_token(browser, catalog):
    response = run_action(browser, definition(catalog, "view", "customer_context", 2), token=False)
    assert response.status_code == 403
    assert active_versions(catalog, "view", "customer_context") == [1]


def test_action_needs_the_change_definition_permission(browser, staff, catalog):
    staff.user_permissions.remove(Permission.objects.get(codename="change_definition"))
    page = browser.get(reverse("admin:catalog_app_definition_changelist"))
    assert ACTIVATE not in page.content.decode()
    run_action(browser, definition(catalog, "view", "customer_context", 2))
    assert active_versions(catalog, "view", "customer_context") == [1]
    assert not ActivationAudit.objects.exists()


# --- Read-only pages -------------------------------------------------------------------------

def test_definition_pages_show_kind_collections_source_and_body(browser, catalog):
    listing = browser.get(reverse("admin:catalog_app_definition_changelist") + "?family=view")
    text = listing.content.decode()
    assert listing.status_code == 200
    assert "customer_context" in text and "search" in text and "main, profiles" in text
    stored = definition(catalog, "view", "customer_context", 2)
    detail = browser.get(reverse("admin:catalog_app_definition_change", args=[stored.pk]))
    page = detail.content.decode()
    assert detail.status_code == 200
    assert "mode: text" in page  # the source YAML
    assert "&quot;kind&quot;: &quot;search&quot;" in page  # the parsed body, pretty-printed
    assert 'name="_save"' not in page  # view only


@pytest.mark.parametrize("model", ["workspace", "apikey", "definition", "record", "activationaudit", "reviewaudit",
                                   "erasureaudit"])
def test_nothing_is_added_changed_or_deleted(browser, catalog, model):
    assert browser.get(reverse(f"admin:catalog_app_{model}_add")).status_code == 403
    assert browser.get(reverse(f"admin:catalog_app_{model}_changelist")).status_code == 200


def test_detail_pages_load(browser, catalog):
    proposal = record_make(catalog, key="role", status="draft", content={"speaker": "maria"},
                           scores={"importance": 3.0}, annotations={"importance": {"value": 3.0}})
    withdrawal = draft_reject(workspace=catalog, draft_id=proposal.id, actor="olga")
    key = ApiKey.objects.get(workspace=catalog)
    pages = [
        ("workspace", catalog.pk, "acme"),
        ("apikey", key.pk, key.key_hash),
        ("record", withdrawal.pk, str(proposal.id)),
        ("record", proposal.pk, "&quot;speaker&quot;: &quot;maria&quot;"),
        ("reviewaudit", ReviewAudit.objects.get().pk, str(withdrawal.id)),
    ]
    for model, pk, expected in pages:
        response = browser.get(reverse(f"admin:catalog_app_{model}_change", args=[pk]))
        assert response.status_code == 200, model
        assert expected in response.content.decode(), model
        assert 'name="_save"' not in response.content.decode()
        assert browser.get(reverse(f"admin:catalog_app_{model}_delete", args=[pk])).status_code == 403


# --- Record list: bounded queries ------------------------------------------------------------

def bulk_records(workspace, count: int) -> None:
    now = timezone.now()
    Record.objects.bulk_create([
        Record(workspace=workspace, collection="main", collection_version=1, collection_hash="h", entity=f"e{i % 7}",
               type=("note", "call")[i % 2], key=f"k{i}" if i % 3 else None, status=("active", "draft")[i % 4 == 0],
               text=f"record {i}", content={"text": f"record {i}", "blob": "x" * 500}, occurred_at=now,
               created_at=now, last_accessed=now, enriched_at=now if i % 5 else None, tombstone=i % 11 == 0)
        for i in range(count)])


RECORD_LISTS = ["", "?collection=main", "?type=note", "?status=draft", "?ready=no", "?tombstone__exact=1",
                "?workspace__id__exact={ws}", "?created_at__year={year}", "?collection=main&type=call&ready=yes&p=2"]


@pytest.mark.parametrize("query", RECORD_LISTS)
def test_record_changelist_queries_do_not_grow_with_the_table(browser, catalog, query, django_assert_max_num_queries):
    bulk_records(catalog, 200)
    url = reverse("admin:catalog_app_record_changelist") + query.format(ws=catalog.pk, year=timezone.now().year)
    with django_assert_max_num_queries(14):
        response = browser.get(url)
    assert response.status_code == 200
    rows = response.context["cl"].result_list
    assert 0 < len(rows) <= 50
    assert [r.seq for r in rows] == sorted((r.seq for r in rows), reverse=True)


def test_record_changelist_filters_narrow(browser, catalog):
    bulk_records(catalog, 40)
    url = reverse("admin:catalog_app_record_changelist")
    drafts = browser.get(url + "?status=draft").context["cl"].result_list
    assert drafts and all(r.status == "draft" for r in drafts)
    unready = browser.get(url + "?ready=no").context["cl"].result_list
    assert unready and all(r.enriched_at is None for r in unready)
    calls = browser.get(url + "?type=call").context["cl"].result_list
    assert calls and all(r.type == "call" for r in calls)


def test_the_record_list_does_not_count_past_the_bound(catalog, monkeypatch):
    bulk_records(catalog, 120)
    monkeypatch.setattr(BoundedCountPaginator, "EXACT_LIMIT", 50)
    paginator = BoundedCountPaginator(Record.objects.order_by("-seq"), 50)
    assert paginator.count >= 51  # the planner's estimate, never below what was seen
    assert BoundedCountPaginator(Record.objects.filter(entity="e1").order_by("-seq"), 50).count == \
        Record.objects.filter(entity="e1").count()  # under the bound: exact


def test_record_list_is_only_sortable_by_seq(browser, catalog):
    bulk_records(catalog, 5)
    page = browser.get(reverse("admin:catalog_app_record_changelist")).content.decode()
    assert "sortable column-seq" in page
    assert "sortable column-entity" not in page


def test_unknown_record_id_in_admin_is_a_redirect_not_an_error(browser, catalog):
    response = browser.get(reverse("admin:catalog_app_record_change", args=[uuid.uuid4()]))
    assert response.status_code == 302
