from django.test import override_settings
from rest_framework.test import APIClient

from tests.catalog_app.factories import pending_record


def test_health_needs_no_key_and_reports_the_database(db):
    response = APIClient().get("/health")
    assert response.status_code == 200
    body = response.json()
    assert (body["ok"], body["db"], body["status"], body["degraded"]) == (True, True, "ok", [])


def test_health_says_when_tasks_run_eagerly_without_a_broker(db):
    assert APIClient().get("/health").json()["queues"] == {"broker": "eager"}


def test_health_turns_degraded_past_the_pending_thresholds_and_names_no_workspace(catalog, settings):
    for n in range(3):
        pending_record(catalog, collection="main", text=f"unready {n}", age_s=120)
    settings.MEMSEEK = {"HEALTH_PENDING_MAX_RECORDS": 2, "HEALTH_PENDING_MAX_AGE_S": 60}
    response = APIClient().get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "degraded"
    assert body["backlog"]["pending_records"] == 3
    assert body["backlog"]["oldest_pending_age_s"] >= 120
    assert {entry["check"] for entry in body["degraded"]} == {"backlog.pending_records",
                                                             "backlog.oldest_pending_age_s"}
    assert catalog.name not in response.content.decode()


def test_health_reports_an_unreachable_broker_as_degraded_not_as_an_error(db):
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False, CELERY_BROKER_URL="redis://127.0.0.1:1/0"):
        response = APIClient().get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["queues"] == {"broker": "unreachable"}
    assert [entry["check"] for entry in body["degraded"]] == ["queues.broker"]


def test_a_task_that_fails_for_good_is_dead_lettered_and_shown_in_the_admin(db, admin_client):
    from catalog_app.models import DeadLetter
    from catalog_app.tasks import recover_pending_records

    recover_pending_records.apply(kwargs={"created_after": "not a time"})
    letter = DeadLetter.objects.get()
    assert (letter.task_name, letter.kwargs, letter.tries) == (
        "catalog_app.tasks.recover_pending_records", {"created_after": "not a time"}, 1)
    assert letter.error.startswith("ValueError")
    page = admin_client.get("/admin/catalog_app/deadletter/")
    assert page.status_code == 200 and "catalog_app.tasks.recover_pending_records" in page.content.decode()
