"""Pure text helpers shared by read payloads and search rendering.

Invariant: nothing here touches Django or the database; every function is a plain function of
its arguments.
"""
from __future__ import annotations

TRUNCATION_SENTINEL = "\n[...] truncated [...]\n"


def truncate_middle(text: str, limit: int) -> str:
    """Return ``text`` cut to at most ``limit`` characters by removing its middle.

    Text within the limit comes back unchanged. Longer text keeps ``head = (limit - len(sentinel))
    // 2`` leading characters and the rest of the budget as trailing characters, joined by
    ``TRUNCATION_SENTINEL``; when ``limit`` is smaller than the sentinel itself, the result is the
    first ``limit`` characters of the sentinel. Raises ``ValueError`` for a negative ``limit``.
    """
    if limit < 0:
        raise ValueError(f"limit must not be negative, got {limit}")
    if len(text) <= limit:
        return text
    if limit < len(TRUNCATION_SENTINEL):
        return TRUNCATION_SENTINEL[:limit]
    remaining = limit - len(TRUNCATION_SENTINEL)
    head = remaining // 2
    tail = remaining - head
    # text[-0:] would be the whole text, so an empty tail is spelled out.
    return text[:head] + TRUNCATION_SENTINEL + (text[-tail:] if tail else "")
