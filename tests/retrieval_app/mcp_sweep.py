"""The sweep every outside MCP client runs: each tool the active declaration lists (whatever
they are; the plan is built from ``GET /tools``, not from a fixed list) called ``PER_TOOL`` times,
half with realistic arguments built from the tool's ``inputSchema`` and half with bad ones, and
the one rule every outcome is held to (``outcome_problem``):

* no transport or protocol failure, ever (a bad argument is the tool's documented error, not a
  dropped session or a JSON-RPC error);
* a realistic call of a kind the sweep knows succeeds, and its ``structuredContent`` validates
  against the tool's ``outputSchema`` and equals its text;
* a bad call is a result with ``isError: true`` without ``structuredContent``, whose text is the
  error envelope (``error``, ``detail``, ``path``) with a 4xx ``status``.

A plan is plain JSON (``[{"tool", "arguments", "expect"}]``) and an outcome too (``{"is_error",
"structured", "text", "failure"}``), so a client in another virtualenv (``mcp_sweep_clients.py``)
runs the same plan."""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field

import jsonschema

PER_TOOL = 10
# The kinds whose realistic calls must succeed; a kind added later is swept too, its realistic
# calls held to "a result or the documented error".
KNOWN_KINDS = frozenset({"view", "retrieve", "brief", "lookup", "record", "ingest"})
ENTITIES = ("contact.maria", "contact.liam", "project.atlas")
PHRASES = ("Q3 budget for the analytics rollout", "weekly status email", "dashboard export to PDF fails",
           "quarterly business review", "does Maria prefer email or phone")
WORDS = ("budget", "email", "dashboard", "review", "Maria")
# A destructive tool's realistic calls aim at an entity of the sweep's own, never the sample data.
SWEEP_ENTITY = "contact.sweep"
UNKNOWN_ARGUMENT = "no_such_argument"


@dataclass
class Pools:
    """Ids that exist in the swept workspace, for arguments that must name one."""

    record_ids: list[str]
    receipt_ids: list[str] = field(default_factory=list)
    # Memory paths that exist: a named fact's (read, history) and a passage's (around).
    fact_paths: list[str] = field(default_factory=list)
    passage_paths: list[str] = field(default_factory=list)


