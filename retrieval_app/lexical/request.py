"""The ``POST /search/lexical`` body, parsed once and strictly into a frozen ``LexicalRequest``.

Keys are those of lexical-search.md, with Memseek's search scope in place of the page's scope
object (spec/README.md) and ``query.type`` for the page's ``episode_type``. Every problem is
``400`` with the dotted path of the offending value: ``lexical_request`` for the shape (unknown
keys, wrong types, a mode or contract version other than the page's, invalid limits, an
analyzer other than ``bm25_v1`` and ``en_v1``), ``lexical_query_terms`` for text with no term
under the analyzer (punctuation only; for ``en_v1`` also one-character words and stopwords), and
``retrieval_scan_limit`` for a scan budget above its configured ceiling.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import partial

from catalog_app.lexical.analyzers import analyzer_get
from memseek_site.conf import memseek_setting
from memseek_site.errors import RequestError
from memseek_site.parsing import PUBLIC_NAME, parse_int, parse_object, parse_string, parse_uuid
from search_app.engine.spec import Scope, SpecError, parse_scope

CONTRACT_VERSION = 1
MODE = "lexical"
DEFAULT_LIMIT = 10
MAX_LIMIT = 100
DEFAULT_SCAN_LIMIT = 10_000
DEFAULT_SCAN_BYTES_LIMIT = 8_388_608
TAG_CHARS = 255
_KEYS = ("contract_version", "mode", "scope", "query")
_QUERY_KEYS = ("text", "limit", "scan_limit", "scan_bytes_limit", "after", "type", "tag", "analyzer")
# The ranking profiles this route scores (``query.analyzer``): those stored at write time.
ANALYZERS = ("bm25_v1", "en_v1")
_TERMS_ARE = {"bm25_v1": "bm25_v1 terms are runs of letters and digits",
              "en_v1": "en_v1 terms are words of two or more characters other than stopwords"}


class LexicalRequestError(RequestError):
    """A request value this route refuses: ``400`` under its own codes, with the path."""

    default_code = "lexical_request"


_object = partial(parse_object, error=LexicalRequestError)
_int = partial(parse_int, error=LexicalRequestError)


@dataclass(frozen=True, slots=True)
class LexicalRequest:
    scope: Scope
    text: str
    terms: tuple[str, ...]  # distinct terms under ``analyzer``, first-seen order; never empty
    limit: int
    scan_limit: int
    scan_bytes_limit: int
    after: uuid.UUID | None  # exclusive source-row cursor
    type: str | None  # the page's episode_type: one record type
    tag: str | None  # a value of the collection's declared ``tags`` field
    analyzer: str = "bm25_v1"  # the ranking profile: bm25_v1 or en_v1 (stemmed English)


def parse_lexical_request(raw) -> LexicalRequest:
    """Parse a request body; raises ``LexicalRequestError`` (every status 400)."""
    doc = _object(raw, "", allowed=_KEYS, required=_KEYS)
    version = doc["contract_version"]
    if isinstance(version, bool) or version != CONTRACT_VERSION:
        raise LexicalRequestError("lexical_request", f"must be {CONTRACT_VERSION}", "contract_version")
    if doc["mode"] != MODE:
        raise LexicalRequestError("lexical_request", f"must be {MODE!r} on this route; use POST /search for "
                                  "the other modes", "mode")
    try:
        scope = parse_scope(doc["scope"], "scope")
    except SpecError as error:
        raise error.relocated(error.path, code="lexical_request") from None
    query = _object(doc["query"], "query", allowed=_QUERY_KEYS, required=("text",))
    text = parse_string(query["text"], "query.text", max_length=memseek_setting("MAX_QUERY_CHARS"),
                        error=LexicalRequestError)
    analyzer = query.get("analyzer", "bm25_v1")
    if not isinstance(analyzer, str) or analyzer not in ANALYZERS:
        raise LexicalRequestError("lexical_request", f"must be one of {', '.join(ANALYZERS)}, got {analyzer!r}",
                                  "query.analyzer")
    terms = tuple(analyzer_get(analyzer).query_terms(text))
    if not terms:
        raise LexicalRequestError("lexical_query_terms", f"holds no searchable term: {_TERMS_ARE[analyzer]}",
                                  "query.text")
    return LexicalRequest(
        scope=scope, text=text, terms=terms, analyzer=analyzer,
        limit=_int(query.get("limit", DEFAULT_LIMIT), "query.limit", minimum=1, maximum=MAX_LIMIT),
        scan_limit=_budget(query, "scan_limit", DEFAULT_SCAN_LIMIT, "LEXICAL_SCAN_ROWS_MAX"),
        scan_bytes_limit=_budget(query, "scan_bytes_limit", DEFAULT_SCAN_BYTES_LIMIT, "LEXICAL_SCAN_BYTES_MAX"),
        after=_optional(query, "after", lambda value, path: parse_uuid(value, path, error=LexicalRequestError)),
        type=_optional(query, "type", lambda value, path: parse_string(value, path, pattern=PUBLIC_NAME,
                                                                       error=LexicalRequestError)),
        tag=_optional(query, "tag", lambda value, path: parse_string(value, path, max_length=TAG_CHARS,
                                                                     error=LexicalRequestError)))


def _budget(query: dict, key: str, default: int, ceiling_setting: str) -> int:
    path = f"query.{key}"
    value = _int(query.get(key, default), path, minimum=1)
    ceiling = memseek_setting(ceiling_setting)
    if value > ceiling:
        raise LexicalRequestError("retrieval_scan_limit", f"must be at most {ceiling} ({ceiling_setting}), got "
                                  f"{value}; narrow the scope or continue with query.after", path)
    return value


def _optional(query: dict, key: str, read):
    value = query.get(key)
    return None if value is None else read(value, f"query.{key}")
