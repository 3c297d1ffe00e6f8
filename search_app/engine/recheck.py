"""The canonical recheck of typed filters, and typed reads of declared fields.

Each row is judged by the declaration of its own collection version (with annotation
supersession fallbacks, newest first). ``exists`` tests presence; every other operator fails
on a missing or mistyped value; range operators compare typed numbers and aware datetimes.
"""
from __future__ import annotations

from typing import cast

from .resolve import FieldAccess, ResolvedSource, parse_aware_datetime
from .spec import Condition


def raw_value(row, access: FieldAccess):
    """The stored JSON value of a field on ``row`` (first non-null along its paths), or None."""
    for path in access.paths:
        node = row.content if path[0] == "content" else row.annotations
        for part in path[1:]:
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return node
    return None


def typed_value(row, access: FieldAccess):
    """The field as a comparable Python value (list for array fields), or None when absent or
    not of the declared type."""
    value = raw_value(row, access)
    if value is None:
        return None
    if access.field.is_array:
        if not isinstance(value, list):
            return None
        items = [_typed_scalar(item, access.field.type) for item in value]
        return None if any(item is None for item in items) else items
    return _typed_scalar(value, access.field.type)


def _typed_scalar(value, field_type: str):
    if field_type == "string":
        return value if isinstance(value, str) else None
    if field_type == "boolean":
        return value if isinstance(value, bool) else None
    if field_type in ("number", "integer"):
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    return parse_aware_datetime(value)


def passes_filters(row, resolved: ResolvedSource) -> bool:
    return all(_passes(row, condition, resolved.access(condition.field, row.collection, row.collection_version))
               for condition in resolved.source.where)


def _passes(row, condition: Condition, access: FieldAccess) -> bool:
    if condition.op == "exists":
        return (raw_value(row, access) is not None) == condition.operand
    value = typed_value(row, access)
    if value is None:
        return False
    field_type = access.field.type
    operand = condition.operand
    listed = cast(tuple, operand)  # the parser makes the operand of an array field or of "in" a tuple
    if access.field.is_array:
        wanted = [_typed_scalar(item, field_type) for item in listed]
        if condition.op == "eq":
            return value == wanted
        if condition.op == "contains_any":
            return any(item in value for item in wanted)
        return all(item in value for item in wanted)  # contains_all
    if condition.op == "in":
        return value in [_typed_scalar(item, field_type) for item in listed]
    target = _typed_scalar(operand, field_type)
    if target is None:
        return False
    if condition.op == "eq":
        return value == target
    return {"gt": value > target, "gte": value >= target, "lt": value < target, "lte": value <= target}[condition.op]
