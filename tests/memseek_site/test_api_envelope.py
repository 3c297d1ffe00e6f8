"""Unknown routes, unserved methods and refused requests below the API answer the error
envelope; the admin and the console keep Django's HTML; API responses are never cached."""
import pytest
from rest_framework.test import APIClient


def envelope(response, status: int, code: str) -> None:
    assert response.status_code == status, response.content[:200]
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["error"] == code and response.json()["detail"]


@pytest.mark.parametrize(("method", "url"), [
    ("get", "/definitely-not-a-route"),
    ("post", "/records/"),
    ("get", "/search/extra"),
    ("delete", "/nope"),
    ("put", "/views/customer_context"),
    ("get", "/api/nothing-here"),
])
def test_an_unknown_route_is_404_not_found_in_the_envelope(api, method, url):
    response = getattr(api, method)(url)
    envelope(response, 404, "not_found")
    assert response["Cache-Control"] == "no-store"


def test_an_unknown_route_needs_no_key_to_be_404(db):
    envelope(APIClient().get("/definitely-not-a-route"), 404, "not_found")


@pytest.mark.parametrize(("method", "url"), [
    ("delete", "/search"),
    ("put", "/records"),
    ("get", "/records"),
    ("patch", "/retrieve"),
    ("post", "/timeline"),
    ("delete", "/health"),
])
def test_a_method_a_route_does_not_serve_is_405_method_not_allowed(api, method, url):
    response = getattr(api, method)(url)
    envelope(response, 405, "method_not_allowed")
    assert response["Cache-Control"] == "no-store"


def test_a_host_the_service_does_not_answer_for_is_400_bad_request(db):
    response = APIClient().get("/health", HTTP_HOST="evil.example")
    envelope(response, 400, "bad_request")


@pytest.mark.parametrize("url", ["/console/definitely-not-a-page", "/admin/login/definitely-not-a-page"])
def test_the_console_and_the_admin_keep_html_pages(admin_client, url):
    response = admin_client.get(url)
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")


def test_a_refused_host_on_the_admin_is_an_html_page(db):
    response = APIClient().get("/admin/", HTTP_HOST="evil.example")
    assert response.status_code == 400 and response["Content-Type"].startswith("text/html")


@pytest.mark.parametrize(("method", "url", "body", "status"), [
    ("get", "/health", None, 200),
    ("get", "/collections", None, 200),
    ("post", "/search", {"mode": "recent"}, 200),
    ("get", "/timeline", {"entity": "nobody"}, 200),
    ("post", "/records", {"records": []}, 422),
    ("get", "/records/not-a-uuid", None, 422),
])
def test_api_responses_carry_cache_control_no_store(api, catalog, method, url, body, status):
    response = getattr(api, method)(url, body, format="json") if method == "post" else api.get(url, body)
    assert response.status_code == status
    assert response["Cache-Control"] == "no-store"


def test_an_unauthenticated_answer_is_not_stored_either(db):
    response = APIClient().post("/search", {"mode": "recent"}, format="json")
    envelope(response, 401, "unauthorized")
    assert response["Cache-Control"] == "no-store"


MAX_URL = 9 * 8_192 + 8_192


@pytest.mark.parametrize("url", ["/timeline?entity=" + "a" * MAX_URL, "/" + "x" * MAX_URL,
                                 "/search?q=" + "%E2%82%AC" * (MAX_URL // 9)])
def test_a_url_longer_than_max_url_bytes_is_414_uri_too_long(api, url):
    response = api.get(url)
    envelope(response, 414, "uri_too_long")
    assert f"{MAX_URL} bytes" in response.json()["detail"]
    assert response["Cache-Control"] == "no-store"


def test_a_url_at_the_limit_reaches_its_route(api, catalog):
    url = "/timeline?entity="
    response = api.get(url + "a" * (MAX_URL - len(url)))
    # The route's own rule answers (an entity is at most 255 characters), not the URL limit.
    assert (response.status_code, response.json()["path"]) == (422, "entity")


def test_the_longest_query_fits_percent_encoded(api, catalog):
    from memseek_site.conf import DEFAULTS

    assert DEFAULTS["MAX_URL_BYTES"] == MAX_URL
    longest = "%E2%82%AC" * DEFAULTS["MAX_QUERY_CHARS"]
    response = api.get(f"/context?entity=user-1&budget=400&task={longest}x")
    assert response.json()["error"] == "query_too_long"  # the route's limit answers, not the URL's


def test_the_url_limit_is_a_setting(api, catalog, settings):
    settings.MEMSEEK = {"MAX_URL_BYTES": 40}
    assert api.get("/timeline?entity=" + "a" * 30).status_code == 414
    assert api.get("/timeline?entity=" + "a" * 20).status_code == 200


def test_an_over_long_console_url_is_an_html_414(admin_client):
    response = admin_client.get("/console/" + "x" * MAX_URL)
    assert response.status_code == 414 and response["Content-Type"].startswith("text/html")


def test_gunicorn_leaves_the_url_limit_to_the_api():
    from catalog_app.management.commands.quickstart import gunicorn_argv

    argv = gunicorn_argv("127.0.0.1:8123", 1)
    assert argv[argv.index("--limit-request-line") + 1] == "0"  # gunicorn's "no limit"


def test_every_keyed_api_operation_answers_no_store_even_when_refused(db):
    from tests.catalog_app.test_auth import url_of
    from tests.memseek_site.api_routes import keyed_api_operations

    client = APIClient()
    for method, route, _ in keyed_api_operations():
        response = getattr(client, method.lower())(url_of(route))
        assert response.status_code == 401 and response["Cache-Control"] == "no-store", (method, route)
