"""The longest values a record's free-text fields may hold, read from the model.

Every parser, request schema, form and MCP tool schema that bounds one of these fields uses the
constant here, so a change to ``Record`` (and its migration) changes every check at once. The SDK
imports nothing of the server; a test asserts that any bound it spells equals these.
"""
from __future__ import annotations

from .models import Record


def _max_chars(field: str) -> int:
    length = Record._meta.get_field(field).max_length
    assert length is not None, f"Record.{field} has no max_length"
    return length


ENTITY_CHARS = _max_chars("entity")  # whose memory
TYPE_CHARS = _max_chars("type")  # author vocabulary
KEY_CHARS = _max_chars("key")  # a keyed lane's key
DEDUPE_KEY_CHARS = _max_chars("dedupe_key")  # a write's idempotency key
