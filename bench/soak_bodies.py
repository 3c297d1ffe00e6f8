"""Hypothesis-generated request bodies for every POST route of the API, well-formed and hostile.

A well-formed body is what a careful client sends (the example catalog's entities, collections,
views and tools, values inside every documented limit); the server may still refuse one (a rule
that ties members together, a record the catalog does not accept) with a 4xx, but never a 5xx.
A hostile body is a well-formed one with one thing broken: a value at a random place replaced by
a hostile one (NUL, lone surrogates, control and bidirectional characters, huge strings and
integers, NaN and infinities, out-of-range timestamps, nesting thousands deep, wrong types,
arbitrary JSON), an unknown, missing or duplicated key, a non-object document, broken bytes, or
the wrong content type. ``POST_ROUTES`` names every POST route; a test checks it against the
URLconf, so a new route cannot be left out.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone

from hypothesis import strategies as st

MCP_REVISION = "2026-07-28"
# Most of what a soak sends is hostile: it is what breaks a server, and it costs the server least,
# so a bounded run sends the most bodies.
HOSTILE_PER_WELL_FORMED = 4
JSON = (("Content-Type", "application/json"),)
MCP_HEADERS = JSON + (("Accept", "application/json, text/event-stream"), ("MCP-Protocol-Version", MCP_REVISION))
NDJSON = (("Content-Type", "application/x-ndjson"),)
HEADERS = {"mcp": MCP_HEADERS, "import": NDJSON}

# Every POST route, in the URLconf's syntax.
POST_ROUTES = ("records", "records/<str:id>/approve", "records/<str:id>/reject", "search", "search/lexical",
               "views/<str:name>/query", "retrieve", "receipts/<str:id>/feedback", "evaluate", "memory/search",
               "mcp", "import", "erase")


@dataclass(frozen=True, slots=True)
class FuzzContext:
    """What a well-formed body may name: the workspace's entities, stored record ids, draft
    record ids (to approve or reject), a receipt id (for feedback)."""
    entities: tuple[str, ...]
    record_ids: tuple[str, ...]
    draft_ids: tuple[str, ...]
    receipt_id: str


@dataclass(frozen=True, slots=True)
class Case:
    """One request: ``route`` (the URLconf route), ``path`` sent, the body's bytes, headers."""
    route: str
    kind: str  # "well_formed" | "hostile"
    path: str
    body: bytes
    headers: tuple[tuple[str, str], ...] = field(default=JSON)

    def describe(self, limit: int = 2000) -> dict:
        text = self.body.decode("utf-8", "backslashreplace")
        return {"route": self.route, "kind": self.kind, "path": self.path[:limit], "headers": dict(self.headers),
                "body_bytes": len(self.body), "body": text if len(text) <= limit else text[:limit] + " …"}


QUESTIONS = ("budget", "What did Maria say about the Q3 budget?", "weekly status email", "renewal risk",
             "Who is the CFO?", "open tickets about the delay", "Liam prefers calls", "atlas launch date",
             "support escalation", "prepare the Q3 update", "analytics rollout", "the parcel arrived damaged")
VIEWS = ("customer_context", "open_tickets", "events_and_facts")
TOOLS = ("customer_context", "search_memory", "brief", "grep", "open_record", "remember")
# Letters of several scripts, digits, spaces and punctuation: drawn from a list, which Hypothesis
# draws far faster than from Unicode categories (the soak sends thousands of bodies).
ALPHABET = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                " .,;:!?'\"-()éüñßøçΩжяשׁعح中文日本語한국😀")
words = st.text(st.sampled_from(ALPHABET), min_size=1, max_size=60)
# Questions repeat (the service caches query vectors per workspace, so most bodies cost no model
# call), one in four is made up.
questions = st.one_of(st.sampled_from(QUESTIONS), st.sampled_from(QUESTIONS), st.sampled_from(QUESTIONS), words)


def token(prefix: str) -> st.SearchStrategy[str]:
    """``prefix`` and a short lower-case token: identifiers a client makes up."""
    return st.integers(0, 36**6).map(lambda n: f"{prefix}{n:x}")
instants = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2030, 12, 31),
                        timezones=st.just(timezone.utc)).map(lambda moment: moment.isoformat())
days = instants.map(lambda text: text[:10])


def optional(members: dict) -> st.SearchStrategy[dict]:
    """A dict holding any subset of ``members`` (name → strategy)."""
    return st.fixed_dictionaries({}, optional=members)


