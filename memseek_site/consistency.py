"""Read-your-writes across requests: the consistency token, the workspace's last write, and the
middleware that routes each API request (``memseek_site.replicas`` holds the rule itself).

- Every successful response of a route declared ``database = "write"`` (and of a read route that
  wrote through ``primary_write``) carries ``Memseek-Consistency-Token``: a WAL position of the
  primary read after the write committed (``committed_position``), written as PostgreSQL writes
  an LSN (``0/3A1F2B8``). With replicas configured the same position is also raised in
  the shared cache as its workspace's last write, so a read that sends no token still sees what
  its workspace wrote, from any process or host sharing the cache (``CACHE_URL``).
- A request may send the header back; a value that is not an LSN is ``400
  invalid_consistency_token``. A read route waits for the larger of it and its workspace's last
  write (``ReplicaRouter.read_alias``).
- ``Memseek-Served-By`` names the server that served a routed request: ``primary``, or the
  replica's alias, chosen only after it answered ``pg_is_in_recovery()`` true for this request or
  within the last ``REPLICA_STATE_TTL_MS`` (``replicas.heard_covers``).
- A read served by a replica that fails during the request (5xx, and the replica no longer
  answers) is served again by the primary: its body is kept for that, so the caller sees no 5xx.
- A read served by the primary that answers ``503 database_unavailable`` (no primary: a
  failover's gap) is served again, whole, by a replica that is still a standby
  (``ReplicaRouter.standby_alias``), once it has replayed the read's position within
  ``REPLICA_WAIT_MS``; else ``503 standby_behind`` with ``Retry-After``. Writes stay 503.
"""
from __future__ import annotations

import logging
import threading

from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from .conf import memseek_setting
from . import deadline
from .error_handler import DATABASE_RETRY_AFTER_S, RETRY_AFTER_MEMBER
from .errors import ApiError
from .replicas import (
    ReplicaRouter,
    RequestRouting,
    current_routing,
    lsn_format,
    lsn_parse,
    mark_down,
    replica_aliases,
    replica_state,
    replicas_serve_reads,
    serving,
    set_routing,
)

logger = logging.getLogger(__name__)

TOKEN_HEADER = "Memseek-Consistency-Token"
SERVED_BY_HEADER = "Memseek-Served-By"
_TOKEN_META = "HTTP_MEMSEEK_CONSISTENCY_TOKEN"
_TOKEN_PATH = "headers.Memseek-Consistency-Token"
# How long the cache keeps a workspace's last write: far longer than any replica may lag
# (REPLICA_MAX_LAG_S), so an expired entry never sends a read to a replica that lacks the write.
_LAST_WRITE_TTL_S = 86_400
_RAISE_SCRIPT = """
local current = tonumber(redis.call('GET', KEYS[1]) or '-1')
if current < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2]) end
return 0
"""
_local_raise_lock = threading.Lock()


def _last_write_key(workspace_id) -> str:
    return f"memseek:last-write-lsn:{workspace_id}"


def workspace_last_write(workspace_id) -> int | None:
    """The WAL position of the workspace's last acknowledged write, as far as the cache knows."""
    value = cache.get(_last_write_key(workspace_id))
    return int(value) if value is not None else None


def workspace_last_write_raise(workspace_id, position: int) -> None:
    """Record ``position`` as the workspace's last write unless a later one is recorded: an
    atomic compare-and-set on Redis (two hosts' writes racing keep the larger), under a lock in
    a process-local cache."""
    key = _last_write_key(workspace_id)
    from django.core.cache.backends.redis import RedisCache

    if isinstance(cache, RedisCache):
        client = cache._cache.get_client(key, write=True)
        client.eval(_RAISE_SCRIPT, 1, cache.make_and_validate_key(key), position, _LAST_WRITE_TTL_S)
        return
    with _local_raise_lock:
        current = cache.get(key)
        if current is None or int(current) < position:
            cache.set(key, position, _LAST_WRITE_TTL_S)


def committed_position(cursor) -> int:
    """A WAL position at or after the end of every transaction this session committed, that a
    standby can replay exactly: the primary's write position, ``pg_current_wal_lsn()``. That
    position is the end of a record, except at a WAL page boundary, where it may cut a record
    whose rest is not written yet, so a standby could not reach it until more WAL comes; there,
    a flushed empty message record (``pg_logical_emit_message``, no logical decoding needed)
    ends after it, and its end is the position."""
    cursor.execute("SELECT pg_current_wal_lsn()::text, current_setting('wal_block_size')::int")
    written, block = cursor.fetchone()
    position = lsn_parse(written)
    if position % block == 0:
        cursor.execute("SELECT pg_logical_emit_message(false, 'memseek.consistency', '', true)::text")
        position = lsn_parse(cursor.fetchone()[0])
    return position


