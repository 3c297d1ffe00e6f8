r"""``GET /context``: a token-budgeted, prompt-ready context for one entity and one task.

Three sections are packed in order, each given a share of the budget left after the fence:

* ``document`` (30%): the entity's current facts — current (no newer row in the same
  entity/collection/key/status lane, ready or not), active, ready, non-retracted keyed rows,
  by ``scores.importance`` descending (rows without it last), then ``seq`` descending;
* ``search`` (40%): a hybrid search with ``q = task``, ``k = 100``, scoped to the entity (and
  the requested collections), run by the search engine, so it gets the same canonical recheck
  and ranking as ``POST /search``;
* ``recent`` (30%): the entity's current, active, ready, non-retracted rows by ``occurred_at``
  descending, then ``seq`` descending. "Current" here too, so a superseded fact never reaches
  the prompt beside its replacement; events are always current.

``document`` and ``recent`` consider at most 200 candidates each. There is no ``delta``
section and no ``consumer`` parameter: Memseek keeps no consumer cursors.

Invariants kept here:

* Every row appears at most once: a row already emitted by an earlier section is passed over
  (the first section to emit it wins). A row skipped for lack of room in one section may still
  be emitted by a later one, which has more room thanks to spill.
* Rows are whole compact rows (``render_row``, escaped) and are never cut. A row that does not
  fit is skipped and the next one tried; ``truncated`` is true when some candidate row was
  left out of the text (or a requested fence could not be written at all).
* Budget caps are cumulative — section i may bring the running total up to
  ``floor(available * (share_1 + ... + share_i) / 100)`` — so whatever a section leaves unused
  spills forward, and the last cap is the whole available budget.
* ``tokens == count_tokens(rendered) <= budget``.

Why the running total is exact (the additivity argument of ``search_app.engine.render``:
cl100k never lets a token span a newline that is followed by a non-whitespace character, and
every row starts with ``[``, the closing tag with ``<``). Write ``inner(r) =
count_tokens(r + "\n")`` and ``tail(r)`` for the cost of a row that is the last one:

* bare text (rows joined by ``\n``): ``tokens = sum(inner(r) for rows but the last) +
  tail(last)`` with ``tail(r) = count_tokens(r)``;
* fenced text (``head + rows each followed by \n + close``): ``tokens = count(head) +
  count(close) + sum(inner(r))``, i.e. ``tail = inner``; the fence's own tokens are charged
  before any row.

Appending a row to text ending in row ``p`` therefore adds exactly ``inner(p) - tail(p) +
tail(new)``, which is what the packer charges; a section's ``tokens`` is what its rows
contribute by this sum, so the sections' tokens plus the fence overhead equal ``tokens``
whenever at least one row is emitted.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import F
from django.db.models.expressions import RawSQL

from catalog_app.bm25_terms import query_terms_check
from catalog_app.catalog.registry import Catalog
from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.models import Record
from catalog_app.record_limits import ENTITY_CHARS
from catalog_app.record_sql import RECORD, current_in_lane_q, live_q
from catalog_app.selectors import json_bytes
from catalog_app.tasks import enqueue_touch
from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError
from memseek_site.parsing import PUBLIC_NAME, fail, parse_int, parse_string

# _fence_parts is the element's head and close as search rendering writes them; sharing it keeps
# the two fence formats from ever drifting apart.
from search_app.engine.render import Fence, _fence_parts, render_row
from search_app.engine.rendered_rows import render_row_of, rendered_score_names
from search_app.engine.tokens import count_tokens
from search_app.services import search_execute, search_spec_parse

SECTIONS: tuple[tuple[str, int], ...] = (("document", 30), ("search", 40), ("recent", 30))
SECTION_CANDIDATES = 200
SEARCH_K = 100
DOC_ORDER_SCORE = "importance"
MAX_FENCE_PREAMBLE = 512
MAX_SEARCH_SOURCES = 8

_RENDER_COLUMNS = ("id", "seq", "collection", "type", "key", "text", "scores", "tombstone", "occurred_at")


@dataclass(frozen=True, slots=True)
class PackedSection:
    name: str
    ids: tuple[str, ...]
    tokens: int


@dataclass(frozen=True, slots=True)
class PackedContext:
    """The packed text: per-section ids and tokens, every emitted id in text order, the text,
    its exact cl100k token count and whether anything was left out."""

    sections: tuple[PackedSection, ...]
    ids: tuple[str, ...]
    text: str
    tokens: int
    truncated: bool


def context_build(*, workspace, entity, task, budget, collections: Sequence[str] | None = None,
                  fence_tag: str | None = None, fence_preamble: str | None = None) -> dict:
    """Assemble the context of ``entity`` for ``task`` within ``budget`` cl100k tokens.

    Takes the already-split query values (``collections`` a sequence of names). Returns
    ``{entity, task, budget, components: {document|search|recent: {ids, tokens}},
    input_record_ids, rendered, tokens, truncated}`` and enqueues a touch of every emitted row
    when ``TOUCH_ON_READ`` is on.

    Raises ``ApiError``: ``request_schema`` (422) for a blank, ``*`` or over-long entity, a blank
    task, a budget outside 1..``MODEL_CONTEXT_TOKENS``, a malformed collection name or fence
    tag, a preamble without ``fence_tag``, blank or over 512 characters; ``query_too_long``
    (422) for a task over ``MAX_QUERY_CHARS``; ``unknown_collection`` (422); ``no_catalog``
    (409) when the workspace has no collections; ``response_too_large`` (409) when the payload
    would exceed ``MAX_RESPONSE_BYTES``; and whatever the hybrid search raises (503
    ``embedding_unavailable``, ``search_backend_unavailable``).
    """
    entity, task, budget, fence = _checked(entity, task, budget, fence_tag, fence_preamble)
    collections = _checked_collections(collections)
    catalog = catalog_for_workspace(workspace)
    names = _collections_in_scope(catalog, collections)
    score_names = rendered_score_names(catalog)
    candidates = {
        "document": _document_rows(workspace, entity, names),
        "search": _search_rows(workspace, catalog, entity, task, names),
        "recent": _recent_rows(workspace, entity, names),
    }
    lines = [(name, share, [(str(row.id), render_row(render_row_of(row, score_names)))
                            for row in candidates[name]]) for name, share in SECTIONS]
    packed = pack_context(lines, budget=budget, fence=fence)
    payload = {
        "entity": entity,
        "task": task,
        "budget": budget,
        "components": {section.name: {"ids": list(section.ids), "tokens": section.tokens}
                       for section in packed.sections},
        "input_record_ids": list(packed.ids),
        "rendered": packed.text,
        "tokens": packed.tokens,
        "truncated": packed.truncated,
    }
    limit = memseek_setting("MAX_RESPONSE_BYTES")
    size = json_bytes(payload)
    if size > limit:
        raise ApiError("response_too_large", f"The context would be {size} bytes; the limit is {limit} "
                       "(MAX_RESPONSE_BYTES). Lower budget or narrow it with collections=.")
    enqueue_touch(packed.ids)
    return payload


def pack_context(sections: Sequence[tuple[str, int, Sequence[tuple[str, str]]]], *, budget: int,
                 fence: Fence | None = None) -> PackedContext:
    """Pack rendered rows into ``budget`` tokens (pure; the module docstring has the rules).

    ``sections`` is ``(name, share_percent, [(id, rendered_row), ...])`` in order; shares sum to
    100 and every row starts with ``[``. An id already emitted is passed over. With no row
    emitted the text is ``""`` bare, and the empty element (``head + "\\n" + close``) fenced
    when that fits the budget, else ``""``.
    """
    if budget < 0:
        raise ValueError(f"budget must not be negative, got {budget}")
    if sum(share for _, share, _ in sections) != 100:
        raise ValueError("section shares must sum to 100")
    head, close = _fence_parts(fence) if fence is not None else ("", "")
    overhead = count_tokens(head) + count_tokens(close)
    available = budget - overhead
    emitted: list[tuple[int, str, str, int, int]] = []  # (section index, id, row, inner, tail)
    section_tokens = [0] * len(sections)
    emitted_ids: set[str] = set()
    left_out: set[str] = set()
    total = 0
    cumulative_share = 0
    for index, (_, share, rows) in enumerate(sections):
        cumulative_share += share
        cap = available * cumulative_share // 100  # floor; negative when even the fence does not fit
        for row_id, line in rows:
            if row_id in emitted_ids:
                continue
            inner = count_tokens(line + "\n")
            tail = inner if fence is not None else count_tokens(line)
            # The row now last stops being last: it gains its newline's share (0 when fenced).
            grow = emitted[-1][3] - emitted[-1][4] if emitted else 0
            if total + grow + tail > cap:
                left_out.add(row_id)
                continue
            if emitted:
                section_tokens[emitted[-1][0]] += grow
            section_tokens[index] += tail
            total += grow + tail
            emitted.append((index, row_id, line, inner, tail))
            emitted_ids.add(row_id)
    rows_text = [line for _, _, line, _, _ in emitted]
    fence_dropped = False
    if fence is None:
        text = "\n".join(rows_text)
    elif rows_text:
        text = head + "".join(line + "\n" for line in rows_text) + close
    else:
        text = head + "\n" + close
        if count_tokens(text) > budget:
            text, fence_dropped = "", True
    packed_sections = tuple(PackedSection(name, tuple(row_id for i, row_id, *_ in emitted if i == index),
                                          section_tokens[index]) for index, (name, _, _) in enumerate(sections))
    return PackedContext(packed_sections, tuple(row_id for _, row_id, *_ in emitted), text, count_tokens(text),
                         bool(left_out - emitted_ids) or fence_dropped)


# --- Parameters ------------------------------------------------------------------------------

def _checked(entity, task, budget, fence_tag, fence_preamble) -> tuple[str, str, int, Fence | None]:
    entity = parse_string(entity, "entity", max_length=ENTITY_CHARS)
    if entity == "*":
        raise fail("entity", "'*' is not an entity; name the one entity whose context you want")
    task = parse_string(task, "task")
    max_chars = memseek_setting("MAX_QUERY_CHARS")
    if len(task) > max_chars:
        raise fail("task", f"has {len(task)} characters; at most {max_chars} (MAX_QUERY_CHARS)", "query_too_long")
    query_terms_check(task, "task")
    budget = parse_int(budget, "budget", minimum=1, maximum=memseek_setting("MODEL_CONTEXT_TOKENS"))
    if fence_tag is None:
        if fence_preamble is not None:
            raise fail("fence_preamble", "needs fence_tag; name the element the rows are wrapped in")
        return entity, task, budget, None
    fence_tag = parse_string(fence_tag, "fence_tag", pattern=PUBLIC_NAME)
    if fence_preamble is not None:
        fence_preamble = parse_string(fence_preamble, "fence_preamble", max_length=MAX_FENCE_PREAMBLE)
    return entity, task, budget, Fence(fence_tag, fence_preamble)


def _checked_collections(collections) -> tuple[str, ...] | None:
    if collections is None:
        return None
    if isinstance(collections, str) or not collections:
        raise fail("collections", "must name at least one collection")
    for name in collections:
        parse_string(name, "collections", pattern=PUBLIC_NAME)
    return tuple(dict.fromkeys(collections))


def _collections_in_scope(catalog: Catalog, collections: tuple[str, ...] | None) -> tuple[str, ...]:
    """The named collections (each must be loaded), or every loaded collection."""
    loaded = catalog.names("collection")
    if not loaded:
        raise ApiError("no_catalog", "This workspace has no collections yet; load a catalog with "
                                     "`python manage.py load_catalog DIR --workspace NAME`.")
    if collections is None:
        return tuple(loaded)
    for name in collections:
        if name not in loaded:
            raise fail("collections", f"unknown collection {name!r}; loaded: {', '.join(loaded)}",
                       "unknown_collection")
    return collections


# --- Candidates ------------------------------------------------------------------------------

def _current_rows(workspace, entity: str, names: tuple[str, ...]):
    """Current, active, live rows of ``entity`` in ``names`` (``catalog_app.record_sql``: a newer
    row in the same lane hides a keyed row even while that newer row is still processing)."""
    return (Record.objects.filter(live_q(), current_in_lane_q(), workspace=workspace, entity=entity,
                                  collection__in=names, status="active")
            .only(*_RENDER_COLUMNS))


def _document_rows(workspace, entity: str, names: tuple[str, ...]) -> list[Record]:
    order_score = RawSQL(f"CASE WHEN jsonb_typeof({RECORD}.scores -> %s) = 'number' "
                         f"THEN ({RECORD}.scores ->> %s)::float8 END", [DOC_ORDER_SCORE, DOC_ORDER_SCORE])
    rows = (_current_rows(workspace, entity, names).filter(key__isnull=False)
            .annotate(order_score=order_score).order_by(F("order_score").desc(nulls_last=True), "-seq"))
    return list(rows[:SECTION_CANDIDATES])


def _recent_rows(workspace, entity: str, names: tuple[str, ...]) -> list[Record]:
    return list(_current_rows(workspace, entity, names).order_by("-occurred_at", "-seq")[:SECTION_CANDIDATES])


def _search_rows(workspace, catalog: Catalog, entity: str, task: str, names: tuple[str, ...]) -> list:
    """The hits of a hybrid search for ``task`` over ``entity`` in ``names``, best first.

    One search when every collection shares a search profile; otherwise one hybrid search per
    profile, fused with RRF (a single search may not span profiles).
    """
    groups: dict[str, list[str]] = {}
    for name in names:
        collection = catalog.value("collection", name) or catalog.versions("collection", name)[-1].value
        groups.setdefault(collection.search_profile, []).append(name)
    scopes = [{"entities": [entity], "collections": group} for _, group in sorted(groups.items())]
    if len(scopes) == 1:
        raw = {"q": task, "mode": "hybrid", "k": SEARCH_K, "scope": scopes[0]}
    elif len(scopes) <= MAX_SEARCH_SOURCES:
        raw = {"q": task, "k": SEARCH_K, "fuse": {"kind": "rrf"},
               "sources": [{"name": f"profile-{index}", "mode": "hybrid", "k": SEARCH_K, "scope": scope}
                           for index, scope in enumerate(scopes, start=1)]}
    else:
        raise fail("collections", f"these collections use {len(scopes)} search profiles; one context search "
                   f"combines at most {MAX_SEARCH_SOURCES}; narrow it with collections=", "search_profile")
    try:
        outcome = search_execute(workspace=workspace, spec=search_spec_parse(raw, allow_system=False))
    except ApiError as error:
        # The search's scope is built from this request's collections; point there, not at it.
        if error.path and error.path.startswith(("scope", "sources")):
            raise ApiError(error.code, error.detail, "collections", error.extra) from None
        raise
    return [hit.row for hit in outcome.hits]
