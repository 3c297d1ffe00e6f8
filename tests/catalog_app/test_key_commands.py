"""``manage.py create_workspace``, ``create_key`` and ``revoke_key``: keys minted with chosen
capabilities, revoked by id or hash prefix, refusals as command errors that change nothing."""
import io

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings
from rest_framework.test import APIClient

from catalog_app.models import ApiKey, Workspace


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def key_in(output: str) -> str:
    return output.strip().splitlines()[-1]


def client(key: str) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def test_create_workspace_with_chosen_capabilities(db):
    key = key_in(run("create_workspace", "shop", "--capabilities", "read"))
    assert ApiKey.objects.get(workspace__name="shop").capabilities == ["read"]
    assert client(key).get("/collections").status_code == 200
    assert client(key).post("/records", {"records": []}, format="json").status_code == 403


def test_create_key_prints_its_id_hash_and_capabilities_once(workspace):
    output = run("create_key", workspace.name, "--capabilities", "review,read", "--label", "reviewer bot")
    stored = ApiKey.objects.get(label="reviewer bot")
    assert stored.capabilities == ["read", "review"]
    assert f"Key {stored.pk} (hash {stored.key_hash[:12]}, capabilities read, review)" in output
    assert client(key_in(output)).get("/views").status_code == 200


@pytest.mark.parametrize(("args", "message"), [
    (("create_key", "nowhere"), "no workspace"),
    (("create_key", "acme", "--capabilities", "read,delete"), "subset of read, write, review"),
    (("create_key", "acme", "--capabilities", ","), "non-empty"),
    (("create_workspace", "fresh", "--capabilities", "admin"), "subset"),
])
def test_bad_key_requests_are_command_errors_that_change_nothing(workspace, args, message):
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert ApiKey.objects.count() == 1 and not Workspace.objects.filter(name="fresh").exists()


@override_settings(MEMSEEK={"API_KEY_CACHE_TTL_S": 0})
@pytest.mark.parametrize("by", ["id", "prefix"])
def test_revoke_key_by_id_or_hash_prefix(workspace, by):
    key = key_in(run("create_key", workspace.name))
    stored = ApiKey.objects.latest("pk")
    assert client(key).get("/collections").status_code == 200
    ref = str(stored.pk) if by == "id" else stored.key_hash[:12].upper()
    assert "revoked" in run("revoke_key", ref)
    stored.refresh_from_db()
    assert stored.revoked_at is not None
    assert client(key).get("/collections").status_code == 401
    assert ApiKey.objects.filter(revoked_at__isnull=True).count() == 1  # the workspace's first key
    assert "already revoked" in run("revoke_key", ref)


@pytest.mark.parametrize(("ref", "message"), [("999999", "no key"), ("abc", "at least 8 hex"),
                                              ("zzzzzzzzzz", "at least 8 hex"), ("ffffffffffff", "no key")])
def test_revoke_key_refuses_what_names_no_single_key(workspace, ref, message):
    with pytest.raises(CommandError, match=message):
        run("revoke_key", ref)
    assert not ApiKey.objects.filter(revoked_at__isnull=False).exists()


def test_revoke_key_refuses_an_ambiguous_prefix(workspace):
    first = ApiKey.objects.get()
    twin = ApiKey.objects.create(workspace=workspace, key_hash=first.key_hash[:10] + "0" * 54)
    with pytest.raises(CommandError, match="more than one key"):
        run("revoke_key", first.key_hash[:10])
    assert not ApiKey.objects.filter(pk__in=[first.pk, twin.pk], revoked_at__isnull=False).exists()
