"""The one error base and the strict readers: every domain error is an ``ApiError`` built as
``(code, message, path, extra)``; raising one loads neither DRF nor the database layer; the DRF
handler renders any of them with the status ``ERROR_STATUS`` gives its code; the readers raise
the error class their caller passes."""
import inspect
import pickle
import subprocess
import sys
import uuid

import pytest

from catalog_app.catalog.errors import CatalogError, CatalogInvalid
from catalog_app.embedding import EmbeddingUnavailable
from catalog_app.llm import ProviderError, ProviderInvalid, ProviderTimeout, ProviderTransport, ProviderUnconfigured
from catalog_app.services.activation import ActivationRefused
from catalog_app.services.enrichment import EnrichmentDeferred
from catalog_app.services.workspaces import WorkspaceExists
from memseek_site.error_handler import api_exception_handler
from memseek_site.errors import ERROR_STATUS, ApiError, RequestError
from memseek_site.parsing import (PUBLIC_NAME, parse_bool, parse_datetime, parse_int, parse_names, parse_number,
                                  parse_object, parse_string, parse_uuid)
from retrieval_app.compile import BudgetTooSmall
from retrieval_app.settings import SettingError
from search_app.engine.rank_evaluate import RankEvaluationError
from search_app.engine.rank_expression import RankError
from search_app.engine.resolve import ResolveError
from search_app.engine.spec import QueryTooLong, SpecError

DOMAIN_ERRORS = (RequestError, SpecError, QueryTooLong, ResolveError, RankError, RankEvaluationError, CatalogError,
                 CatalogInvalid, BudgetTooSmall, SettingError, ProviderError, ProviderUnconfigured, ProviderTimeout,
                 ProviderTransport, ProviderInvalid, EmbeddingUnavailable, ActivationRefused, WorkspaceExists,
                 EnrichmentDeferred)


@pytest.mark.parametrize("error_class", DOMAIN_ERRORS, ids=lambda cls: cls.__name__)
def test_every_domain_error_is_an_api_error_built_in_the_one_argument_order(error_class):
    assert issubclass(error_class, ApiError)
    parameters = list(inspect.signature(error_class).parameters)
    assert parameters[:4] == ["code", "message", "path", "extra"]


