"""A workspace's effective rate limits and quotas (catalog_app.limits) as tables: stored
overrides over the deployment's settings, every bad value refused naming it."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command

from catalog_app.limits import limits_settings_check, workspace_limits
from memseek_site.errors import SettingError

DEPLOYMENT = {"RATE_LIMIT_KEY_READ": "100/s", "RATE_LIMIT_KEY_SEARCH": "", "RATE_LIMIT_KEY_BULK": "5/10s",
              "RATE_LIMIT_WORKSPACE_READ": "", "RATE_LIMIT_WORKSPACE_SEARCH": "600/m",
              "RATE_LIMIT_WORKSPACE_BULK": "", "QUOTA_RECORDS": 1000, "QUOTA_BYTES": 0}


@pytest.fixture
def deployment(settings):
    settings.MEMSEEK = dict(DEPLOYMENT)


def test_the_defaults_limit_nothing():
    limits = workspace_limits({})
    assert {limits.rate(scope, name) for scope in ("key", "workspace") for name in ("read", "search", "bulk")} == {
        None}
    assert (limits.records, limits.bytes, limits.has_quota) == (0, 0, False)


VALID = [
    # (stored, (scope, route class) -> rate expected, records, bytes)
    ({}, {("key", "read"): "100/s", ("key", "search"): None, ("key", "bulk"): "5/10s",
          ("workspace", "search"): "600/m"}, 1000, 0),
    ({"limits.keyRate": {"read": "1/s"}}, {("key", "read"): "1/s", ("key", "bulk"): "5/10s"}, 1000, 0),
    ({"limits.keyRate": {"read": "", "bulk": " "}}, {("key", "read"): None, ("key", "bulk"): None}, 1000, 0),
    ({"limits.workspaceRate": {"search": "2/d", "read": "3/h"}},
     {("workspace", "search"): "2/d", ("workspace", "read"): "3/h", ("key", "read"): "100/s"}, 1000, 0),
    ({"limits.records": 0, "limits.bytes": 5_000}, {}, 0, 5_000),
    ({"limits.records": 7.0}, {}, 7, 0),
    ({"retrieval.tokenBudget": 9, "other.app": {"x": 1}}, {("key", "read"): "100/s"}, 1000, 0),
]


@pytest.mark.parametrize("stored, rates, records, stored_bytes", VALID)
def test_stored_overrides_merge_over_the_deployment(deployment, stored, rates, records, stored_bytes):
    limits = workspace_limits(stored)
    assert {key: limits.rate(*key) for key in rates} == rates
    assert (limits.records, limits.bytes) == (records, stored_bytes)


INVALID = [
    ({"limits.keyRate": "10/s"}, "limits.keyRate"),
    ({"limits.keyRate": {"reads": "10/s"}}, "limits.keyRate.reads"),
    ({"limits.keyRate": {"read": 10}}, "limits.keyRate.read"),
    ({"limits.workspaceRate": {"bulk": "10 per second"}}, "limits.workspaceRate.bulk"),
    ({"limits.workspaceRate": {"bulk": "0/s"}}, "limits.workspaceRate.bulk"),
    ({"limits.workspaceRate": {"bulk": "10/0s"}}, "limits.workspaceRate.bulk"),
    ({"limits.workspaceRate": {"bulk": "10/sx"}}, "limits.workspaceRate.bulk"),
    ({"limits.workspaceRate": {"bulk": "10/w"}}, "limits.workspaceRate.bulk"),
    ({"limits.workspaceRate": {"bulk": "\u0661/s"}}, "limits.workspaceRate.bulk"),  # an Arabic-Indic digit
    ({"limits.records": -1}, "limits.records"),
    ({"limits.records": None}, "limits.records"),
    ({"limits.bytes": "1000"}, "limits.bytes"),
    ({"limits.bytes": 2**63}, "limits.bytes"),
    ({"limits.bytes": False}, "limits.bytes"),
]


@pytest.mark.parametrize("stored, setting", INVALID)
def test_a_bad_override_is_refused_naming_it(deployment, stored, setting):
    with pytest.raises(SettingError) as caught:
        workspace_limits(stored)
    assert caught.value.code == "workspace_setting" and caught.value.status == 409
    assert caught.value.envelope()["setting"] == setting


@pytest.mark.parametrize("name, value", [("RATE_LIMIT_KEY_READ", "fast"), ("RATE_LIMIT_WORKSPACE_BULK", "0/s"),
                                         ("RATE_LIMIT_KEY_SEARCH", "10/s/s"), ("QUOTA_RECORDS", -5)])
def test_a_bad_deployment_value_stops_the_process_at_start(settings, name, value):
    settings.MEMSEEK = {name: value}
    with pytest.raises(ImproperlyConfigured, match=name):
        limits_settings_check()


def test_a_deployment_rate_may_carry_outer_whitespace(settings):
    settings.MEMSEEK = {"RATE_LIMIT_KEY_SEARCH": " 10/s\n"}  # as an environment file may write it
    limits_settings_check()
    assert workspace_limits({}).rate("key", "search") == "10/s"


def test_the_workspace_setting_command_sets_and_checks_limits(workspace):
    out = StringIO()
    call_command("workspace_setting", workspace.name, "limits.keyRate", '{"search": "10/s"}', stdout=out)
    assert json.loads(out.getvalue())["limits.keyRate"] == {"search": "10/s"}
    call_command("workspace_setting", workspace.name, "limits.records", "5000", stdout=StringIO())
    workspace.refresh_from_db()
    assert workspace_limits(workspace.settings).rate("key", "search") == "10/s"
    assert workspace_limits(workspace.settings).records == 5000
    with pytest.raises(CommandError, match="limits.bytes"):
        call_command("workspace_setting", workspace.name, "limits.bytes", "-1", stdout=StringIO())
    with pytest.raises(CommandError, match="unknown setting"):
        call_command("workspace_setting", workspace.name, "limits.rate", "1", stdout=StringIO())
    workspace.refresh_from_db()
    assert "limits.bytes" not in workspace.settings  # a refused value is not stored
