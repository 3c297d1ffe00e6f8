"""The MCP tool allowlist: ``GET /tools``."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..decode import json_field



@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRoute:
    """The REST route a tool calls; ``available`` is false for a route this server lacks."""

    method: str
    path: str
    available: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolAnnotations:
    read_only: bool = json_field("readOnlyHint")
    idempotent: bool = json_field("idempotentHint")
    destructive: bool = json_field("destructiveHint")
    open_world: bool = json_field("openWorldHint")


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """One declared tool: ``binding`` names what it is bound to (``kind``, and ``name``,
    ``version``, ``hash``, ``active`` or ``lookup``); ``input_schema`` and ``output_schema`` are
    the JSON Schemas of its arguments and of its result."""

    name: str
    title: str | None
    description: str
    kind: str
    binding: Mapping[str, Any]
    route: ToolRoute
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any]
    annotations: ToolAnnotations
    hash: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInterface:
    name: str
    version: int
    hash: str
    title: str
    instructions: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCatalog:
    hash: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolList:
    """The active declaration (``interface``, ``None`` when there is none) and its tools in
    declared order."""

    protocol: str
    catalog: ToolCatalog
    interface: ToolInterface | None
    tools: tuple[Tool, ...]
