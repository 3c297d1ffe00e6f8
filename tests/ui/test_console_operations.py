"""The console's Operations page: staff only, GET only, read only; shows the routes and numbers
the API's own traffic produced (with this process's unwritten requests written first), the
queues and backlogs of ``/health``, and escapes every label."""
import re

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from catalog_app.operations.models import RequestMinute
from catalog_app.operations.request_minutes import BUFFER, RequestMinuteBuffer, request_minutes_write

URL = "/console/operations"


def test_anonymous_users_are_sent_to_the_login(db):
    response = Client().get(URL)
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_non_staff_users_are_sent_to_the_login(plain):
    response = plain.get(URL)
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


@pytest.fixture
def empty_table(db):
    """No request minutes, and none of earlier tests waiting in this process's buffer."""
    BUFFER.take_if_due(0)
    RequestMinute.objects.all().delete()


@override_settings(MEMSEEK={"OPERATIONS_FLUSH_S": 3600})
@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_only_get_is_served_and_nothing_is_written(staff, staff_user, empty_table, method):
    assert getattr(staff, method)(URL).status_code == 403  # without the CSRF token
    client = Client()  # with CSRF checks off, the method itself is refused
    client.force_login(staff_user)
    response = getattr(client, method)(URL)
    assert response.status_code == 405 and response["Allow"] == "GET"
    assert RequestMinute.objects.count() == 0


@override_settings(MEMSEEK={"OPERATIONS_FLUSH_S": 3600})
def test_the_page_shows_the_traffic_it_served_with_unwritten_requests_written_first(staff, api, catalog):
    for _ in range(3):
        assert api.get("/health").status_code == 200
    assert api.post("/search", {"q": "x" * 10, "mode": "nope"}, format="json").status_code == 422
    assert RequestMinute.objects.filter(route="/health").count() == 0  # still in this process's buffer
    response = staff.get(URL)
    assert response.status_code == 200
    assert "default-src 'self'" in response["Content-Security-Policy"]
    page = response.content.decode()
    health = re.search(r'<tr data-route="GET /health">.*?</tr>', page, re.S).group(0)
    assert re.search(r'class="num requests">3<', health)
    search = re.search(r'<tr data-route="POST /search">.*?</tr>', page, re.S).group(0)
    assert re.findall(r'<td class="num">(\d+)</td>', search) == ["1", "0"]  # one 4xx, no 5xx
    assert 'data-series="GET /health"' in page and 'id="chart-requests"' in page
    assert 'id="chart-lag"' in page and 'id="chart-records"' in page
    assert "Broker: <strong>eager</strong>" in page  # the test settings run tasks in the process
    assert re.search(r"Records waiting for enrichment</dt><dd>\d+</dd>", page)


@override_settings(MEMSEEK={"OPERATIONS_FLUSH_S": 3600})
def test_an_hour_with_no_requests_says_so(staff, empty_table):
    page = staff.get(URL).content.decode()  # the page's own request is counted after it answers
    assert "No requests in the last hour." in page and "data-route=" not in page


def test_hostile_route_labels_are_escaped(staff):
    buffer = RequestMinuteBuffer()
    buffer.add(at=timezone.now(), route='/x"><script>alert(1)</script>', method="GET", status=200, seconds=0.01)
    request_minutes_write(buffer.take_if_due(0))
    page = staff.get(URL).content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
