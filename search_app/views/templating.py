"""``{{placeholder}}`` templates: find, check and fill them, and make the load-time sample.

A template is nested JSON-like data (mappings, lists, scalars). Placeholders live only in
string values, never in mapping keys. The filling rules, in full:

* A string that is exactly one placeholder (``"{{k}}"``, spaces allowed inside the braces) is
  replaced by the typed value itself: an integer fills a number, a ``string_array`` fills a
  list, a datetime fills its string as the caller gave it.
* A list item that is exactly a placeholder whose value is a list is not spliced: it becomes
  one nested-list item (``["{{channels}}"]`` → ``[["email"]]``); write ``"{{channels}}"``
  without the brackets to fill the whole list.
* A placeholder embedded in a longer string is replaced by its text form: strings and
  datetimes as given, integers and numbers in their shortest decimal form, booleans as
  ``true``/``false``, lists as their items joined by ``", "``.
* An omitted parameter (optional, no default, not supplied): a string that is exactly its
  placeholder is removed, together with its key in a mapping or its slot in a list; the
  removal does not cascade (an emptied mapping or list stays, and the strict request parse
  judges it). Embedded in a longer string, an omitted placeholder becomes ``""``.
"""
from __future__ import annotations

import re

from catalog_app.catalog.checks import at
from catalog_app.catalog.errors import CatalogError

from .parameters import Parameter

PLACEHOLDER = re.compile(r"\{\{\s*([^{}\s]+)\s*\}\}")
SAMPLE_DATETIME = "2026-01-01T00:00:00Z"
CODE = "template_reference"
_OMITTED = object()


def _strings(template, path: str):
    """Yield ``(dotted path, string)`` for every string value in ``template``, in order."""
    if isinstance(template, dict):
        for key, value in template.items():
            yield from _strings(value, at(path, key))
    elif isinstance(template, list):
        for index, item in enumerate(template):
            yield from _strings(item, at(path, index))
    elif isinstance(template, str):
        yield path, template


def placeholders(template) -> set[str]:
    """Every name used as ``{{name}}`` in any string value of ``template``."""
    return {name for _, text in _strings(template, "") for name in PLACEHOLDER.findall(text)}


def check_placeholders(template, parameters: tuple[Parameter, ...], path: str) -> None:
    """Raise ``CatalogError(<path of the string>, "template_reference", ...)`` for the first
    placeholder naming no declared parameter, the first malformed one (a ``{{`` or ``}}`` left
    after removing well-formed placeholders, e.g. ``{{entity}`` or ``{{two words}}``), and any
    mapping key that contains braces."""
    declared = {param.name for param in parameters}
    _check_keys(template, path)
    for where, text in _strings(template, path):
        for name in PLACEHOLDER.findall(text):
            if name not in declared:
                known = ", ".join(sorted(declared)) or "none"
                raise CatalogError(CODE, f"{{{{{name}}}}} names no declared parameter; declared: {known}", where)
        rest = PLACEHOLDER.sub("", text)
        if "{{" in rest or "}}" in rest:
            raise CatalogError(CODE, f"malformed placeholder in {text!r}; write {{{{name}}}}", where)


def _check_keys(template, path: str) -> None:
    if isinstance(template, dict):
        for key, value in template.items():
            if isinstance(key, str) and ("{{" in key or "}}" in key):
                raise CatalogError(CODE, "placeholders may appear only in values, not in keys", at(path, key))
            _check_keys(value, at(path, key))
    elif isinstance(template, list):
        for index, item in enumerate(template):
            _check_keys(item, at(path, index))


def fill_template(template, values: dict) -> object:
    """Return a filled copy of ``template`` (never mutated) using bound ``values``; a name not
    in ``values`` counts as omitted (see the module rules). A template that is itself exactly
    an omitted placeholder fills to ``None``."""
    filled = _fill(template, values)
    return None if filled is _OMITTED else filled


def _fill(node, values: dict):
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            filled = _fill(value, values)
            if filled is not _OMITTED:
                out[key] = filled
        return out
    if isinstance(node, list):
        return [filled for filled in (_fill(item, values) for item in node) if filled is not _OMITTED]
    if isinstance(node, str):
        whole = PLACEHOLDER.fullmatch(node)
        if whole:
            name = whole.group(1)
            return _copy(values[name]) if name in values else _OMITTED
        return PLACEHOLDER.sub(lambda match: _text(values.get(match.group(1))), node)
    return node


def _copy(value):
    return list(value) if isinstance(value, (list, tuple)) else value


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(item) for item in value)
    return str(value) if not isinstance(value, float) else repr(value)


def sample_values(parameters: tuple[Parameter, ...]) -> dict:
    """A valid value for every parameter (optional ones included), used to render a view once
    at load time: the default, else the first enum entry, else the smallest valid value —
    strings of ``max(min_length, 1)`` ``a``s and lists of ``max(min_items, 1)`` copies of the
    first ``item_enum`` entry (or ``"a"``), each capped by the maximum length; numbers at
    ``minimum``, else 1 capped by ``maximum``; ``False``; ``2026-01-01T00:00:00Z``. At least one
    character or item where allowed, so a list placeholder renders as a non-empty list."""
    return {param.name: _sample(param) for param in parameters}


def _sample(param: Parameter):
    if param.default is not None:
        return _copy(param.default)
    if param.enum is not None:
        return _copy(param.enum[0])
    if param.type == "string":
        return "a" * _at_least_one(param.min_length, param.max_length)
    if param.type == "string_array":
        item = param.item_enum[0] if param.item_enum else "a"
        return [item] * _at_least_one(param.min_items, param.max_items)
    if param.type in ("number", "integer"):
        if param.minimum is not None:
            return param.minimum
        return 1 if param.maximum is None else min(1, param.maximum)
    if param.type == "boolean":
        return False
    return SAMPLE_DATETIME


def _at_least_one(low: int | None, high: int | None) -> int:
    size = max(low or 0, 1)
    return size if high is None else min(size, high)