def test_raising_an_error_or_reading_a_value_imports_neither_drf_nor_the_database_layer():
    script = ("import sys\n"
              "from memseek_site.parsing import parse_int\n"
              "from search_app.engine.spec import SpecError, parse_search_spec\n"
              "try:\n"
              "    parse_int('x', 'k', error=SpecError)\n"
              "except SpecError as error:\n"
              "    assert error.envelope() == {'error': 'request_schema',"
              " 'detail': 'k: expected an integer, got a string', 'path': 'k'}, error.envelope()\n"
              "loaded = sorted(m for m in sys.modules if m.startswith(('rest_framework', 'django.db')))\n"
              "assert not loaded, loaded\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_an_error_survives_pickling_with_its_own_attributes():
    transport = pickle.loads(pickle.dumps(ProviderTransport("provider_transport", "down", status=429)))
    assert (type(transport), transport.code, transport.status, str(transport)) == (ProviderTransport,
                                                                                 "provider_transport", 429, "down")
    budget = pickle.loads(pickle.dumps(BudgetTooSmall.of(256, 300)))
    assert (budget.requested, budget.required, budget.envelope()) == (256, 300, BudgetTooSmall.of(256, 300).envelope())


def test_an_unregistered_code_is_refused_where_a_class_registers_its_codes():
    with pytest.raises(KeyError):
        ApiError("no_such_code", "x")
    with pytest.raises(KeyError):
        ProviderTimeout("provider_invalid", "x")
    assert CatalogError("any_issue_code", "catalog issue codes are the loader's own").code == "any_issue_code"


@pytest.mark.parametrize(("error", "status", "envelope"), [
    (SpecError("request_schema", "must be an integer", "sources[0].k"), 422,
     {"error": "request_schema", "detail": "sources[0].k: must be an integer", "path": "sources[0].k"}),
    (SpecError("request_schema", "expected an object, got a list", ""), 422,
     {"error": "request_schema", "detail": "expected an object, got a list"}),
    (ResolveError("unknown_collection", "unknown collection 'x'", "scope.collections[0]"), 422,
     {"error": "unknown_collection", "detail": "scope.collections[0]: unknown collection 'x'",
      "path": "scope.collections[0]"}),
    (QueryTooLong.of(9, 8), 422, {"error": "query_too_long", "detail": "q has 9 characters; at most 8", "path": "q"}),
    (BudgetTooSmall.of(256, 300), 422,
     {"error": "CONTEXT_BUDGET_TOO_SMALL", "path": "tokenBudget", "requestedTokens": 256, "requiredTokens": 300,
      "detail": "The policy records in scope need 300 tokens and are never truncated; the budget is 256. "
                "Send tokenBudget of at least 300."}),
    (SettingError("workspace_setting", "must be true or false, got 1", "retrieval.hideSuperseded"), 409,
     {"error": "workspace_setting", "setting": "retrieval.hideSuperseded",
      "detail": "workspace setting retrieval.hideSuperseded: must be true or false, got 1"}),
    (ApiError("record_not_found", "No record here.", "id"), 404,
     {"error": "record_not_found", "detail": "No record here.", "path": "id"}),
    # Codes with no HTTP contract never reach a client as themselves.
    (CatalogError("schema", "must be a mapping", "views[0]"), 500,
     {"error": "internal_error", "detail": "An unexpected error occurred."}),
    (ProviderTransport("provider_transport", "down", status=503), 500,
     {"error": "internal_error", "detail": "An unexpected error occurred."}),
], ids=lambda value: type(value).__name__ if isinstance(value, ApiError) else None)
def test_the_handler_renders_any_subclass_with_the_status_of_its_code(error, status, envelope):
    response = api_exception_handler(error, {})
    assert (response.status_code, response.data) == (status, envelope)
    if envelope["error"] != "internal_error":
        assert status == ERROR_STATUS[error.code] == error.status


def test_a_provider_error_keeps_the_providers_status_and_its_callers_prefix_it_under_their_code():
    error = ProviderTransport("provider_transport", "https://x answered HTTP 429: slow down", status=429)
    assert (error.status, error.detail, error.transient) == (429, "https://x answered HTTP 429: slow down", True)
    answered = error.prefixed("the reranking model is unavailable", code="rerank_unavailable")
    assert answered.envelope() == {"error": "rerank_unavailable",
                                   "detail": "the reranking model is unavailable: https://x answered HTTP 429: "
                                             "slow down"}
    assert answered.status == 503


def test_prefixed_puts_an_error_inside_a_batch_item_and_relocated_moves_it_keeping_its_class():
    error = SpecError("request_schema", "must be an integer", "k")
    inside = error.prefixed("records[2]", "records[2]")
    assert inside.envelope() == {"error": "request_schema", "detail": "records[2]: k: must be an integer",
                                 "path": "records[2].k"}
    moved = error.relocated("views[0].query.k", code="search_spec")
    assert type(moved) is SpecError
    assert (moved.code, moved.message, moved.path, moved.detail) == (
        "search_spec", "must be an integer", "views[0].query.k", "views[0].query.k: must be an integer")


# --- one set of strict readers, parameterised by the error class ------------------------------

READERS = [
    (lambda error: parse_object([], "doc", error=error), "doc", "expected an object, got a list"),
    (lambda error: parse_object({"x": 1}, "doc", allowed={"a"}, error=error), "doc.x", "unknown key 'x'; allowed: a"),
    (lambda error: parse_object({}, "doc", required=("a",), error=error), "doc.a", "is required"),
    (lambda error: parse_string(" ", "name", error=error), "name", "must not be blank"),
    (lambda error: parse_string("Bad", "name", pattern=PUBLIC_NAME, error=error), "name",
     f"'Bad' does not match {PUBLIC_NAME.pattern}"),
    (lambda error: parse_int(True, "k", error=error), "k", "expected an integer, got a boolean"),
    (lambda error: parse_int(0, "k", minimum=1, error=error), "k", "must be at least 1, got 0"),
    (lambda error: parse_number(10 ** 400, "w", error=error), "w", "must be a finite number"),
    (lambda error: parse_number(2.5, "w", maximum=1, error=error), "w", "must be at most 1, got 2.5"),
    (lambda error: parse_bool(1, "flag", error=error), "flag", "expected true or false, got an integer"),
    (lambda error: parse_datetime("2026-01-01T00:00:00", "at", error=error), "at",
     "'2026-01-01T00:00:00' has no timezone; add Z or an offset such as +00:00"),
    (lambda error: parse_uuid("nope", "id", error=error), "id", "'nope' is not a UUID"),
    (lambda error: parse_names(["a", "a"], "names", error=error), "names", "must not repeat a value"),
    (lambda error: parse_names(["a", "z"], "names", choices=("a", "b"), error=error), "names[1]",
     "'z' is not one of a, b"),
]


@pytest.mark.parametrize("error_class", [RequestError, SpecError, CatalogError, SettingError],
                         ids=lambda cls: cls.__name__)
@pytest.mark.parametrize(("read", "path", "message"), READERS, ids=[row[1] + ":" + row[2][:20] for row in READERS])
def test_each_reader_raises_the_callers_error_class_with_its_default_code(read, path, message, error_class):
    with pytest.raises(error_class) as raised:
        read(error_class)
    assert raised.value.code == error_class.default_code
    if error_class is SettingError:
        assert (raised.value.extra["setting"], raised.value.detail) == (path, f"workspace setting {path}: {message}")
    else:
        assert (raised.value.path, raised.value.message) == (path, message)


def test_readers_return_the_parsed_value():
    assert parse_datetime("2026-01-01T00:00:00z", "at").utcoffset().total_seconds() == 0
    assert parse_number(3, "w") == 3.0 and isinstance(parse_number(3, "w"), float)
    assert parse_names(["b", "a"], "names") == ("b", "a")
    assert parse_uuid(str(uuid.UUID(int=1)), "id") == uuid.UUID(int=1)
