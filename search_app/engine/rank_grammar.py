"""The rank expression grammar as a JSON Schema 2020-12 document, served by GET /rank/schema
and embedded in the SearchSpec schema. Limits and signal modes come from ``rank_expression``."""
from __future__ import annotations

from catalog_app.bm25_formula import B, K1

from .rank_expression import AGE_FIELDS, MAX_DEPTH, MAX_NODES, OPERATORS, QUERY_SIGNAL_MODES, SHAPE_OPTIONS

def _array(op: str, description: str, *arguments: dict, **extra) -> dict:
    items = [{"const": op}, *arguments]
    return {"type": "array", "description": description, "prefixItems": items,
            "minItems": len(items), "maxItems": len(items), **extra}


_NODE = {"$ref": "#/$defs/node"}
_NODES = {"type": "array", "minItems": 1, "items": _NODE}
_NUMBER = {"type": "number"}
_OPTIONS = {"$ref": "#/$defs/shape_options"}

RANK_GRAMMAR: dict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Memseek rank expression",
    "description": "A tree of [operator, argument, ...] lists evaluated once per candidate; higher wins. "
                   "Any missing signal is 0. Every value produced must be finite.",
    "$ref": "#/$defs/node",
    "x-limits": {"max_depth": MAX_DEPTH, "max_nodes": MAX_NODES,
                 "depth_counting": "nodes on the longest root-to-leaf path, root = 1"},
    "x-signal-modes": {op: list(modes) for op, modes in QUERY_SIGNAL_MODES.items()},
    "x-post-fusion-boost": ["score", "age_hours", "const", "sum", "max", "product", "normalize", "saturate", "decay"],
    "$defs": {
        "node": {"oneOf": [{"$ref": f"#/$defs/{op}"} for op in OPERATORS]},
        "shape_options": {
            "type": "object", "additionalProperties": False, "required": list(SHAPE_OPTIONS),
            "properties": {"midpoint": {"type": "number", "exclusiveMinimum": 0},
                           "exponent": {"type": "number", "exclusiveMinimum": 0}},
        },
        "similarity": _array("similarity", "1 - cosine distance of query and record; vector and hybrid only.",
                             **{"x-modes": ["vector", "hybrid"]}),
        "text_match": _array("text_match", "PostgreSQL ts_rank_cd over English full-text search; text and hybrid only.",
                             **{"x-modes": ["text", "hybrid"]}),
        "bm25": _array("bm25", f"Exact BM25 (bm25_v1, k1 {K1}, b {B}) of the query against the record; "
                               "text and hybrid only.", **{"x-modes": ["text", "hybrid"]}),
        "bm25_en": _array("bm25_en", "Exact BM25 over stemmed English terms (en_v1: bm25s's English analysis, "
                                     f"k1 {K1}, b {B}) of the query against the record; text and hybrid only.",
                          **{"x-modes": ["text", "hybrid"]}),
        "score": _array("score", "The stored scores[name]; the name must be a declared score.",
                        {"type": "string", "minLength": 1}),
        "age_hours": _array("age_hours", "Hours since the timestamp; a future timestamp counts as 0.",
                            {"enum": list(AGE_FIELDS)}),
        "const": _array("const", "A fixed finite number.", _NUMBER),
        "sum": _array("sum", "Adds the children.", _NODES),
        "max": _array("max", "The largest child.", _NODES),
        "product": _array("product", "factor * child; a negative factor is a penalty.", _NUMBER, _NODE),
        "normalize": _array("normalize", "(x - min) / (max - min) across the candidates; all equal gives 0.", _NODE),
        "saturate": _array("saturate", "x^e / (x^e + m^e), input clamped at 0; 0.5 at x = m.", _NODE, _OPTIONS),
        "decay": _array("decay", "1 / (1 + x^e / m^e), input clamped at 0; 0.5 at x = m.", _NODE, _OPTIONS),
    },
}
