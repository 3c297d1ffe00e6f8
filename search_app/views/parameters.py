"""Typed parameters shared by views and artifacts: declared once, described once, bound per call.

Invariant: one value checker (``_coerce``) decides what a parameter accepts. Load time uses it
for every ``default`` and ``enum`` entry, call time for every supplied value, and
``input_schema`` states exactly the same rules in JSON Schema 2020-12, so the schema a
tool-calling client reads never promises more, or less, than the binder accepts.

Values are JSON values throughout: a ``datetime`` stays the RFC 3339 string the caller gave, an
``integer`` given as a whole float (``20.0``, which JSON Schema calls an integer) is bound as
``20``. Inside the frozen ``Parameter``, lists (``string_array`` defaults and enum entries) are
stored as tuples; everything handed out (schema, summary, bound values) uses lists again.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from catalog_app.catalog.checks import FIELD_NAME, at
from catalog_app.catalog.errors import CatalogError
from memseek_site.parsing import fail, type_name

TYPES = ("string", "string_array", "number", "integer", "boolean", "datetime")
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
CODE = "view_parameter"

_APPLIES_TO = {
    "minimum": ("number", "integer"),
    "maximum": ("number", "integer"),
    "min_length": ("string",),
    "max_length": ("string",),
    "min_items": ("string_array",),
    "max_items": ("string_array",),
    "item_enum": ("string_array",),
}
_KEYS = ("type", "required", "default", "description", "enum", *_APPLIES_TO)
# RFC 3339 date-time (T and Z in either case, seconds required, a Z or ±HH:MM offset required) on
# a real calendar day, as one ``pattern``: a stock JSON Schema validator enforces it without the
# optional format packages, and the binder matches the same expression, so the two agree exactly.
# ``[0-9]``, not ``\d`` (jsonschema matches with Unicode ``re``); the lookahead is end of string in
# both Python and ECMA-262, where ``$`` would also match before a trailing newline.
_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
_DAY = (r"(?!0000)(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
        r"|02-(?:0[1-9]|1[0-9]|2[0-8]))|" + _LEAP_YEAR + r"-02-29)")
_CLOCK = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?"
RFC3339_PATTERN = "^" + _DAY + "[Tt]" + _CLOCK + r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])(?![\s\S])"
_RFC3339 = re.compile(RFC3339_PATTERN, re.ASCII)
_NAIVE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?", re.ASCII)


@dataclass(frozen=True, slots=True)
class Parameter:
    """One declared input. ``default is None`` means "no default" (null is never a valid value);
    constraint fields are ``None`` when not declared."""

    name: str
    type: str
    required: bool = False
    default: object = None
    description: str | None = None
    enum: tuple | None = None
    item_enum: tuple[str, ...] | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    min_length: int | None = None
    max_length: int | None = None
    min_items: int | None = None
    max_items: int | None = None


class _Invalid(Exception):
    """A value broke a rule; ``index`` locates the offending list item, if any."""

    def __init__(self, message: str, index: int | None = None):
        super().__init__(message)
        self.message = message
        self.index = index


def _frozen(value):
    return tuple(value) if isinstance(value, list) else value


def _thawed(value):
    return list(value) if isinstance(value, tuple) else value


# ---------------------------------------------------------------- the one value checker


def _coerce(param: Parameter, value, *, with_enum: bool = True):
    """Return ``value`` as the JSON value ``param`` binds, or raise ``_Invalid``."""
    kind = param.type
    if kind == "string":
        if not isinstance(value, str):
            raise _Invalid(f"expected a string, got {type_name(value)}")
        _check_size(len(value), param.min_length, param.max_length, "character")
        result = value
    elif kind == "string_array":
        if not isinstance(value, (list, tuple)):
            raise _Invalid(f"expected a list of strings, got {type_name(value)}")
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise _Invalid(f"expected a string, got {type_name(item)}", index)
            if param.item_enum is not None and item not in param.item_enum:
                raise _Invalid(f"{item!r} is not one of {', '.join(param.item_enum)}", index)
        _check_size(len(value), param.min_items, param.max_items, "item")
        result = list(value)
    elif kind in ("number", "integer"):
        result = _number(value, kind)
        if param.minimum is not None and result < param.minimum:
            raise _Invalid(f"must be at least {param.minimum}, got {result}")
        if param.maximum is not None and result > param.maximum:
            raise _Invalid(f"must be at most {param.maximum}, got {result}")
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise _Invalid(f"expected true or false, got {type_name(value)}")
        result = value
    else:
        _check_datetime(value)
        result = value
    if with_enum and param.enum is not None and _frozen(result) not in param.enum:
        allowed = ", ".join(repr(_thawed(entry)) for entry in param.enum)
        raise _Invalid(f"{result!r} is not one of the allowed values: {allowed}")
    return result


def _number(value, kind: str):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Invalid(f"expected {'an integer' if kind == 'integer' else 'a number'}, got {type_name(value)}")
    if not math.isfinite(value):
        raise _Invalid("must be a finite number")
    if kind == "integer" and isinstance(value, float):
        if not value.is_integer():
            raise _Invalid(f"expected a whole number, got {value}")
        return int(value)
    return value


def _check_size(size: int, low: int | None, high: int | None, unit: str) -> None:
    if low is not None and size < low:
        raise _Invalid(f"must hold at least {low} {unit}(s), got {size}")
    if high is not None and size > high:
        raise _Invalid(f"must hold at most {high} {unit}(s), got {size}")


def _check_datetime(value) -> None:
    if not isinstance(value, str):
        raise _Invalid(f"expected an RFC 3339 timestamp string such as 2026-07-17T09:00:00Z, got {type_name(value)}")
    if _NAIVE.fullmatch(value):
        raise _Invalid(f"{value!r} has no timezone; add Z or an offset such as +00:00")
    if not _RFC3339.fullmatch(value):
        raise _Invalid(f"{value!r} is not an RFC 3339 timestamp such as 2026-07-17T09:00:00Z")


# ---------------------------------------------------------------- load time


def parse_parameters(raw, path: str) -> tuple[Parameter, ...]:
    """Parse a ``parameters:`` mapping (name → declaration), keeping declaration order.

    Takes the raw YAML value (callers pass ``{}`` when the key is absent) and the dotted path
    of the mapping. Returns the parameters. Raises ``CatalogError(path, "view_parameter", ...)``
    for the first problem, located at the offending key.
    """
    if not isinstance(raw, dict):
        raise CatalogError(CODE, "must be a mapping of parameter name to declaration", path)
    parameters = []
    for name, declaration in raw.items():
        param_path = at(path, str(name))
        if not isinstance(name, str) or not FIELD_NAME.fullmatch(name):
            raise CatalogError(CODE, f"parameter name {name!r} must match {FIELD_NAME.pattern}", param_path)
        parameters.append(_parse_one(name, declaration, param_path))
    return tuple(parameters)


def _parse_one(name: str, raw, path: str) -> Parameter:
    if not isinstance(raw, dict):
        raise CatalogError(CODE, "must be a mapping such as {type: string, required: true}", path)
    for key in raw:
        if key not in _KEYS:
            raise CatalogError(CODE, f"unknown key {key!r}; allowed: {', '.join(_KEYS)}", at(path, str(key)))
    if "type" not in raw:
        raise CatalogError(CODE, f"is required; one of {', '.join(TYPES)}", at(path, "type"))
    kind = raw["type"]
    if kind not in TYPES:
        raise CatalogError(CODE, f"{kind!r} is not a parameter type; use one of {', '.join(TYPES)}", at(path, "type"))
    for key, kinds in _APPLIES_TO.items():
        if key in raw and kind not in kinds:
            raise CatalogError(CODE, f"{key} applies only to {' and '.join(kinds)} parameters, not {kind}", at(path,
                                                                                                               key))
    required = raw.get("required", False)
    if not isinstance(required, bool):
        raise CatalogError(CODE, f"must be true or false, got {required!r}", at(path, "required"))
    if required and "default" in raw:
        raise CatalogError(CODE, "a required parameter may not declare a default; drop one of them", at(path,
                                                                                                        "default"))
    description = raw.get("description")
    if description is not None and (not isinstance(description, str) or not description.strip()):
        raise CatalogError(CODE, "must be a non-blank string", at(path, "description"))
    param = Parameter(name=name, type=kind, required=required, description=description,
                      item_enum=_item_enum(raw, path), **_bounds(raw, kind, path))
    if "enum" in raw:
        param = replace(param, enum=_enum(param, raw["enum"], at(path, "enum")))
    if "default" in raw:
        param = replace(param, default=_frozen(_declared_value(param, raw["default"], at(path, "default"))))
    return param


def _bounds(raw: dict, kind: str, path: str) -> dict:
    found = {}
    for key in ("minimum", "maximum"):
        if key in raw:
            try:
                found[key] = _number(raw[key], kind)
            except _Invalid as problem:
                message = f"{problem.message} (a bound has its parameter's type)"
                raise CatalogError(CODE, message, at(path, key)) from None
    for key in ("min_length", "max_length", "min_items", "max_items"):
        if key in raw:
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise CatalogError(CODE, f"must be a non-negative integer, got {value!r}", at(path, key))
            found[key] = value
    for low, high in (("minimum", "maximum"), ("min_length", "max_length"), ("min_items", "max_items")):
        if low in found and high in found and found[low] > found[high]:
            raise CatalogError(CODE, f"{low} {found[low]} exceeds {high} {found[high]}", at(path, low))
    return found


def _item_enum(raw: dict, path: str) -> tuple[str, ...] | None:
    if "item_enum" not in raw:
        return None
    value, item_path = raw["item_enum"], at(path, "item_enum")
    if not isinstance(value, list) or not value:
        raise CatalogError(CODE, "must be a non-empty list of strings", item_path)
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise CatalogError(CODE, f"expected a string, got {type_name(item)}", at(item_path, index))
        if item in value[:index]:
            raise CatalogError(CODE, f"{item!r} is listed twice", at(item_path, index))
    return tuple(value)


def _enum(param: Parameter, value, path: str) -> tuple:
    if not isinstance(value, list) or not value:
        raise CatalogError(CODE, "must be a non-empty list of allowed values", path)
    entries: list = []
    for index, entry in enumerate(value):
        frozen = _frozen(_declared_value(param, entry, at(path, index)))
        if frozen in entries:
            raise CatalogError(CODE, f"{entry!r} is listed twice", at(path, index))
        entries.append(frozen)
    return tuple(entries)


def _declared_value(param: Parameter, value, path: str):
    """A ``default`` or ``enum`` entry checked against everything declared so far."""
    if value is None:
        raise CatalogError(CODE, "null is not a valid value; omit the key instead", path)
    try:
        return _coerce(param, value)
    except _Invalid as problem:
        where = at(path, problem.index) if problem.index is not None else path
        raise CatalogError(CODE, f"{problem.message} (declared values must satisfy the type and "
                                 "every constraint)", where) from None


# ---------------------------------------------------------------- description


def input_schema(parameters: tuple[Parameter, ...]) -> dict:
    """The complete JSON Schema 2020-12 contract for a call's arguments.

    ``required`` is always present, as a list in declaration order (empty when nothing is
    required), so clients never have to treat a missing key specially.
    """
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "type": "object",
        "properties": {param.name: _property_schema(param) for param in parameters},
        "additionalProperties": False,
        "required": [param.name for param in parameters if param.required],
    }


def _property_schema(param: Parameter) -> dict:
    if param.type == "string_array":
        items = {"type": "string"}
        if param.item_enum is not None:
            items["enum"] = list(param.item_enum)
        schema = {"type": "array", "items": items}
    elif param.type == "datetime":
        schema = {"type": "string", "format": "date-time", "pattern": RFC3339_PATTERN}
    else:
        schema = {"type": param.type}
    for key, keyword in (("minimum", "minimum"), ("maximum", "maximum"), ("min_length", "minLength"),
                         ("max_length", "maxLength"), ("min_items", "minItems"), ("max_items", "maxItems")):
        if getattr(param, key) is not None:
            schema[keyword] = getattr(param, key)
    if param.enum is not None:
        schema["enum"] = [_thawed(entry) for entry in param.enum]
    if param.description is not None:
        schema["description"] = param.description
    if param.default is not None:
        schema["default"] = _thawed(param.default)
    return schema


def parameters_summary(parameters: tuple[Parameter, ...]) -> dict:
    """The compact ``GET /views`` form: ``{name: {type, required, default}}`` (default null when none)."""
    return {param.name: {"type": param.type, "required": param.required, "default": _thawed(param.default)}
            for param in parameters}


# ---------------------------------------------------------------- call time


def bind_parameters(parameters: tuple[Parameter, ...], values, path: str = "") -> dict:
    """Check a call's arguments and return them bound, defaults applied, in declaration order.

    ``values`` must be a JSON object. An optional parameter with no default that the caller
    omits stays absent from the result. Raises ``ApiError("view_parameter", ..., path=...)``
    for the first unknown, missing, wrongly typed, out-of-range or not-allowed value; the path
    is the parameter's name (``channels[1]`` for one list item), under ``path`` if given.
    """
    if not isinstance(values, dict):
        raise fail(path, f"parameters must be a JSON object, got {type_name(values)}", CODE)
    declared = {param.name: param for param in parameters}
    for key in values:
        if key not in declared:
            allowed = ", ".join(declared) or "none"
            raise fail(at(path, key), f"unknown parameter {key!r}; this view takes: {allowed}", CODE)
    bound = {}
    for param in parameters:
        if param.name not in values:
            if param.required:
                raise fail(at(path, param.name), "is required", CODE)
            if param.default is not None:
                bound[param.name] = _thawed(param.default)
            continue
        try:
            bound[param.name] = _coerce(param, values[param.name])
        except _Invalid as problem:
            where = at(path, param.name)
            where = at(where, problem.index) if problem.index is not None else where
            raise fail(where, problem.message, CODE) from None
    return bound


# ---------------------------------------------------------------- fixed contracts (graph views)

GRAPH_PARAMETERS: tuple[Parameter, ...] = (
    Parameter("seed", "string", required=True, min_length=1, max_length=128),
    Parameter("predicates", "string_array", default=()),
    Parameter("direction", "string", default="out", enum=("out", "in", "both")),
    Parameter("depth", "integer", default=1, minimum=1, maximum=16),
    Parameter("limit", "integer", default=20, minimum=1, maximum=500),
)
ORPHAN_PARAMETERS: tuple[Parameter, ...] = (
    Parameter("limit", "integer", default=50, minimum=1, maximum=500),
)
_AUTHOR_MAY_NOT_SET = ("min_items",)
# (lower, upper) bound pairs an author may narrow but never widen.
_NARROWABLE_BOUNDS = (("minimum", "maximum"), ("min_length", "max_length"))


def check_fixed_contract(parameters: tuple[Parameter, ...], fixed: tuple[Parameter, ...], path: str,
                         *, code: str = "graph_view") -> tuple[Parameter, ...]:
    """Check declared ``parameters`` against a fixed contract and return the effective ones.

    The names, types, required-ness and defaults must equal ``fixed``'s exactly. Authors may
    add ``description``, ``enum``/``item_enum``, ``minimum``/``maximum``,
    ``min_length``/``max_length`` and ``max_items``, but only to narrow: bounds stay inside the
    fixed range and an enum inside the fixed enum. The returned parameters (declaration order)
    carry the author's narrowing plus every fixed bound or enum the author left out, so the
    schema and binder state the hard limits too.
    Raises ``CatalogError(path.<name>[.<key>], code, ...)``; pass ``graph_orphans_view`` for
    orphan views.
    """
    expected = {param.name: param for param in fixed}
    names = ", ".join(expected)
    for param in parameters:
        if param.name not in expected:
            raise CatalogError(code, f"is not part of the fixed contract; declare exactly {names}", at(path,
                                                                                                       param.name))
    declared = {param.name: param for param in parameters}
    for want in fixed:
        if want.name not in declared:
            raise CatalogError(code, f"is missing; declare exactly {names}", at(path, want.name))
    return tuple(_narrowed(param, expected[param.name], at(path, param.name), code) for param in parameters)


def _narrowed(param: Parameter, want: Parameter, path: str, code: str) -> Parameter:
    for key in ("type", "required", "default"):
        if getattr(param, key) != getattr(want, key) or type(getattr(param, key)) is not type(getattr(want, key)):
            shown = "no default" if key == "default" and want.default is None else repr(_thawed(getattr(want, key)))
            raise CatalogError(code, f"the fixed contract requires {key} {shown}", at(path, key))
    for key in _AUTHOR_MAY_NOT_SET:
        if getattr(param, key) is not None:
            raise CatalogError(code, "may not be set here; authors may add only description, enum, "
                                     "item_enum, minimum, maximum, min_length, max_length and max_items",
                               at(path, key))
    merged = replace(param, min_items=want.min_items, enum=want.enum if param.enum is None else param.enum)
    for low, high in _NARROWABLE_BOUNDS:
        floor, ceiling = getattr(want, low), getattr(want, high)
        lower = floor if getattr(param, low) is None else getattr(param, low)
        upper = ceiling if getattr(param, high) is None else getattr(param, high)
        for key, value in ((low, lower), (high, upper)):
            if floor is not None and value is not None and value < floor:
                raise CatalogError(code, f"must be at least {floor}, the fixed lower bound", at(path, key))
            if ceiling is not None and value is not None and value > ceiling:
                raise CatalogError(code, f"must be at most {ceiling}, the fixed upper bound", at(path, key))
        if lower is not None and upper is not None and lower > upper:
            raise CatalogError(code, f"{low} {lower} exceeds the {high} {upper}", at(path, low))
        merged = replace(merged, **{low: lower, high: upper})
    for index, entry in enumerate(param.enum or ()):
        try:
            _coerce(replace(merged, enum=want.enum), entry)
        except _Invalid as problem:
            message = f"{problem.message} (outside the fixed contract)"
            raise CatalogError(code, message, at(at(path, "enum"), index)) from None
    return merged
