"""Request observers (``memseek_site.metrics.request_observer``): told of every answered request
by the metrics middleware with its route pattern, method, status and seconds; one that raises
is logged and neither the request nor the other observers are affected."""
import pytest
from django.test import Client

from memseek_site import metrics


@pytest.fixture
def observers():
    seen = []

    def broken(route, method, status, seconds):
        raise RuntimeError("observer broke")

    def recording(route, method, status, seconds):
        seen.append((route, method, status, seconds))

    metrics.request_observer(broken)
    metrics.request_observer(recording)
    metrics.request_observer(recording)  # registering twice still calls it once
    yield seen
    metrics._REQUEST_OBSERVERS.remove(broken)
    metrics._REQUEST_OBSERVERS.remove(recording)


def test_every_observer_is_told_and_a_broken_one_fails_nothing(db, observers, caplog):
    client = Client()
    assert client.get("/health").status_code == 200
    assert client.generic("BREW", "/health").status_code == 405
    assert client.get("/no/such/page").status_code == 404
    assert [(route, method, status) for route, method, status, _ in observers] == [
        ("/health", "GET", 200), ("/health", "other", 405), ("unmatched", "GET", 404)]
    assert all(seconds > 0 for *_, seconds in observers)
    assert caplog.text.count("broken failed") == 3
