"""The bundled model on ONNX Runtime (``catalog_app.onnx_encoder``, ``EMBEDDING_RUNTIME``): its
vectors agree with the torch runtime's on real texts, it tokenises exactly as the
sentence-transformers model does (property test, the model's own ``tokenize`` as the oracle),
its cache is built once, reused, checked and rebuilt, concurrent builders leave one valid file,
the runtime is part of the stored space, and a bad runtime value stops a process at start."""
import hashlib
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from catalog_app import onnx_encoder
from catalog_app.catalog.models_conf import build, default_body
from catalog_app.embedding import embed_texts, local_model
from memseek_site.conf import memseek_setting, memseek_settings_check

pytestmark = pytest.mark.model

ROOT = Path(django_settings.BASE_DIR)


def real_texts() -> list[str]:
    """Texts of the repository's own fixtures: the quickstart records and the tiny SciFact
    corpus and queries (short notes, long abstracts, claims)."""
    records = json.loads((ROOT / "fixtures/samples/quickstart_records.json").read_text())
    texts = [record["text"] for record in records["records"] if "text" in record]
    scifact = ROOT / "fixtures/bench/scifact_tiny"
    texts += [f"{doc['title']}\n{doc['text']}" for doc in map(json.loads, (scifact / "corpus.jsonl").open())]
    texts += [query["text"] for query in map(json.loads, (scifact / "queries.jsonl").open())]
    return texts + ["x", "ok", "Where is my parcel?"]


@pytest.fixture(scope="module")
def local_config():
    return build(default_body()).embedding


# Cosine floors against the torch vectors: (texts of three words or more, every text). int8's
# activations are quantized per call, and a text of one or two words has the coarsest scale
# relative to its signal: those are where it falls below 0.99 (docs/encoder.md).
FLOORS = {"onnx": (0.9999, 0.9999), "onnx-int8": (0.99, 0.975)}


@pytest.mark.parametrize("runtime", FLOORS)
def test_onnx_vectors_agree_with_the_torch_runtime_on_real_texts(local_config, runtime):
    texts = real_texts()
    assert len(texts) >= 30
    torch_vectors = np.asarray(embed_texts(replace(local_config, runtime="torch"), texts))
    vectors = np.asarray(embed_texts(replace(local_config, runtime=runtime), texts))
    cosines = (vectors * torch_vectors).sum(axis=1)
    longer = np.array([len(text.split()) >= 3 for text in texts])
    assert longer.sum() >= 30 and (~longer).sum() >= 2
    sentences, every_text = FLOORS[runtime]
    assert cosines[longer].min() >= sentences, texts[int(np.where(longer, cosines, 2).argmin())]
    assert cosines.min() >= every_text, texts[int(cosines.argmin())]
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_int8_finds_the_same_nearest_abstract_as_torch_for_every_tiny_scifact_query(local_config):
    scifact = ROOT / "fixtures/bench/scifact_tiny"
    corpus = [f"{doc['title']}\n{doc['text']}" for doc in map(json.loads, (scifact / "corpus.jsonl").open())]
    queries = [query["text"] for query in map(json.loads, (scifact / "queries.jsonl").open())]

    def nearest(runtime):
        config = replace(local_config, runtime=runtime)
        documents, asked = np.asarray(embed_texts(config, corpus)), np.asarray(embed_texts(config, queries))
        return (asked @ documents.T).argmax(axis=1).tolist()

    assert nearest("onnx-int8") == nearest("torch")


@hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(min_size=0, max_size=1500), min_size=1, max_size=4))
def test_onnx_inputs_are_the_sentence_transformers_tokenisation(texts):
    """The oracle is the model's own ``tokenize`` (padding, truncation at ``max_seq_length``)."""
    model = local_model()
    expected = model.tokenize(texts)
    features = onnx_encoder.onnx_encoder("onnx", 1).features(texts)
    for name in onnx_encoder.INPUTS:
        assert features[name].tolist() == expected[name].tolist(), name


@pytest.fixture(scope="module")
def built_cache(tmp_path_factory):
    """One fp32 export into a fresh cache directory (copied by the tests that change it)."""
    directory = tmp_path_factory.mktemp("onnx-cache")
    onnx_encoder.cached_model_bytes("onnx", directory)
    return directory


def copied(cache: Path, target: Path) -> Path:
    shutil.copytree(cache, target, ignore=shutil.ignore_patterns("*.lock"))
    return target


def test_the_cache_is_written_with_a_manifest_and_reused_without_exporting(built_cache, tmp_path, monkeypatch):
    cache = copied(built_cache, tmp_path / "cache")
    manifest = json.loads((cache / onnx_encoder.manifest_name("onnx")).read_text())
    graph = (cache / onnx_encoder.graph_name("onnx")).read_bytes()
    assert manifest == {"runtime": "onnx", "source": onnx_encoder.source_digest("onnx"),
                        "sha256": hashlib.sha256(graph).hexdigest()}
    monkeypatch.setattr(onnx_encoder, "_build", lambda runtime, directory: pytest.fail("exported again"))
    assert onnx_encoder.cached_model_bytes("onnx", cache) == graph
    assert not list(cache.glob("*.tmp")) and not list(cache.glob("export.*"))


