"""``conf/models.yaml``: model providers, aliases (``cheap``, ``strong``) and the embedding.

Without a models file the built-in default embeds with the bundled all-MiniLM-L6-v2
(384 dimensions, space ``minilm-l6-v2``) and configures no language-model alias.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from urllib.parse import urlsplit

from memseek_site.conf import memseek_setting

from . import checks
from .errors import CatalogError
from .registry import Catalog, Validated

ADAPTERS = ("openai_compat", "sentence_transformers")
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
LOCAL_MODEL = "all-MiniLM-L6-v2"
# A space name holds 64 characters; the longest runtime suffix (".onnx-int8") must fit after it.
LOCAL_SPACE_MAX_CHARS = 64 - len(".onnx-int8")
HNSW_MAX_DIMENSIONS = 2000
# Members of an embeddings request that the request itself sets (or, for encoding_format, that
# the response parser relies on: vectors come back as float lists); embedding.params may not
# override them.
EMBEDDING_REQUEST_KEYS = ("model", "input", "dimensions", "encoding_format")


@dataclass(frozen=True, slots=True)
class Provider:
    name: str
    adapter: str
    base_url: str | None
    api_key_env: str | None
    json_capability: str
    token_limit_field: str


@dataclass(frozen=True, slots=True)
class Alias:
    name: str
    targets: tuple[tuple[str, str], ...]  # (provider, model)
    temperature: float
    max_output_tokens: int
    context_tokens: int


@dataclass(frozen=True, slots=True)
class EmbeddingConfig:
    provider: Provider
    model: str
    dimensions: int
    space: str
    batch: int
    max_text_chars: int
    # Extra members of every embeddings request body (``embedding.params``), e.g. input_type.
    # A mapping is unhashable; configs that differ only here are unequal, which hashing allows.
    params: MappingProxyType = field(default_factory=lambda: MappingProxyType({}), hash=False)
    # How the bundled model runs (``EMBEDDING_RUNTIME``: torch, onnx, onnx-int8); None for a
    # provider over HTTP. Part of the space (``stored_space``), so vectors of different runtimes
    # never meet in one comparison.
    runtime: str | None = None

    def __reduce__(self):
        # A mappingproxy cannot be pickled, and configs are sent to other processes (embedding
        # pools): the params travel as a plain dict and are wrapped again on arrival.
        return _embedding_config, (self.provider, self.model, self.dimensions, self.space, self.batch,
                                   self.max_text_chars, dict(self.params), self.runtime)


def _embedding_config(provider, model, dimensions, space, batch, max_text_chars, params,
                      runtime=None) -> EmbeddingConfig:
    return EmbeddingConfig(provider, model, dimensions, space, batch, max_text_chars, MappingProxyType(params),
                           runtime)


def stored_space(space: str, runtime: str | None) -> str:
    """The space name vectors are stored and searched under: the configured ``space`` for the
    torch runtime (the name vectors had before runtimes existed) and for HTTP providers,
    ``<space>.<runtime>`` for the ONNX runtimes. A runtime change is therefore a space change,
    like a model change: records embedded by one runtime are never compared with a query
    embedded by another."""
    return space if runtime in (None, "torch") else f"{space}.{runtime}"


@dataclass(frozen=True, slots=True)
class ModelsConfig:
    providers: MappingProxyType
    aliases: MappingProxyType
    embedding: EmbeddingConfig


def default_body() -> dict:
    return {
        "providers": {"local": {"adapter": "sentence_transformers", "base_url": None, "api_key_env": None,
                                "json_capability": "none", "token_limit_field": "max_tokens"}},
        "aliases": {},
        "embedding": {"provider": "local", "model": LOCAL_MODEL, "dimensions": 384, "space": "minilm-l6-v2",
                      "batch": 64, "max_text_chars": 16000},
        "defaults": {},
    }


def validate(raw, path: str, catalog: Catalog) -> Validated:
    doc = checks.mapping(raw, path, allowed={"providers", "aliases", "embedding", "defaults"},
                         required={"providers", "embedding"})
    providers = checks.mapping(doc["providers"], "providers")
    if not providers:
        raise CatalogError("provider", "declare at least one provider", "providers")
    normal_providers = {name: _provider(name, body) for name, body in providers.items()}
    aliases = doc.get("aliases") or {}
    checks.mapping(aliases, "aliases")
    normal_aliases = {}
    for name, body in aliases.items():
        checks.name(name, f"aliases.{name}", checks.PROCESSOR_NAME)
        if name == "embed":
            raise CatalogError("schema", "the alias name 'embed' is reserved", f"aliases.{name}")
        normal_aliases[name] = _alias(name, body, normal_providers)
    embedding = _embedding(doc["embedding"], normal_providers)
    defaults = checks.mapping(doc.get("defaults") or {}, "defaults", allowed={"derivation", "fold"})
    for key, alias in defaults.items():
        if checks.name(alias, f"defaults.{key}", checks.PROCESSOR_NAME) not in normal_aliases:
            raise CatalogError("reference", f"alias {alias!r} is not declared", f"defaults.{key}")
    body = {"providers": normal_providers, "aliases": normal_aliases, "embedding": embedding, "defaults": defaults}
    return Validated("models", None, True, body)


def _provider(name: str, raw) -> dict:
    path = f"providers.{name}"
    checks.name(name, path, checks.PROCESSOR_NAME)
    body = checks.mapping(raw, path, required={"adapter"},
                          allowed={"adapter", "base_url", "api_key_env", "json_capability",
                                   "token_limit_field", "json_schema_strict"})
    if body["adapter"] not in ADAPTERS:
        raise CatalogError("provider", f"adapter must be one of {', '.join(ADAPTERS)}", f"{path}.adapter")
    result = {"adapter": body["adapter"], "base_url": None, "api_key_env": None,
              "json_capability": body.get("json_capability", "json_schema"),
              "token_limit_field": body.get("token_limit_field", "max_tokens")}
    if body["adapter"] == "openai_compat":
        url = checks.string(body.get("base_url"), f"{path}.base_url")
        # Compare the parsed host, not a prefix: http://localhost.example.com is not local.
        try:
            parts = urlsplit(url)
            host = parts.hostname
        except ValueError:
            parts, host = None, None
        secure = parts is not None and parts.scheme == "https" and bool(host)
        local = parts is not None and parts.scheme == "http" and host in LOCAL_HOSTS
        if not secure and not local:
            raise CatalogError("provider", "must be https:// (http:// only for localhost)", f"{path}.base_url")
        result["base_url"] = url.rstrip("/")
        if "api_key_env" in body:
            result["api_key_env"] = checks.name(body["api_key_env"], f"{path}.api_key_env", checks.ENV_NAME)
    elif set(body) - {"adapter"}:
        raise CatalogError("provider", "a sentence_transformers provider takes no options", path)
    if result["json_capability"] not in ("json_schema", "json_object", "none"):
        raise CatalogError("provider", "must be json_schema, json_object or none", f"{path}.json_capability")
    if result["token_limit_field"] not in ("max_completion_tokens", "max_tokens"):
        raise CatalogError("provider", "must be max_completion_tokens or max_tokens", f"{path}.token_limit_field")
    return result


def _alias(name: str, raw, providers: dict) -> dict:
    path = f"aliases.{name}"
    body = checks.mapping(raw, path, required={"targets"}, allowed={"targets", "params", "context_tokens"})
    targets = body["targets"]
    if not isinstance(targets, list) or not targets:
        raise CatalogError("schema", "must be a non-empty list of 'provider:model'", f"{path}.targets")
    for index, target in enumerate(targets):
        provider, _, model = str(target).partition(":")
        if provider not in providers or not model:
            raise CatalogError("reference", f"{target!r} must name a declared provider "
                               "as 'provider:model'", f"{path}.targets[{index}]")
        if providers[provider]["adapter"] != "openai_compat":
            raise CatalogError("provider", "alias targets need an openai_compat provider", f"{path}.targets[{index}]")
    params = checks.mapping(body.get("params") or {}, f"{path}.params", allowed={"temperature", "max_output_tokens"})
    temperature = checks.number(params.get("temperature", 0), f"{path}.params.temperature")
    if not 0 <= temperature <= 2:
        raise CatalogError("schema", "must be between 0 and 2", f"{path}.params.temperature")
    max_output = checks.integer(params.get("max_output_tokens", 1200), f"{path}.params.max_output_tokens", minimum=1)
    context = checks.integer(body.get("context_tokens", 60000), f"{path}.context_tokens", minimum=4096)
    return {"targets": list(targets), "params": {"temperature": temperature, "max_output_tokens": max_output},
            "context_tokens": context}


def _embedding(raw, providers: dict) -> dict:
    body = checks.mapping(raw, "embedding", required={"provider", "model", "dimensions", "space"},
                          allowed={"provider", "model", "dimensions", "space", "batch", "max_text_chars", "params"})
    if checks.name(body["provider"], "embedding.provider", checks.PROCESSOR_NAME) not in providers:
        raise CatalogError("reference", f"provider {body['provider']!r} is not declared", "embedding.provider")
    provider = providers[body["provider"]]
    model = checks.string(body["model"], "embedding.model")
    dimensions = checks.integer(body["dimensions"], "embedding.dimensions", minimum=8, maximum=4096)
    if dimensions > HNSW_MAX_DIMENSIONS:
        raise CatalogError("provider",
                           f"pgvector's HNSW index holds at most {HNSW_MAX_DIMENSIONS} dimensions; choose a model "
                           "or a `dimensions` setting at or below that", "embedding.dimensions")
    if provider["adapter"] == "sentence_transformers" and (model != LOCAL_MODEL or dimensions != 384):
        raise CatalogError("provider",
                           f"the bundled sentence_transformers provider serves {LOCAL_MODEL} with 384 dimensions",
                           "embedding.model")
    space = checks.name(body["space"], "embedding.space", checks.SPACE_NAME)
    if provider["adapter"] == "sentence_transformers" and len(space) > LOCAL_SPACE_MAX_CHARS:
        raise CatalogError("schema", f"the bundled model's space name holds at most {LOCAL_SPACE_MAX_CHARS} "
                           "characters (the runtime is appended to it, see EMBEDDING_RUNTIME)", "embedding.space")
    result = {"provider": body["provider"], "model": model, "dimensions": dimensions, "space": space,
              "batch": checks.integer(body.get("batch", 64), "embedding.batch", minimum=1, maximum=256),
              "max_text_chars": checks.integer(body.get("max_text_chars", 16000), "embedding.max_text_chars",
                                               minimum=1)}
    params = _embedding_params(body.get("params"), provider)
    if params:
        # Stored only when given, so the hash of a models file without params stays what it was.
        result["params"] = params
    return result


def _embedding_params(raw, provider: dict) -> dict:
    if raw is None:
        return {}
    params = checks.mapping(raw, "embedding.params")
    if params and provider["adapter"] == "sentence_transformers":
        raise CatalogError("provider",
                           "the bundled sentence_transformers provider takes no params; they are sent to an "
                           "openai_compat provider's embeddings requests", "embedding.params")
    for key in params:
        if key in EMBEDDING_REQUEST_KEYS:
            raise CatalogError("schema",
                               f"{key} is set by every embeddings request itself (model, input and dimensions come "
                               "from embedding.model, the texts and embedding.dimensions; vectors are read as "
                               "float lists); remove it from params", f"embedding.params.{key}")
    return dict(params)


def build(body: dict) -> ModelsConfig:
    providers = {name: Provider(name, p["adapter"], p["base_url"], p["api_key_env"], p["json_capability"],
                                p["token_limit_field"]) for name, p in body["providers"].items()}
    aliases = {name: Alias(name, tuple(tuple(t.split(":", 1)) for t in a["targets"]), a["params"]["temperature"],
                           a["params"]["max_output_tokens"], a["context_tokens"])
               for name, a in body["aliases"].items()}
    e = body["embedding"]
    provider = providers[e["provider"]]
    # The runtime is this process's setting, not the catalog's: it is read when a process builds
    # the catalog, so every space a process writes or searches carries the runtime it embeds with.
    runtime = memseek_setting("EMBEDDING_RUNTIME") if provider.adapter == "sentence_transformers" else None
    embedding = EmbeddingConfig(provider, e["model"], e["dimensions"], stored_space(e["space"], runtime), e["batch"],
                                e["max_text_chars"], MappingProxyType(e.get("params", {})), runtime)
    return ModelsConfig(MappingProxyType(providers), MappingProxyType(aliases), embedding)
