"""Embedding texts: the bundled MiniLM model, and the OpenAI-compatible HTTP adapter against a
real loopback server."""
import math
import os
import pickle
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import pytest
import yaml

from catalog_app import embedding
from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.catalog.models_conf import EmbeddingConfig, Provider
from catalog_app.embedding import EmbeddingUnavailable, embed_query, embed_texts, embedding_batch_size, local_model
from catalog_app.text import TRUNCATION_SENTINEL
from catalog_app.services.catalog_load import catalog_load
from bench.processes import free_port
from tests.conftest import EXAMPLE_CATALOG
from tests.openai_server import ScriptedOpenAIServer

LOCAL = EmbeddingConfig(Provider("local", "sentence_transformers", None, None, "none", "max_tokens"),
                        "all-MiniLM-L6-v2", 384, "minilm-l6-v2", 64, 16000)


def http_config(base_url: str, *, dimensions: int = 384, batch: int = 256, max_text_chars: int = 16000,
                api_key_env: str | None = None) -> EmbeddingConfig:
    provider = Provider("remote", "openai_compat", base_url, api_key_env, "json_schema", "max_tokens")
    return EmbeddingConfig(provider, "text-embedding-test", dimensions, "remote-v1", batch, max_text_chars)


def cosine(a, b) -> float:
    return sum(x * y for x, y in zip(a, b))


def norm(vector) -> float:
    return math.sqrt(sum(x * x for x in vector))


@pytest.fixture
def server():
    with ScriptedOpenAIServer() as running:
        yield running


@pytest.mark.model
def test_local_model_returns_unit_384_dimensional_vectors():
    vectors = embed_texts(LOCAL, ["The invoice was paid late.", "A cat sleeps on the sofa."])
    assert len(vectors) == 2
    for vector in vectors:
        assert len(vector) == 384
        assert norm(vector) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.model
def test_local_model_places_related_sentences_closer_than_unrelated_ones():
    billing, refund, weather = embed_texts(LOCAL, [
        "The customer asked for a refund of the duplicate charge on her credit card.",
        "Please return the money that was billed twice to my card.",
        "Heavy snow is expected in the mountains this weekend.",
    ])
    assert cosine(billing, refund) > cosine(billing, weather) + 0.2


@pytest.mark.model
def test_query_vector_equals_the_stored_vector_of_the_same_text():
    text = "Where is my parcel?"
    query = embed_query(LOCAL, text, workspace_id=1)
    (stored,) = embed_texts(LOCAL, [text])
    assert cosine(query, stored) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.model
def test_local_model_is_loaded_once_per_process():
    assert local_model() is local_model()


@pytest.mark.model
def test_local_model_embeds_many_texts_across_batches_in_order():
    texts = [f"note number {i} about topic {i % 7}" for i in range(130)]
    vectors = embed_texts(LOCAL, texts)
    assert len(vectors) == 130
    assert vectors[129] == pytest.approx(embed_texts(LOCAL, [texts[129]])[0], abs=1e-5)


def test_batch_size_is_the_configured_batch_capped_at_64():
    assert embedding_batch_size(http_config("http://127.0.0.1:1/v1", batch=256)) == 64
    assert embedding_batch_size(http_config("http://127.0.0.1:1/v1", batch=10)) == 10


def test_http_provider_is_called_in_batches_of_at_most_64(server):
    texts = [f"text {i}" for i in range(150)]
    vectors = embed_texts(http_config(server.base_url), texts)
    assert [len(request.body["input"]) for request in server.requests] == [64, 64, 22]
    assert all(request.path == "/v1/embeddings" for request in server.requests)
    assert server.requests[0].body["model"] == "text-embedding-test"
    assert len(vectors) == 150
    assert all(len(vector) == 384 and norm(vector) == pytest.approx(1.0) for vector in vectors)


def test_http_vectors_keep_input_order(server):
    first, second = embed_texts(http_config(server.base_url), ["alpha", "beta"])
    assert first == pytest.approx(embed_query(http_config(server.base_url), "alpha", workspace_id=1))
    assert second == pytest.approx(embed_query(http_config(server.base_url), "beta", workspace_id=1))
    assert first != pytest.approx(second)


def test_http_provider_sends_the_bearer_key(server, monkeypatch):
    monkeypatch.setenv("EMBED_KEY", "sk-embed")
    embed_texts(http_config(server.base_url, api_key_env="EMBED_KEY"), ["x"])
    assert server.requests[0].headers["Authorization"] == "Bearer sk-embed"


