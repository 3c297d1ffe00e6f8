"""``GET /health``, no authentication: 503 when the database does not answer; otherwise 200 with
``status`` ``ok`` or ``degraded`` and, when degraded, the ``degraded`` list naming each figure
past its threshold and why (``catalog_app.health``). A load balancer that only reads the
status code keeps routing to a degraded host, which can still serve reads and writes. With read
replicas configured, each replica's state as the read router sees it (``memseek_site.replicas``):
a replica that is down, lagging or not streaming is listed as such and skipped by reads, and
never makes /health fail."""
from django.db import connection
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memseek_site.replicas import replica_aliases, replica_state

from ..health import health_checks

_DEGRADED_FIELDS = {
    "check": serializers.CharField(help_text="Dotted path of the figure in this report, e.g. queues.lexical.depth"),
    "value": serializers.JSONField(), "limit": serializers.JSONField(allow_null=True), "why": serializers.CharField()}
_ReplicaSerializer = inline_serializer("ReplicaHealth", many=True, required=False,
                                      help_text="only with DATABASE_REPLICA_URLS set", fields={
    "name": serializers.CharField(help_text="replica_0, replica_1, ... in DATABASE_REPLICA_URLS order"),
    "state": serializers.ChoiceField(["ok", "down", "lagging", "not_streaming", "not_standby"]),
    "replay_lsn": serializers.CharField(allow_null=True, help_text="pg_last_wal_replay_lsn() (null when down)"),
    "lag_s": serializers.FloatField(help_text="seconds its replay trails what it received (0 when caught up)")})
_HealthSerializer = inline_serializer("Health", {
    "ok": serializers.BooleanField(), "db": serializers.BooleanField(),
    "status": serializers.ChoiceField(["ok", "degraded"], required=False),
    "degraded": inline_serializer("HealthDegraded", _DEGRADED_FIELDS, many=True, required=False),
    "queues": serializers.JSONField(required=False, help_text="broker: redis, eager or unreachable; per queue "
                                    "its depth and the age in seconds of its oldest message"),
    "backlog": serializers.JSONField(required=False, help_text="pending_records, oldest_pending_age_s, "
                                     "lexical_pending_rows, reembedding (workspaces switching runtime, "
                                     "records_done, records_total)"),
    "replicas": _ReplicaSerializer})


class HealthView(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    @extend_schema(summary="Database liveness, queue depths and backlogs, replica states", auth=[],
                   responses={200: _HealthSerializer, 503: _HealthSerializer})
    def get(self, request):
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                cursor.fetchone()
            queues, backlog, degraded = health_checks()
        except Exception:  # any database failure means "not healthy", never a 500
            return Response({"ok": False, "db": False}, status=503)
        body = {"ok": True, "db": True, "status": "degraded" if degraded else "ok", "degraded": degraded,
                "queues": queues, "backlog": backlog}
        if aliases := replica_aliases():
            body["replicas"] = [replica_state(alias).describe() for alias in aliases]
        return Response(body)