@functools.cache
def well_formed(route: str, context: FuzzContext) -> st.SearchStrategy[tuple[str, dict]]:
    """``(path, body)`` pairs a careful client of ``route`` would send (built once: Hypothesis
    spends more time validating a new strategy than drawing from it)."""
    entity = st.sampled_from(context.entities)
    record_id = st.sampled_from(context.record_ids)
    if route == "records":
        record = st.fixed_dictionaries(
            {"entity": st.one_of(entity, token("soak.fuzz.")),
             "type": st.sampled_from(["event", "note", "fact", "preference"]), "text": words},
            optional={"key": st.sampled_from(["role", "plan", "status", "owner", "renewal"]), "occurred_at": instants,
                      "content": optional({"speaker": words, "tags": st.lists(words, max_size=4)}),
                      "scores": st.fixed_dictionaries({"importance": st.integers(1, 10)}),
                      "dedupe_key": token("soak-"),
                      "status": st.sampled_from(["active", "draft"]),
                      "collection": st.just("main")})
        return st.tuples(st.just("/records"),
                         st.fixed_dictionaries({"records": st.lists(record, min_size=1, max_size=5)}))
    if route in ("records/<str:id>/approve", "records/<str:id>/reject"):
        verb = route.rsplit("/", 1)[1]
        ids = st.sampled_from(context.draft_ids) if context.draft_ids else record_id
        return st.tuples(ids.map(lambda id_: f"/records/{id_}/{verb}"), st.just({}))
    if route == "search":
        body = st.fixed_dictionaries({"q": questions, "mode": st.sampled_from(["vector", "text", "hybrid"])},
                                     optional={"k": st.integers(1, 100), "render": st.booleans(),
                                               "scope": st.fixed_dictionaries(
                                                   {"entities": st.lists(entity, min_size=1, max_size=3)}),
                                               "include": st.just(["text", "occurred_at"])})
        recent = st.fixed_dictionaries({"mode": st.just("recent")}, optional={"k": st.integers(1, 100)})
        return st.tuples(st.just("/search"), st.one_of(body, recent))
    if route == "search/lexical":
        query = st.fixed_dictionaries({"text": questions}, optional={"limit": st.integers(1, 100),
                                                                    "scan_limit": st.integers(1, 100_000)})
        scope = optional({"collections": st.just(["main"]), "entities": st.lists(entity, min_size=1, max_size=2)})
        return st.tuples(st.just("/search/lexical"), st.fixed_dictionaries(
            {"contract_version": st.just(1), "mode": st.just("lexical"), "scope": scope, "query": query}))
    if route == "views/<str:name>/query":
        return st.tuples(st.sampled_from(VIEWS).map(lambda name: f"/views/{name}/query"),
                         st.fixed_dictionaries({"entity": entity, "task": questions},
                                               optional={"k": st.integers(1, 100)}))
    if route == "retrieve":
        return st.tuples(st.just("/retrieve"), st.fixed_dictionaries(
            {"query": questions}, optional={"entity": entity, "topN": st.integers(1, 100),
                                            "tokenBudget": st.integers(256, 32_000), "raw": st.booleans(),
                                            "explain": st.booleans(), "mode": st.just("deterministic")}))
    if route == "receipts/<str:id>/feedback":
        return st.tuples(st.just(f"/receipts/{context.receipt_id}/feedback"), st.fixed_dictionaries(
            {"outcome": st.sampled_from(["success", "failure", "partial", "irrelevant"])},
            optional={"score": st.floats(0, 1), "comment": words}))
    if route == "evaluate":
        query = st.fixed_dictionaries({"query": questions,
                                       "relevant": st.dictionaries(record_id, st.integers(1, 100),
                                                                   min_size=1, max_size=3)})
        return st.tuples(st.just("/evaluate"), st.fixed_dictionaries(
            {"queries": st.lists(query, min_size=1, max_size=2)}, optional={"k": st.integers(1, 100)}))
    if route == "memory/search":
        return st.tuples(st.just("/memory/search"), st.fixed_dictionaries(
            {"query": questions}, optional={"entity": entity, "before": days}))
    if route == "mcp":
        listing = st.just({"method": "tools/list", "params": {}})
        call = st.fixed_dictionaries({"method": st.just("tools/call"), "params": st.fixed_dictionaries(
            {"name": st.sampled_from(TOOLS), "arguments": optional({"entity": entity, "task": questions,
                                                                    "query": questions, "id": record_id})})})
        meta = {"io.modelcontextprotocol/protocolVersion": MCP_REVISION,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "soak", "version": "1"}}
        return st.tuples(st.just("/mcp"), st.tuples(st.one_of(listing, call), st.integers(1, 10**6)).map(
            lambda pair: {"jsonrpc": "2.0", "id": pair[1], "method": pair[0]["method"],
                          "params": {**pair[0]["params"], "_meta": meta}}))
    if route == "import":
        return st.tuples(st.sampled_from(["/import?ids=remap", "/import?ids=remap&seqs=renumber"]),
                         st.lists(_export_record(entity), min_size=1, max_size=3).map(_export_lines))
    if route == "erase":
        # A dry run of any entity; a real erasure only of an entity the soak itself wrote, so the
        # records the other routes name stay.
        dry = st.fixed_dictionaries({"entity": entity, "dry_run": st.just(True)},
                                    optional={"collection": st.just("main")})
        real = st.fixed_dictionaries({"entity": token("soak.fuzz.")}, optional={"dry_run": st.just(False)})
        return st.tuples(st.just("/erase"), st.one_of(dry, real))
    raise ValueError(f"no well-formed bodies for route {route!r}")


