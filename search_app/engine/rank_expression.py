"""Rank expressions: the AST, its strict parser, mode checks and JSON form.

A rank expression is a small tree written as nested lists, ``[operator, argument, ...]``
(spec "The expression language"). This module keeps three invariants:

* A parsed tree is always well formed: known operators, right arity, finite numbers,
  ``saturate``/``decay`` options exactly ``{midpoint, exponent}`` and both > 0, at most
  ``MAX_DEPTH`` levels and ``MAX_NODES`` nodes. Every rejection names the indexed path of the
  offending item (``rank[1][0][2]``).
* ``rank_to_json(parse_rank(x))`` is the canonical list form, and parsing it again gives an
  equal tree, so hashes of rank expressions do not depend on how they were written.
* Evaluation (``rank_evaluate``) runs over the whole candidate set at once.

Depth counts nodes on the longest root-to-leaf path, the root being level 1; the list that
holds the children of ``sum``/``max`` is syntax, not a level. The shipped hybrid default
``sum > product > normalize > max > similarity`` is therefore exactly 5 levels deep.

Pure Python: no Django imports.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar, Union

from memseek_site.errors import ApiError, RequestError
from memseek_site.parsing import fail, parse_number

MAX_DEPTH = 5
MAX_NODES = 16
AGE_FIELDS = ("created_at", "occurred_at", "last_accessed")
SHAPE_OPTIONS = ("midpoint", "exponent")
MODES = ("vector", "text", "hybrid", "recent", "structured")
# Signals that depend on the query, and the modes that can compute them.
QUERY_SIGNAL_MODES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "similarity": ("vector", "hybrid"),
    "text_match": ("text", "hybrid"),
    "bm25": ("text", "hybrid"),
    "bm25_en": ("text", "hybrid"),
})


class RankError(RequestError):
    """An invalid rank expression. ``path`` is the indexed location, ``message`` says what to fix.

    The parser and ``validate_rank`` raise the error class their caller passes (a SearchSpec
    raises ``SpecError``, a catalog file ``CatalogError``); this one is the default.
    """


# --- the AST ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Similarity:
    """``[similarity]``: 1 - cosine distance of query and record (vector and hybrid only)."""

    op: ClassVar[str] = "similarity"


@dataclass(frozen=True, slots=True)
class TextMatch:
    """``[text_match]``: ``ts_rank_cd`` of the English full-text query (text and hybrid only)."""

    op: ClassVar[str] = "text_match"


@dataclass(frozen=True, slots=True)
class Bm25:
    """``[bm25]``: exact BM25 (``bm25_v1``) of the query against the record (text and hybrid only)."""

    op: ClassVar[str] = "bm25"


@dataclass(frozen=True, slots=True)
class Bm25En:
    """``[bm25_en]``: exact BM25 over stemmed English terms (``en_v1``) of the query against the
    record (text and hybrid only)."""

    op: ClassVar[str] = "bm25_en"


@dataclass(frozen=True, slots=True)
class Score:
    """``[score, name]``: the stored ``scores[name]``."""

    name: str
    op: ClassVar[str] = "score"


@dataclass(frozen=True, slots=True)
class AgeHours:
    """``[age_hours, field]``: hours since ``created_at``/``occurred_at``/``last_accessed``, future = 0."""

    field: str
    op: ClassVar[str] = "age_hours"


@dataclass(frozen=True, slots=True)
class Const:
    """``[const, n]``: a fixed finite number."""

    value: float
    op: ClassVar[str] = "const"


@dataclass(frozen=True, slots=True)
class Sum:
    """``[sum, [a, b, ...]]``: the children added, in order."""

    children: tuple[RankNode, ...]
    op: ClassVar[str] = "sum"


@dataclass(frozen=True, slots=True)
class Max:
    """``[max, [a, b, ...]]``: the largest child per candidate."""

    children: tuple[RankNode, ...]
    op: ClassVar[str] = "max"


@dataclass(frozen=True, slots=True)
class Product:
    """``[product, factor, a]``: ``factor * a``; a negative factor makes a penalty."""

    factor: float
    child: RankNode
    op: ClassVar[str] = "product"


@dataclass(frozen=True, slots=True)
class Normalize:
    """``[normalize, a]``: min-max of ``a`` across the candidates; all equal gives all 0."""

    child: RankNode
    op: ClassVar[str] = "normalize"


@dataclass(frozen=True, slots=True)
class Saturate:
    """``[saturate, a, {midpoint, exponent}]``: ``x^e / (x^e + m^e)`` with ``x`` clamped at 0."""

    child: RankNode
    midpoint: float
    exponent: float
    op: ClassVar[str] = "saturate"


@dataclass(frozen=True, slots=True)
class Decay:
    """``[decay, a, {midpoint, exponent}]``: ``1 / (1 + x^e / m^e)`` with ``x`` clamped at 0."""

    child: RankNode
    midpoint: float
    exponent: float
    op: ClassVar[str] = "decay"


RankNode = Union[Similarity, TextMatch, Bm25, Bm25En, Score, AgeHours, Const, Sum, Max, Product, Normalize, Saturate,
                 Decay]
SIGNAL_TYPES = (Similarity, TextMatch, Bm25, Bm25En, Score, AgeHours, Const)
OPERATORS = ("similarity", "text_match", "bm25", "bm25_en", "score", "age_hours", "const",
             "sum", "max", "product", "normalize", "saturate", "decay")
_USAGE = {
    "similarity": "[similarity]", "text_match": "[text_match]", "bm25": "[bm25]", "bm25_en": "[bm25_en]",
    "score": "[score, name]", "age_hours": "[age_hours, created_at|occurred_at|last_accessed]",
    "const": "[const, n]", "sum": "[sum, [a, b, ...]]", "max": "[max, [a, b, ...]]",
    "product": "[product, factor, a]", "normalize": "[normalize, a]",
    "saturate": "[saturate, a, {midpoint: m, exponent: e}]", "decay": "[decay, a, {midpoint: m, exponent: e}]",
}
# Items in the list form, operator included.
_ARITY = {"similarity": 1, "text_match": 1, "bm25": 1, "bm25_en": 1, "score": 2, "age_hours": 2, "const": 2,
          "sum": 2, "max": 2, "product": 3, "normalize": 2, "saturate": 3, "decay": 3}

# The formulas the service ships in conf/rank_default.yaml (spec "Rank expressions"), per mode,
# in list form. Read-only: deep-copy before changing one.
_DECAY_LAST_ACCESSED = ["product", 1.0, ["decay", ["age_hours", "last_accessed"], {"midpoint": 24, "exponent": 1}]]
SHIPPED_DEFAULT_VARIANTS: Mapping[str, list] = MappingProxyType({
    "hybrid": ["sum", [["product", 1.0, ["normalize", ["max", [["similarity"], ["text_match"]]]]],
                       _DECAY_LAST_ACCESSED]],
    "vector": ["sum", [["product", 1.0, ["normalize", ["similarity"]]], _DECAY_LAST_ACCESSED]],
    "text": ["sum", [["product", 1.0, ["normalize", ["text_match"]]], _DECAY_LAST_ACCESSED]],
    "recent": ["decay", ["age_hours", "occurred_at"], {"midpoint": 24, "exponent": 1}],
})


# --- parsing ----------------------------------------------------------------------------------

def parse_rank(raw, path: str = "rank", *, error: type[ApiError] = RankError) -> RankNode:
    """Parse the list form ``[operator, argument, ...]`` into a frozen AST.

    Takes the decoded YAML/JSON value, the path to report errors under and the error class to
    raise. Returns the root node. Raises ``error`` at the offending path for anything
    malformed: not a list, unknown operator, wrong arity, non-finite or boolean numbers, an
    unknown ``age_hours`` field, bad ``saturate``/``decay`` options, more than ``MAX_DEPTH``
    levels or ``MAX_NODES`` nodes.
    Mode and scorer-name checks are ``validate_rank``'s job.
    """
    return _Parser(path, error).node(raw, path, 1)


class _Parser:
    def __init__(self, root_path: str, error: type[ApiError]):
        self.root_path = root_path
        self.error = error
        self.count = 0

    def node(self, raw, path: str, depth: int) -> RankNode:
        if depth > MAX_DEPTH:
            raise fail(path, f"nests deeper than {MAX_DEPTH} levels; flatten the expression", error=self.error)
        self.count += 1
        if self.count > MAX_NODES:
            raise fail(self.root_path, f"has more than {MAX_NODES} nodes (the one past the limit is at {path})",
                       error=self.error)
        if not isinstance(raw, (list, tuple)):
            raise fail(path, f"must be a list [operator, argument, ...], got {_type_name(raw)}", error=self.error)
        if not raw:
            raise fail(path, "must not be empty; the first item is the operator", error=self.error)
        op = raw[0]
        if not isinstance(op, str):
            raise fail(f"{path}[0]", f"the operator must be a string, got {_type_name(op)}", error=self.error)
        if op not in _USAGE:
            raise fail(f"{path}[0]", f"unknown operator {op!r}; expected one of {', '.join(OPERATORS)}",
                       error=self.error)
        if len(raw) != _ARITY[op]:
            raise fail(path, f"{op} takes {_ARITY[op] - 1} argument(s), got {len(raw) - 1}; write {_USAGE[op]}",
                       error=self.error)
        return getattr(self, f"_{op}")(raw, path, depth)

    def _similarity(self, raw, path, depth):
        return Similarity()

    def _text_match(self, raw, path, depth):
        return TextMatch()

    def _bm25(self, raw, path, depth):
        return Bm25()

    def _bm25_en(self, raw, path, depth):
        return Bm25En()

    def _score(self, raw, path, depth):
        name = raw[1]
        if not isinstance(name, str) or not name.strip():
            raise fail(f"{path}[1]", "the score name must be a non-blank string", error=self.error)
        return Score(name)

    def _age_hours(self, raw, path, depth):
        if raw[1] not in AGE_FIELDS:
            raise fail(f"{path}[1]", f"age_hours reads one of {', '.join(AGE_FIELDS)}, got {raw[1]!r}",
                       error=self.error)
        return AgeHours(raw[1])

    def _const(self, raw, path, depth):
        return Const(parse_number(raw[1], f"{path}[1]", error=self.error))

    def _children(self, raw, path, depth) -> tuple[RankNode, ...]:
        items = raw[1]
        if not isinstance(items, (list, tuple)) or not items:
            raise fail(f"{path}[1]", f"{raw[0]} takes a non-empty list of expressions; write {_USAGE[raw[0]]}",
                       error=self.error)
        return tuple(self.node(item, f"{path}[1][{index}]", depth + 1) for index, item in enumerate(items))

    def _sum(self, raw, path, depth):
        return Sum(self._children(raw, path, depth))

    def _max(self, raw, path, depth):
        return Max(self._children(raw, path, depth))

    def _product(self, raw, path, depth):
        factor = parse_number(raw[1], f"{path}[1]", error=self.error)
        return Product(factor, self.node(raw[2], f"{path}[2]", depth + 1))

    def _normalize(self, raw, path, depth):
        return Normalize(self.node(raw[1], f"{path}[1]", depth + 1))

    def _shape(self, raw, path, depth):
        child = self.node(raw[1], f"{path}[1]", depth + 1)
        options, options_path = raw[2], f"{path}[2]"
        if not isinstance(options, Mapping):
            raise fail(options_path, f"{raw[0]} options must be an object {{midpoint, exponent}}, "
                                     f"got {_type_name(options)}", error=self.error)
        for key in options:
            if key not in SHAPE_OPTIONS:
                raise fail(f"{options_path}.{key}", f"unknown option; {raw[0]} takes exactly midpoint and exponent",
                           error=self.error)
        values = []
        for key in SHAPE_OPTIONS:
            if key not in options:
                raise fail(f"{options_path}.{key}", "is required", error=self.error)
            value = parse_number(options[key], f"{options_path}.{key}", error=self.error)
            if value <= 0:
                raise fail(f"{options_path}.{key}", f"must be greater than 0, got {options[key]!r}", error=self.error)
            values.append(value)
        return child, values[0], values[1]

    def _saturate(self, raw, path, depth):
        return Saturate(*self._shape(raw, path, depth))

    def _decay(self, raw, path, depth):
        return Decay(*self._shape(raw, path, depth))


def _type_name(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, Mapping):
        return "an object"
    return {str: "a string", int: "an integer", float: "a number", list: "a list", tuple: "a list"}.get(
        type(value), type(value).__name__)


# --- structure --------------------------------------------------------------------------------

def rank_children(node: RankNode, path: str = "rank") -> tuple[tuple[RankNode, str], ...]:
    """The direct child nodes of ``node`` with their list-form paths (``path[1][0]``, ``path[2]``)."""
    if isinstance(node, (Sum, Max)):
        return tuple((child, f"{path}[1][{index}]") for index, child in enumerate(node.children))
    if isinstance(node, Product):
        return ((node.child, f"{path}[2]"),)
    if isinstance(node, (Normalize, Saturate, Decay)):
        return ((node.child, f"{path}[1]"),)
    return ()


def rank_depth(node: RankNode) -> int:
    """Levels on the longest root-to-leaf path; a lone signal is 1."""
    return 1 + max((rank_depth(child) for child, _ in rank_children(node)), default=0)


def rank_node_count(node: RankNode) -> int:
    """Number of operator nodes in the tree (numbers and option objects are arguments, not nodes)."""
    return 1 + sum(rank_node_count(child) for child, _ in rank_children(node))


def validate_rank(node: RankNode, *, mode: str | None, score_names: Collection[str] | None,
                  post_fusion: bool = False, path: str = "rank", error: type[ApiError] = RankError) -> None:
    """Check a parsed expression against where it runs.

    ``mode`` is the search mode (``vector``, ``text``, ``hybrid``, ``recent``; ``structured``
    accepts no rank at all); it is ignored when ``post_fusion`` is true. ``score_names`` are the
    declared score names reachable by the search; ``None`` where no catalog is known yet (the
    SearchSpec parser checks the signals and modes, resolution checks the names).
    ``post_fusion`` marks a multi-source ``boost``, which may use only ``score``, ``age_hours``,
    ``const`` and shapers.
    Returns None. Raises ``error`` (default ``RankError``) naming the offending node's path;
    ``ValueError`` for a mode that is not one of ``MODES``.
    """
    if not post_fusion:
        if mode not in MODES:
            raise ValueError(f"unknown search mode {mode!r}")
        if mode == "structured":
            raise fail(path, "structured search is ordered by order_by; rank is not allowed", error=error)
    _validate(node, path, mode, None if score_names is None else frozenset(score_names), post_fusion, error)


def _validate(node: RankNode, path: str, mode: str | None, score_names: frozenset[str] | None, post_fusion: bool,
              error: type[ApiError]) -> None:
    if node.op in QUERY_SIGNAL_MODES:
        if post_fusion:
            raise fail(path, f"{node.op} depends on the query and cannot be used in a post-fusion boost; "
                             "use score, age_hours, const and shapers", error=error)
        allowed = QUERY_SIGNAL_MODES[node.op]
        if mode not in allowed:
            raise fail(path, f"{node.op} is available only in {' and '.join(allowed)} mode, not {mode}", error=error)
    elif isinstance(node, Score) and score_names is not None and node.name not in score_names:
        known = ", ".join(sorted(score_names)) or "none declared"
        raise fail(f"{path}[1]", f"unknown score {node.name!r}; declared scores: {known}", error=error)
    for child, child_path in rank_children(node, path):
        _validate(child, child_path, mode, score_names, post_fusion, error)


def rank_signals(node: RankNode) -> frozenset[str]:
    """The signal operators the tree reads (``similarity``, ``score``, ...), e.g. to skip work."""
    own = frozenset({node.op}) if isinstance(node, SIGNAL_TYPES) else frozenset()
    return own.union(*(rank_signals(child) for child, _ in rank_children(node)))


def rank_to_json(node: RankNode) -> list:
    """The canonical list form of ``node``; numbers are floats. ``parse_rank`` of it is equal to ``node``."""
    if isinstance(node, Score):
        return ["score", node.name]
    if isinstance(node, AgeHours):
        return ["age_hours", node.field]
    if isinstance(node, Const):
        return ["const", node.value]
    if isinstance(node, (Sum, Max)):
        return [node.op, [rank_to_json(child) for child in node.children]]
    if isinstance(node, Product):
        return ["product", node.factor, rank_to_json(node.child)]
    if isinstance(node, Normalize):
        return ["normalize", rank_to_json(node.child)]
    if isinstance(node, (Saturate, Decay)):
        return [node.op, rank_to_json(node.child), {"midpoint": node.midpoint, "exponent": node.exponent}]
    return [node.op]
