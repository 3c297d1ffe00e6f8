"""The chat-completions client against a real loopback server speaking the protocol."""
import threading

import pytest

from catalog_app.catalog import models_conf
from catalog_app.catalog.registry import Catalog
from catalog_app.llm import (ProviderInvalid, ProviderTimeout, ProviderTransport, ProviderUnconfigured, chat_complete,
                             parse_json_object)
from bench.processes import free_port
from tests.openai_server import Hang, Raw, ScriptedOpenAIServer, Status

MESSAGES = [{"role": "system", "content": "Rate it."}, {"role": "user", "content": "The server is down."}]
SCHEMA = {"type": "object", "required": ["score"], "properties": {"score": {"type": "number"}}}


def models_for(*providers: tuple[str, dict], targets: list[str], params: dict | None = None):
    """A compiled ``ModelsConfig`` (through the real validator) with alias ``cheap``."""
    raw = {"providers": {"local": {"adapter": "sentence_transformers"}, **dict(providers)},
           "aliases": {"cheap": {"targets": targets, "params": params or {}}},
           "embedding": {"provider": "local", "model": "all-MiniLM-L6-v2", "dimensions": 384, "space": "minilm"}}
    return models_conf.build(models_conf.validate(raw, "", Catalog()).body)


def closed_port() -> int:
    return free_port()


@pytest.fixture
def server():
    with ScriptedOpenAIServer() as running:
        yield running


def scripted(server, **options):
    return models_for(("scripted", {"adapter": "openai_compat", "base_url": server.base_url, **options}),
                      targets=["scripted:small-model"], params={"temperature": 0.3, "max_output_tokens": 77})


def test_request_carries_model_messages_params_and_json_schema(server):
    server.chat.append({"score": 4})
    reply = chat_complete(models=scripted(server, token_limit_field="max_completion_tokens"), alias="cheap",
                          messages=MESSAGES, output_schema=SCHEMA, schema_name="search_rerank")
    assert reply.content == '{"score": 4}'
    assert reply.target == "scripted:small-model"
    assert reply.finish_reason == "stop"
    assert reply.usage["total_tokens"] == 15
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {
        "model": "small-model", "messages": MESSAGES, "temperature": 0.3, "max_completion_tokens": 77,
        "response_format": {"type": "json_schema", "json_schema": {"name": "search_rerank", "schema": SCHEMA}}}
    assert "Authorization" not in request.headers


@pytest.mark.parametrize("capability, expected", [
    ("json_object", {"type": "json_object"}),
    ("none", None),
])
def test_response_format_follows_the_provider_json_capability(server, capability, expected):
    chat_complete(models=scripted(server, json_capability=capability), alias="cheap", messages=MESSAGES,
                  output_schema=SCHEMA)
    body = server.requests[0].body
    assert body.get("response_format") == expected
    assert body["max_tokens"] == 77  # the default token_limit_field


def test_max_output_tokens_argument_overrides_the_alias(server):
    chat_complete(models=scripted(server), alias="cheap", messages=MESSAGES, max_output_tokens=5)
    assert server.requests[0].body["max_tokens"] == 5
    assert "response_format" not in server.requests[0].body


def test_bearer_key_comes_from_the_named_environment_variable(server, monkeypatch):
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-123")
    chat_complete(models=scripted(server, api_key_env="SCRIPTED_API_KEY"), alias="cheap", messages=MESSAGES)
    assert server.requests[0].headers["Authorization"] == "Bearer sk-test-123"


def test_unset_key_variable_is_unconfigured_and_sends_nothing(server, monkeypatch):
    monkeypatch.delenv("SCRIPTED_API_KEY", raising=False)
    with pytest.raises(ProviderUnconfigured, match="SCRIPTED_API_KEY"):
        chat_complete(models=scripted(server, api_key_env="SCRIPTED_API_KEY"), alias="cheap", messages=MESSAGES)
    assert server.requests == []


def test_unknown_alias_is_unconfigured(server):
    with pytest.raises(ProviderUnconfigured, match="strong"):
        chat_complete(models=scripted(server), alias="strong", messages=MESSAGES)


@pytest.mark.parametrize("status", [400, 429, 500, 503])
def test_http_error_status_is_a_transport_error_with_the_status(server, status):
    server.chat.append(Status(status))
    with pytest.raises(ProviderTransport) as raised:
        chat_complete(models=scripted(server), alias="cheap", messages=MESSAGES)
    assert raised.value.status == status
    assert raised.value.code == "provider_transport"
    assert raised.value.transient


def test_refused_connection_is_a_transport_error():
    models = models_for(("dead", {"adapter": "openai_compat", "base_url": f"http://127.0.0.1:{closed_port()}/v1"}),
                        targets=["dead:m"])
    with pytest.raises(ProviderTransport):
        chat_complete(models=models, alias="cheap", messages=MESSAGES)


def test_slow_provider_is_a_timeout(server):
    release = threading.Event()
    server.chat.append(Hang(release))
    try:
        with pytest.raises(ProviderTimeout) as raised:
            chat_complete(models=scripted(server), alias="cheap", messages=MESSAGES, timeout_s=0.3)
        assert raised.value.code == "provider_timeout"
    finally:
        release.set()


@pytest.mark.parametrize("answer", [
    Raw("this is not json"),
    Raw("[1, 2]"),
    Raw('{"choices": []}'),
    Raw('{"choices": [{"message": {"role": "assistant", "content": null}}]}'),
])
def test_answer_outside_the_protocol_is_invalid_and_not_transient(server, answer):
    server.chat.append(answer)
    with pytest.raises(ProviderInvalid) as raised:
        chat_complete(models=scripted(server), alias="cheap", messages=MESSAGES)
    assert not raised.value.transient


def test_failing_target_falls_through_to_the_next_one(server):
    models = models_for(
        ("dead", {"adapter": "openai_compat", "base_url": f"http://127.0.0.1:{closed_port()}/v1"}),
        ("scripted", {"adapter": "openai_compat", "base_url": server.base_url}),
        targets=["dead:first-choice", "scripted:second-choice"])
    reply = chat_complete(models=models, alias="cheap", messages=MESSAGES)
    assert reply.target == "scripted:second-choice"
    assert server.requests[0].body["model"] == "second-choice"


def test_last_failure_is_raised_when_every_target_fails(server):
    server.chat.extend([Status(502), Status(503)])
    models = models_for(("scripted", {"adapter": "openai_compat", "base_url": server.base_url}),
                        targets=["scripted:a", "scripted:b"])
    with pytest.raises(ProviderTransport) as raised:
        chat_complete(models=models, alias="cheap", messages=MESSAGES)
    assert raised.value.status == 503
    assert [request.body["model"] for request in server.requests] == ["a", "b"]


@pytest.mark.parametrize("content, expected", [
    ('{"score": 3}', {"score": 3}),
    ('  {"label": "x"}\n', {"label": "x"}),
    ('```json\n{"score": 7.5}\n```', {"score": 7.5}),
    ('```\n{"a": {"b": [1]}}\n```', {"a": {"b": [1]}}),
])
def test_parse_json_object_accepts_an_object_optionally_fenced(content, expected):
    assert parse_json_object(content) == expected


@pytest.mark.parametrize("content", ["", "score: 3", "[1]", '"text"', '{"score": NaN}', '{"score": 1} trailing'])
def test_parse_json_object_rejects_anything_else(content):
    with pytest.raises(ProviderInvalid):
        parse_json_object(content)
