"""Workspace settings for retrieval: defaults, overrides by dotted name, type checks with a
clear 409 naming the setting, and their effect on POST /retrieve."""
import pytest

from catalog_app.models import Workspace
from memseek_site.errors import ApiError
from retrieval_app.settings import settings_from
from tests.retrieval_app.factories import event, fact, load, retrieve, write


def test_defaults():
    settings = settings_from({})
    assert (settings.token_budget, settings.min_vector_similarity, settings.hide_superseded) == (4000, 0.25, True)
    assert (settings.value_aware_enabled, settings.value_aware_weight) == (False, 0.2)
    assert dict(settings.weights) == {"fusion": 0.55, "recency": 0.15, "frequency": 0.1, "importance": 0.1,
                                      "confidence": 0.1}
    assert (settings.floor_ratio, settings.floor_minimum) == (0.35, 0.0)
    assert (settings.recency_half_life_hours, settings.frequency_midpoint) == (168, 5)


def test_object_settings_merge_over_their_defaults_and_other_apps_settings_are_ignored():
    settings = settings_from({"retrieval.weights": {"recency": 0.5}, "retrieval.floor": {"minimum": 0.1},
                              "brief.maxFacts": "anything"})
    assert settings.weights["recency"] == 0.5 and settings.weights["fusion"] == 0.55
    assert (settings.floor_ratio, settings.floor_minimum) == (0.35, 0.1)


@pytest.mark.parametrize(("stored", "setting"), [
    ({"retrieval.tokenBudget": 100}, "retrieval.tokenBudget"),
    ({"retrieval.tokenBudget": "4000"}, "retrieval.tokenBudget"),
    ({"retrieval.minVectorSimilarity": 2}, "retrieval.minVectorSimilarity"),
    ({"retrieval.hideSuperseded": "no"}, "retrieval.hideSuperseded"),
    ({"retrieval.valueAware.enabled": 1}, "retrieval.valueAware.enabled"),
    ({"retrieval.valueAware.weight": 1.5}, "retrieval.valueAware.weight"),
    ({"retrieval.weights": [0.5]}, "retrieval.weights"),
    ({"retrieval.weights": {"novelty": 1}}, "retrieval.weights.novelty"),
    ({"retrieval.weights": {"fusion": -1}}, "retrieval.weights.fusion"),
    ({"retrieval.weights": {name: 0 for name in ("fusion", "recency", "frequency", "importance", "confidence")}},
     "retrieval.weights"),
    ({"retrieval.floor": {"ratio": 2}}, "retrieval.floor.ratio"),
    ({"retrieval.recencyHalfLifeHours": 0}, "retrieval.recencyHalfLifeHours"),
    ({"retrieval.frequencyMidpoint": float("nan")}, "retrieval.frequencyMidpoint"),
    ({"retrieval.tokenbudget": 2000}, "retrieval.tokenbudget"),
])
def test_bad_stored_settings_fail_clearly(stored, setting):
    with pytest.raises(ApiError) as caught:
        settings_from(stored)
    assert (caught.value.code, caught.value.status, caught.value.extra["setting"]) == ("workspace_setting", 409,
                                                                                        setting)
    assert setting in caught.value.detail


def set_settings(workspace, **values):
    Workspace.objects.filter(pk=workspace.pk).update(settings=values)
    workspace.refresh_from_db()


def test_a_bad_setting_fails_the_call_with_409(workspace, api):
    load(workspace)
    set_settings(workspace, **{"retrieval.floor": {"ratio": "high"}})
    body = retrieve(api, {"query": "budget"}, status=409)
    assert (body["error"], body["setting"]) == ("workspace_setting", "retrieval.floor.ratio")


def test_token_budget_defaults_to_the_workspace_setting(workspace, api):
    load(workspace)
    assert retrieve(api, {"query": "budget"})["compilation"]["tokenBudget"] == 4000
    set_settings(workspace, **{"retrieval.tokenBudget": 1200})
    assert retrieve(api, {"query": "budget"})["compilation"]["tokenBudget"] == 1200
    assert retrieve(api, {"query": "budget", "tokenBudget": 900})["compilation"]["tokenBudget"] == 900


def test_weights_are_workspace_settings(workspace, api):
    load(workspace)
    low, high = write(workspace, [fact("a", "budget budget budget review"), fact("b", "budget note", importance=6)])
    order = [e["id"] for e in retrieve(api, {"query": "budget"})["sections"]["facts"]]
    assert order == [low, high]  # the stronger text match wins on fusion
    set_settings(workspace, **{"retrieval.weights": {"fusion": 0, "recency": 0, "frequency": 0, "importance": 1,
                                                     "confidence": 0}})
    order = [e["id"] for e in retrieve(api, {"query": "budget"})["sections"]["facts"]]
    assert order == [high, low]


def test_value_aware_selection_is_off_by_default_and_blends_when_enabled(workspace, api):
    load(workspace)
    write(workspace, [event("budget review")])
    entry = retrieve(api, {"query": "budget", "explain": True})["sections"]["events"][0]
    assert entry["explanation"]["valueAware"] == {"enabled": False}
    set_settings(workspace, **{"retrieval.valueAware.enabled": True, "retrieval.valueAware.weight": 0.5})
    explanation = retrieve(api, {"query": "budget", "explain": True})["sections"]["events"][0]["explanation"]
    assert explanation["valueAware"]["enabled"] is True
    assert explanation["valueAware"]["utility"] == 0.5
    assert explanation["score"] == pytest.approx(0.5 * explanation["valueAware"]["baseScore"] + 0.25)
