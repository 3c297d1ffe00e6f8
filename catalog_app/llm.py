"""A small client for OpenAI-compatible model providers (chat completions, and the HTTP
plumbing the embeddings adapter shares), and the one hierarchy of provider errors.

Invariant: a provider call either returns a parsed response or raises a ``ProviderError``
subclass naming what went wrong (unconfigured, timeout, transport, invalid); no other exception
escapes, so callers (enrichment, search rerank, briefs) decide per code whether to retry, fall
back to a declared default, or answer 503. Only the standard library talks HTTP.
"""
from __future__ import annotations

import http.client
import json
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError
from memseek_site.metrics import model_call_counted

from .catalog.models_conf import ModelsConfig, Provider

_ERROR_BODY_CHARS = 300


class ProviderError(ApiError):
    """A model provider could not give a usable answer.

    Each subclass has one stable code (``provider_unconfigured``, ``provider_timeout``,
    ``provider_transport``, ``provider_invalid``, ``embedding_unavailable``); ``transient`` says
    whether trying again later may succeed. ``status`` is the HTTP status the provider answered
    with, when it sent one, not a status of this service: a caller that answers a request with a
    provider failure says what failed under its own code (``rerank_unavailable``, ...).
    """

    codes = ()
    transient = True
    status = None  # the provider's, set per instance; shadows ApiError.status

    def __init__(self, code: str, message: str, path: str | None = None, extra=None, *, status: int | None = None):
        super().__init__(code, message, path, extra)
        self.status = status


class ProviderUnconfigured(ProviderError):
    """The alias or provider is missing, or its API key variable is unset."""

    codes = ("provider_unconfigured",)


class ProviderTimeout(ProviderError):
    codes = ("provider_timeout",)


class ProviderTransport(ProviderError):
    """Connection failure, or an HTTP error status (429 and 5xx included)."""

    codes = ("provider_transport",)


class ProviderInvalid(ProviderError):
    """The provider answered, but not with what the protocol or the caller requires."""

    codes = ("provider_invalid",)
    transient = False


@dataclass(frozen=True, slots=True)
class ChatReply:
    content: str
    target: str  # "provider:model" that answered
    finish_reason: str | None
    usage: MappingProxyType


def post_json(url: str, body: Mapping, *, api_key_env: str | None, timeout_s: float) -> dict:
    """POST ``body`` as JSON to ``url`` and return the decoded JSON object.

    Sends ``Authorization: Bearer $<api_key_env>`` when ``api_key_env`` is set. Raises
    ``ProviderUnconfigured`` (key variable unset), ``ProviderTimeout``, ``ProviderTransport``
    (no connection, HTTP error status) or ``ProviderInvalid`` (the body is not a JSON object).
    """
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key_env:
        key = os.environ.get(api_key_env)
        if not key:
            raise ProviderUnconfigured("provider_unconfigured",
                                       f"environment variable {api_key_env} (the provider's API key) is not set")
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            raw = response.read()
    except urllib.error.HTTPError as error:
        detail = _error_body(error)
        raise ProviderTransport("provider_transport", f"{url} answered HTTP {error.code}: {detail}",
                                status=error.code) from None
    except urllib.error.URLError as error:
        if isinstance(error.reason, (TimeoutError, socket.timeout)):
            raise ProviderTimeout("provider_timeout", f"{url} did not answer within {timeout_s} s") from None
        raise ProviderTransport("provider_transport", f"cannot reach {url}: {error.reason}") from None
    except (TimeoutError, socket.timeout):
        raise ProviderTimeout("provider_timeout", f"{url} did not answer within {timeout_s} s") from None
    except (ConnectionError, http.client.HTTPException, OSError) as error:
        raise ProviderTransport("provider_transport", f"connection to {url} failed: {error!r}") from None
    try:
        decoded = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ProviderInvalid("provider_invalid", f"{url} answered with a body that is not JSON") from None
    if not isinstance(decoded, dict):
        raise ProviderInvalid("provider_invalid", f"{url} answered with JSON that is not an object")
    return decoded


def _error_body(error: urllib.error.HTTPError) -> str:
    try:
        return error.read(_ERROR_BODY_CHARS).decode("utf-8", "replace").strip() or error.reason
    except OSError:
        return str(error.reason)


