"""Hypothesis-generated bodies (``soak_bodies``) sent to a live server from client threads.

Hypothesis draws the cases in this thread (one "example" per request, generation phase only, no
shrinking, no example database); each case is handed to a pool of client threads so generation
and the server's work overlap. Every answer is tallied; nothing here decides pass or fail.
"""
from __future__ import annotations

import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from .soak_bodies import Case, FuzzContext, cases
from .soak_client import Tally, send


def fuzz_context(port: int, key: str) -> FuzzContext:
    """What well-formed bodies may name in the workspace of ``key``: its entities and stored
    records (from the timeline), two drafts written for review, and a receipt of ``/retrieve``."""
    import json

    entities = ("contact.maria", "contact.liam", "project.atlas", "team.support")
    record_ids = []
    for entity in entities:
        answer = send(port, "GET", f"/timeline?entity={entity}", key=key)
        record_ids += [row["id"] for row in answer.json()["records"]]
    drafts = send(port, "POST", "/records", json.dumps({"records": [
        {"entity": "contact.maria", "type": "note", "text": f"Draft {n} for review", "status": "draft"}
        for n in range(2)]}).encode(), (("Content-Type", "application/json"),), key=key).json()
    receipt = send(port, "POST", "/retrieve", b'{"query": "budget", "entity": "contact.maria"}',
                   (("Content-Type", "application/json"),), key=key).json()
    return FuzzContext(entities=entities, record_ids=tuple(record_ids),
                       draft_ids=tuple(row["id"] for row in drafts["inserted"]), receipt_id=receipt["receiptId"])


def run_fuzz(port: int, key: str, context: FuzzContext, *, count: int, seed: int, tally: Tally,
             clients: int = 4, phase: str = "bodies", routes: tuple[str, ...] | None = None) -> int:
    """Send ``count`` generated cases (to ``routes``, default every POST route) to
    127.0.0.1:``port`` with ``clients`` threads; returns how many were sent."""
    in_flight = threading.BoundedSemaphore(clients * 2)
    sent = 0

    def deliver(case: Case) -> None:
        try:
            try:
                answer = send(port, "POST", case.path, case.body, case.headers, key=key)
            except OSError as error:
                tally.lost(phase, case.describe(), error)
                return
            tally.add(phase, answer, case.describe())
        finally:
            in_flight.release()

    with ThreadPoolExecutor(clients, thread_name_prefix="soak-fuzz") as pool:
        @hypothesis_seed(seed)
        @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(cases(context) if routes is None else cases(context, routes))
        def generate(case: Case) -> None:
            nonlocal sent
            in_flight.acquire()
            pool.submit(deliver, case)
            sent += 1

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            generate()
    return sent
