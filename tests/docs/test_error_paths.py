"""What docs/api/overview.md says of the error envelope's ``path``: present when the error is
about one value of the request, absent on the errors about the request as a whole."""
import pytest
from django.test import Client
from rest_framework.test import APIClient

from memseek_site.conf import memseek_setting


def _without_path(response, status: int, code: str) -> None:
    assert response.status_code == status, response.content[:300]
    body = response.json()
    assert body["error"] == code and body["detail"] and "path" not in body, body


def test_errors_about_the_request_as_a_whole_carry_no_path(api, workspace_and_key, settings):
    _without_path(APIClient().get("/timeline?entity=x"), 401, "unauthorized")
    _without_path(api.get("/definitely-not-a-route"), 404, "not_found")
    _without_path(api.delete("/search"), 405, "method_not_allowed")
    _without_path(api.get("/search?q=" + "a" * (memseek_setting("MAX_URL_BYTES") + 1)), 414, "uri_too_long")
    _without_path(api.post("/records", data="records=1", content_type="text/plain"), 415, "unsupported_media_type")
    _without_path(Client(HTTP_HOST="elsewhere.example").get("/health"), 400, "bad_request")
    _without_path(api.post("/records", {"records": [{"entity": "e", "type": "event", "text": "x"}]}, format="json"),
                  409, "no_catalog")
    _without_path(api.post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, format="json",
                           HTTP_ORIGIN="http://elsewhere.example"), 403, "origin_not_allowed")
    settings.MEMSEEK = {"MAX_BODY_BYTES": 64}
    _without_path(api.post("/records", {"records": [{"entity": "e" * 80}]}, format="json"), 413, "body_too_large")


def test_a_key_without_the_capability_is_403_without_path(workspace):
    from catalog_app.services.workspaces import api_key_create
    reader = APIClient()
    reader.credentials(
        HTTP_AUTHORIZATION=f"Bearer {api_key_create(workspace=workspace, label='', capabilities={'read'})}")
    _without_path(reader.post("/records", {"records": []}, format="json"), 403, "capability_missing")


@pytest.mark.parametrize(("method", "url", "body", "status", "code", "path"), [
    ("post", "/records", {"records": [{"entity": "", "type": "event", "text": "x"}]},
     422, "entity", "records[0].entity"),
    ("post", "/records", {"records": [], "extra": 1}, 422, "request_schema", "extra"),
    ("get", "/records/not-a-uuid", None, 422, "invalid_id", "id"),
    ("get", "/records/00000000-0000-4000-8000-000000000000", None, 404, "record_not_found", "id"),
])
def test_errors_about_one_value_name_its_path(api, catalog, method, url, body, status, code, path):
    response = getattr(api, method)(url, body, format="json") if body is not None else getattr(api, method)(url)
    assert response.status_code == status, response.content[:300]
    assert (response.json()["error"], response.json()["path"]) == (code, path)
