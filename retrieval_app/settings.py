"""Effective retrieval settings of a workspace: stored overrides over documented defaults.

``Workspace.settings`` holds overrides by dotted name, exactly as the spec writes them
(``{"retrieval.tokenBudget": 2000, "retrieval.weights": {"recency": 0.3}}``). Object-valued
settings (``retrieval.weights``, ``retrieval.floor``) merge key by key over their defaults.
Every value is type- and range-checked when read; a bad stored value, or an unknown
``retrieval.*`` name, fails the call with ``409 workspace_setting`` naming the setting, never
a silent fallback. Names outside ``retrieval.`` belong to other apps and are ignored here.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from types import MappingProxyType

from memseek_site.errors import SettingError
from memseek_site.parsing import parse_bool, parse_int, parse_number, parse_object

FACTORS = ("fusion", "recency", "frequency", "importance", "confidence")
MIN_BUDGET = 256
MAX_BUDGET = 32_000
DEFAULTS: dict[str, object] = {
    "retrieval.tokenBudget": 4000,
    "retrieval.minVectorSimilarity": 0.25,
    "retrieval.hideSuperseded": True,
    "retrieval.valueAware.enabled": False,
    "retrieval.valueAware.weight": 0.2,
    "retrieval.weights": {"fusion": 0.55, "recency": 0.15, "frequency": 0.1, "importance": 0.1, "confidence": 0.1},
    "retrieval.floor": {"ratio": 0.35, "minimum": 0.0},
    "retrieval.recencyHalfLifeHours": 168,
    "retrieval.frequencyMidpoint": 5,
    "retrieval.memory.dailyModelCalls": 1000,
}


@dataclass(frozen=True, slots=True)
class RetrievalSettings:
    token_budget: int
    min_vector_similarity: float
    hide_superseded: bool
    value_aware_enabled: bool
    value_aware_weight: float
    weights: MappingProxyType  # factor -> weight
    floor_ratio: float
    floor_minimum: float
    recency_half_life_hours: float
    frequency_midpoint: float
    memory_daily_model_calls: int  # POST /memory/search filter calls per UTC day; 0: never call


def retrieval_settings(workspace) -> RetrievalSettings:
    """The effective settings of ``workspace``; raises ``SettingError`` (``workspace_setting``)."""
    return settings_from(getattr(workspace, "settings", None) or {})


def settings_from(stored) -> RetrievalSettings:
    """Pure form of ``retrieval_settings`` over the stored overrides mapping."""
    if not isinstance(stored, dict):
        raise _bad("settings", "workspace settings must be an object of dotted names")
    for name in stored:
        if name.startswith("retrieval.") and name not in DEFAULTS:
            raise _bad(name, f"unknown setting; known: {', '.join(sorted(DEFAULTS))}")
    value = {name: stored.get(name, default) for name, default in DEFAULTS.items()}
    weights = _object(value["retrieval.weights"], "retrieval.weights", DEFAULTS["retrieval.weights"])
    for factor in FACTORS:
        _number(weights[factor], f"retrieval.weights.{factor}", minimum=0)
    if sum(weights.values()) <= 0:
        raise _bad("retrieval.weights", "at least one factor weight must be above 0")
    floor = _object(value["retrieval.floor"], "retrieval.floor", DEFAULTS["retrieval.floor"])
    return RetrievalSettings(
        token_budget=_integer(value["retrieval.tokenBudget"], "retrieval.tokenBudget", minimum=MIN_BUDGET,
                              maximum=MAX_BUDGET),
        min_vector_similarity=_number(value["retrieval.minVectorSimilarity"], "retrieval.minVectorSimilarity",
                                      minimum=-1, maximum=1),
        hide_superseded=_boolean(value["retrieval.hideSuperseded"], "retrieval.hideSuperseded"),
        value_aware_enabled=_boolean(value["retrieval.valueAware.enabled"], "retrieval.valueAware.enabled"),
        value_aware_weight=_number(value["retrieval.valueAware.weight"], "retrieval.valueAware.weight", minimum=0,
                                   maximum=1),
        weights=MappingProxyType({factor: float(weights[factor]) for factor in FACTORS}),
        floor_ratio=_number(floor["ratio"], "retrieval.floor.ratio", minimum=0, maximum=1),
        floor_minimum=_number(floor["minimum"], "retrieval.floor.minimum", minimum=0, maximum=1),
        recency_half_life_hours=_positive(value["retrieval.recencyHalfLifeHours"], "retrieval.recencyHalfLifeHours"),
        frequency_midpoint=_positive(value["retrieval.frequencyMidpoint"], "retrieval.frequencyMidpoint"),
        memory_daily_model_calls=_integer(value["retrieval.memory.dailyModelCalls"],
                                          "retrieval.memory.dailyModelCalls", minimum=0, maximum=1_000_000),
    )


def _bad(name: str, message: str) -> SettingError:
    return SettingError("workspace_setting", message, name)


def _object(value, name: str, defaults: dict) -> dict:
    return {**defaults, **parse_object(value, name, allowed=defaults, error=SettingError)}


_number = partial(parse_number, error=SettingError)
_integer = partial(parse_int, error=SettingError)
_boolean = partial(parse_bool, error=SettingError)


def _positive(value, name: str) -> float:
    number = _number(value, name, minimum=0)
    if number <= 0:
        raise _bad(name, "must be above 0")
    return number
