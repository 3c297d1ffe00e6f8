"""The console answers with a strict Content-Security-Policy and its pages need nothing it
forbids: no inline script, style or handler, every asset from the service itself."""
import re

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

from memseek_site.console_policy import CONSOLE_POLICY
from tests.catalog_app.factories import record_make


def test_console_pages_carry_the_policy_and_the_api_does_not(admin_client, catalog, api):
    record = record_make(catalog)
    urls = [reverse("console:index"), reverse("console:drafts", args=[catalog.name]),
            reverse("console:records", args=[catalog.name]),
            reverse("console:record", args=[catalog.name, record.id]),
            reverse("console:definitions", args=[catalog.name]), reverse("console:playground", args=[catalog.name]),
            reverse("console:keys", args=[catalog.name]), "/console/no-such-page"]
    for url in urls:
        response = admin_client.get(url)
        assert response["Content-Security-Policy"] == CONSOLE_POLICY, url
        if response.status_code == 200:
            html = response.content.decode()
            assert not re.search(r"<style|\sstyle=|\son[a-z]+=|<script(?![^>]*\ssrc=)", html), url
            for asset in re.findall(r'(?:href|src)="(/static/[^"]+)"', html):
                assert finders.find(asset.removeprefix("/static/")), asset
    assert "Content-Security-Policy" not in api.get("/collections")
    assert "Content-Security-Policy" not in admin_client.get("/admin/")


@pytest.mark.parametrize("directive", ["default-src 'self'", "object-src 'none'", "frame-ancestors 'none'",
                                       "form-action 'self'", "base-uri 'none'"])
def test_the_policy_is_strict(directive):
    assert directive in CONSOLE_POLICY
    assert "unsafe-inline" not in CONSOLE_POLICY and "unsafe-eval" not in CONSOLE_POLICY
