r"""Prompt-ready rendering of search results: escaped compact rows, an optional fence, a token budget.

Invariants:

* No rendered row contains a literal ``&``, ``<`` or ``>``: every value interpolated into a row
  (id, collection, type, key, score names, text) passes through ``escape_prompt_text``, so a
  record can neither close nor forge an element. Only the fence itself writes ``<`` and ``>``.
* One rendered row per record, on one line: the same escaping turns line separators, every
  other C0/C1 control, U+2028/U+2029 and the bidirectional controls into literal ``\uXXXX``
  text, so a record can neither start a forged ``[id=...]`` row nor reorder what a reader sees.
  This deliberately departs from memseek-reference.md A.2, where newlines in text (and the
  truncation sentinel's own newlines) are kept and a row can span lines.
* ``render_rows`` never returns text whose cl100k token count exceeds the budget, and the
  ``tokens`` it reports is exactly ``count_tokens(text)``.

Why the budget arithmetic is exact without re-encoding the whole text for every row: cl100k
splits text with a regex before byte-pair encoding each piece on its own, so a token never spans
two pieces. In that regex no piece can hold a newline *and* a non-whitespace character after it,
and how the text up to such a newline is split does not depend on what follows it: the only
alternatives that look past a whitespace run are `\s++$` (tried first, when the run reaches the
end) and `\s*[\r\n]` (when a non-whitespace character follows), and both end the piece at that
same newline; `\s+(?!\S)` is only reached for runs without a newline. Hence for any L ending in
a newline and any R starting with a non-whitespace character,
count_tokens(L + R) == count_tokens(L) + count_tokens(R). Every row starts with `[`, the closing
tag with `<`, and whatever precedes them ends in a newline, so (NL = "\n"):

* bare:   tokens = sum(count(row + NL) for all rows but the last) + count(last row)
* fenced: tokens = count(head) + sum(count(row + NL) for every row) + count("</tag>")

where head is the optional preamble + NL followed by '<tag untrusted="true">' + NL. The tests
compare these sums with a count of the complete text over adversarial inputs.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Protocol

from catalog_app.text import truncate_middle
from memseek_site.parsing import PUBLIC_NAME

from .tokens import count_tokens, take_prefix_within_budget

ESCAPES = {"&": "\\u0026", "<": "\\u003c", ">": "\\u003e"}
# C0 controls (line feed and carriage return included), DEL and C1 controls (U+0085 NEXT LINE
# included), the line and paragraph separators, the bidirectional embeddings and overrides
# (U+202A-U+202E) and isolates (U+2066-U+2069).
CONTROL_CODE_POINTS = (*range(0x00, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F),
                       *range(0x2066, 0x206A))
ROW_TEXT_LIMIT = 500
TRUNCATED_ROW = "[...] truncated"
RETRACTED_TEXT = "retracted"
DEFAULT_FENCE_TAG = "records"

_ESCAPE_TABLE = str.maketrans({**ESCAPES, **{code: f"\\u{code:04x}" for code in CONTROL_CODE_POINTS}})


def escape_prompt_text(text: str) -> str:
    """Return ``text`` with ``&``, ``<``, ``>`` and every code point of ``CONTROL_CODE_POINTS``
    replaced by its six-character literal text ``\\uXXXX`` (a backslash, ``u`` and four lowercase
    hex digits: ``\\u0026``, ``\\u003c``, ``\\u003e``, ``\\u000a`` for a newline, ``\\u202e``).
    Nothing else is changed, so text without those characters comes back as it was.

    Escaping newlines departs from memseek-reference.md A.2 ("newlines inside text are not
    escaped, so a row can span lines"): a row that can span lines lets a record's text start a
    line that reads as another record's row, which the fence exists to prevent.
    """
    return text.translate(_ESCAPE_TABLE)


def format_row_time(moment: datetime) -> str:
    """Return ``moment`` in UTC as ``YYYY-MM-DDTHH:MMZ``; seconds are added when seconds or
    microseconds are non-zero, and six-digit microseconds when those are non-zero
    (``2026-07-01T10:22Z``, ``2026-07-01T10:22:05Z``, ``2026-07-01T10:22:05.123000Z``).

    Raises ``ValueError`` for a naive datetime, whose instant is unknown.
    """
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("a rendered time must be timezone-aware")
    utc = moment.astimezone(timezone.utc)
    stamp = f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}"
    if utc.second or utc.microsecond:
        stamp += f":{utc.second:02d}"
        if utc.microsecond:
            stamp += f".{utc.microsecond:06d}"
    return stamp + "Z"


def select_display_scores(scores: Mapping[str, object] | None,
                          rendered_names: Iterable[str]) -> tuple[tuple[str, float], ...]:
    """Return the ``(name, value)`` pairs to show in a row: the record's ``scores`` whose name is in
    ``rendered_names`` (score processors declared with ``render: true``), sorted by name.

    A name the record has no numeric value for (missing, ``None``, a bool or non-number) is left
    out rather than shown as a made-up value.
    """
    if not scores:
        return ()
    pairs = []
    for name in set(rendered_names):
        value = scores.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            pairs.append((name, value))
    return tuple(sorted(pairs))


@dataclass(frozen=True, slots=True)
class RenderRow:
    """What a compact row shows of one record. ``occurred_at`` must be timezone-aware.
    ``display_scores`` is stored sorted by name whatever order it is given in."""

    id: str
    occurred_at: datetime
    collection: str
    type: str
    key: str | None
    text: str
    tombstone: bool = False
    display_scores: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "display_scores",
                           tuple(sorted(((name, value) for name, value in self.display_scores),
                                        key=lambda pair: pair[0])))


def render_row(row: RenderRow) -> str:
    """Return one compact row, always a single line (every value is escaped, newlines included):

    ``[id=<id>] <time> | <collection>/<type>[ | key <key>][ | <name> <value> ...] | <text>``

    The key segment appears when ``key`` is not None; the scores segment when there are display
    scores, values in Python ``g`` format separated by single spaces. The text is
    ``truncate_middle(text, 500)`` and then escaped, so the truncation sentinel's newlines read
    ``\\u000a`` like the text's own; a tombstone shows ``retracted`` instead.
    """
    segments = [f"[id={escape_prompt_text(row.id)}] {format_row_time(row.occurred_at)}",
                f"{escape_prompt_text(row.collection)}/{escape_prompt_text(row.type)}"]
    if row.key is not None:
        segments.append(f"key {escape_prompt_text(row.key)}")
    if row.display_scores:
        segments.append(" ".join(f"{escape_prompt_text(name)} {format(value, 'g')}"
                                 for name, value in row.display_scores))
    if row.tombstone:
        segments.append(RETRACTED_TEXT)
    else:
        segments.append(escape_prompt_text(truncate_middle(row.text, ROW_TEXT_LIMIT)))
    return " | ".join(segments)


class FenceLike(Protocol):
    @property
    def tag(self) -> str: ...

    @property
    def preamble(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Fence:
    """An element wrapped around rendered rows: ``tag`` is a public name (default ``records``);
    ``preamble`` is the operator's own line of prose, non-blank when given, written unescaped."""

    tag: str = DEFAULT_FENCE_TAG
    preamble: str | None = None

    def __post_init__(self) -> None:
        _check_fence(self)


@dataclass(frozen=True, slots=True)
class RenderResult:
    """Rendered text, whether rows were cut by the budget, its exact cl100k token count, and the
    ids of the records whose rows appear in the text, in order."""

    text: str
    truncated: bool
    tokens: int
    rendered_ids: tuple[str, ...]


def render_rows(rows: Iterable[RenderRow], *, budget_tokens: int, fence: FenceLike | None = None) -> RenderResult:
    """Render ``rows`` in order, fitted to ``budget_tokens`` cl100k tokens including any fence.

    Without a fence the rows are joined by ``\\n``. With one (``Fence`` or anything with ``tag``
    and ``preamble``) the text is ``[preamble + "\\n"] + '<tag untrusted="true">\\n' + rows +
    "\\n</tag>"``; with no rows that is the element with an empty line inside. A fence's tokens
    are charged only when one is declared.

    If everything fits, it is returned with ``truncated`` False. Otherwise rows are kept whole,
    in order, until the first one that does not fit together with the closing ``[...] truncated``
    row (room for that row is reserved), which takes its place; ``truncated`` is True. If not even
    the ``[...] truncated`` row fits, the text is the empty element when that fits, else ``""``,
    still with ``truncated`` True. The result never exceeds the budget.

    Raises ``ValueError`` for a negative budget, a fence tag that is not a public name or a blank
    preamble.
    """
    if budget_tokens < 0:
        raise ValueError(f"budget_tokens must not be negative, got {budget_tokens}")
    if fence is not None:
        _check_fence(fence)
    lines = [(row.id, render_row(row)) for row in rows]
    return _fit_lines(lines, budget_tokens, fence)


def _check_fence(fence: FenceLike) -> None:
    if not isinstance(fence.tag, str) or not PUBLIC_NAME.match(fence.tag):
        raise ValueError(f"fence tag must be a public name, got {fence.tag!r}")
    if fence.preamble is not None and (not isinstance(fence.preamble, str) or not fence.preamble.strip()):
        raise ValueError("a fence preamble must be non-blank text")


def _fence_parts(fence: FenceLike) -> tuple[str, str]:
    """``(head, close)`` of the element; the fenced text is ``head + rows + "\\n" + close``."""
    head = f'<{fence.tag} untrusted="true">\n'
    if fence.preamble is not None:
        head = fence.preamble + "\n" + head
    return head, f"</{fence.tag}>"


def _fit_lines(lines: Sequence[tuple[str, str]], budget: int, fence: FenceLike | None) -> RenderResult:
    """Apply the budget to rendered ``(id, line)`` pairs; each line starts with ``[``, which the
    additive counting in the module docstring relies on."""
    costs = [count_tokens(line + "\n") for _, line in lines]
    if fence is None:
        head, close, fixed = "", None, 0
    else:
        head, close = _fence_parts(fence)
        fixed = count_tokens(head) + count_tokens(close)

    def last_cost(line: str) -> int:
        # Inside a fence the last row is followed by "\n</tag>"; bare, by nothing.
        return count_tokens(line if close is None else line + "\n")

    def assemble(kept: Sequence[str]) -> str:
        body = "\n".join(kept)
        return body if close is None else head + body + "\n" + close

    if lines:
        full = fixed + sum(costs[:-1]) + last_cost(lines[-1][1])
    else:
        full = count_tokens(assemble(()))
    if full <= budget:
        return RenderResult(assemble([line for _, line in lines]), False, full, tuple(row_id for row_id, _ in lines))

    room = budget - fixed - last_cost(TRUNCATED_ROW)
    if lines and room >= 0:
        kept, _ = take_prefix_within_budget(range(len(lines)), room, costs.__getitem__)
        text = assemble([lines[i][1] for i in kept] + [TRUNCATED_ROW])
        tokens = fixed + sum(costs[i] for i in kept) + last_cost(TRUNCATED_ROW)
        return RenderResult(text, True, tokens, tuple(lines[i][0] for i in kept))

    # Not even "[...] truncated" fits: fall back to the empty element, or to nothing at all.
    empty = assemble(())
    empty_tokens = count_tokens(empty)
    if empty_tokens <= budget:
        return RenderResult(empty, True, empty_tokens, ())
    return RenderResult("", True, 0, ())
