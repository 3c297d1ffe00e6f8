"""The hostile question table of issue-41's "bounded work" (docs/bounded-work.md), shared by its
test (tests/memseek_site/test_hostile_questions.py, in-process) and its bench (bench/hostile.py,
against gunicorn): texts a caller may send wherever a route or an MCP tool takes text, and the
requests that carry one to each such route and tool over the example catalog.

Every answer must be a JSON envelope: 2xx, 4xx, or ``503 deadline_exceeded``; never HTML, never
another status of 500 or more.
"""
from __future__ import annotations

import itertools
import string

MAX_QUERY_CHARS = 8_192
ENTITY = "contact.maria"
ORDINARY = "When is Maria's Q3 budget review?"
# A relevance label /evaluate needs; no record has this id, which the evaluation allows.
LABELLED = "00000000-0000-4000-8000-000000000001"


def _fill(unit: str, length: int = MAX_QUERY_CHARS) -> str:
    return (unit * (length // len(unit) + 1))[:length].strip()


def _distinct_words(count: int) -> str:
    letters = string.ascii_lowercase
    words = ("".join(parts) for size in itertools.count(1) for parts in itertools.product(letters, repeat=size))
    return " ".join(itertools.islice(words, count))


DATE_FORMS = ["0001-01-01", "9999-12-31", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "1 January 0001",
              "31 December 9999", "January 0001", "December 9999", "in 0001", "in 9999", "01/01/0001",
              "12/31/9999", "the week of 31 December 9999", "a year after 9999-12-31", "a day before 0001-01-01",
              "9999-12-31T23:59:59.999999+14:00", "0001-01-01T00:00:00-14:00"]

# name -> text
HOSTILE: dict[str, str] = {
    "one_word_max_length": _fill("budget "),
    "one_date_word_max_length": _fill("may "),
    "one_year_max_length": _fill("2023 "),
    "distinct_words_max_length": _distinct_words(2_000)[:MAX_QUERY_CHARS].rsplit(" ", 1)[0],
    "distinct_words_4000": _distinct_words(4_000),
    "digit_run_max_length": "9" * MAX_QUERY_CHARS,
    "digit_runs": _fill("1234567890123456789 "),
    "punctuation_run": _fill("!?.,;:-"),
    "nested_quotes": _fill("(\"'\"(\"a 'b \\\"c\\\" d' e\")\"')"),
    "quotes_only": "\"" * MAX_QUERY_CHARS,
    "dates_at_the_edges": " ".join(DATE_FORMS),
    "edge_dates_max_length": _fill(" ".join(DATE_FORMS) + " "),
    **{f"date_{index}": f"what happened on {form}?" for index, form in enumerate(DATE_FORMS)},
}

# Raw query strings whose bytes are not UTF-8 (GET routes) and bodies that are not UTF-8 (POST).
INVALID_UTF8_QUERY = ["%C3%28", "%ED%A0%80%ED%B0%80", "%C0%AF", "%FF"]
INVALID_UTF8_BODY = [b'{"query": "\xc3\x28"}', b'{"query": "\xed\xa0\x80"}', b'{"q": "\xff", "mode": "text"}']

# name -> (method, path, request builder: text -> JSON body or query parameters)
ROUTES = {
    "search_text": ("POST", "/search", lambda text: {"q": text, "mode": "text"}),
    "search_hybrid": ("POST", "/search", lambda text: {"q": text, "mode": "hybrid"}),
    "search_lexical": ("POST", "/search/lexical", lambda text: {"contract_version": 1, "mode": "lexical", "scope": {},
                                                                "query": {"text": text}}),
    "retrieve": ("POST", "/retrieve", lambda text: {"query": text}),
    "memory_search": ("POST", "/memory/search", lambda text: {"query": text}),
    "view_query": ("POST", "/views/customer_context/query", lambda text: {"entity": ENTITY, "task": text}),
    "evaluate": ("POST", "/evaluate", lambda text: {"k": 5, "queries": [{"query": text, "relevant": {LABELLED: 2}}]}),
    "context": ("GET", "/context", lambda text: {"entity": ENTITY, "task": text, "budget": 4000}),
    "memory_grep": ("GET", "/memory/grep", lambda text: {"q": text}),
}
# MCP tools of the example catalog's declaration that take text: name -> arguments builder
MCP_TOOLS = {
    "brief": lambda text: {"query": text},
    "search_memory": lambda text: {"query": text},
    "customer_context": lambda text: {"entity": ENTITY, "task": text},
    "grep": lambda text: {"q": text},
}
MCP_PROTOCOL = "2026-07-28"


def mcp_call(tool: str, arguments: dict) -> tuple[dict, dict]:
    """``(JSON-RPC body, headers)`` of one ``tools/call`` of ``tool`` on ``POST /mcp``."""
    meta = {"io.modelcontextprotocol/protocolVersion": MCP_PROTOCOL, "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "hostile", "version": "1"}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": meta}}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MCP_PROTOCOL,
               "Mcp-Method": "tools/call", "Mcp-Name": tool}
    return body, headers


def acceptable(status: int, content_type: str, body: bytes) -> str | None:
    """Why an answer breaks the table's rule, or None when it keeps it."""
    import json

    if not content_type.startswith("application/json"):
        return f"{status} answered {content_type or 'no content type'}, not JSON"
    try:
        document = json.loads(body)
    except ValueError:
        return f"{status} answered a body that is not JSON"
    if status >= 500 and not (status == 503 and document.get("error") == "deadline_exceeded"):
        return f"{status} {document.get('error')}"
    if status >= 400 and "error" not in document:
        return f"{status} without the error envelope"
    return None
