"""``POST /mcp``: Streamable HTTP inside the ordinary (WSGI) API processes.

Stateless by construction: each request builds the SDK's server for the caller's workspace and
serves exactly that request through the SDK's own Streamable HTTP handling (protocol revision
2026-07-28 without handshake or session id; earlier revisions such as 2025-11-25 through the
SDK's stateless handshake path), JSON responses only, so any process behind any load balancer
answers any request.

Before the SDK sees a byte, the REST rules apply, each answered in the error envelope: an
``Origin`` header outside ``MCP_ALLOWED_ORIGINS`` is ``403 origin_not_allowed`` (clients that are
not browsers send none), the bearer key is the REST API's (``401 unauthorized`` unless it names
a workspace), and the body obeys the strict JSON rules and ``MAX_BODY_BYTES`` of every REST body.
A method other than POST is ``405 method_not_allowed`` (with ``Allow``) whatever the request
accepts: the server offers no GET stream, and Streamable HTTP asks for exactly 405 then. An
``Accept`` that does not admit JSON is ``406 not_acceptable``. The
body must then be one message the document admits (``message.MESSAGE_SCHEMA``), else it is 400
with a JSON-RPC error without an id.
"""
from __future__ import annotations

import json

import anyio
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, inline_serializer
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from rest_framework import serializers
from rest_framework.views import APIView

from catalog_app.api.schema import ErrorSerializer, SchemaField, closed_request
from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError
from memseek_site.json_body import decode_json_body

from .listing import tools_list
from .loop import run_here
from .message import MESSAGE_MEMBERS, MESSAGE_RULES, invalid_request, message_problem
from .routes import InProcessRoutes
from .server import Allowlist, build_server

_JsonRpc = inline_serializer("JsonRpcMessage", {
    "jsonrpc": serializers.CharField(), "id": serializers.JSONField(required=False),
    "method": serializers.CharField(required=False), "params": serializers.JSONField(required=False),
    "result": serializers.JSONField(required=False), "error": serializers.JSONField(required=False)})


@closed_request
class JsonRpcRequestSerializer(serializers.Serializer):
    """One JSON-RPC 2.0 message as ``message.MESSAGE_SCHEMA`` states it (the view enforces it)."""

    cross_member_rules = MESSAGE_RULES
    jsonrpc = SchemaField(MESSAGE_MEMBERS["jsonrpc"])
    id = SchemaField(MESSAGE_MEMBERS["id"], required=False)
    method = SchemaField(MESSAGE_MEMBERS["method"], required=False)
    params = SchemaField(MESSAGE_MEMBERS["params"], required=False)
    result = SchemaField(MESSAGE_MEMBERS["result"], required=False)
    error = SchemaField(MESSAGE_MEMBERS["error"], required=False)


