"""Canonical JSON and definition hashes.

Hashes are SHA-256 of canonical JSON: sorted keys, compact separators, no NaN, and numbers
that are semantically equal (``1`` and ``1.0``) serialise identically.
"""
from __future__ import annotations

import hashlib
import json
import math


def _canonical(value):
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("non-finite numbers cannot be hashed")
        return int(value) if value.is_integer() else value
    if isinstance(value, int):
        return value
    if isinstance(value, dict):
        return {str(key): _canonical(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(item) for item in value]
    raise TypeError(f"cannot hash a {type(value).__name__}")


def canonical_json(value) -> str:
    return json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def definition_hash(value) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
