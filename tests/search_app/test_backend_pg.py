"""The ``pg`` backend passes the candidate-backend contract."""
import pytest

from search_app.backends import backend_for, pg
from tests.search_app.backend_contract import BackendContract

pytestmark = pytest.mark.model


class TestPgBackend(BackendContract):
    backend = pg


def test_the_pg_profile_backend_is_the_pg_module():
    assert backend_for("pg") is pg
    with pytest.raises(KeyError):
        backend_for("elastic")
