"""What a lexical request reads, compiled once against the workspace catalog.

Two sets of rows, as lexical-search.md counts them:

* the **source**: every row of this workspace in the scope's collections (all of them when the
  scope names none), in any version, status, readiness or lane position, tombstones included.
  The scan walks these in ascending UUID order and ``scanned_records`` / ``scanned_bytes``
  count them;
* the **corpus**: the source rows that are visible and pass the scope and the query filters
  (``catalog_app.record_sql.record_scope``: live, the reachable collection versions, entities,
  types, status, keyed, versions — ``current`` keeps only rows current in their lane — and the
  time and depth bounds; then ``query.type`` and ``query.tag``). N, df and the average length
  of BM25 are counted over the corpus rows among those scanned, and only they are hits.

``query.tag`` filters on the collection's declared field named ``tags`` (for the example
catalog ``content.tags``, a list of strings): a list field matches when it holds the tag, a
string field when it equals it. Collection versions that do not declare a filterable string
``tags`` field cannot match; a scope where none does is a ``400`` at ``query.tag``.
"""
from __future__ import annotations

from dataclasses import dataclass

from catalog_app.catalog.registry import Catalog
from catalog_app.lexical.query import IndexScope
from catalog_app.record_sql import Clause, record_scope
from search_app.backends.pg_scope import value_expression
from search_app.engine.resolve import FieldAccess, ResolveError, field_paths, scope_versions
from search_app.engine.spec import Scope, Source

from .request import LexicalRequest, LexicalRequestError

TAG_FIELD = "tags"


@dataclass(frozen=True, slots=True)
class LexicalCorpus:
    workspace_id: int
    collections: tuple[str, ...]  # the source: these collections of the workspace
    corpus: Clause  # over alias ``r``: the source rows that count (visible, scope, filters)
    # The same corpus as the lexical index reads it; None when the scope holds a condition the
    # index does not carry (time or depth bounds, every version of a lane, a tag filter).
    index_scope: IndexScope | None


def lexical_corpus(*, workspace_id: int, request: LexicalRequest, catalog: Catalog) -> LexicalCorpus:
    """Compile ``request``'s scope; raises ``LexicalRequestError`` at the scope's paths."""
    scope = request.scope
    source = Source(name=None, mode="text", scope=scope, where=(), order_by=(), rank=None, candidates=None, k=1)
    try:
        versions = scope_versions(source, catalog)
    except ResolveError as error:
        raise error.relocated(error.path, code="lexical_request") from None
    by_collection: dict[str, list[int]] = {}
    for collection in versions:
        by_collection.setdefault(collection.name, []).append(collection.version)
    types = _types(scope, request.type)
    corpus = record_scope(workspace_id=workspace_id, collection_versions=by_collection, entities=scope.entities,
                          types=types, status=scope.status, keyed=scope.keyed, occurred_after=scope.occurred_after,
                          occurred_before=scope.occurred_before, depth_lte=scope.depth_lte,
                          current=scope.versions == "current")
    if request.tag is not None:
        corpus = corpus & _tag_clause(request.tag, versions, catalog)
    collections = tuple(sorted(by_collection))
    index_scope = None
    if (scope.versions == "current" and scope.occurred_after is None and scope.occurred_before is None
            and scope.depth_lte is None and request.tag is None):
        index_scope = IndexScope(
            collection_ids=collections, statuses=("active", "draft") if scope.status == "all" else (scope.status,),
            types=types, keyed=scope.keyed, entities=scope.entities,
            versions=tuple((c.name, c.version) for c in versions) if scope.collection_versions else None)
    return LexicalCorpus(workspace_id=workspace_id, collections=collections, corpus=corpus, index_scope=index_scope)


def _types(scope: Scope, record_type: str | None) -> tuple[str, ...] | None:
    if record_type is None:
        return scope.types
    if scope.types is not None and record_type not in scope.types:
        return ()
    return (record_type,)


def _tag_clause(tag: str, versions, catalog: Catalog) -> Clause:
    branches, params = [], []
    for collection in versions:
        declared = collection.fields.get(TAG_FIELD)
        if declared is None or not declared.filter or declared.type != "string":
            continue
        value = value_expression(FieldAccess(declared, field_paths(declared, catalog)), "r")
        test = f"{value} @> jsonb_build_array(%s::text)" if declared.is_array else f"{value} = to_jsonb(%s::text)"
        branches.append(f"(r.collection = %s AND r.collection_version = %s AND {test})")
        params.extend([collection.name, collection.version, tag])
    if not branches:
        raise LexicalRequestError("lexical_request", f"no collection in scope declares a filterable string field "
                                  f"named {TAG_FIELD!r}, so no record can carry a tag", "query.tag")
    return Clause("(" + " OR ".join(branches) + ")", tuple(params))