def _export_record(entity) -> st.SearchStrategy[dict]:
    """A record line of an export (``POST /import`` refuses its made-up collection contract)."""
    fixed = {"kind": "record", "collection": "main", "collection_version": 1, "collection_hash": "0" * 64,
             "type": "event", "key": None, "status": "active", "scores": {}, "annotations": {},
             "annotation_meta": {}, "enrichment_error": None, "depth": 0, "derived_from": [], "run_id": None,
             "dedupe_key": None, "dedupe_hash": "", "access_count": 0, "tombstone": False, "vectors": []}
    return st.fixed_dictionaries({"id": st.uuids().map(str), "entity": entity, "text": words,
                                  "occurred_at": instants, "created_at": instants, "last_accessed": instants,
                                  "enriched_at": instants}).map(
        lambda drawn: {**fixed, **drawn, "content": {"text": drawn["text"]}})


def _export_lines(records: list[dict]) -> list[dict]:
    header = {"kind": "header", "format": "memseek-export/1", "workspace": "soak", "entity": None,
              "records": len(records)}
    numbered = [{**record, "seq": seq, "cursor": f"x1.r.{seq}"} for seq, record in enumerate(records, start=1)]
    return [header, *numbered, {"kind": "end", "records": len(records)}]


# --- hostile values --------------------------------------------------------------------------

class Raw(str):
    """JSON text spliced into a body in place of a value (what ``json.dumps`` cannot write)."""


def _nested(depth: int, opener: str) -> Raw:
    closer = "]" if opener == "[" else "}"
    inner = opener if opener == "[" else '{"a": '
    return Raw(inner * depth + ("1" if opener == "{" else "") + closer * depth)


HOSTILE_STRINGS = ("a\x00b", "\ud800", "x\udfffy", "\ude00\ud83d", "\x1b[31m\x07\x7f", "\u202eevil\u2028\u0085",
                   "line\n[id=00000000-0000-4000-8000-000000000000] 2026-01-01 forged", "", " ", "*",
                   "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "2026-13-45T25:61:00Z", "%00", "../../etc",
                   "<script>alert(1)</script>", "{{task}}", "' OR 1=1 --", "\\u0000")
hostile_values = st.one_of(
    st.sampled_from(HOSTILE_STRINGS),
    st.integers(1_000, 100_000).map(lambda n: "x" * n),
    st.integers(70_000, 300_000).map(lambda n: "é" * n),
    st.sampled_from([Raw("9" * 400), Raw("-" + "9" * 400), Raw("9223372036854775808"), Raw("1e999"), Raw("-1e999"),
                     Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), Raw("1e-400"), Raw("-0"), Raw('{"x": 1, "x": 2}')]),
    st.tuples(st.integers(65, 10_000), st.sampled_from("[{")).map(lambda pair: _nested(*pair)),
    st.integers(-2**63, 2**63 - 1), st.sampled_from([10**9, -1, 0, 2**31, 2**53 + 1]),
    st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.none(), st.just({}), st.just([]),
    st.integers(0, 5000).map(lambda n: list(range(n))),
    st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)),
                 lambda children: st.one_of(st.lists(children, max_size=4),
                                            st.dictionaries(st.text(max_size=8), children, max_size=4)),
                 max_leaves=20),
)


def _paths(value, prefix=()) -> list[tuple]:
    """Every place in ``value`` a value can be put: dict members and list items, nested."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append(prefix + (key,))
            found.extend(_paths(item, prefix + (key,)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.append(prefix + (index,))
            found.extend(_paths(item, prefix + (index,)))
    return found


def _replaced(value, path: tuple, new):
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replaced(value[head], rest, new)}
    return [(_replaced(item, rest, new) if index == head else item) for index, item in enumerate(value)]


def _removed(value, path: tuple):
    head, rest = path[0], path[1:]
    if rest:
        return _replaced(value, (head,), _removed(value[head], rest))
    return {k: v for k, v in value.items() if k != head} if isinstance(value, dict) else \
        [item for index, item in enumerate(value) if index != head]


def body_bytes(route: str, body, ensure_ascii: bool = True) -> bytes:
    """What ``route`` is sent: an import's lines as JSON Lines, any other body as one JSON text."""
    if route == "import" and isinstance(body, list):
        return b"".join(encode(line, ensure_ascii) + b"\n" for line in body)
    return encode(body, ensure_ascii)


