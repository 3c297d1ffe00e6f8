"""Serializers shared by the OpenAPI description of every route."""
from rest_framework import serializers


class ErrorSerializer(serializers.Serializer):
    error = serializers.CharField(help_text="Stable snake_case error code.")
    detail = serializers.CharField(help_text="What was wrong and what to do instead.")
    path = serializers.CharField(required=False, help_text="Dotted location of the offending value.")