class McpView(APIView):
    """The JSON-RPC body is read raw (no DRF parser), after the origin and bearer checks."""

    capability = "read"
    database = "write"  # on the primary: its tool calls may write (each then routed as its own route)

    parser_classes = ()

    def perform_content_negotiation(self, request, force=False):
        # A GET asking for text/event-stream must still learn 405, in JSON, not 406/422.
        return super().perform_content_negotiation(request, force=True)

    def initial(self, request, *args, **kwargs):
        check_origin(request.META.get("HTTP_ORIGIN"))  # before authentication: a refused page learns nothing
        super().initial(request, *args, **kwargs)

    @extend_schema(
        summary="MCP over Streamable HTTP: one JSON-RPC request per POST (tools/list, tools/call, ...)",
        request={"application/json": JsonRpcRequestSerializer},
        responses={200: _JsonRpc, 202: None, 400: _JsonRpc, 401: ErrorSerializer, 403: ErrorSerializer,
                   404: OpenApiResponse(_JsonRpc, description="Revision 2026-07-28: a method the server does not "
                                        "have, with JSON-RPC error -32601"),
                   405: ErrorSerializer, 406: ErrorSerializer, 413: ErrorSerializer,
                   415: ErrorSerializer, 422: ErrorSerializer},
        examples=[OpenApiExample("List the tools", request_only=True, value={
            "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})])
    def post(self, request):
        check_content_type(request.META.get("CONTENT_TYPE", ""))
        check_accept(request._request)
        message = _message(request._request)
        if (problem := message_problem(message)) is not None:
            return HttpResponse(json.dumps(invalid_request(problem)), status=400, content_type="application/json")
        body = json.dumps(message).encode()
        key = request.META["HTTP_AUTHORIZATION"].split()[1]
        # GET /tools's own selector for the workspace the bearer named, read once for this request.
        listing = tools_list(workspace=request.auth)
        status, headers, content = run_here(_serve, key, (request.auth, request.user), request.get_host(),
                                            request.scheme,
                                            listing, _asgi_scope(request._request), body)
        response = HttpResponse(content, status=status)
        for name, value in headers:
            if name.lower() not in ("content-length", "connection"):
                response[name] = value
        return response


def allowed_origins() -> frozenset[str]:
    return frozenset(origin.strip() for origin in memseek_setting("MCP_ALLOWED_ORIGINS").split(",") if origin.strip())


def check_origin(origin: str | None) -> None:
    if origin is not None and origin not in allowed_origins():
        raise ApiError("origin_not_allowed", f"Origin {origin!r} may not call /mcp; an operator lists the origins "
                       "browser-based hosts call from in MCP_ALLOWED_ORIGINS.")


def check_content_type(content_type: str) -> None:
    """A JSON-RPC message comes as ``application/json`` (the SDK would answer anything else with
    a plain-text 400, outside the envelope)."""
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise ApiError("unsupported_media_type", f"POST /mcp takes one JSON-RPC message as application/json, "
                                                 f"not {content_type or 'a body without a Content-Type'!r}.")


def check_accept(request) -> None:
    """The answer is JSON, so ``Accept`` must admit it; the rule is the SDK's own
    (``check_accept_headers``), answered here in the envelope instead of its empty 406."""
    accepts_json, _ = check_accept_headers(request)
    if not accepts_json:
        raise ApiError("not_acceptable", f"POST /mcp answers application/json; Accept "
                                         f"{request.headers.get('Accept', '')[:100]!r} does not admit it.")


def _message(request):
    """The body decoded by the REST body rules (size, syntax, depth, duplicate keys, NUL, ranges)."""
    limit = memseek_setting("MAX_BODY_BYTES")
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if declared.isdigit() and int(declared) > limit:
        raise ApiError("body_too_large", f"The body is {declared} bytes; at most {limit} bytes are accepted "
                                         "(MAX_BODY_BYTES).")
    raw = request.read(limit + 1)
    if len(raw) > limit:
        raise ApiError("body_too_large", f"The body is larger than {limit} bytes (MAX_BODY_BYTES).")
    message = decode_json_body(raw)
    _integral_ids(message)
    return message


def _integral_ids(message) -> None:
    """Turn an ``id`` or ``error.code`` written ``7.0`` into ``7`` (JSON Schema, and so the
    document, counts it an integer; the SDK's models refuse it)."""
    if not isinstance(message, dict):
        return
    for holder, key in ((message, "id"), (message.get("error"), "code")):
        if isinstance(holder, dict) and isinstance(holder.get(key), float) and holder[key].is_integer():
            holder[key] = int(holder[key])


def _asgi_scope(request) -> dict:
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in request.headers.items()
               if name.lower() not in ("authorization", "cookie")]
    host, _, port = request.get_host().partition(":")
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": request.method,
            "scheme": request.scheme, "path": request.path, "raw_path": request.path.encode("latin-1"),
            "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"), "root_path": "",
            "headers": headers, "client": (request.META.get("REMOTE_ADDR", ""), 0),
            "server": (host, int(port) if port.isdigit() else 80)}


async def _serve(request_thread, key: str, caller: tuple, host: str, scheme: str, listing: dict, scope: dict,
                 body: bytes) -> tuple[int, list, bytes]:
    workspace, identity = caller
    routes = InProcessRoutes(key=key, workspace=workspace, identity=identity, host=host, scheme=scheme,
                             request_thread=request_thread)
    allowlist = Allowlist.of(listing)
    server = build_server(allowlist, routes, listing)
    manager = StreamableHTTPSessionManager(server, json_response=True, stateless=True,
                                           max_request_body_size=memseek_setting("MAX_BODY_BYTES"))
    answered = anyio.Event()
    delivered = False
    start: dict = {}
    chunks: list[bytes] = []

    async def receive():
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                answered.set()

    async with manager.run():
        await manager.handle_request(scope, receive, send)
    answered.set()
    headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in start.get("headers", [])]
    return start.get("status", 500), headers, b"".join(chunks)