def encode(body, ensure_ascii: bool = True) -> bytes:
    """``body`` as JSON bytes, each ``Raw`` value spliced in as written."""
    raws: list[str] = []

    def swap(value):
        if isinstance(value, Raw):
            raws.append(str(value))
            return f"@@raw{len(raws) - 1}@@"
        if isinstance(value, dict):
            return {key: swap(item) for key, item in value.items()}
        if isinstance(value, list):
            return [swap(item) for item in value]
        return value

    text = json.dumps(swap(body), ensure_ascii=ensure_ascii)
    for index, raw in enumerate(raws):
        text = text.replace(f'"@@raw{index}@@"', raw, 1)
    return text.encode("utf-8", "surrogatepass")


@functools.cache
def hostile(route: str, context: FuzzContext) -> st.SearchStrategy[Case]:
    """Requests to ``route`` with one thing broken."""
    return _hostile(route, context)


@st.composite
def _hostile(draw, route: str, context: FuzzContext) -> Case:
    path, body = draw(well_formed(route, context))
    headers = HEADERS.get(route, JSON)
    places = _paths(body)
    ways = ["value", "value", "value", "unknown", "missing", "duplicate", "document", "bytes", "content_type", "path"]
    if isinstance(body, list):  # an import's lines: no top-level object to repeat a key of, no id in the path
        ways = [way for way in ways if way not in ("duplicate", "path")]
    how = draw(st.sampled_from(ways if places else ["unknown", "document", "bytes"]))
    if how == "value":
        raw = body_bytes(route, _replaced(body, draw(st.sampled_from(places)), draw(hostile_values)),
                         draw(st.booleans()))
    elif how == "unknown":
        targets = [p for p in places if isinstance(_get(body, p), dict)]
        target = draw(st.sampled_from(targets if isinstance(body, list) else [()] + targets))
        raw = body_bytes(route, _replaced(body, target, {**_get(body, target),
                                                         draw(st.text(min_size=1, max_size=12)): draw(hostile_values)}))
    elif how == "missing":
        raw = body_bytes(route, _removed(body, draw(st.sampled_from(places))))
    elif how == "duplicate":
        key = draw(st.sampled_from(list(body)))
        raw = b"{" + json.dumps(key).encode() + b": " + encode(draw(hostile_values)) + b", " + encode(body)[1:]
    elif how == "document":
        raw = encode(draw(st.one_of(hostile_values, st.just([body]))))
    elif how == "bytes":
        whole = body_bytes(route, body)
        raw = draw(st.sampled_from([b"", b"{", b"\xef\xbb\xbf" + whole, whole[:-1], whole.replace(b'"', b'"\xff', 1),
                                    b"null", whole + b" trailing"]))
    elif how == "content_type":
        raw = body_bytes(route, body)
        headers = (("Content-Type", draw(st.sampled_from(["text/plain", "application/x-www-form-urlencoded",
                                                          "multipart/form-data",
                                                          "application/json; charset=latin-1"]))),)
    else:  # a hostile path segment (routes with one) or a hostile value
        raw = encode(body)
        segment = draw(st.sampled_from(["%00", "%ED%A0%80", "not-a-uuid", "a" * 3000, "..%2f..%2f", "%E2%80%AE",
                                        "00000000-0000-0000-0000-000000000000"]))
        parts = path.split("/")
        if len(parts) > 3:
            parts[2] = segment
        path = "/".join(parts)
    return Case(route=route, kind="hostile", path=path, body=raw, headers=headers)


def _get(value, path: tuple):
    for step in path:
        value = value[step]
    return value


def cases(context: FuzzContext, routes: tuple[str, ...] = POST_ROUTES) -> st.SearchStrategy[Case]:
    """Requests to ``routes`` (every POST route), ``HOSTILE_PER_WELL_FORMED`` hostile ones to each
    well-formed one."""
    def for_route(route: str) -> st.SearchStrategy[Case]:
        headers = HEADERS.get(route, JSON)
        good = well_formed(route, context).map(lambda pair: Case(route=route, kind="well_formed", path=pair[0],
                                                                 body=body_bytes(route, pair[1]), headers=headers))
        broken = hostile(route, context)
        return (st.sampled_from((True,) + (False,) * HOSTILE_PER_WELL_FORMED)
                .flatmap(lambda sane: good if sane else broken))

    # One route drawn uniformly, then its case: each route gets its share of a bounded run.
    by_route = {route: for_route(route) for route in routes}
    return st.sampled_from(routes).flatmap(by_route.__getitem__)
