"""Fixtures of the console tests: staff and non-staff users and logged-in test clients that
enforce CSRF the way a browser session does."""
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client


@pytest.fixture
def staff_user(db):
    return User.objects.create_superuser("opal", email="opal@example.com", password="pw")


@pytest.fixture
def staff(staff_user):
    """A logged-in staff client; POSTs without the page's CSRF token are refused."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff_user)
    return client


@pytest.fixture
def plain_user(db):
    return User.objects.create_user("pat", password="pw")


@pytest.fixture
def plain(plain_user):
    """A logged-in client of a user who is not staff."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(plain_user)
    return client


def csrf_token(page) -> str:
    """The CSRF token in a rendered page's first form."""
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
