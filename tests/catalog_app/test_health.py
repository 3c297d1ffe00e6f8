from rest_framework.test import APIClient


def test_health_needs_no_key_and_reports_the_database(db):
    response = APIClient().get("/health")
    assert response.status_code == 200
    assert response.json() == {"ok": True, "db": True}
