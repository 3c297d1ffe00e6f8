"""The one JSON-RPC 2.0 message ``POST /mcp`` accepts, as a JSON Schema (Draft 2020-12).

Invariant: the OpenAPI document's request body of ``POST /mcp`` is built from these members and
rules (``http.JsonRpcRequestSerializer``), and the view refuses every message they do not
admit before the MCP SDK sees it. The SDK alone would accept more: it ignores unknown members
and reads a message with a malformed ``id`` as a notification, answering 202 to input the
document calls invalid.

A refused message gets 400 and a JSON-RPC error without an id (``id: null``, code -32600
Invalid Request): JSON-RPC 2.0 answers an invalid request so even when it looks like a
notification, and MCP's Streamable HTTP transport asks for an HTTP error status (400) for input
the server cannot accept, notifications and responses included, with an optional JSON-RPC
error that has no id.

The error names the rule broken, never the body: a batch (a JSON array, which MCP's current
revisions dropped) is refused by name, and a message is cut to ``MAX_PROBLEM_CHARS``, so a
2 MB body cannot come back as a 2 MB error.
"""
from __future__ import annotations

import jsonschema

INVALID_REQUEST = -32600
MAX_PROBLEM_CHARS = 300

MESSAGE_MEMBERS: dict[str, dict] = {
    "jsonrpc": {"type": "string", "const": "2.0"},
    "id": {"type": ["string", "integer"]},
    "method": {"type": "string"},
    "params": {"type": "object"},
    "result": {"type": "object"},
    "error": {"type": "object", "required": ["code", "message"],
              "properties": {"code": {"type": "integer"}, "message": {"type": "string"}}},
}
REQUIRED_MEMBERS = ("jsonrpc",)
# A request (method and id), a notification (method, no id) or a response to the server (id
# with result or error): exactly one of the three.
MESSAGE_RULES: list[dict] = [{"oneOf": [
    {"required": ["method"], "not": {"anyOf": [{"required": ["result"]}, {"required": ["error"]}]}},
    {"required": ["id", "result"], "not": {"anyOf": [{"required": ["method"]}, {"required": ["error"]}]}},
    {"required": ["id", "error"], "not": {"anyOf": [{"required": ["method"]}, {"required": ["result"]}]}}]}]

MESSAGE_SCHEMA = {"type": "object", "additionalProperties": False, "required": list(REQUIRED_MEMBERS),
                  "properties": MESSAGE_MEMBERS, "allOf": MESSAGE_RULES}
_VALIDATOR = jsonschema.Draft202012Validator(MESSAGE_SCHEMA)


def message_problem(message) -> str | None:
    """What makes the decoded body ``message`` no JSON-RPC message ``POST /mcp`` accepts (the
    member's path and the rule it breaks, at most ``MAX_PROBLEM_CHARS``), or None when it is one."""
    if isinstance(message, list):
        return (f"a JSON-RPC batch ({len(message)} messages) is not accepted; send one message per POST "
                "(MCP has no batches)")
    error = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(message))
    if error is None:
        return None
    path = ".".join(str(part) for part in error.absolute_path)
    problem = f"{path}: {error.message}" if path else error.message
    return problem if len(problem) <= MAX_PROBLEM_CHARS else problem[:MAX_PROBLEM_CHARS - 1] + "…"


def invalid_request(problem: str) -> dict:
    """The JSON-RPC error answering a refused message: no id, -32600 Invalid Request."""
    return {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": f"Invalid Request: {problem}"}}
