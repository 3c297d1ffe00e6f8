"""Browser tests of the console under its Content-Security-Policy: Chromium reports no blocked
resource on any screen, the stylesheet and the script load from the service and work, and a key
is revoked from the Keys screen."""
from __future__ import annotations

import pytest

from catalog_app.models import ApiKey
from tests.ui.test_browser import CHROMIUM, acme, chromium, page  # noqa: F401  (fixtures)

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(not __import__("os").path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM}"),
]


def test_no_screen_breaks_the_policy_and_the_styles_apply(page, acme):
    violations = []
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text else None)
    for screen in ("", "operations", "acme/drafts", "acme/records", "acme/definitions", "acme/playground",
                   "acme/keys"):
        response = page.goto(f"/console/{screen}")
        assert "default-src 'self'" in response.headers["content-security-policy"]
        assert page.evaluate("getComputedStyle(document.querySelector('header.top')).backgroundColor") \
            == "rgb(23, 32, 46)", screen
    assert not violations


def test_the_playground_view_picker_submits_on_change(page, acme):
    page.goto("/console/acme/playground")
    options = page.locator("#view-select option").all_inner_texts()
    assert len(options) >= 2
    other = page.locator("#view-select option").nth(1).get_attribute("value")
    page.select_option("#view-select", other)
    page.wait_for_url(f"**/console/acme/playground?view={other}")
    assert page.locator("#view-select").input_value() == other


def test_revoke_a_key_from_the_keys_screen(page, acme):
    key = ApiKey.objects.get(workspace=acme)
    page.goto("/console/acme/keys")
    page.locator(f'tr[data-key="{key.pk}"]').get_by_role("button", name="Revoke").click()
    page.wait_for_load_state()
    assert "revoked" in page.locator(".messages").inner_text()
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert page.locator(f'tr[data-key="{key.pk}"] button').count() == 0
