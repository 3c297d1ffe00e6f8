"""``GET /health``, no authentication: 503 when the database does not answer; otherwise 200 with
``status`` ``ok`` or ``degraded`` and, when degraded, the ``degraded`` list naming each figure
past its threshold and why (``catalog_app.health``). A load balancer that only reads the
status code keeps routing to a degraded host, which can still serve reads and writes."""
from django.db import connection
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from ..health import health_checks

_DEGRADED_FIELDS = {
    "check": serializers.CharField(help_text="Dotted path of the figure in this report, e.g. queues.lexical.depth"),
    "value": serializers.JSONField(), "limit": serializers.JSONField(allow_null=True), "why": serializers.CharField()}
_HealthSerializer = inline_serializer("Health", {
    "ok": serializers.BooleanField(), "db": serializers.BooleanField(),
    "status": serializers.ChoiceField(["ok", "degraded"], required=False),
    "degraded": inline_serializer("HealthDegraded", _DEGRADED_FIELDS, many=True, required=False),
    "queues": serializers.JSONField(required=False, help_text="broker: redis, eager or unreachable; per queue "
                                    "its depth and the age in seconds of its oldest message"),
    "backlog": serializers.JSONField(required=False, help_text="pending_records, oldest_pending_age_s, "
                                     "lexical_pending_rows")})


class HealthView(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    @extend_schema(summary="Database liveness, queue depths and backlogs", auth=[],
                   responses={200: _HealthSerializer, 503: _HealthSerializer})
    def get(self, request):
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                cursor.fetchone()
            queues, backlog, degraded = health_checks()
        except Exception:  # any database failure means "not healthy", never a 500
            return Response({"ok": False, "db": False}, status=503)
        return Response({"ok": True, "db": True, "status": "degraded" if degraded else "ok", "degraded": degraded,
                         "queues": queues, "backlog": backlog})