@pytest.mark.parametrize("damage", ["flip_a_byte", "truncate", "stale_source", "no_manifest"])
def test_a_damaged_or_stale_cache_is_detected_and_rebuilt(built_cache, tmp_path, damage):
    cache = copied(built_cache, tmp_path / "cache")
    graph_path, manifest_path = cache / onnx_encoder.graph_name("onnx"), cache / onnx_encoder.manifest_name("onnx")
    good = graph_path.read_bytes()
    if damage == "flip_a_byte":
        damaged = bytearray(good)
        damaged[len(damaged) // 2] ^= 0xFF
        graph_path.write_bytes(bytes(damaged))
    elif damage == "truncate":
        graph_path.write_bytes(good[: len(good) // 3])
    elif damage == "stale_source":
        manifest = json.loads(manifest_path.read_text())
        manifest_path.write_text(json.dumps({**manifest, "source": "0" * 64}))
    else:
        manifest_path.unlink()
    graph = onnx_encoder.cached_model_bytes("onnx", cache)
    manifest = json.loads(manifest_path.read_text())
    assert manifest["source"] == onnx_encoder.source_digest("onnx")
    assert hashlib.sha256(graph).hexdigest() == manifest["sha256"]
    assert graph_path.read_bytes() == graph
    # The rebuilt graph computes the same sentence embeddings as the cached one did.
    texts = ["the rebuilt graph", "answers as the first one did"]
    rebuilt = onnx_encoder.OnnxEncoder(graph, 1).encode(texts)
    assert np.allclose(rebuilt, onnx_encoder.OnnxEncoder(good, 1).encode(texts), atol=1e-5)


def _build_int8(directory: str, answers) -> None:
    answers.put(hashlib.sha256(onnx_encoder.cached_model_bytes("onnx-int8", Path(directory))).hexdigest())


def test_concurrent_processes_build_the_int8_graph_once_into_one_valid_file(built_cache, tmp_path):
    cache = copied(built_cache, tmp_path / "cache")
    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    processes = [context.Process(target=_build_int8, args=(str(cache), answers)) for _ in range(3)]
    for process in processes:
        process.start()
    digests = [answers.get(timeout=600) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    manifest = json.loads((cache / onnx_encoder.manifest_name("onnx-int8")).read_text())
    on_disk = hashlib.sha256((cache / onnx_encoder.graph_name("onnx-int8")).read_bytes()).hexdigest()
    assert set(digests) == {on_disk} == {manifest["sha256"]}
    assert not list(cache.glob("*.tmp")) and not list(cache.glob("export.*"))


@pytest.mark.parametrize(("runtime", "space"), [
    ("torch", "minilm-l6-v2"), ("onnx", "minilm-l6-v2.onnx"), ("onnx-int8", "minilm-l6-v2.onnx-int8")])
def test_the_runtime_is_part_of_the_bundled_models_space(settings, runtime, space):
    settings.MEMSEEK = {"EMBEDDING_RUNTIME": runtime}
    embedding = build(default_body()).embedding
    assert (embedding.runtime, embedding.space) == (runtime, space)


def test_a_provider_over_http_keeps_its_space_whatever_the_runtime(settings):
    settings.MEMSEEK = {"EMBEDDING_RUNTIME": "onnx-int8"}
    body = default_body()
    body["providers"]["remote"] = {"adapter": "openai_compat", "base_url": "http://127.0.0.1:9", "api_key_env": None,
                                   "json_capability": "none", "token_limit_field": "max_tokens"}
    body["embedding"] = {**body["embedding"], "provider": "remote", "model": "m", "space": "remote-v1"}
    embedding = build(body).embedding
    assert (embedding.runtime, embedding.space) == (None, "remote-v1")


@pytest.mark.parametrize("value", ["", "ONNX", "onnx_int8", "tensorrt", "torch "])
def test_an_unknown_runtime_is_refused_naming_the_setting(settings, value):
    settings.MEMSEEK = {"EMBEDDING_RUNTIME": value}
    with pytest.raises(ImproperlyConfigured, match="EMBEDDING_RUNTIME must be one of torch, onnx, onnx-int8"):
        memseek_settings_check()
    with pytest.raises(ImproperlyConfigured):
        memseek_setting("EMBEDDING_RUNTIME")


def test_a_process_with_an_unknown_runtime_stops_at_start():
    environment = {**os.environ, "EMBEDDING_RUNTIME": "onnx-fp16", "DJANGO_SETTINGS_MODULE": "memseek_site.settings"}
    started = subprocess.run([sys.executable, "-c", "import django; django.setup()"], check=False, cwd=ROOT,
                             env=environment, capture_output=True, text=True, timeout=120)
    assert started.returncode != 0
    assert "EMBEDDING_RUNTIME must be one of torch, onnx, onnx-int8, not 'onnx-fp16'" in started.stderr
