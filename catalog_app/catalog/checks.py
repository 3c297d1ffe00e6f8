"""The strict readers bound for catalog files: each raises ``CatalogError`` (code ``schema``
unless the caller names one) at the dotted path of the offending value."""
from __future__ import annotations

import re
from functools import partial

from memseek_site.parsing import PUBLIC_NAME, at, parse_bool, parse_int, parse_names, parse_number, parse_object, \
    parse_string

from .errors import CatalogError

__all__ = ("PUBLIC_NAME", "PROCESSOR_NAME", "FIELD_NAME", "SPACE_NAME", "ENV_NAME", "at", "mapping", "name",
           "integer", "number", "boolean", "string", "name_list")

PROCESSOR_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
FIELD_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
SPACE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")

integer = partial(parse_int, error=CatalogError)
boolean = partial(parse_bool, error=CatalogError)
string = partial(parse_string, error=CatalogError)


def mapping(value, path: str, *, allowed=None, required=(), code: str | None = None) -> dict:
    """``value`` as a mapping whose keys are all in ``allowed`` (``None``: any key) and that has
    every ``required`` key; required keys are checked in sorted order, so the first problem
    reported does not depend on how a validator spells the set."""
    return parse_object(value, path, allowed=allowed, required=sorted(required), code=code, error=CatalogError)


def name(value, path: str, pattern: re.Pattern = PUBLIC_NAME) -> str:
    return parse_string(value, path, pattern=pattern, error=CatalogError)


def number(value, path: str) -> int | float:
    """A finite number, returned as written (an integer stays one, so content hashes keep it)."""
    parse_number(value, path, error=CatalogError)
    return value


def name_list(value, path: str, pattern: re.Pattern = PUBLIC_NAME) -> list[str]:
    return list(parse_names(value, path, pattern=pattern, error=CatalogError))