def test_embedding_params_from_models_yaml_reach_the_provider(server, workspace, tmp_path):
    directory = tmp_path / "catalog"
    shutil.copytree(EXAMPLE_CATALOG, directory)
    (directory / "conf" / "models.yaml").write_text(yaml.safe_dump({
        "providers": {"remote": {"adapter": "openai_compat", "base_url": server.base_url}},
        "embedding": {"provider": "remote", "model": "text-embedding-test", "dimensions": 384, "space": "remote-v1",
                      "params": {"input_type": "document", "truncate": {"side": "end"}}}}))
    catalog_load(workspace=workspace, directory=directory)
    config = catalog_for_workspace(workspace).value("models", "models").embedding
    embed_texts(config, ["first", "second"])
    embed_query(config, "a query", workspace_id=workspace.pk)
    assert [request.body for request in server.requests] == [
        {"model": "text-embedding-test", "input": ["first", "second"], "input_type": "document",
         "truncate": {"side": "end"}},
        {"model": "text-embedding-test", "input": ["a query"], "input_type": "document", "truncate": {"side": "end"}},
    ]


def test_the_query_cache_tells_embedding_params_apart(server):
    plain = http_config(server.base_url)
    document = replace(plain, params=MappingProxyType({"input_type": "document"}))
    embed_query(plain, "same text", workspace_id=1)
    embed_query(document, "same text", workspace_id=1)
    assert [request.body.get("input_type") for request in server.requests] == [None, "document"]


def test_texts_are_middle_truncated_to_max_text_chars(server):
    text = "head " * 40 + "tail"
    embed_texts(http_config(server.base_url, max_text_chars=60), [text, "short"])
    sent = server.requests[0].body["input"]
    sent_long, sent_short = max(sent, key=len), min(sent, key=len)
    assert len(sent_long) == 60
    assert TRUNCATION_SENTINEL in sent_long
    assert sent_long.startswith("head") and sent_long.endswith("tail")
    assert sent_short == "short"


def test_wrong_dimension_is_unavailable(server):
    server.embed_dimensions = 1536
    with pytest.raises(EmbeddingUnavailable, match="384"):
        embed_texts(http_config(server.base_url), ["x"])


def test_http_error_is_unavailable_and_transient(server):
    server.embed_status = 503
    with pytest.raises(EmbeddingUnavailable) as raised:
        embed_texts(http_config(server.base_url), ["x"])
    assert raised.value.transient
    assert raised.value.status == 503
    assert raised.value.code == "embedding_unavailable"


def test_unreachable_provider_is_unavailable():
    port = free_port()
    with pytest.raises(EmbeddingUnavailable):
        embed_texts(http_config(f"http://127.0.0.1:{port}/v1"), ["x"])


@pytest.mark.model
def test_calls_group_texts_by_length_but_vectors_keep_input_order():
    texts = ["a much longer sentence about quarterly budgets and approvals " * 3, "short", "medium length text here"]
    together = embed_texts(LOCAL, texts)
    one_by_one = [embed_texts(LOCAL, [text])[0] for text in texts]
    for joint, single in zip(together, one_by_one):
        assert cosine(joint, single) == pytest.approx(1.0, abs=1e-4)


def test_a_repeated_query_text_is_embedded_once(server):
    config = http_config(server.base_url)
    first = embed_query(config, "where is my parcel", workspace_id=1)
    again = embed_query(config, "where is my parcel", workspace_id=1)
    embed_query(config, "a different question", workspace_id=1)
    assert again == first
    assert [request.body["input"] for request in server.requests] == [["where is my parcel"],
                                                                      ["a different question"]]


def test_the_query_cache_keeps_only_the_newest_vectors(server, settings):
    settings.MEMSEEK = {"QUERY_EMBEDDING_CACHE": 2}
    config = http_config(server.base_url)
    for text in ("one", "two", "three", "one"):
        embed_query(config, text, workspace_id=1)
    assert [request.body["input"] for request in server.requests] == [["one"], ["two"], ["three"], ["one"]]


def test_the_query_cache_is_per_embedding_space(server):
    embed_query(http_config(server.base_url), "same words", workspace_id=1)
    other_space = EmbeddingConfig(http_config(server.base_url).provider, "text-embedding-test", 384, "remote-v2",
                                  256, 16000)
    embed_query(other_space, "same words", workspace_id=1)
    assert len(server.requests) == 2


def test_the_query_cache_is_per_workspace(server):
    config = http_config(server.base_url)
    embed_query(config, "what did workspace one ask", workspace_id=1)
    embed_query(config, "what did workspace one ask", workspace_id=2)
    embed_query(config, "what did workspace one ask", workspace_id=1)
    embed_query(config, "what did workspace one ask", workspace_id=2)
    # One provider call per workspace: the second workspace never gets the first one's hit.
    assert [request.body["input"] for request in server.requests] == [["what did workspace one ask"]] * 2


