"""Serializers shared by the OpenAPI description of every route, and the schema class that
states each keyed route's capability (and its 403) from the view's one declaration, and closes
the request objects marked ``closed_request`` (their strict reader refuses unknown keys) with
``additionalProperties: false``."""
from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers

from ..auth import required_capabilities


class ErrorSerializer(serializers.Serializer):
    error = serializers.CharField(help_text="Stable snake_case error code.")
    detail = serializers.CharField(help_text="What was wrong and what to do instead.")
    path = serializers.CharField(required=False, help_text="Dotted location of the offending value.")


def closed_request(serializer_class):
    """Mark a request serializer whose strict reader accepts exactly the keys it names; the
    schema then says ``additionalProperties: false`` (tests/memseek_site/test_openapi_constraints.py
    compares the names with the reader's)."""
    serializer_class.closed_request = True
    return serializer_class


class KeyedAutoSchema(AutoSchema):
    """Adds ``x-capability`` and the ``403 capability_missing`` response to every route that
    takes a bearer key, so the document cannot disagree with ``catalog_app.auth``; closed request
    objects get ``additionalProperties: false``."""

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and getattr(serializer, "closed_request", False):
            schema["additionalProperties"] = False
        return schema

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation is None or not self.view.get_authenticators():
            return operation
        needed = sorted(required_capabilities(self.view))
        operation["x-capability"] = needed[0] if len(needed) == 1 else needed
        missing = self._get_response_for_code(ErrorSerializer, "403")
        missing["description"] = f"capability_missing: the key lacks {' and '.join(needed)}."
        operation.setdefault("responses", {}).setdefault("403", missing)
        return operation
