"""``worked_out``: lines a brief computes deterministically over its own records, when the
question calls for one. Pure: every input is what the brief already holds.

* a **count** ("how many", "how often", "number of"): the records the question needs (the
  brief's facts; without facts, the passages the model kept), with their ids;
* the **time between** two dated records ("how long", "how many days/weeks/months/years"): the
  first two records of different days in rank order, or, with "ago", the first record and the
  day the question is asked as of;
* two current statements that **conflict**: a ``known`` subject and attribute holding more
  than one distinct value, when a record the question needs is one of them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

_COUNT = re.compile(r"\bhow (many|often)\b|\bnumber of\b", re.IGNORECASE)
_INTERVAL = re.compile(r"\bhow long\b|\bhow (many|much) (days|weeks|months|years|time)\b", re.IGNORECASE)
_AGO = re.compile(r"\bago\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Dated:
    """A record the brief shows: its id and the day it was said."""

    id: str
    day: date


@dataclass(frozen=True, slots=True)
class Statement:
    id: str
    value: str
    day: date


@dataclass(frozen=True, slots=True)
class Folded:
    """One ``known`` line: every current value of a subject and attribute, newest first."""

    subject: str
    attribute: str
    statements: tuple[Statement, ...]


def worked_out(question: str, *, facts: list[Dated], passages: list[Dated], counted: list[Dated] | None,
               known: list[Folded], as_of: date) -> list[dict]:
    """The worked-out lines for ``question``. ``counted`` is what a count counts (None: nothing
    is countable, so no count line); ``facts`` then ``passages`` are in rank order."""
    lines = []
    if counted is not None and _COUNT.search(question):
        ids = list(dict.fromkeys(item.id for item in counted))
        lines.append({"kind": "count", "value": len(ids),
                      "line": f"{len(ids)} record{'s' if len(ids) != 1 else ''} hold what the question counts",
                      "ids": ids})
    if _INTERVAL.search(question):
        line = _interval(facts + passages, as_of, ago=bool(_AGO.search(question)))
        if line is not None:
            lines.append(line)
    needed = {item.id for item in facts}
    for folded in known:
        values = list(dict.fromkeys(statement.value for statement in folded.statements))
        if len(values) > 1 and any(statement.id in needed for statement in folded.statements):
            shown = "; ".join(f"{s.value!r} (said {s.day.isoformat()})" for s in folded.statements)
            lines.append({"kind": "conflict", "line": f"{folded.subject} {folded.attribute}: current statements "
                          f"conflict: {shown}", "ids": [statement.id for statement in folded.statements]})
    return lines


def _interval(records: list[Dated], as_of: date, *, ago: bool) -> dict | None:
    if not records:
        return None
    first = records[0]
    if ago:
        return {"kind": "interval", "days": (as_of - first.day).days,
                "line": f"{_span(as_of - first.day)} from {first.day.isoformat()} to {as_of.isoformat()} (as of)",
                "ids": [first.id]}
    other = next((record for record in records[1:] if record.day != first.day), None)
    if other is None:
        return None
    early, late = sorted((first, other), key=lambda record: record.day)
    return {"kind": "interval", "days": (late.day - early.day).days,
            "line": f"{_span(late.day - early.day)} between {early.day.isoformat()} and {late.day.isoformat()}",
            "ids": [early.id, late.id]}


def _span(delta) -> str:
    days = delta.days
    text = f"{days} day{'s' if days != 1 else ''}"
    if days >= 14:
        text += f" (about {days / 7:.0f} weeks)" if days < 60 else \
            f" (about {days / 30.44:.0f} months)" if days < 730 else f" (about {days / 365.25:.1f} years)"
    return text
