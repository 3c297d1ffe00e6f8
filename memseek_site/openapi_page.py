"""The checked-in OpenAPI document (``docs/openapi.json``) and the documentation site's API
reference page rendered from it (``docs/api/reference.md``), so the site shows the API without
fetching a viewer script and every change to the API shows in review as a change to both files.

``python -m memseek_site.openapi_page`` writes both from the running code (the document
validated as drf-spectacular's ``--validate`` does); ``--check`` writes nothing and exits 1 when
either file differs from what the code generates. ``reference_markdown`` is a pure function of
the document: one section per operation (summary, description, capability, parameters, body and
answers) grouped by the operation's tag, then every component schema as JSON.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "docs" / "openapi.json"
PAGE = ROOT / "docs" / "api" / "reference.md"
METHODS = ("get", "post", "put", "patch", "delete")


def document_generate() -> dict:
    """The OpenAPI document the running code serves at ``/api/schema/``, validated against the
    OpenAPI 3.1 meta-schema (raises on an invalid document)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memseek_site.settings")
    import django
    django.setup()
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.validation import validate_schema
    document = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(document)
    return json.loads(json.dumps(document))


def document_text(document: dict) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def _schema_link(schema: dict) -> str:
    """A schema as a short Markdown reference: a link to its component, or its JSON inline."""
    ref = schema.get("$ref")
    if ref:
        name = ref.rsplit("/", 1)[-1]
        return f"[`{name}`](#schema-{name.lower()})"
    if schema.get("type") == "array" and "$ref" in schema.get("items", {}):
        return "array of " + _schema_link(schema["items"])
    return "`" + json.dumps(schema, ensure_ascii=False, sort_keys=True).replace("|", "\\|") + "`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _operation(path: str, method: str, operation: dict) -> list[str]:
    lines = [f"### `{method.upper()} {path}`", ""]
    if operation.get("summary"):
        lines += [f"**{operation['summary']}**", ""]
    if operation.get("description"):
        lines += [operation["description"].strip(), ""]
    capability = operation.get("x-capability")
    lines += [f"Key capability: `{capability}`." if capability else "No key.", ""]
    parameters = operation.get("parameters", [])
    if parameters:
        lines += ["| Parameter | In | Required | Schema | Description |", "| --- | --- | --- | --- | --- |"]
        for parameter in parameters:
            lines.append(f"| `{parameter['name']}` | {parameter['in']} | "
                         f"{'yes' if parameter.get('required') else 'no'} "
                         f"| {_schema_link(parameter.get('schema', {}))} | {_cell(parameter.get('description', ''))} |")
        lines.append("")
    for key in ("x-query-rules",):
        if key in operation:
            lines += [f"`{key}`:", "", "```json", json.dumps(operation[key], indent=2, ensure_ascii=False), "```", ""]
    body = operation.get("requestBody")
    if body:
        for media, content in sorted(body.get("content", {}).items()):
            required = ", required" if body.get("required") else ""
            lines += [f"Body ({media}{required}): {_schema_link(content.get('schema', {}))}", ""]
    lines += ["| Status | Answer | Description |", "| --- | --- | --- |"]
    for status, answer in sorted(operation.get("responses", {}).items()):
        schemas = [_schema_link(content.get("schema", {})) for _, content in sorted(answer.get("content", {}).items())]
        lines.append(f"| {status} | {', '.join(schemas) or '—'} | {_cell(answer.get('description', ''))} |")
    return lines + [""]


def reference_markdown(document: dict) -> str:
    """The reference page of ``document``: operations grouped by their first tag (in path
    order), then the component schemas in name order, each with an anchor ``schema-<name>``."""
    info = document.get("info", {})
    lines = ["# API reference", "",
             "<!-- Generated from docs/openapi.json by `python -m memseek_site.openapi_page`; do not edit. -->", "",
             (f"{info.get('title', '')} {info.get('version', '')} (OpenAPI {document.get('openapi', '')}). "
              f"{info.get('description', '')}"), "",
             ("Every route but `/health` and the schema pages takes `Authorization: Bearer <workspace key>`; "
              "the error answers are the envelope `Error` ([API overview](overview.md)). This page is "
              "rendered from the checked-in document, `docs/openapi.json`; a running server serves the "
              "same document at `/api/schema/` and browses it at `/api/docs/`."), ""]
    groups: dict[str, list[tuple[str, str, dict]]] = {}
    for path, item in document.get("paths", {}).items():
        for method in METHODS:
            if method in item:
                tag = (item[method].get("tags") or ["other"])[0]
                groups.setdefault(tag, []).append((path, method, item[method]))
    for tag, operations in groups.items():
        lines += [f"## {tag}", ""]
        for path, method, operation in operations:
            lines += _operation(path, method, operation)
    lines += ["## Schemas", ""]
    for name, schema in sorted(document.get("components", {}).get("schemas", {}).items()):
        lines += [f"### {name} {{#schema-{name.lower()}}}", "", "```json",
                  json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=True), "```", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    document = document_generate()
    wanted = {DOCUMENT: document_text(document), PAGE: reference_markdown(document)}
    if "--check" in argv:
        stale = [str(path.relative_to(ROOT)) for path, text in wanted.items()
                 if not path.exists() or path.read_text() != text]
        for name in stale:
            print(f"{name} differs from the generated one; run python -m memseek_site.openapi_page", file=sys.stderr)
        return 1 if stale else 0
    for path, text in wanted.items():
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