def chat_complete(*, models: ModelsConfig, alias: str, messages: Sequence[Mapping],
                  output_schema: Mapping | None = None, schema_name: str = "output",
                  max_output_tokens: int | None = None, timeout_s: float | None = None) -> ChatReply:
    """Ask alias ``alias`` of ``models`` for one chat completion of ``messages``.

    The alias's targets are tried in order; a timeout or transport failure moves on to the next
    target and the last failure is raised when none answers. Temperature and the output-token
    limit come from the alias's params (``max_output_tokens`` overrides the limit), sent under
    the provider's ``token_limit_field``. With ``output_schema``, a ``json_schema`` provider gets
    ``response_format: {type: json_schema, json_schema: {name: schema_name, schema}}`` and a
    ``json_object`` provider ``{type: json_object}``; the caller still validates the answer.

    Raises ``ProviderUnconfigured`` (unknown alias), ``ProviderTimeout``, ``ProviderTransport``
    or ``ProviderInvalid`` (no message content in the answer).
    """
    config = models.aliases.get(alias)
    if config is None:
        raise ProviderUnconfigured("provider_unconfigured",
                                   f"no model alias {alias!r} is configured in conf/models.yaml")
    timeout = float(timeout_s if timeout_s is not None else memseek_setting("PROVIDER_TIMEOUT_S"))
    last_error: ProviderError | None = None
    for provider_name, model in config.targets:
        provider = models.providers.get(provider_name)
        if provider is None or provider.adapter != "openai_compat":
            last_error = ProviderUnconfigured("provider_unconfigured",
                                              f"alias {alias!r} names provider {provider_name!r}, "
                                              "which is not an openai_compat provider")
            continue
        body = _chat_body(provider, model, messages, config.temperature, max_output_tokens or config.max_output_tokens,
                          output_schema, schema_name)
        try:
            with model_call_counted("chat", provider_name):
                answer = post_json(f"{provider.base_url}/chat/completions", body, api_key_env=provider.api_key_env,
                                   timeout_s=timeout)
                reply = _reply(answer, f"{provider_name}:{model}")
        except (ProviderTimeout, ProviderTransport, ProviderUnconfigured) as error:
            last_error = error
            continue
        return reply
    raise last_error


def _chat_body(provider: Provider, model: str, messages: Sequence[Mapping], temperature: float, max_tokens: int,
               output_schema: Mapping | None, schema_name: str) -> dict:
    body = {"model": model, "messages": [dict(message) for message in messages], "temperature": temperature,
            provider.token_limit_field: max_tokens}
    if output_schema is not None and provider.json_capability == "json_schema":
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": schema_name, "schema": _plain(output_schema)}}
    elif output_schema is not None and provider.json_capability == "json_object":
        body["response_format"] = {"type": "json_object"}
    return body


def _plain(value):
    """Mapping proxies and tuples from the compiled catalog, as plain JSON values."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _reply(answer: dict, target: str) -> ChatReply:
    try:
        choice = answer["choices"][0]
        content = choice["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ProviderInvalid("provider_invalid", f"{target} answered without choices[0].message.content") from None
    if not isinstance(content, str):
        raise ProviderInvalid("provider_invalid", f"{target} answered with no text content")
    usage = answer.get("usage") if isinstance(answer.get("usage"), dict) else {}
    return ChatReply(content, target, choice.get("finish_reason"), MappingProxyType(usage))


def ask_json(*, models: ModelsConfig, alias: str, system: str, user: str, output_schema: Mapping, schema_name: str,
             max_output_tokens: int, timeout_s: float, code: str, model_name: str) -> dict:
    """One model call made while answering a request (the reranking judge, the memory brief's
    filter) whose answer must be a JSON object; the caller validates its members.

    Its failures are said under the caller's codes, ``model_name`` ("the reranking model")
    leading each message: ``{code}_timeout``, ``{code}_invalid`` (the answer is unusable) and
    ``{code}_unavailable`` (any other provider failure, an unconfigured alias included).
    """
    try:
        reply = chat_complete(models=models, alias=alias, messages=[{"role": "system", "content": system},
                                                                   {"role": "user", "content": user}],
                              output_schema=output_schema, schema_name=schema_name,
                              max_output_tokens=max_output_tokens, timeout_s=timeout_s)
        return parse_json_object(reply.content)
    except ProviderTimeout:
        raise ApiError(f"{code}_timeout", f"{model_name} did not answer within {timeout_s} s") from None
    except ProviderInvalid as error:
        raise error.prefixed(f"{model_name}'s answer is unusable", code=f"{code}_invalid") from None
    except ProviderError as error:
        raise error.prefixed(f"{model_name} is unavailable", code=f"{code}_unavailable") from None


def parse_json_object(content: str) -> dict:
    """The JSON object in a model's answer (a surrounding Markdown code fence is tolerated).

    Raises ``ProviderInvalid`` when the answer is not one JSON object.
    """
    text = content.strip()
    if text.startswith("```"):
        text = text[3:]
        text = text[4:] if text[:4].lower() == "json" else text
        text = text.rsplit("```", 1)[0] if text.rstrip().endswith("```") else text
    try:
        value = json.loads(text.strip(), parse_constant=_reject_constant)
    except (json.JSONDecodeError, ValueError) as error:
        raise ProviderInvalid("provider_invalid", f"the answer is not valid JSON ({error})") from None
    if not isinstance(value, dict):
        raise ProviderInvalid("provider_invalid", "the answer is JSON but not an object")
    return value


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")
