"""The OpenAPI description is generated, valid, public, and browsable offline."""
import pytest
from django.core.management import call_command
from rest_framework.test import APIClient


def test_schema_generates_without_warnings_or_errors(db, tmp_path):
    # --fail-on-warn turns every drf-spectacular warning (an undocumented route, a colliding
    # component name) into a failure.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    text = (tmp_path / "schema.yaml").read_text()
    for route in ("/records:", "/search:", "/views/{name}/query:", "/rank/schema:", "/context:"):
        assert route in text


@pytest.mark.parametrize("url", ["/api/schema/", "/api/docs/"])
def test_schema_and_docs_need_no_key(db, url):
    assert APIClient().get(url).status_code == 200


def test_swagger_ui_is_served_from_the_sidecar_without_network(db):
    page = APIClient().get("/api/docs/").content.decode()
    bundle = "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js"
    assert bundle in page
    response = APIClient().get(bundle)
    assert response.status_code == 200
    assert b"SwaggerUIBundle" in b"".join(response.streaming_content)
