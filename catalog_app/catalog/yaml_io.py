"""Strict YAML reading: duplicate mapping keys are errors, not silently last-wins.

A catalog is JSON in YAML clothing (it is hashed as canonical JSON and stored in JSON
columns), so the loader only builds JSON values: mapping keys must be strings, unquoted dates
stay strings, and non-finite numbers, sets and binary scalars are errors.
"""
from __future__ import annotations

import math

import yaml

from .errors import CatalogError


class _StrictLoader(yaml.SafeLoader):
    pass


# The same constructors over libyaml's parser, which reads a catalog several times faster than the
# pure-Python one. A document it refuses is read again by ``_StrictLoader``, so every error a
# catalog author sees is worded as before.
_FastStrictLoader = type("_FastStrictLoader", (yaml.CSafeLoader,), {}) if yaml.__with_libyaml__ else None


def _where(node) -> str:
    mark = node.start_mark
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _construct_mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # keys brought in by ``<<`` may be overridden by explicit keys
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, str):
            shown = repr(key) if isinstance(key_node, yaml.ScalarNode) else "a collection"
            raise CatalogError("yaml", f"mapping key {shown} at {_where(key_node)} must be a string; quote it", "")
        if key in seen:
            raise CatalogError("yaml", f"duplicate key {key!r} at {_where(key_node)}", "")
        seen.add(key)
    loader.flatten_mapping(node)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


def _construct_float(loader, node):
    value = loader.construct_yaml_float(node)
    if not math.isfinite(value):
        raise CatalogError("yaml", f"{node.value} at {_where(node)} is not a finite number", "")
    return value


def _construct_not_json(loader, node):
    raise CatalogError("yaml", f"{node.tag} at {_where(node)} has no JSON equivalent", "")


for _loader in (_StrictLoader, _FastStrictLoader):
    if _loader is None:
        continue
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    _loader.add_constructor("tag:yaml.org,2002:float", _construct_float)
    # An unquoted 2026-01-01 is the string a JSON Schema ``format: date`` expects, not a date object.
    _loader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_scalar)
    for _tag in ("tag:yaml.org,2002:set", "tag:yaml.org,2002:binary", "tag:yaml.org,2002:omap",
                 "tag:yaml.org,2002:pairs"):
        _loader.add_constructor(_tag, _construct_not_json)


def parse_yaml(text: str):
    """Parse one YAML document into JSON values; raises ``CatalogError`` (code ``yaml``) on any problem."""
    if _FastStrictLoader is not None:
        try:
            return yaml.load(text, Loader=_FastStrictLoader)  # noqa: S506 - a CSafeLoader subclass
        except (CatalogError, yaml.YAMLError):
            pass  # worded by the pure-Python reader below
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except CatalogError:
        raise
    except yaml.YAMLError as error:
        raise CatalogError("yaml", str(error).replace("\n", " "), "") from None
