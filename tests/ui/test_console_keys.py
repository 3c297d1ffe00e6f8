"""The console's keys screen: staff only, lists a workspace's keys, revokes one per CSRF-checked
POST through ``api_key_revoke``; another workspace's key is a 404."""
from django.test import Client, override_settings
from django.urls import reverse
from rest_framework.test import APIClient

from catalog_app.models import ApiKey
from catalog_app.services.workspaces import api_key_create, workspace_create

from .conftest import csrf_token


def keys_url(workspace) -> str:
    return reverse("console:keys", args=[workspace.name])


def revoke_url(workspace, key: ApiKey) -> str:
    return reverse("console:key-revoke", args=[workspace.name, key.pk])


def test_keys_page_lists_keys_with_capabilities_and_hash_prefix(staff, workspace):
    api_key_create(workspace=workspace, label="reader", capabilities=["read"])
    page = staff.get(keys_url(workspace)).content.decode()
    for key in ApiKey.objects.filter(workspace=workspace):
        assert key.key_hash[:12] in page and key.key_hash not in page
        assert revoke_url(workspace, key) in page
    assert "reader" in page and ">read<" in page and ">review<" in page


@override_settings(MEMSEEK={"API_KEY_CACHE_TTL_S": 0})
def test_revoke_from_the_console_makes_the_key_401(staff, workspace):
    raw = api_key_create(workspace=workspace, label="doomed")
    key = ApiKey.objects.get(label="doomed")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert api.get("/views").status_code == 200
    token = csrf_token(staff.get(keys_url(workspace)))
    response = staff.post(revoke_url(workspace, key), {"csrfmiddlewaretoken": token}, follow=True)
    assert response.redirect_chain[-1][0] == keys_url(workspace)
    assert "revoked" in response.content.decode()
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert api.get("/views").status_code == 401
    assert ApiKey.objects.filter(workspace=workspace, revoked_at__isnull=True).count() == 1
    assert 'class="badge bad">revoked' in staff.get(keys_url(workspace)).content.decode()


def test_revoke_needs_the_csrf_token(staff, workspace):
    key = ApiKey.objects.get(workspace=workspace)
    assert staff.post(revoke_url(workspace, key)).status_code == 403
    key.refresh_from_db()
    assert key.revoked_at is None


def test_revoke_is_staff_only(plain_user, workspace):
    key = ApiKey.objects.get(workspace=workspace)
    lax = Client()
    lax.force_login(plain_user)
    responses = (lax.get(keys_url(workspace)), lax.post(revoke_url(workspace, key)), Client().get(keys_url(workspace)))
    for response in responses:
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    key.refresh_from_db()
    assert key.revoked_at is None


def test_another_workspaces_key_is_404_and_stays_valid(staff_user, workspace):
    other, _ = workspace_create(name="other-co")
    theirs = ApiKey.objects.get(workspace=other)
    lax = Client()
    lax.force_login(staff_user)
    assert lax.post(revoke_url(workspace, theirs)).status_code == 404
    assert lax.get(reverse("console:keys", args=["no-such-workspace"])).status_code == 404
    theirs.refresh_from_db()
    assert theirs.revoked_at is None
    assert theirs.key_hash[:12] not in lax.get(keys_url(workspace)).content.decode()
