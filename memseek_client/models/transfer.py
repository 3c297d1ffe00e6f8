"""Export and import: ``POST /import``'s answer (``ImportResult``). ``GET /export`` is JSON Lines,
read as text lines by the clients' ``iter_export``."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportResult:
    """What one import wrote: the definitions and records added, and those the workspace already
    held identically (a second import of the same export adds nothing)."""

    definitions_added: int
    definitions_unchanged: int
    records_added: int
    records_unchanged: int
    vectors_added: int
