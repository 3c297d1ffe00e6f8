"""Budget packing per section (pure): policies whole or CONTEXT_BUDGET_TOO_SMALL, skipping an
item that does not fit without dropping the rest of its section, exact fits, raw."""
import pytest

from retrieval_app.compile import SECTIONS, BudgetTooSmall, Item, compile_sections


def items(section, *costs, prefix=None):
    return [Item(f"{prefix or section[0]}{index}", section, cost) for index, cost in enumerate(costs)]


def ids(compiled, section, kind="included"):
    return [item.id for item in getattr(compiled, kind)[section]]


def test_sections_are_always_present_even_when_empty():
    compiled = compile_sections([], [], budget=256)
    assert list(compiled.included) == list(SECTIONS)
    report = compiled.report()
    assert list(report["sections"]) == list(SECTIONS)
    assert all(section == {"included": 0, "dropped": 0, "tokens": 0, "droppedIds": []}
               for section in report["sections"].values())
    assert (report["totalTokens"], report["tokenBudget"], report["raw"]) == (0, 256, False)


def test_one_item_larger_than_the_budget_is_skipped_and_the_rest_of_its_section_kept():
    ranked = items("facts", 50, 400, 60) + items("events", 70)
    compiled = compile_sections([], ranked, budget=300)
    assert ids(compiled, "facts") == ["f0", "f2"]
    assert ids(compiled, "facts", "dropped") == ["f1"]
    assert ids(compiled, "events") == ["e0"]
    assert compiled.total_tokens == 180
    assert compiled.report()["sections"]["facts"] == {"included": 2, "dropped": 1, "tokens": 110,
                                                      "droppedIds": ["f1"]}


def test_an_item_that_no_longer_fits_is_skipped_for_a_later_smaller_one():
    ranked = items("facts", 200) + items("events", 90, 10)
    compiled = compile_sections([], ranked, budget=210)
    assert ids(compiled, "facts") == ["f0"]
    assert ids(compiled, "events") == ["e1"]
    assert ids(compiled, "events", "dropped") == ["e0"]


def test_exact_fit_includes_everything():
    policies = items("policies", 100, 56)
    ranked = items("facts", 50) + items("derived", 50)
    compiled = compile_sections(policies, ranked, budget=256)
    assert compiled.total_tokens == 256
    assert all(not compiled.dropped[name] for name in SECTIONS)


def test_one_token_over_drops_the_last_item_only():
    compiled = compile_sections(items("policies", 100), items("facts", 100, 57), budget=256)
    assert ids(compiled, "facts") == ["f0"]
    assert ids(compiled, "facts", "dropped") == ["f1"]


def test_policies_are_never_truncated():
    with pytest.raises(BudgetTooSmall) as caught:
        compile_sections(items("policies", 200, 100), items("facts", 1), budget=256)
    assert (caught.value.requested, caught.value.required) == (256, 300)


def test_policies_that_exactly_fit_leave_no_room_for_anything_else():
    compiled = compile_sections(items("policies", 256), items("facts", 1), budget=256)
    assert ids(compiled, "policies") == ["p0"]
    assert ids(compiled, "facts", "dropped") == ["f0"]
    assert compiled.policy_tokens == 256


def test_raw_includes_everything_and_reports_no_budget():
    compiled = compile_sections(items("policies", 10_000), items("facts", 50_000), budget=None)
    assert compiled.total_tokens == 60_000
    report = compiled.report()
    assert (report["tokenBudget"], report["raw"]) == (None, True)


def test_items_in_the_wrong_list_or_with_negative_costs_are_refused():
    with pytest.raises(ValueError):
        compile_sections(items("facts", 1), [], budget=300)
    with pytest.raises(ValueError):
        compile_sections([], items("policies", 1), budget=300)
    with pytest.raises(ValueError):
        compile_sections([], [Item("x", "facts", -1)], budget=300)
    with pytest.raises(ValueError):
        compile_sections([], [Item("x", "notes", 1)], budget=300)
