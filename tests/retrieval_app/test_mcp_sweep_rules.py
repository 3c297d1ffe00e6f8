"""The MCP client sweep's own rules (``mcp_sweep``), without a server: the plan covers every
listed tool (a kind it does not know included) with realistic and bad arguments, and the rule
flags each way an outcome can be wrong."""
from __future__ import annotations

import json

import jsonschema
import pytest

from . import mcp_sweep

OUTPUT = {"type": "object", "required": ["hits"], "properties": {"hits": {"type": "array"}}}


def tool(name: str, kind: str, input_schema: dict, destructive: bool = False) -> dict:
    return {"name": name, "kind": kind, "route": {"available": True}, "input_schema": input_schema,
            "output_schema": OUTPUT, "annotations": {"destructiveHint": destructive}}


LISTING = {"tools": [
    tool("context", "view", {"type": "object", "required": ["entity", "task"], "additionalProperties": False,
                             "properties": {"entity": {"type": "string", "maxLength": 255},
                                            "task": {"type": "string"},
                                            "k": {"type": "integer", "minimum": 1, "maximum": 100}}}),
    tool("open", "record", {"type": "object", "required": ["id"],
                            "properties": {"id": {"type": "string", "format": "uuid"}}}),
    tool("erase", "forget", {"type": "object", "required": ["entity"], "properties": {"entity": {"type": "string"}}},
         destructive=True),
    tool("rate", "feedback", {"type": "object", "required": ["receiptId"],
                              "properties": {"receiptId": {"type": "string"}}}),
]}
POOLS = mcp_sweep.Pools(record_ids=["0b7c5d4e-1111-4222-8333-944455556666"], receipt_ids=["receipt-1"])


def test_every_tool_gets_ten_calls_half_realistic_half_bad():
    calls = mcp_sweep.plan(LISTING, POOLS)
    for listed in LISTING["tools"]:
        mine = [call for call in calls if call["tool"] == listed["name"]]
        assert len(mine) == 10 and sum(call["expect"] == "error" for call in mine) == 5
        realistic = [call["arguments"] for call in mine if call["expect"] != "error"]
        assert all(jsonschema.Draft202012Validator(listed["input_schema"]).is_valid(args) for args in realistic)
        bad = [call["arguments"] for call in mine if call["expect"] == "error"]
        assert len({json.dumps(args, sort_keys=True) for args in bad}) == 5
    # A kind the sweep does not know is swept, held to "a result or the documented error".
    assert {call["expect"] for call in calls if call["tool"] == "erase"} == {"any", "error"}


def test_realistic_arguments_name_what_exists_and_spare_the_sample_data():
    calls = mcp_sweep.plan(LISTING, POOLS)
    assert {call["arguments"]["id"] for call in calls if call["tool"] == "open" and call["expect"] == "result"} == {
        POOLS.record_ids[0]}
    assert {call["arguments"]["receiptId"] for call in calls if call["tool"] == "rate" and call["expect"] == "any"} \
        == {"receipt-1"}
    assert {call["arguments"]["entity"] for call in calls if call["tool"] == "erase" and call["expect"] == "any"} \
        == {mcp_sweep.SWEEP_ENTITY}


def envelope(status: int, **extra) -> dict:
    return {"is_error": True, "structured": None, "failure": None,
            "text": json.dumps({"error": "request_schema", "detail": "task: is required", "path": "task",
                                "status": status, **extra})}


GOOD_BODY = {"hits": []}
REALISTIC = {"tool": "context", "arguments": {}, "expect": "result"}
BAD = {"tool": "context", "arguments": {}, "expect": "error"}


@pytest.mark.parametrize(("call", "outcome", "flagged"), [
    (REALISTIC, {"is_error": False, "structured": GOOD_BODY, "text": json.dumps(GOOD_BODY), "failure": None}, None),
    (BAD, envelope(422), None),
    (REALISTIC, {"failure": "McpError: Connection closed"}, "transport or protocol failure"),
    (BAD, {"is_error": False, "structured": GOOD_BODY, "text": json.dumps(GOOD_BODY), "failure": None},
     "bad arguments were accepted"),
    (REALISTIC, {"is_error": False, "structured": {"hits": "none"}, "text": None, "failure": None},
     "does not match the outputSchema"),
    (REALISTIC, {"is_error": False, "structured": GOOD_BODY, "text": "{}", "failure": None}, "differ"),
    (REALISTIC, {"is_error": False, "structured": None, "text": "{}", "failure": None}, "without structuredContent"),
    (REALISTIC, envelope(422), "realistic arguments were refused"),
    (BAD, {**envelope(422), "structured": {"error": "request_schema"}}, "carries structuredContent"),
    (BAD, envelope(500), "not the 4xx"),
    (BAD, {"is_error": True, "structured": None, "text": "Error: bad", "failure": None}, "not the error envelope"),
    (BAD, {"is_error": True, "structured": None, "text": json.dumps({"error": 3}), "failure": None},
     "not the error envelope"),
])
def test_the_rule_flags_each_wrong_outcome(call, outcome, flagged):
    problem = mcp_sweep.outcome_problem(LISTING["tools"][0], call, outcome)
    assert (problem is None) if flagged is None else (problem is not None and flagged in problem), problem
