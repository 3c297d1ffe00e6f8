"""Small validation helpers shared by the family validators. Each raises ``CatalogError``
naming the dotted path of the offending value."""
from __future__ import annotations

import re

from .errors import CatalogError

PUBLIC_NAME = re.compile(r"^[a-z][a-z0-9._-]{0,63}$")
PROCESSOR_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
FIELD_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
SPACE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")


def at(path: str, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def mapping(value, path: str, *, allowed=None, required=(), code: str = "schema") -> dict:
    """``value`` as a mapping whose keys are all in ``allowed`` (``None``: any key) and that has
    every ``required`` key; the first problem, in a stable order, is raised."""
    if not isinstance(value, dict):
        raise CatalogError(path, code, "must be a mapping")
    for key in value:
        if allowed is not None and key not in allowed:
            raise CatalogError(at(path, key), code, f"unknown key {key!r}; allowed: {', '.join(sorted(allowed))}")
    for key in sorted(required):
        if key not in value:
            raise CatalogError(at(path, key), code, "is required")
    return value


def name(value, path: str, pattern: re.Pattern = PUBLIC_NAME) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise CatalogError(path, "schema", f"{value!r} must match {pattern.pattern}")
    return value


def integer(value, path: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise CatalogError(path, "schema", f"must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise CatalogError(path, "schema", f"must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise CatalogError(path, "schema", f"must be at most {maximum}")
    return value


def number(value, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise CatalogError(path, "schema", f"must be a number, got {value!r}")
    return value


def boolean(value, path: str) -> bool:
    if not isinstance(value, bool):
        raise CatalogError(path, "schema", f"must be true or false, got {value!r}")
    return value


def string(value, path: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise CatalogError(path, "schema", "must be a non-blank string")
    return value


def name_list(value, path: str, pattern: re.Pattern = PUBLIC_NAME) -> list[str]:
    if not isinstance(value, list):
        raise CatalogError(path, "schema", "must be a list")
    for index, item in enumerate(value):
        name(item, at(path, index), pattern)
    if len(set(value)) != len(value):
        raise CatalogError(path, "schema", "must not repeat a name")
    return list(value)
