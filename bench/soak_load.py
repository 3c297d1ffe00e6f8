"""16 writers and 8 readers against the live stack while its parts fail: the Celery worker is
SIGKILLed and restarted, the database is stopped and started, Redis is restarted (forgetting
every queued message). Then the acknowledged writes are checked: every one stored, ready, its
dedupe key once, every writer's keyed fact current.

A writer sends batches of four events and one keyed fact (``progress``, its batch number), each
with its own dedupe key, and resends a batch until it is acknowledged (a 200), as a careful
client does after a 503 or a lost connection; a reader asks the timeline, the document and text
and hybrid searches of the writers' entities. A 503 ``database_unavailable`` is excused when the
request overlapped the database-down window (from the stop until the service answered again,
plus ``GRACE_S``); every other answer of 500 or more is a failure.
"""
from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass, field

from .search_setup import log
from .soak_client import SERVER_ERROR, Tally, send

JSON = (("Content-Type", "application/json"),)
EVENTS_PER_BATCH = 4
GRACE_S = 5.0
# Between a writer's batches: 16 writers then write faster than one Celery worker embeds on two
# cores, so a backlog builds, without making the drain unbounded.
WRITER_PAUSE_S = 0.5


@dataclass
class LoadLog:
    """Answers of the load phase (status, code, when), kept until the window is known."""
    answers: list = field(default_factory=list)
    acknowledged: dict = field(default_factory=dict)  # dedupe key -> record id
    last_acknowledged: dict = field(default_factory=dict)  # writer -> batch number
    last_sent: dict = field(default_factory=dict)  # writer -> batch number
    unacknowledged_batches: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, answer, request: dict) -> None:
        keep = request if answer.status >= SERVER_ERROR else None
        with self.lock:
            self.answers.append((answer.status, answer.code(), answer.started, answer.finished, keep,
                                 answer.body[:300].decode("utf-8", "replace") if keep else ""))


def writer_batch(writer: int, batch: int) -> bytes:
    entity = f"soak.writer.{writer}"
    records = [{"entity": entity, "type": "event", "text": f"writer {writer} batch {batch} item {item}: the renewal "
                f"call moved to {random.choice(['Monday', 'Tuesday', 'Friday'])}",
                "dedupe_key": f"soak-w{writer}-b{batch}-i{item}"} for item in range(EVENTS_PER_BATCH)]
    records.append({"entity": entity, "type": "fact", "key": "progress",
                    "text": f"writer {writer} reached batch {batch}",
                    "dedupe_key": f"soak-w{writer}-b{batch}-progress"})
    return json.dumps({"records": records}).encode()


def _write(port: int, key: str, writer: int, stop: threading.Event, log: LoadLog) -> None:
    batch = 0
    while not stop.is_set():
        body, acknowledged = writer_batch(writer, batch), False
        log.last_sent[writer] = batch
        while not stop.is_set():
            request = {"route": "records (writer)", "path": "/records", "body": body[:300].decode()}
            try:
                answer = send(port, "POST", "/records", body, JSON, key=key, timeout=60)
            except OSError:
                time.sleep(0.5)
                continue
            log.note(answer, request)
            if answer.status == 200:
                rows = answer.json()
                items = json.loads(body)["records"]
                with log.lock:
                    for row in rows["inserted"] + rows["duplicates"]:
                        log.acknowledged[items[row["index"]]["dedupe_key"]] = row["id"]
                    log.last_acknowledged[writer] = batch
                acknowledged = True
                break
            time.sleep(float(answer.headers.get("retry-after", "0.5") or 0.5))
        if not acknowledged:
            log.unacknowledged_batches += 1
        batch += 1
        time.sleep(WRITER_PAUSE_S)


def _read(port: int, key: str, writers: int, stop: threading.Event, log: LoadLog, seed: int) -> None:
    rng = random.Random(seed)
    while not stop.is_set():
        entity = f"soak.writer.{rng.randrange(writers)}"
        choice = rng.randrange(4)
        if choice == 0:
            method, path, body = "GET", f"/timeline?entity={entity}", None
        elif choice == 1:
            method, path, body = "GET", f"/document?entity={entity}", None
        elif choice == 2:
            method, path, body = "POST", "/search", json.dumps({"q": "renewal call", "mode": "text", "k": 20}).encode()
        else:
            method, path, body = "POST", "/search", json.dumps({"q": "when was the renewal call", "mode": "hybrid",
                                                                "scope": {"entities": [entity]}}).encode()
        try:
            answer = send(port, method, path, body, JSON, key=key, timeout=60)
        except OSError:
            time.sleep(0.5)
            continue
        log.note(answer, {"route": f"{method} {path.split('?')[0]} (reader)", "path": path,
                          "body": (body or b"").decode()})
        time.sleep(0.05)


def _until_answering(port: int, key: str, timeout_s: float = 120) -> float:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if send(port, "GET", "/collections", key=key, timeout=10).status == 200:
                return time.monotonic()
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the service did not answer within {timeout_s} s of the database's restart")


