"""The MCP server both transports run: an official-SDK ``Server`` whose ``tools/list`` and
``tools/call`` handlers read the ``GET /tools`` payload (its selector in-process, the route over
stdio) and call the tool's REST route through ``routes``.

A tool call never reaches the database by itself: it becomes one request to the route its
listing names (``request_for``), and the route's answer becomes the result, its JSON as text and
as ``structuredContent``. An HTTP error becomes a result with ``isError: true`` whose text is
the error envelope (``error``, ``detail``, ``path``) and the status (``error_result``), its
``path`` naming the tool's argument (an ingest tool's ``records[0].text`` is its argument
``text``). A tool missing from the current listing is the JSON-RPC error the specification lists
for an unknown tool (-32602 Invalid params), even when the client cached an older list.

Nothing here imports Django, DRF or Celery at load time (``memseek_site.errors`` is imported
where a call is refused, ``_api_error``): the stdio bridge runs this module without them.
"""
from __future__ import annotations

import json
from urllib.parse import quote

import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError

INTERNAL_ERROR = -32603
INVALID_PARAMS = -32602
SERVER_VERSION = "memseek"
# An ingest tool sends its arguments as the one record of POST /records.
_INGEST_ITEM = "records[0]"
# What a tool caller may set on an ingested record (the route's other fields are not offered).
INGEST_FIELDS = ("entity", "type", "key", "text", "content", "dedupe_key", "occurred_at")


def _api_error():
    """``memseek_site.errors.ApiError``, imported on first use: importing ``memseek_site`` loads
    the Celery app, which the stdio bridge must not wait for before ``initialize``."""
    from memseek_site.errors import ApiError

    return ApiError


class Allowlist:
    """The current ``GET /tools`` payload: ``read`` (an async callable) returns it at every use,
    as a stdio session living across catalog loads needs (``stdio.CachedListing`` revalidates
    its copy); ``Allowlist.of(listing)`` is one read already made, for the single message one
    HTTP request to ``/mcp`` carries."""

    def __init__(self, read):
        self.read = read

    @classmethod
    def of(cls, listing: dict) -> Allowlist:
        async def known() -> dict:
            return listing
        return cls(known)

    async def listing(self) -> dict:
        return await self.read()


async def listing_over_routes(routes, *, if_none_match: str | None = None) -> tuple[dict | None, str | None]:
    """``GET /tools`` through ``routes``: the payload and its ``ETag``, or ``(None, etag)`` when
    ``if_none_match`` still names it (304). A refusal is a JSON-RPC error naming the status."""
    extra = {} if if_none_match is None else {"if_none_match": if_none_match}
    answer = await routes.request("GET", "/tools", **extra)
    if answer.status == 304 and if_none_match is not None:
        return None, if_none_match
    if answer.status != 200 or not isinstance(answer.payload, dict):
        detail = answer.payload.get("detail") if isinstance(answer.payload, dict) else None
        raise MCPError(INTERNAL_ERROR, f"GET /tools answered {answer.status}: {detail or 'no JSON body'}",
                       answer.payload)
    return answer.payload, answer.etag


def build_server(allowlist: Allowlist, routes, listing: dict) -> Server:
    """A server named after the active declaration in ``listing`` (its title and instructions)
    whose tool calls go through ``routes``."""
    interface = listing.get("interface") or {}

    async def list_tools(ctx, params) -> types.ListToolsResult:
        current = await allowlist.listing()
        return types.ListToolsResult(tools=[_sdk_tool(tool) for tool in current["tools"]])

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        current = await allowlist.listing()
        return await tool_call(routes, current, params.name, params.arguments)

    schemas = {tool["name"]: tool["input_schema"] for tool in listing["tools"]}
    name = interface.get("name", "memseek")
    # get_tool_input_schema: the SDK checks Mcp-Param-* headers against it instead of running
    # tools/list once more before each call.
    server = Server(name, version=str(interface.get("version", SERVER_VERSION)), title=interface.get("title"),
                    instructions=interface.get("instructions"), on_list_tools=list_tools, on_call_tool=call_tool,
                    get_tool_input_schema=schemas.get)
    # The SDK wraps every message in an OpenTelemetry span by default; Memseek installs no OTel
    # exporter, so the spans would be built and dropped on every call (the SDK's documented
    # opt-out: an empty middleware list).
    server.middleware.clear()
    return server


def _sdk_tool(tool: dict) -> types.Tool:
    return types.Tool(name=tool["name"], title=tool["title"], description=tool["description"],
                      input_schema=tool["input_schema"], output_schema=tool["output_schema"],
                      annotations=types.ToolAnnotations(
                          title=tool["title"], read_only_hint=tool["annotations"]["readOnlyHint"],
                          idempotent_hint=tool["annotations"]["idempotentHint"],
                          destructive_hint=tool["annotations"]["destructiveHint"],
                          open_world_hint=tool["annotations"]["openWorldHint"]))