def route_request(request, view, workspace_id) -> None:
    """Called once a request's key is known (``catalog_app.auth.HasWorkspace``): check the token
    it sent, and serve a read route from the server ``ReplicaRouter`` picks. Outside the
    middleware (a view called directly) there is nothing to route."""
    routing = getattr(request, "memseek_routing", None)
    if routing is None or routing is not current_routing() or routing.workspace_id is not None:
        return  # not routed here, or routed already (a second permission check of the same request)
    routing.workspace_id = workspace_id
    if routing.token is not None:
        try:
            routing.needed_lsn = lsn_parse(routing.token.strip())
        except ValueError:
            raise ApiError("invalid_consistency_token",
                           f"{TOKEN_HEADER} must be a WAL position as a write response sent it (such as 0/3A1F2B8).",
                           _TOKEN_PATH) from None
    if database_use(view, request.method) != "read" or routing.primary_only or not replicas_serve_reads():
        return
    last_write = workspace_last_write(workspace_id)
    if last_write is not None:
        routing.needed_lsn = max(routing.needed_lsn or 0, last_write)
    if routing.standby is not None:
        if not ReplicaRouter.standby_has_replayed(routing.standby, routing.needed_lsn):
            raise ApiError("standby_behind",
                           "There is no primary now (a failover) and the standby has not yet replayed this "
                           "workspace's last write (or the token's position); retry in a few seconds.",
                           _TOKEN_PATH if routing.token is not None else None,
                           {RETRY_AFTER_MEMBER: DATABASE_RETRY_AFTER_S})
        return
    alias = ReplicaRouter.read_alias(routing.needed_lsn)
    if alias != DEFAULT_DB_ALIAS:
        routing.alias = alias
        routing.scope = serving(alias)
        routing.scope.__enter__()


def database_use(view, method: str) -> str | None:
    """How ``view`` (a class or an instance) uses the database for ``method``: its
    ``database_by_method`` entry for it, else its ``database`` ("read" or "write"; None: undeclared)."""
    return getattr(view, "database_by_method", {}).get(method, getattr(view, "database", None))


class ReadRoutingMiddleware:
    """Routes each request (module doc); the last middleware, so a retry re-runs only the view."""

    def __init__(self, get_response):
        self.get_response = get_response
        replicas_serve_reads()  # a READ_CONSISTENCY it does not know stops the process at start

    def __call__(self, request):
        outer = current_routing()
        try:
            response, routing = self._serve(request, primary_only=False)
            if routing.alias != DEFAULT_DB_ALIAS and response.status_code >= 500 \
                    and not replica_state(routing.alias).reachable:
                mark_down(routing.alias)
                response, routing = self._serve(request, primary_only=True)
            elif routing.kind == "read" and routing.alias == DEFAULT_DB_ALIAS and _database_unavailable(response):
                standby = ReplicaRouter.standby_alias()
                if standby is not None:
                    response, routing = self._serve(request, primary_only=False, standby=standby)
            if routing.kind is not None:
                response[SERVED_BY_HEADER] = "primary" if routing.alias == DEFAULT_DB_ALIAS else routing.alias
            if (routing.kind == "write" or routing.wrote) and 200 <= response.status_code < 300 \
                    and routing.workspace_id is not None:
                self._acknowledge(response, routing.workspace_id)
            return response
        finally:
            set_routing(outer)

    def _serve(self, request, *, primary_only: bool, standby: str | None = None):
        routing = RequestRouting(token=request.META.get(_TOKEN_META), primary_only=primary_only, standby=standby)
        if standby is not None:  # the whole request, its key's lookup included, on the standby
            routing.alias, routing.scope = standby, serving(standby)
            routing.scope.__enter__()
        request.memseek_routing = routing
        set_routing(routing)
        try:
            return self.get_response(request), routing
        finally:
            scope = getattr(routing, "scope", None)
            if scope is not None:
                scope.__exit__(None, None, None)

    def process_view(self, request, view_func, view_args, view_kwargs):
        routing = request.memseek_routing
        routing.kind = database_use(getattr(view_func, "cls", None), request.method)
        if routing.kind == "read" and replica_aliases() and not request._read_started \
                and int(request.META.get("CONTENT_LENGTH") or 0) > 0:
            # Kept for a retry on the primary; one byte past the limit so the parser still refuses it.
            request._body = request.read(memseek_setting("MAX_BODY_BYTES") + 1)

    @staticmethod
    def _acknowledge(response, workspace_id) -> None:
        try:
            # Outside the request's deadline: a write that committed just before it ran out is acknowledged.
            with deadline.beyond_deadline(), serving(DEFAULT_DB_ALIAS):
                with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
                    position = committed_position(cursor)
        except DatabaseError:
            return  # the write is committed; without a token the caller's next read goes by its workspace
        response[TOKEN_HEADER] = lsn_format(position)
        if replica_aliases():
            try:
                workspace_last_write_raise(workspace_id, position)
            except Exception:  # the write stands; a caller that sends the token still reads it
                logger.exception("could not record the workspace's last write in the cache")


def _database_unavailable(response) -> bool:
    """Whether ``response`` is the ``503 database_unavailable`` of a server that could not be reached."""
    data = getattr(response, "data", None)
    return response.status_code == 503 and isinstance(data, dict) and data.get("error") == "database_unavailable"
