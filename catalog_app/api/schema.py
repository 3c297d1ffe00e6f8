"""Serializers shared by the OpenAPI description of every route, and the schema class that
states each keyed route's capability (and its 403) from the view's one declaration, and closes
the request objects marked ``closed_request`` (their strict reader refuses unknown keys) with
``additionalProperties: false``."""
import copy

from drf_spectacular.hooks import postprocess_schema_enums
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from ..auth import required_capabilities


class ErrorSerializer(serializers.Serializer):
    error = serializers.CharField(help_text="Stable snake_case error code.")
    detail = serializers.CharField(help_text="What was wrong and what to do instead.")
    path = serializers.CharField(required=False, help_text="Dotted location of the offending value.")


# The answer of a route that writes records when the write would pass the workspace's storage
# quota (catalog_app.services.storage_quota).
class QuotaErrorSerializer(ErrorSerializer):
    """The Error envelope, with what a ``quota_exceeded`` answer adds (absent from the route's
    other 413 answer, body_too_large)."""

    quota = serializers.ChoiceField(choices=["records", "bytes"], required=False, help_text="The quota passed.")
    limit = serializers.IntegerField(required=False, help_text="The quota: records, or bytes of text and content.")
    would_hold = serializers.IntegerField(required=False, help_text="What the workspace would hold after the write.")


QUOTA_EXCEEDED = OpenApiResponse(QuotaErrorSerializer, description=(
    "quota_exceeded: the write would bring the workspace past its records or bytes quota (the envelope's "
    "quota, limit and would_hold say which and by how much); nothing was written."))


class SchemaField(serializers.JSONField):
    """A request member documented by exactly the JSON Schema its strict reader accepts (built
    with ``memseek_site.parsing``'s ``*_schema`` helpers from the limits the route passes to the
    reader); the serializer only describes, the reader validates."""

    def __init__(self, schema: dict, **kwargs):
        self.openapi_schema = schema
        super().__init__(**kwargs)


def closed_request(serializer_class):
    """Mark a request serializer whose strict reader accepts exactly the keys it names; the
    schema then says ``additionalProperties: false`` (tests/memseek_site/test_openapi_constraints.py
    compares the names with the reader's)."""
    serializer_class.closed_request = True
    return serializer_class


# Marks the components that come from a JSON Schema document until the document is finished.
_JSON_SCHEMA_MARK = "x-memseek-json-schema"


def postprocess_enums_outside_json_schemas(result, generator, **kwargs):
    """drf-spectacular's enum hook (each serializer choice set becomes a named component) over
    every component but those of ``json_schema_components``: theirs stay exactly as their JSON
    Schema states them (the hook would rename them, and cannot hash an enum of mixed types)."""
    schemas = result.get("components", {}).get("schemas", {})
    held = {name: schemas.pop(name) for name in list(schemas) if schemas[name].get(_JSON_SCHEMA_MARK)}
    result = postprocess_schema_enums(result, generator, **kwargs)
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in held.items():
        schemas[name] = {key: value for key, value in schema.items() if key != _JSON_SCHEMA_MARK}
    result["components"]["schemas"] = dict(sorted(schemas.items()))
    return result


def json_schema_components(auto_schema: AutoSchema, name: str, schema: dict, *, resources: dict | None = None) -> dict:
    """A JSON Schema (Draft 2020-12) document as OpenAPI 3.1 components: each of its ``$defs``
    becomes the component ``<name>.<def>`` and each embedded resource (``resources``: its
    ``$id`` -> component name) becomes a component of its own, with every reference rewritten to
    point at the component. Returns the document's root schema (without ``$defs``), so the
    parser's one JSON Schema is what the OpenAPI document says, not a second copy by hand."""
    resources = resources or {}
    document = {**copy.deepcopy(schema), _JSON_SCHEMA_MARK: True}
    document.pop("$schema", None)
    document.pop("$id", None)
    definitions = document.pop("$defs", {})
    for key, definition in list(definitions.items()):
        resource = definition.get("$id")
        if resource in resources:
            del definitions[key]
            json_schema_components(auto_schema, resources[resource], definition, resources=resources)
    for key, definition in definitions.items():
        auto_schema.registry.register_on_missing(ResolvedComponent(
            f"{name}.{key}", ResolvedComponent.SCHEMA, object=f"{name}.{key}",
            schema={**_rewritten_refs(definition, name, resources), _JSON_SCHEMA_MARK: True}))
    root = _rewritten_refs(document, name, resources)
    if resources and name in resources.values():
        auto_schema.registry.register_on_missing(ResolvedComponent(name, ResolvedComponent.SCHEMA, object=name,
                                                                   schema=root))
    return root


def _rewritten_refs(node, name: str, resources: dict):
    if isinstance(node, list):
        return [_rewritten_refs(item, name, resources) for item in node]
    if not isinstance(node, dict):
        return node
    rewritten = {}
    for key, value in node.items():
        if key == "$ref" and value.startswith("#/$defs/"):
            value = f"#/components/schemas/{name}.{value.removeprefix('#/$defs/')}"
        elif key == "$ref" and value in resources:
            value = f"#/components/schemas/{resources[value]}"
        rewritten[key] = _rewritten_refs(value, name, resources)
    return rewritten


class KeyedAutoSchema(AutoSchema):
    """Adds ``x-capability`` and the ``403 capability_missing`` response to every route that
    takes a bearer key, so the document cannot disagree with ``catalog_app.auth``; closed request
    objects get ``additionalProperties: false``."""

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        if isinstance(field, SchemaField):
            schema = copy.deepcopy(field.openapi_schema)
            if field.help_text:
                schema.setdefault("description", str(field.help_text))
            return schema
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        # drf-spectacular writes a nullable untyped field (JSONField(allow_null=True)) as
        # oneOf [{}, null] in OpenAPI 3.1, which no value satisfies (null matches both): the
        # untyped schema alone already admits null.
        if schema.get("oneOf") == [{}, {"type": "null"}]:
            schema = {key: value for key, value in schema.items() if key != "oneOf"}
        return schema

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        for name, field in serializer.fields.items():
            # drf-spectacular drops a nested many=True serializer's length bounds.
            if isinstance(field, serializers.ListSerializer) and name in schema.get("properties", {}):
                bounds = {"minItems": field.min_length, "maxItems": field.max_length}
                schema["properties"][name].update({key: value for key, value in bounds.items() if value is not None})
        if direction == "request" and getattr(serializer, "closed_request", False):
            schema["additionalProperties"] = False
        if direction == "request" and getattr(serializer, "cross_member_rules", None):
            # Rules between members (``not`` both entity and entities, ...), as JSON Schema.
            schema["allOf"] = copy.deepcopy(serializer.cross_member_rules)
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