async def tool_call(routes, listing: dict, name: str, arguments) -> types.CallToolResult:
    """Call tool ``name`` of ``listing`` with ``arguments`` through ``routes``."""
    ApiError = _api_error()
    tool = next((tool for tool in listing["tools"] if tool["name"] == name), None)
    if tool is None:
        raise MCPError(INVALID_PARAMS, f"Unknown tool: {name[:100]!r} is not in the active MCP declaration; list "
                       "the tools again.")
    try:
        binding = tool["binding"]
        if binding["kind"] == "view" and not binding["active"]:
            raise ApiError("tool_binding_inactive", f"The tool is bound to view {binding['name']}@{binding['version']}"
                           ", which is no longer the active version; publish a new MCP declaration version.", "name")
        method, path, query, body = request_for(tool, arguments if arguments is not None else {})
    except ApiError as error:
        return error_result(error.envelope(), error.status)
    answer = await routes.request(method, path, query=query, body=body)
    if answer.status >= 400 or not isinstance(answer.payload, dict):
        envelope = answer.payload if isinstance(answer.payload, dict) and "error" in answer.payload else {
            "error": "internal_error", "detail": f"{method} {path} answered {answer.status} without a JSON object."}
        return error_result(_as_arguments(envelope) if tool["kind"] == "ingest" else envelope, answer.status)
    return types.CallToolResult(content=[types.TextContent(type="text", text=_json(answer.payload))],
                                structured_content=answer.payload)


def error_result(envelope: dict, status: int) -> types.CallToolResult:
    """A failed call: the error envelope (plus the HTTP ``status``) as its text, without
    ``structuredContent``: clients built on the TypeScript SDK (the MCP Inspector among them)
    check any ``structuredContent`` against the tool's ``outputSchema`` (the success body) even
    on an error result, and would report a schema failure instead of the route's error."""
    carried = {**envelope, "status": status}
    return types.CallToolResult(content=[types.TextContent(type="text", text=_json(carried))], is_error=True)


def _as_arguments(envelope: dict) -> dict:
    """An ingest route's error with its path (and detail) naming the tool's argument instead of
    the one record the tool sent."""
    path = envelope.get("path")
    if not isinstance(path, str) or not path.startswith(_INGEST_ITEM):
        return envelope
    argument = path.removeprefix(_INGEST_ITEM).removeprefix(".")
    detail = envelope.get("detail", "")
    if isinstance(detail, str):
        detail = detail.removeprefix(f"{_INGEST_ITEM}: ")
    return {**envelope, "path": argument or None, "detail": detail}


def request_for(tool: dict, arguments) -> tuple[str, str, dict | None, object]:
    """The REST request (method, path, query, body) a call of ``tool`` with ``arguments`` makes.
    Raises ``ApiError`` (``request_schema``) for arguments the route cannot take from a tool."""
    ApiError = _api_error()
    if not isinstance(arguments, dict):
        raise ApiError("request_schema", "arguments must be a JSON object", "arguments")
    kind, route = tool["kind"], tool["route"]
    if kind in ("view", "retrieve", "brief"):
        return route["method"], route["path"], None, arguments
    if kind == "lookup":
        return route["method"], route["path"], _query(arguments), None
    _only(arguments, tool["input_schema"].get("properties", {}))
    if kind == "record":
        record_id = arguments.get("id")
        if not isinstance(record_id, str):
            raise ApiError("request_schema", "id: the record id, a UUID string, is required", "id")
        return "GET", "/records/" + quote(record_id, safe=""), None, None
    binding = tool["binding"]
    if kind == "forget":
        prefix = binding.get("entity_prefix")
        entity = arguments.get("entity")
        if prefix is not None and isinstance(entity, str) and not entity.startswith(prefix):
            raise ApiError("request_schema", f"entity: this tool forgets only entities starting with {prefix!r}",
                           "entity")
        return route["method"], route["path"], None, {**arguments, "collection": binding["name"]}
    if kind == "feedback":
        receipt_id = arguments.get("receiptId")
        if not isinstance(receipt_id, str):
            raise ApiError("request_schema", "receiptId: the receipt id search_memory returned, a UUID string, is "
                           "required", "receiptId")
        body = {key: value for key, value in arguments.items() if key != "receiptId"}
        return route["method"], "/receipts/" + quote(receipt_id, safe="") + "/feedback", None, body
    record = {key: arguments[key] for key in INGEST_FIELDS if key in arguments}
    record.update(collection=binding["name"], collection_version=binding["version"])
    return "POST", "/records", None, {"records": [record]}


def _only(arguments: dict, allowed) -> None:
    for key in arguments:
        if key not in allowed:
            raise _api_error()("request_schema", f"{key}: not an argument of this tool; it takes "
                               f"{', '.join(allowed)}", key)


def _query(arguments: dict) -> dict[str, str]:
    """Arguments as query parameters: booleans as true/false, lists comma-separated."""
    query = {}
    for key, value in arguments.items():
        if isinstance(value, list) and all(isinstance(item, (str, int, float)) for item in value):
            value = ",".join(str(item) for item in value)
        elif isinstance(value, bool):
            value = "true" if value else "false"
        elif not isinstance(value, (str, int, float)):
            raise _api_error()("request_schema", f"{key}: a lookup argument is a string, number, boolean or "
                               "list of them", key)
        query[key] = str(value)
    return query


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