def run_load(stack, key: str, *, seconds: float, writers: int, readers: int, database_down_s: float,
             events: list) -> tuple[LoadLog, tuple[float, float]]:
    """Run the load for ``seconds`` with the faults at fixed shares of it; ``stack`` has
    ``port``, ``postgres``, ``redis`` and ``restart_worker()`` / ``kill_worker()``. Appends
    ``{event, at_s}`` to ``events``; returns the log and the database-down window."""
    load_log, stop = LoadLog(), threading.Event()
    threads = [threading.Thread(target=_write, args=(stack.port, key, n, stop, load_log), name=f"soak-writer-{n}",
                                daemon=True) for n in range(writers)]
    threads += [threading.Thread(target=_read, args=(stack.port, key, writers, stop, load_log, n),
                                 name=f"soak-reader-{n}", daemon=True) for n in range(readers)]
    start = time.monotonic()

    def event(name: str) -> float:
        now = time.monotonic()
        events.append({"event": name, "at_s": round(now - start, 1)})
        log(f"[soak load {now - start:6.1f} s] {name}")
        return now

    def at(share: float) -> None:
        time.sleep(max(0.0, start + share * seconds - time.monotonic()))

    for thread in threads:
        thread.start()
    event(f"{writers} writers and {readers} readers started")
    try:
        window = _faults(stack, key, event, at, database_down_s)
        at(1.0)
    finally:
        stop.set()
        for thread in threads:
            thread.join(120)
    event("load stopped")
    return load_log, window


def _faults(stack, key: str, event, at, database_down_s: float) -> tuple[float, float]:
    """The faults, in order; returns the database-down window. The restarted worker loads the
    model while the schedule goes on (on a loaded machine that takes minutes)."""
    at(0.15)
    stack.kill_worker()
    event("Celery worker SIGKILLed")
    time.sleep(2)
    failures: list[BaseException] = []

    def restart_worker() -> None:
        try:
            stack.restart_worker()
        except BaseException as error:  # reported below, on this thread
            failures.append(error)

    restart = threading.Thread(target=restart_worker, name="soak-worker-restart")
    restart.start()
    event("Celery worker restarting")
    at(0.4)
    down_from = event("database stopping")
    stack.postgres.stop()
    event("database stopped")
    time.sleep(database_down_s)
    stack.postgres.start()
    event("database started")
    back = _until_answering(stack.port, key)
    event("service answering again")
    restart.join()
    if failures:
        raise RuntimeError("the restarted Celery worker did not start") from failures[0]
    event("Celery worker restarted (model loaded)")
    at(0.7)
    stack.redis.restart()
    event("Redis restarted (queue forgotten)")
    return down_from, back + GRACE_S


def tally_load(log: LoadLog, window: tuple[float, float], tally: Tally) -> None:
    """Count the load's answers; a 503 ``database_unavailable`` overlapping ``window`` is excused."""
    for status, code, started, finished, request, response in log.answers:
        excused = status == 503 and code == "database_unavailable" and started <= window[1] and finished >= window[0]
        tally.add_outcome("load", status, code, request or {}, response, excused=excused)


def check_writes(database_url: str, port: int, key: str, log: LoadLog, *, drain_timeout_s: float,
                 events: list, started: float) -> dict:
    """Wait (at most ``drain_timeout_s``) until every acknowledged record is ready, then check
    nothing acknowledged is lost, no dedupe key is stored twice, and each writer's current
    ``progress`` fact is its last acknowledged batch (or the one after, sent but unacknowledged)."""
    import psycopg

    ids = list(log.acknowledged.values())
    deadline = time.monotonic() + drain_timeout_s
    with psycopg.connect(database_url, autocommit=True) as connection:
        while True:
            stored, ready = connection.execute(
                "SELECT count(*), count(enriched_at) FROM catalog_app_record WHERE id = ANY(%s::uuid[])",
                (ids,)).fetchone()
            if ready == len(ids) or time.monotonic() > deadline:
                break
            time.sleep(1)
        events.append({"event": f"acknowledged records ready ({ready} of {len(ids)})",
                       "at_s": round(time.monotonic() - started, 1)})
        duplicated = connection.execute(
            "SELECT count(*) FROM (SELECT dedupe_key FROM catalog_app_record WHERE dedupe_key LIKE 'soak-w%' "
            "GROUP BY workspace_id, dedupe_key HAVING count(*) > 1) AS twice").fetchone()[0]
        embedded = connection.execute(
            "SELECT count(DISTINCT record_id) FROM catalog_app_recordembedding WHERE record_id = ANY(%s::uuid[])",
            (ids,)).fetchone()[0]
    stale = []
    for writer, batch in sorted(log.last_acknowledged.items()):
        beliefs = send(port, "GET", f"/document?entity=soak.writer.{writer}", key=key).json()["beliefs"]
        texts = [belief["text"] for belief in beliefs if belief["key"] == "progress"]
        current = int(texts[0].rsplit(" ", 1)[1]) if texts else None
        if current not in (batch, batch + 1) or (current == batch + 1 and log.last_sent.get(writer) != batch + 1):
            stale.append({"writer": writer, "last_acknowledged": batch, "current": current})
    return {"acknowledged": len(ids), "stored": stored, "lost": len(ids) - stored, "ready": ready,
            "not_ready": len(ids) - ready, "embedded": embedded, "duplicated_dedupe_keys": duplicated,
            "stale_current_facts": stale, "unacknowledged_batches": log.unacknowledged_batches,
            "drain_timeout_s": drain_timeout_s}
