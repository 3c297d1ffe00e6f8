"""SQL fragments shared by candidate and reload queries: scope first, then typed filters.

No fragment may widen a search: the scope clause restricts to the workspace, ready,
non-retracted rows of the reachable collection versions and every scope rule; typed-filter
push-down only narrows further and is conservative (a row the exact recheck would keep is
never excluded here). Values are always parameters; the only literals are validated names.
"""
from __future__ import annotations

import json

from catalog_app.record_sql import record_scope

from ..engine.resolve import FieldAccess, ResolvedSource
from ..engine.spec import Condition


def scope_clause(resolved: ResolvedSource, workspace_id: int, alias: str = "r") -> tuple[str, list]:
    """The WHERE clause of everything the source's scope admits (``catalog_app.record_sql.record_scope``)."""
    scope = resolved.source.scope
    by_collection: dict[str, list[int]] = {}
    for collection in resolved.versions:
        by_collection.setdefault(collection.name, []).append(collection.version)
    clause = record_scope(workspace_id=workspace_id, collection_versions=by_collection, entities=scope.entities,
                          types=scope.types, status=scope.status, keyed=scope.keyed,
                          occurred_after=scope.occurred_after, occurred_before=scope.occurred_before,
                          depth_lte=scope.depth_lte, current=scope.versions == "current", alias=alias)
    return clause.sql, list(clause.params)


def filter_clause(resolved: ResolvedSource, alias: str = "r") -> tuple[str, list]:
    """Typed ``where`` conditions pushed into SQL, per collection version (each version reads
    the field through its own declaration)."""
    parts, params = [], []
    for condition in resolved.source.where:
        by_version = resolved.fields[condition.field]
        branches = []
        for (collection, version), access in sorted(by_version.items()):
            sql, values = _condition_sql(condition, access, alias)
            branches.append(f"({alias}.collection = %s AND {alias}.collection_version = %s AND {sql})")
            params.extend([collection, version, *values])
        parts.append("(" + " OR ".join(branches) + ")")
    return (" AND ".join(parts) if parts else "TRUE"), params


def value_expression(access: FieldAccess, alias: str) -> str:
    """The field's JSON value (first non-null along its fallback paths)."""
    exprs = [f"NULLIF({alias}.{path[0]} #> '{{{','.join(path[1:])}}}', 'null'::jsonb)" for path in access.paths]
    return exprs[0] if len(exprs) == 1 else f"COALESCE({', '.join(exprs)})"


def typed_expression(access: FieldAccess, alias: str) -> str:
    """The field as a typed SQL scalar for comparison and sorting; NULL when absent or mistyped."""
    value = value_expression(access, alias)
    kind = access.field.type
    if kind == "string":
        return f"(CASE WHEN jsonb_typeof({value}) = 'string' THEN {value} #>> '{{}}' END) COLLATE \"C\""
    if kind in ("number", "integer"):
        return f"(CASE WHEN jsonb_typeof({value}) = 'number' THEN ({value})::numeric END)"
    if kind == "boolean":
        return f"(CASE WHEN jsonb_typeof({value}) = 'boolean' THEN ({value})::boolean END)"
    return f"memseek_timestamptz(CASE WHEN jsonb_typeof({value}) = 'string' THEN {value} #>> '{{}}' END)"


def _condition_sql(condition: Condition, access: FieldAccess, alias: str) -> tuple[str, list]:
    value = value_expression(access, alias)
    op, operand = condition.op, condition.operand
    if op == "exists":
        return (f"{value} IS NOT NULL", []) if operand else (f"{value} IS NULL", [])
    if op == "eq" and access.field.is_array:
        return f"{value} = %s::jsonb", [json.dumps(list(operand))]
    if op == "contains_all":
        return f"{value} @> %s::jsonb", [json.dumps(list(operand))]
    if op == "contains_any":
        return (f"(jsonb_typeof({value}) = 'array' AND EXISTS (SELECT 1 FROM jsonb_array_elements({value}) item "
                f"WHERE item = ANY(%s::jsonb[])))", [[json.dumps(v) for v in operand]])
    if access.field.type == "datetime" and op in ("eq", "in"):
        # Equal instants can be written differently ("Z" vs "+00:00"): compare typed.
        typed = typed_expression(access, alias)
        if op == "eq":
            return f"{typed} = %s::timestamptz", [operand]
        return f"{typed} = ANY(%s::timestamptz[])", [list(operand)]
    if op == "eq":
        return f"{value} = %s::jsonb", [json.dumps(operand)]
    if op == "in":
        return f"{value} = ANY(%s::jsonb[])", [[json.dumps(v) for v in operand]]
    symbol = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[op]
    typed = typed_expression(access, alias)
    cast = "::timestamptz" if access.field.type == "datetime" else "::numeric"
    return f"{typed} {symbol} %s{cast}", [operand]


def order_clause(resolved: ResolvedSource, alias: str = "r") -> tuple[str, list]:
    """Structured ORDER BY: each field typed, per collection version, NULLS LAST both ways,
    then ingestion order ascending and id."""
    parts, params = [], []
    for key in resolved.source.order_by:
        by_version = resolved.fields[key.field]
        if len({access.paths for access in by_version.values()}) == 1:
            expr = typed_expression(next(iter(by_version.values())), alias)
        else:
            whens = []
            for (collection, version), access in sorted(by_version.items()):
                whens.append(f"WHEN {alias}.collection = %s AND {alias}.collection_version = %s "
                             f"THEN {typed_expression(access, alias)}")
                params.extend([collection, version])
            expr = f"(CASE {' '.join(whens)} END)"
        parts.append(f"{expr} {key.direction.upper()} NULLS LAST")
    parts.extend([f"{alias}.seq ASC", f"{alias}.id ASC"])
    return ", ".join(parts), params
