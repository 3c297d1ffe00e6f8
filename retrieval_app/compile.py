"""Compiling ranked entries into the four sections under a cl100k token budget.

Pure Python (no Django). Invariants:

* Sections are always present: ``policies``, ``facts``, ``events``, ``derived``, in that order.
* Policy entries are never truncated: all of them are included, or, when their tokens exceed
  the budget, compilation fails with ``BudgetTooSmall`` (``requested``, ``required``; the route answers
  ``422 CONTEXT_BUDGET_TOO_SMALL``); ``required`` is the policies' total.
* The other entries are packed in their ranked order (across sections, so the best entries
  win the room whatever their section) into what the policies leave; an entry that does not
  fit is skipped and the next one tried (``pack_skipping_oversized``), so one large entry never
  hides the rest of its section.
* The included entries' tokens never sum to more than the budget; ``raw`` (no budget) includes
  everything.

An entry's cost is the cl100k count of its compact rendered row, computed by the caller.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memseek_site.errors import ApiError
from search_app.engine.tokens import pack_skipping_oversized

SECTIONS = ("policies", "facts", "events", "derived")


@dataclass(frozen=True, slots=True, eq=False)
class Item:
    id: str
    section: str
    tokens: int
    payload: object = None  # whatever the caller presents for the entry


class BudgetTooSmall(ApiError):
    """The policy entries alone exceed the budget; ``requested`` and ``required`` are token counts."""

    @classmethod
    def of(cls, requested: int, required: int) -> BudgetTooSmall:
        return cls("CONTEXT_BUDGET_TOO_SMALL",
                   f"The policy records in scope need {required} tokens and are never truncated; the budget is "
                   f"{requested}. Send tokenBudget of at least {required}.",
                   "tokenBudget", {"requestedTokens": requested, "requiredTokens": required})

    @property
    def requested(self) -> int:
        return self.extra["requestedTokens"]

    @property
    def required(self) -> int:
        return self.extra["requiredTokens"]


@dataclass(frozen=True, slots=True)
class Compiled:
    included: dict  # section -> [Item], in delivered order
    dropped: dict  # section -> [Item] left out for the budget
    total_tokens: int
    policy_tokens: int
    budget: int | None

    def report(self) -> dict:
        """The ``compilation`` object of the response."""
        return {"tokenizer": "cl100k", "tokenBudget": self.budget, "totalTokens": self.total_tokens,
                "raw": self.budget is None, "policyTokens": self.policy_tokens,
                "sections": {name: {"included": len(self.included[name]), "dropped": len(self.dropped[name]),
                                    "tokens": sum(item.tokens for item in self.included[name]),
                                    "droppedIds": [item.id for item in self.dropped[name]]}
                             for name in SECTIONS}}


def compile_sections(policies: Sequence[Item], ranked: Sequence[Item], *, budget: int | None) -> Compiled:
    """Fit ``policies`` (whole) and then ``ranked`` (best first) into ``budget`` tokens; ``None``
    means raw: everything is included. Raises ``BudgetTooSmall`` and ``ValueError`` for an item
    of an unknown section or a negative cost."""
    for is_policy, items in ((True, policies), (False, ranked)):
        for item in items:
            if item.section not in SECTIONS or (item.section == "policies") != is_policy:
                raise ValueError(f"item {item.id} has section {item.section!r} in the wrong list")
            if item.tokens < 0:
                raise ValueError(f"item {item.id} has a negative cost")
    policy_tokens = sum(item.tokens for item in policies)
    if budget is None:
        kept, skipped = list(ranked), []
    else:
        if policy_tokens > budget:
            raise BudgetTooSmall.of(budget, policy_tokens)
        kept, skipped = pack_skipping_oversized(ranked, budget - policy_tokens, lambda item: item.tokens)
    included = {name: [] for name in SECTIONS}
    dropped = {name: [] for name in SECTIONS}
    included["policies"] = list(policies)
    for item in kept:
        included[item.section].append(item)
    for item in skipped:
        dropped[item.section].append(item)
    total = policy_tokens + sum(item.tokens for item in kept)
    return Compiled(included, dropped, total, policy_tokens, budget)
