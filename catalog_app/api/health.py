"""``GET /health``: database liveness, no authentication."""
from django.db import connection
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

_HealthSerializer = inline_serializer("Health", {"ok": serializers.BooleanField(), "db": serializers.BooleanField()})


class HealthView(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    @extend_schema(summary="Database liveness", auth=[], responses={200: _HealthSerializer, 503: _HealthSerializer})
    def get(self, request):
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                cursor.fetchone()
        except Exception:  # any database failure means "not healthy", never a 500
            return Response({"ok": False, "db": False}, status=503)
        return Response({"ok": True, "db": True})