def test_a_query_cache_of_zero_embeds_every_time(server, settings):
    settings.MEMSEEK = {"QUERY_EMBEDDING_CACHE": 0}
    config = http_config(server.base_url)
    embed_query(config, "again", workspace_id=1)
    embed_query(config, "again", workspace_id=1)
    assert len(server.requests) == 2


@pytest.fixture
def local_calls(monkeypatch):
    """The texts of every call of the bundled model (which still runs)."""
    calls = []
    real = embedding._local_embed

    def recording(runtime, texts):
        calls.append(list(texts))
        return real(runtime, texts)

    monkeypatch.setattr(embedding, "_local_embed", recording)
    return calls


@pytest.mark.model
def test_bundled_model_calls_group_texts_of_one_token_count_up_to_the_batch(local_calls):
    same = [f"ticket {i} was closed" for i in range(10, 140)]  # every one 6 tokens
    embed_texts(LOCAL, same)
    assert [len(call) for call in local_calls] == [64, 64, 2]


@pytest.mark.model
def test_bundled_model_gives_a_text_much_longer_than_the_rest_its_own_call(local_calls):
    short = [f"ticket {i} was closed" for i in range(10, 30)]
    long = "the customer wrote a long complaint about the delivery, the refund and the tone of support " * 3
    vectors = embed_texts(LOCAL, [*short[:10], long, *short[10:]])
    assert sorted(local_calls, key=len) == [[long], short]
    assert vectors[10] == pytest.approx(embed_texts(LOCAL, [long])[0], abs=1e-5)


@pytest.mark.model
def test_bundled_model_takes_a_slightly_longer_text_into_the_call_when_padding_costs_less_than_a_call(local_calls):
    texts = ["ticket 11 was closed", "ticket 12 was closed today"]  # 6 and 7 tokens: one padding token
    embed_texts(LOCAL, texts)
    assert local_calls == [texts]


@pytest.mark.parametrize(("lengths", "limit", "calls"), [
    ([], 64, []),
    ([7, 7, 7], 2, [[0, 1], [2]]),  # at most ``limit`` texts a call
    ([9, 5, 5, 6], 64, [[1, 2, 3, 0]]),  # sorted by token count; padding 2×1 + 3×3 = 11 ≤ 32
    ([5] * 8 + [10], 64, [list(range(8)), [8]]),  # 8 texts × 5 padding tokens = 40 > 32: a new call
    ([5] * 6 + [10], 64, [list(range(7))]),  # 6 × 5 = 30 ≤ 32: one call
    ([20, 4, 4], 64, [[1, 2, 0]]),  # 2 × 16 = 32 padding tokens: not more than a call costs
    ([21, 4, 4], 64, [[1, 2], [0]]),  # 2 × 17 = 34: more
])
def test_calls_by_token_counts_trade_padding_against_the_cost_of_a_call(lengths, limit, calls):
    assert embedding.CALL_COST_TOKENS == 32
    assert embedding.calls_by_token_counts(lengths, limit) == calls


def test_no_texts_need_no_model_call(local_calls):
    assert embed_texts(LOCAL, []) == []
    assert local_calls == []


@pytest.mark.model
def test_one_text_is_one_call_without_a_tokenizer_pass(local_calls, monkeypatch):
    monkeypatch.setattr(embedding, "calls_by_token_counts", lambda lengths, limit: pytest.fail("tokenized"))
    (vector,) = embed_texts(LOCAL, ["where is my parcel"])
    assert local_calls == [["where is my parcel"]] and len(vector) == 384


def test_an_embedding_config_with_params_crosses_process_boundaries():
    """Process pools (the bench's embedding fill) pickle the config; params survive the trip."""
    config = replace(http_config("http://127.0.0.1:9"), params=MappingProxyType({"input_type": "document",
                                                                                  "truncate": {"side": "end"}}))
    copy = pickle.loads(pickle.dumps(config))
    assert copy == config and isinstance(copy.params, MappingProxyType)
    assert dict(copy.params) == {"input_type": "document", "truncate": {"side": "end"}}


@pytest.mark.model
def test_with_preload_on_the_model_is_loaded_while_django_starts():
    probe = ("import django; django.setup(); from catalog_app import embedding; "
             "print(embedding._model is not None)")
    for preload, loaded in (("true", "True"), ("false", "False")):
        # Settings load without connecting: no database is needed to start.
        env = {**os.environ, "PRELOAD_EMBEDDING_MODEL": preload, "EMBEDDING_RUNTIME": "torch",
               "DJANGO_SETTINGS_MODULE": "memseek_site.settings", "DATABASE_URL": "postgresql://127.0.0.1:1/none"}
        done = subprocess.run([sys.executable, "-c", probe], cwd=Path(__file__).resolve().parents[2], env=env,
                              capture_output=True, text=True, timeout=300, check=True)
        assert done.stdout.split()[-1] == loaded, done.stderr
