"""The live server and workspaces of the Python SDK's tests (tests/memseek_client/conftest.py), for the other
clients' tests here: one gunicorn on the test database for the session, two workspaces per module."""
from tests.memseek_client.conftest import live, live_server_url  # noqa: F401 (fixtures used by name)
