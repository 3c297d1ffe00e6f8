"""A workspace's effective rate limits and storage quotas: its stored overrides over the
deployment's settings.

Rates are ``COUNT/PERIOD`` strings in django-ratelimit's grammar (``10/s``, ``600/m``,
``5/10s``: at most COUNT requests in each window of PERIOD), one per route class
(``memseek_site.deadline.route_class``) for each API key and for the whole workspace; an empty
string is no limit. Quotas are integers, 0 for none.

``Workspace.settings`` may hold, by dotted name:

* ``limits.keyRate`` and ``limits.workspaceRate``: objects of route class to rate, merged
  member by member over ``RATE_LIMIT_KEY_*`` and ``RATE_LIMIT_WORKSPACE_*``;
* ``limits.records`` and ``limits.bytes``: over ``QUOTA_RECORDS`` and ``QUOTA_BYTES``.

A bad stored value fails the request with ``409 workspace_setting`` naming it; a bad deployment
value stops the process at start (``limits_settings_check``). Never a silent fallback.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType

from django.core.exceptions import ImproperlyConfigured

from memseek_site.conf import memseek_setting
from memseek_site.deadline import CLASS_SETTINGS
from memseek_site.errors import SettingError
from memseek_site.parsing import parse_int, parse_object, parse_string

ROUTE_CLASSES = tuple(CLASS_SETTINGS)  # read, search, bulk
SCOPES = ("key", "workspace")
_RATE_SETTING = {scope: {name: f"RATE_LIMIT_{scope.upper()}_{name.upper()}" for name in ROUTE_CLASSES}
                 for scope in SCOPES}
_RATE_OVERRIDE = {"key": "limits.keyRate", "workspace": "limits.workspaceRate"}
_QUOTA_SETTING = {"records": "QUOTA_RECORDS", "bytes": "QUOTA_BYTES"}
_QUOTA_OVERRIDE = {"records": "limits.records", "bytes": "limits.bytes"}
# The workspace settings this module reads (``manage.py workspace_setting`` accepts them).
SETTING_NAMES = (*_RATE_OVERRIDE.values(), *_QUOTA_OVERRIDE.values())
# django-ratelimit's rate grammar, whole (its own reader matches a prefix only): a count of at
# least one, then a period of an optional multiplier and a unit.
RATE_PATTERN = re.compile(r"[1-9][0-9]{0,9}/([1-9][0-9]{0,6})?[smhd]")
_MAX_QUOTA = 2**62


@dataclass(frozen=True, slots=True)
class WorkspaceLimits:
    """``rates[scope][route_class]`` is a rate string or ``None``; a quota of 0 is none."""

    rates: MappingProxyType
    records: int
    bytes: int

    def rate(self, scope: str, route_class: str) -> str | None:
        return self.rates[scope][route_class]

    @property
    def has_quota(self) -> bool:
        return bool(self.records or self.bytes)


def deployment_rate(scope: str, route_class: str) -> str | None:
    """The rate setting of ``scope`` and ``route_class``; raises ``ImproperlyConfigured`` when
    it is not a rate."""
    name = _RATE_SETTING[scope][route_class]
    value = str(memseek_setting(name)).strip()
    if value and not RATE_PATTERN.fullmatch(value):
        raise ImproperlyConfigured(f"{name} must be a rate such as 10/s, 600/m or 5/10s (or empty for none), "
                                   f"not {value!r}")
    return value or None


def limits_settings_check() -> None:
    """Read every rate and quota setting, so a bad one stops the process at start."""
    for scope in SCOPES:
        for name in ROUTE_CLASSES:
            deployment_rate(scope, name)
    for name in _QUOTA_SETTING.values():
        if not isinstance(memseek_setting(name), int) or memseek_setting(name) < 0:
            raise ImproperlyConfigured(f"{name} must be a whole number of at least 0 (0: no quota)")


def workspace_limits(stored) -> WorkspaceLimits:
    """The effective limits of a workspace whose ``settings`` are ``stored``; raises
    ``SettingError`` (``workspace_setting``) for a bad override."""
    stored = stored if isinstance(stored, dict) else {}
    rates = {}
    for scope in SCOPES:
        name = _RATE_OVERRIDE[scope]
        override = parse_object(stored.get(name, {}), name, allowed=ROUTE_CLASSES, error=SettingError)
        rates[scope] = MappingProxyType({
            route_class: (_stored_rate(override[route_class], f"{name}.{route_class}") if route_class in override
                          else deployment_rate(scope, route_class))
            for route_class in ROUTE_CLASSES})
    quotas = {}
    for quota, setting in _QUOTA_SETTING.items():
        name = _QUOTA_OVERRIDE[quota]
        quotas[quota] = (_quota(stored[name], name) if name in stored else int(memseek_setting(setting)))
    return WorkspaceLimits(MappingProxyType(rates), quotas["records"], quotas["bytes"])


def _stored_rate(value, name: str) -> str | None:
    text = parse_string(value, name, allow_blank=True, error=SettingError).strip()
    if text and not RATE_PATTERN.fullmatch(text):
        raise SettingError("workspace_setting", f"{text!r} is not a rate such as 10/s, 600/m or 5/10s "
                                                "(an empty string is no limit)", name)
    return text or None


_quota = partial(parse_int, minimum=0, maximum=_MAX_QUOTA, error=SettingError)
