"""The playground's parameter form, generated from a view's input schema (``GET /views``).

Invariant: the form only shapes what the operator typed into JSON values; it never decides
validity. Values it cannot convert (``"ten"`` for an integer) are passed on as typed, so the
view's own binder (``bind_parameters``) refuses them with the same ``view_parameter`` error
and path an API caller would get. An empty field is omitted, so defaults apply.
"""
from __future__ import annotations

import json

from django import forms

DATETIME_PLACEHOLDER = "2026-01-31T09:00:00Z"


class ParameterForm(forms.Form):
    """One field per property of ``schema`` (a JSON Schema object from ``input_schema``)."""

    def __init__(self, data=None, *, schema: dict):
        super().__init__(data)
        self.schema = schema
        required = set(schema.get("required") or ())
        for name, prop in (schema.get("properties") or {}).items():
            field = _field_for(prop)
            field.label = name + (" *" if name in required else "")
            field.help_text = _help(prop)
            self.fields[name] = field

    def parameters(self) -> dict:
        """The call body: ``{name: JSON value}`` for every filled field, in schema order.
        Call after ``is_valid()`` (always true: every field is optional text or a choice)."""
        body = {}
        for name, prop in (self.schema.get("properties") or {}).items():
            value = self.cleaned_data.get(name)
            if value in (None, "", []):
                continue
            body[name] = _json_value(prop, value)
        return body


def _field_for(prop: dict) -> forms.Field:
    kind = prop.get("type")
    if kind == "array":
        options = (prop.get("items") or {}).get("enum")
        if options:
            return forms.MultipleChoiceField(required=False, choices=[(o, o) for o in options],
                                             widget=forms.SelectMultiple(attrs={"size": min(len(options), 6)}))
        return forms.CharField(required=False, widget=forms.TextInput(attrs={"placeholder": "comma-separated"}))
    if "enum" in prop:
        choices = [("", "(default)" if "default" in prop else "(none)")]
        choices += [(json.dumps(option) if kind != "string" else option, str(option)) for option in prop["enum"]]
        return forms.ChoiceField(required=False, choices=choices)
    if kind == "boolean":
        return forms.ChoiceField(required=False, choices=[("", "(default)"), ("true", "true"), ("false", "false")])
    if kind in ("integer", "number"):
        attrs = {"step": "1" if kind == "integer" else "any"}
        attrs.update({key: prop[key] for key in ("minimum", "maximum") if key in prop})
        attrs = {("min" if k == "minimum" else "max" if k == "maximum" else k): v for k, v in attrs.items()}
        # A text input, not a number input: a browser would silently drop "ten" instead of sending it.
        return forms.CharField(required=False, widget=forms.TextInput(attrs={"inputmode": "decimal", **attrs}))
    if prop.get("format") == "date-time":
        return forms.CharField(required=False, widget=forms.TextInput(attrs={"placeholder": DATETIME_PLACEHOLDER}))
    return forms.CharField(required=False, strip=False)


def _help(prop: dict) -> str:
    parts = []
    if prop.get("description"):
        parts.append(prop["description"])
    kind = prop.get("type")
    if kind == "array":
        kind = "list of strings"
    elif prop.get("format") == "date-time":
        kind = "RFC 3339 datetime"
    parts.append(str(kind))
    if "default" in prop:
        parts.append(f"default {json.dumps(prop['default'])}")
    for key, word in (("minimum", "≥"), ("maximum", "≤")):
        if key in prop:
            parts.append(f"{word} {prop[key]}")
    return " · ".join(parts)


def _json_value(prop: dict, value):
    kind = prop.get("type")
    if kind == "array":
        if isinstance(value, list):
            return value
        return [item.strip() for item in value.split(",") if item.strip()]
    if "enum" in prop and kind != "string":
        return json.loads(value)
    if kind == "boolean":
        return value == "true"
    if kind in ("integer", "number"):
        return _number(value.strip())
    return value


def _number(text: str):
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return text  # the binder names the parameter and says what it expected
    return number
