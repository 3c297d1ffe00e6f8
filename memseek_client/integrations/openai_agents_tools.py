"""Memseek as OpenAI Agents SDK function tools: ``memseek_tools(client, entity=...)`` gives an
agent ``search_memory`` (``POST /search``), ``remember`` (``POST /records``) and
``memory_brief`` (``POST /memory/search``), all bound to one entity's memory, so the model
cannot read or write another's.

Each tool answers JSON text the model reads. A call the server refuses (a ``MemseekError``) is
answered with the error's code, detail and status, and ``path`` naming the tool's own argument
(``text``, not the route's ``records[0].text``), so the model can correct it; any other
exception goes to the Agents SDK's default error handling.
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from agents import FunctionTool, RunContextWrapper, default_tool_error_function, function_tool

from .. import MemseekClient, MemseekError, RecordInput


def memseek_tools(client: MemseekClient, *, entity: str, collection: str = "main",
                  record_type: str = "note") -> list[FunctionTool]:
    """The three tools over ``entity``'s memory: ``remember`` writes records of
    ``record_type`` into ``collection``; ``search_memory`` searches that collection."""

    def search_memory(query: str, k: int = 5) -> str:
        """Search this user's memory by meaning and words; the best records first.

        Args:
            query: What to look for, in plain words.
            k: How many records to return (1-100).
        """
        with _refusals({"q": "query", "k": "k"}):
            response = client.search(query, mode="hybrid", k=k, include=["text", "key", "occurred_at"],
                                     scope={"entities": [entity], "collections": [collection]})
        return _json({"hits": [{"id": hit.id, "text": hit.text, "key": hit.key, "score": hit.score,
                                "occurred_at": hit.occurred_at} for hit in response.hits]})

    def remember(text: str, key: str | None = None) -> str:
        """Store something worth remembering about this user.

        Args:
            text: The statement to remember, one self-contained sentence.
            key: A name for a fact that changes over time (such as "city"); the new text replaces
                the current value of that name. Leave it out for something that happened.
        """
        with _refusals({"records[0].text": "text", "records[0].key": "key"}):
            result = client.write_records([RecordInput(entity=entity, collection=collection, type=record_type,
                                                       key=key, text=text)])
        [outcome] = result.inserted or result.duplicates
        return _json({"id": outcome.id, "stored": bool(result.inserted)})

    def memory_brief(question: str) -> str:
        """Ask this user's memory a question: the known facts, lines worked out over the records,
        and the passages that answer it, as of today.

        Args:
            question: The question, as the user would ask it.
        """
        with _refusals({"query": "question"}):
            brief = client.memory_search(question, entity=entity)
        return _json({
            "held": brief.held,
            "known": [{"line": known.line, "said": known.said, "ids": list(known.ids)} for known in brief.known or ()],
            "worked_out": [{"line": line.line, "ids": list(line.ids)} for line in brief.worked_out or ()],
            "hits": [{"id": hit.id, "path": hit.path, "text": hit.text, "occurred_at": hit.occurred_at}
                     for hit in brief.hits]})

    return [function_tool(function, failure_error_function=tool_error_message)
            for function in (search_memory, remember, memory_brief)]


class ToolRefused(Exception):
    """A call the server refused, its path renamed to the tool's argument."""

    def __init__(self, error: MemseekError, path: str | None) -> None:
        super().__init__(str(error))
        self.answer = {"error": error.code, "detail": error.detail, "path": path, "status": error.status}


@contextmanager
def _refusals(arguments: Mapping[str, str]) -> Iterator[None]:
    """Turn a ``MemseekError`` into ``ToolRefused``; ``arguments`` maps the route's paths (and
    their sub-paths) to the tool's argument names."""
    try:
        yield
    except MemseekError as error:
        path = error.path
        for route_path, argument in arguments.items():
            if path is not None and (path == route_path or path.startswith((f"{route_path}.", f"{route_path}["))):
                path = argument + path[len(route_path):]
        raise ToolRefused(error, path) from error


def tool_error_message(context: RunContextWrapper[Any], error: Exception) -> str:
    """What the model reads when a tool call fails (module docstring)."""
    if isinstance(error, ToolRefused):
        return _json(error.answer)
    return default_tool_error_function(context, error)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