def plan(listing: dict, pools: Pools, per_tool: int = PER_TOOL) -> list[dict]:
    """``per_tool`` calls of every tool in the ``GET /tools`` payload ``listing``."""
    calls = []
    for tool in listing["tools"]:
        good = [realistic(tool, index, pools) for index in range(per_tool - per_tool // 2)]
        expect = "result" if tool["kind"] in KNOWN_KINDS and tool["route"]["available"] else "any"
        calls += [{"tool": tool["name"], "arguments": arguments, "expect": expect} for arguments in good]
        calls += [{"tool": tool["name"], "arguments": arguments, "expect": "error"}
                  for arguments in bad_arguments(tool, pools)[:per_tool // 2]]
    return calls


def realistic(tool: dict, index: int, pools: Pools) -> dict:
    """Arguments an agent would send: every required argument, and on alternate calls the
    entity and a small limit when the tool takes them."""
    schema = tool["input_schema"]
    properties = schema.get("properties", {})
    destructive = tool["annotations"].get("destructiveHint", False)
    names = list(schema.get("required", []))
    # One of alternatives (an ingest tool over a projected collection takes text or content): the first.
    names += next((option.get("required", []) for option in schema.get("anyOf", [])), [])
    if tool["kind"] == "ingest":
        names.append("dedupe_key")
    if index % 2 == 0 and "entity" in properties:
        names.append("entity")
    names += [name for name in ("k", "limit", "topN") if index % 2 == 1 and name in properties]
    arguments = {}
    for name in dict.fromkeys(names):
        if name == "path":
            arguments[name] = _path(tool, index, pools)
        else:
            arguments[name] = _value(name, properties.get(name, {}), index, pools, destructive)
    return arguments


def _path(tool: dict, index: int, pools: Pools) -> str:
    """A memory path the tool's lookup reads: a fact's for read and history, a passage's for
    around, an entity's passages for the listings."""
    route = tool["route"].get("path", "")
    if route.endswith(("/read", "/history")) and pools.fact_paths:
        return pools.fact_paths[index % len(pools.fact_paths)]
    if route.endswith("/around") and pools.passage_paths:
        return pools.passage_paths[index % len(pools.passage_paths)]
    return f"passages/main/{ENTITIES[0]}"


def _value(name: str, prop: dict, index: int, pools: Pools, destructive: bool):
    if name == "entity":
        return SWEEP_ENTITY if destructive else ENTITIES[index % len(ENTITIES)]
    if name == "entities":
        return [SWEEP_ENTITY if destructive else ENTITIES[index % len(ENTITIES)]]
    if name in ("receiptId", "receipt_id") and pools.receipt_ids:
        return pools.receipt_ids[index % len(pools.receipt_ids)]
    if name in ("id", "record_id", "recordId") or prop.get("format") == "uuid":
        return str(uuid.uuid4()) if destructive else pools.record_ids[index % len(pools.record_ids)]
    if name == "q":
        return WORDS[index % len(WORDS)]
    if name == "text":
        return f"{PHRASES[index % len(PHRASES)]} (noted in the MCP client sweep)"
    if name == "type":
        return "note"
    if name in ("key", "dedupe_key"):
        return f"sweep-{uuid.uuid4()}"
    if "enum" in prop:
        return prop["enum"][0]
    kind = prop.get("type")
    if kind == "integer":
        return min(prop.get("maximum", 5), max(prop.get("minimum", 1), 5))
    if kind == "boolean":
        return True
    if kind == "array":
        return [PHRASES[index % len(PHRASES)]]
    return PHRASES[index % len(PHRASES)]


def bad_arguments(tool: dict, pools: Pools) -> list[dict]:
    """Five ways to get a tool's arguments wrong: one missing, one unknown, one mistyped, one out
    of bounds, one null (each from a realistic call, so only that one thing is wrong)."""
    schema = tool["input_schema"]
    properties = schema.get("properties", {})
    required = list(schema.get("required", []))
    first = required[0] if required else next(iter(properties), UNKNOWN_ARGUMENT)
    bad = [
        {key: value for key, value in realistic(tool, 0, pools).items() if key != first} if required
        else {UNKNOWN_ARGUMENT: 1},
        {**realistic(tool, 1, pools), UNKNOWN_ARGUMENT: "x"},
        {**realistic(tool, 2, pools), first: _mistyped(properties.get(first, {}))},
        {**realistic(tool, 3, pools), **_out_of_bounds(properties, required)},
        {**realistic(tool, 4, pools), first: None},
    ]
    return bad


def _mistyped(prop: dict):
    return "many" if prop.get("type") in ("integer", "number", "boolean") else {"not": "a string"}


def _out_of_bounds(properties: dict, required: list[str]) -> dict:
    """One argument just past its schema's bound (required ones first)."""
    for name in required + [name for name in properties if name not in required]:
        prop = properties[name]
        if "maximum" in prop:
            return {name: prop["maximum"] + 1}
        if "maxLength" in prop:
            return {name: "x" * (prop["maxLength"] + 1)}
        if prop.get("format") == "uuid":
            return {name: "not-a-uuid"}
    return {UNKNOWN_ARGUMENT: None}


def outcome_problem(tool: dict, call: dict, outcome: dict) -> str | None:
    """What is wrong with one call's ``outcome`` by the sweep's rule, or None."""
    if outcome.get("failure"):
        return f"transport or protocol failure: {outcome['failure'][:500]}"
    if not outcome["is_error"]:
        if call["expect"] == "error":
            return "bad arguments were accepted"
        body = outcome["structured"]
        if not isinstance(body, dict):
            return "a successful call without structuredContent"
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(tool["output_schema"])
                                                 .iter_errors(body))
        if error is not None:
            return f"structuredContent does not match the outputSchema: {error.message[:300]}"
        if outcome.get("text") is not None and json.loads(outcome["text"]) != body:
            return "the text and structuredContent differ"
        return None
    if call["expect"] == "result":
        return f"realistic arguments were refused: {(outcome.get('text') or '')[:300]}"
    if outcome.get("structured") is not None:
        return "an error result carries structuredContent (clients check it against the success schema)"
    try:
        envelope = json.loads(outcome["text"])
    except (TypeError, ValueError):
        return f"an error result whose text is not the error envelope: {outcome.get('text')!r:.300}"
    if not (isinstance(envelope, dict) and isinstance(envelope.get("error"), str)
            and isinstance(envelope.get("detail"), str) and isinstance(envelope.get("status"), int)):
        return f"an error result whose text is not the error envelope: {envelope!r:.300}"
    if not 400 <= envelope["status"] < 500:
        return f"status {envelope['status']}, not the 4xx of refused arguments: {envelope['detail'][:200]}"
    return None


def problems(listing: dict, calls: list[dict], outcomes: list[dict]) -> list[str]:
    """Every call that broke the rule, as ``tool(arguments): problem``; the sweep passes when empty."""
    assert len(outcomes) == len(calls), (len(outcomes), len(calls))
    tools = {tool["name"]: tool for tool in listing["tools"]}
    found = []
    for call, outcome in zip(calls, outcomes):
        problem = outcome_problem(tools[call["tool"]], call, outcome)
        if problem is not None:
            found.append(f"{call['tool']}({json.dumps(call['arguments'])[:200]}): {problem}")
    return found
