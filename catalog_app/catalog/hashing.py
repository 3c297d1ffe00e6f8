"""Canonical JSON and definition hashes.

Hashes are SHA-256 of canonical JSON: sorted keys, compact separators, no NaN, and numbers
that are semantically equal (``1`` and ``1.0``) serialise identically.
"""
from __future__ import annotations

import hashlib
import json
import math


def canonical_form(value):
    """``value`` as its canonical JSON serialises it (integral floats as ints, keys as strings);
    ``canonical_json(form, converted=True)`` of it is ``canonical_json(value)``."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("non-finite numbers cannot be hashed")
        return int(value) if value.is_integer() else value
    if isinstance(value, int):
        return value
    if isinstance(value, dict):
        return {str(key): canonical_form(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical_form(item) for item in value]
    raise TypeError(f"cannot hash a {type(value).__name__}")


def canonical_json(value, *, converted: bool = False) -> str:
    """The canonical JSON of ``value`` (of a ``canonical_form`` result as it is, when ``converted``)."""
    return json.dumps(value if converted else canonical_form(value), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, allow_nan=False)


def definition_hash(value) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def vector_text_and_hash(vector: list[float]) -> tuple[str, str]:
    """The compact JSON text of ``vector`` (finite floats; also pgvector's text input form) and
    its ``definition_hash``. A vector's canonical JSON is its compact JSON unless a component is
    integral (``1.0`` is canonically ``1``), so the per-item canonicalisation runs only then."""
    text = json.dumps(vector, separators=(",", ":"), allow_nan=False)
    if any(map(float.is_integer, vector)):
        return text, definition_hash(vector)
    return text, hashlib.sha256(text.encode("utf-8")).hexdigest()
