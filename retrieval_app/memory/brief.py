"""``POST /memory/search``: the brief, or the ranked list, of what memory holds for a question.

One fused search (``search_app.pipeline.run_search``) ranks two legs with the project's tuned
hybrid rank (exact BM25, full-text rank and similarity, min-max normalised and mixed, plus a
little recency): unkeyed records (passages, and derived records, which become facts) and keyed
records (named facts). The first passages then lend a share of their score to the passages
beside them in their conversation (``brief_neighbours``). The window is ``after``/``before``
narrowed by the question's own date words (``brief_dates``), read against ``before`` or now;
nothing that occurred at or after the window's end is read, on the valid-time axis ``/retrieve``
uses. When the question's dates narrow the window to nothing, the search runs again on the
request's own window and a note says so. The brief alone may make one model call
(``brief_filter``), within the workspace's daily budget (``brief_budget``); without a ``cheap``
model or budget it is the unfiltered ranking and ``held`` is absent.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from catalog_app.catalog.runtime import catalog_for_workspace
from memseek_site.conf import memseek_setting
from search_app.engine.spec import SYSTEM_COLLECTION, parse_search_spec
from search_app.engine.trace import NO_TRACE, Trace
from search_app.pipeline import run_search

from ..settings import retrieval_settings
from .addresses import passage_path, record_path
from .brief_budget import model_call_spend
from .brief_dates import Window, question_window
from .brief_filter import PromptPassage, filter_available, filter_passages
from .brief_neighbours import lend_to_neighbours, passage_neighbours
from .brief_records import current_among, current_facts, derivation_sources
from .brief_request import MemorySearchRequest, parse_memory_search
from .brief_worked import Dated, Folded, Statement, worked_out
from .hits import HIT_TEXT_CHARS, hit_shape, passage_roles

RANK = ["sum", [["product", 0.25, ["normalize", ["bm25"]]],
                ["product", 0.25, ["normalize", ["text_match"]]],
                ["product", 0.5, ["normalize", ["similarity"]]],
                ["product", 0.05, ["normalize", ["decay", ["age_hours", "occurred_at"],
                                                 {"midpoint": 720, "exponent": 1}]]]]]
ASSISTANT_ROLES = ("assistant", "ai", "bot")
_MICRO = timedelta(microseconds=1)


def memory_search(*, workspace, body, trace: Trace = NO_TRACE) -> dict:
    """Answer one ``POST /memory/search`` body for ``workspace``; raises ``ApiError``."""
    request = parse_memory_search(body)
    catalog = catalog_for_workspace(workspace)
    hits_k, facts_k = memseek_setting("MEMORY_SEARCH_HITS"), memseek_setting("MEMORY_SEARCH_FACTS")
    now = datetime.now(timezone.utc)
    as_of = request.window.end - _MICRO if request.window.end is not None else now
    asked = question_window(request.query, as_of)
    notes = []
    start, end = _narrowed(request, asked)
    passages, facts = _search(workspace, catalog, request, start, end, hits_k, facts_k, trace)
    if asked is not None and (start, end) != (request.window.start, request.window.end):
        if passages or facts:
            notes.append(f"The question's {_quoted(asked.phrases)} was read as {_days(start, end)}, as of "
                         f"{as_of.date().isoformat()}; only memory from then was searched.")
        else:
            notes.append(f"Nothing was said in {_days(start, end)} (the question's {_quoted(asked.phrases)}, as of "
                         f"{as_of.date().isoformat()}); these passages come from any time.")
            start, end = request.window.start, request.window.end
            passages, facts = _search(workspace, catalog, request, start, end, hits_k, facts_k, trace)
    roles = [passage_roles(row, catalog) for row in passages]
    result = {"query": request.query, "found": 0}
    held = None
    if request.brief and passages:
        kept = _filtered(workspace, catalog, request.query, passages, roles)
        if kept is not None:
            indexes, held = kept
            passages, roles = [passages[i] for i in indexes], [roles[i] for i in indexes]
    hits = [hit_shape(row, role) for row, role in zip(passages, roles)]
    fact_items = _fact_items(workspace.pk, facts)
    if request.brief:
        if any(role.lower() in ASSISTANT_ROLES for role_set in roles for role in role_set):
            notes.append("Passages whose role is the assistant are its own suggestions, not the person's words.")
        known = _known(workspace.pk, request.entity, request.window.end)
        dated = [Dated(str(row.id), row.occurred_at.date()) for row in facts]
        lines = worked_out(request.query, facts=dated,
                           passages=[Dated(str(row.id), row.occurred_at.date()) for row in passages],
                           counted=dated or ([Dated(str(row.id), row.occurred_at.date()) for row in passages]
                                             if held is not None else None),
                           known=known, as_of=as_of.date())
        if notes:
            result["notes"] = notes
        if known:
            result["known"] = [_known_line(folded, rows) for folded, rows in known.items()]
        if lines:
            result["worked_out"] = lines
    if fact_items:
        result["facts"] = fact_items
    result["found"] = len(hits)
    result["hits"] = hits
    if request.brief and held is not None:
        result["held"] = held
    return result


def _narrowed(request: MemorySearchRequest, asked: Window | None):
    start, end = request.window.start, request.window.end
    if asked is None:
        return start, end
    start = asked.start if start is None else max(start, asked.start)
    if asked.end is not None:
        end = asked.end if end is None else min(end, asked.end)
    return start, end


def _search(workspace, catalog, request: MemorySearchRequest, start, end, hits_k: int, facts_k: int, trace):
    """(passages, facts): the passage rows in rank order (at most ``hits_k``), and the fact rows
    (current named facts, then derived records; at most ``facts_k``)."""
    scope = request.scope
    collections = [scope.collection] if scope is not None and scope.collection is not None else \
        [name for name in catalog.names("collection") if name != SYSTEM_COLLECTION]
    if not collections or (start is not None and end is not None and start >= end):
        return [], []
    window = {}
    if start is not None and start > datetime.min.replace(tzinfo=timezone.utc):
        # From the calendar's first instant on is no bound at all (and has no instant before it).
        window["occurred_after"] = (start - _MICRO).isoformat()
    if end is not None:
        window["occurred_before"] = end.isoformat()
    base = {"collections": collections, **window}
    if request.entity is not None:
        base["entities"] = [request.entity]
    sources = []
    if scope is None or scope.kind == "passages":
        sources.append({"name": "passages", "mode": "hybrid", "scope": {**base, "keyed": False}, "rank": RANK,
                        "k": min(100, hits_k + facts_k)})
    sources.append({"name": "facts", "mode": "hybrid", "scope": {**base, "keyed": True, "versions": "all"},
                    "rank": RANK, "k": min(100, 3 * facts_k)})
    spec = parse_search_spec({"q": request.query, "sources": sources, "fuse": {"kind": "rrf"},
                              "k": min(100, hits_k + facts_k)}, max_query_chars=memseek_setting("MAX_QUERY_CHARS"))
    outcome = run_search(workspace=workspace, spec=spec, catalog=catalog, trace=trace)
    runs = {run.resolved.source.name: run for run in outcome.sources}
    unkeyed = [ranked.row for ranked in runs["passages"].cut] if "passages" in runs else []
    passages = _lent_passages(workspace, catalog, runs.get("passages"), start, end, hits_k)
    keyed = [ranked.row for ranked in runs["facts"].cut]
    current = current_among(workspace_id=workspace.pk, ids=[row.id for row in keyed], end=end)
    named = [row for row in keyed if row.id in current and row.status == "active"]
    facts = (named + [row for row in unkeyed if row.depth > 0])[:facts_k]
    return passages, facts


def _lent_passages(workspace, catalog, run, start, end, hits_k: int) -> list:
    """At most ``hits_k`` passages (depth 0) of the passage source's run, its strong hits (the
    first ``hits_k``) lending ``MEMORY_NEIGHBOUR_SHARE`` of their fused value to the passages
    beside them in ``[start, end)`` (``brief_neighbours``). Only rows already read (the strong
    hits and their neighbours) are shown: when the run's cut held fewer strong hits than
    ``hits_k``, no later candidate is read to fill the gap."""
    if run is None:
        return []
    strong = [ranked.row for ranked in run.cut if ranked.row.depth == 0][:hits_k]
    share = memseek_setting("MEMORY_NEIGHBOUR_SHARE")
    if not strong or share <= 0:
        return strong
    beside = passage_neighbours(workspace_id=workspace.pk, catalog=catalog, anchors=strong, start=start, end=end)
    held = {row.id: row for row in strong}
    for rows in beside.values():
        for row in rows:
            held.setdefault(row.id, row)
    order = lend_to_neighbours([(ranked.row.id, ranked.value) for ranked in run.ranked if ranked.row.depth == 0],
                               {anchor: [row.id for row in rows] for anchor, rows in beside.items()},
                               strong=len(strong), share=share)
    return [held[record_id] for record_id in order if record_id in held][:hits_k]


def _filtered(workspace, catalog, question: str, passages, roles):
    """(kept indexes, held) from the one model call, or None when no call is made."""
    models = catalog.value("models", "models")
    if not filter_available(models):
        return None
    limit = retrieval_settings(workspace).memory_daily_model_calls
    if not model_call_spend(workspace_id=workspace.pk, limit=limit):
        return None
    prompt = [PromptPassage(row.occurred_at.date().isoformat(), role, row.text[:HIT_TEXT_CHARS])
              for row, role in zip(passages, roles)]
    filtered = filter_passages(models=models, question=question, passages=prompt,
                               prompt_limit=memseek_setting("MAX_PROMPT_TOKENS"))
    return filtered.kept, filtered.held


def _fact_items(workspace_id: int, rows) -> list[dict]:
    sources = derivation_sources(workspace_id=workspace_id, ids=[row.id for row in rows])
    items = []
    for row in rows:
        day = row.occurred_at.date().isoformat()
        said = f"{row.entity} {row.key}: {row.text}" if row.key is not None else row.text
        items.append({"id": str(row.id), "path": record_path(row), "said": day,
                      "line": f"({day}) {said}"[:HIT_TEXT_CHARS],
                      "derived_from": [{"id": str(source.id), "path": passage_path(source)}
                                       for source in sources.get(row.id, [])]})
    return items


def _known(workspace_id: int, entity: str | None, end) -> dict[Folded, list]:
    rows = current_facts(workspace_id=workspace_id, entity=entity, end=end,
                         limit=memseek_setting("MEMORY_KNOWN_LINES") * 4)
    groups: dict[tuple[str, str], list] = {}
    for row in rows:
        group = groups.setdefault((row.entity, row.key), [])
        if len(groups) <= memseek_setting("MEMORY_KNOWN_LINES"):
            group.append(row)
    return {Folded(subject, attribute, tuple(Statement(str(r.id), r.text, r.occurred_at.date()) for r in members)):
            members for (subject, attribute), members in groups.items() if members}


def _known_line(folded: Folded, rows) -> dict:
    values = "; ".join(f"{s.value} (said {s.day.isoformat()})" for s in folded.statements)
    return {"subject": folded.subject, "attribute": folded.attribute, "line": f"{folded.subject} {folded.attribute}: "
            f"{values}", "said": folded.statements[0].day.isoformat(),
            "ids": [s.id for s in folded.statements], "paths": list(dict.fromkeys(record_path(r) for r in rows))}


def _days(start, end) -> str:
    first = start.date().isoformat() if start is not None else "the beginning"
    last = (end - _MICRO).date().isoformat() if end is not None else "now"
    return first if first == last else f"{first} to {last}"


def _quoted(phrases) -> str:
    return ", ".join(f"\"{phrase}\"" for phrase in phrases)
