"""The admin's "View site" link lands on the operator console, not on the API root (a JSON 404)."""
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client


@pytest.fixture
def staff_browser(db):
    client = Client()
    client.force_login(User.objects.create_user("vera", password="pw", is_staff=True))
    return client


def test_view_site_links_to_the_console_and_the_console_answers(staff_browser):
    index = staff_browser.get("/admin/")
    assert index.status_code == 200
    [target] = re.findall(r'<a href="([^"]+)">View site</a>', index.content.decode())
    assert target == "/console/"
    landing = staff_browser.get(target)
    assert landing.status_code == 200 and landing["Content-Type"].startswith("text/html")


def test_the_api_root_the_link_used_to_reach_is_still_the_json_404(staff_browser):
    answer = staff_browser.get("/")
    assert answer.status_code == 404 and answer.json()["error"] == "not_found"
