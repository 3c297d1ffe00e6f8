"""Real Celery workers (``celery -A memseek_site worker`` subprocesses) against the local Redis
and the test database: enrichment end to end, and recovery after a worker is killed mid-task.

Skipped only when no Redis answers on 127.0.0.1:6379 (CI provides one).
"""
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
import redis
from celery import Celery
from django.db import connection
from django.utils import timezone

from catalog_app.models import Record, RecordEmbedding
from catalog_app.services.catalog_load import catalog_load
from memseek_site.queues import ENRICHMENT, TASK_ROUTES
from tests.catalog_app.factories import pending_record
from tests.openai_server import Hang, ScriptedOpenAIServer, llm_catalog_dir

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

PROJECT = Path(__file__).resolve().parents[2]
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379
# A database number of its own, flushed around each test, so stale messages never leak in.
BROKER_URL = f"redis://{REDIS_HOST}:{REDIS_PORT}/{os.environ.get('MEMSEEK_TEST_REDIS_DB', '14')}"
TASK = "catalog_app.tasks.enrich_records"


def redis_reachable() -> bool:
    try:
        with socket.create_connection((REDIS_HOST, REDIS_PORT), timeout=1):
            return True
    except OSError:
        return False


def database_url() -> str:
    """The address of the database this test uses (the pytest-django test database)."""
    settings = connection.settings_dict
    user, password = quote(settings["USER"] or "", safe=""), quote(settings["PASSWORD"] or "", safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host, query = settings["HOST"] or "", {}
    if host.startswith("/"):
        netloc, query["host"] = auth, host
    else:
        netloc = auth + host + (f":{settings['PORT']}" if settings["PORT"] else "")
    suffix = f"?{urlencode(query)}" if query else ""
    return f"postgresql://{netloc}/{quote(settings['NAME'], safe='')}{suffix}"


def wait_for(condition, timeout_s: float, what: str, logs=()) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.25)
    tails = "\n".join(f"--- {log.name}\n{log.read_text()[-3000:]}" for log in logs if log.exists())
    pytest.fail(f"timed out after {timeout_s} s waiting for {what}\n{tails}")


class Workers:
    """Starts worker subprocesses (each in its own process group) and always cleans them up."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.running: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    def start(self, queues: str | None = None, args: tuple = (), **env) -> subprocess.Popen:
        """Start a worker consuming ``queues`` (comma-separated; default every queue), with the
        extra command-line ``args``."""
        log = self.directory / f"worker-{len(self.logs) + 1}.log"
        self.logs.append(log)
        environment = {**os.environ, "DATABASE_URL": database_url(), "CELERY_BROKER_URL": BROKER_URL,
                       "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                       **{name: str(value) for name, value in env.items()}}
        with log.open("w") as output:
            process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "memseek_site", "worker", "--loglevel=INFO",
                 "--concurrency=1", "--pool=prefork", f"--hostname=test-{uuid.uuid4().hex[:8]}@%h",
                 "--without-gossip", "--without-mingle", "--without-heartbeat",
                 *([f"--queues={queues}"] if queues else []), *args],
                cwd=PROJECT, env=environment, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
        self.running.append(process)
        wait_for(lambda: " ready." in log.read_text() or process.poll() is not None, 60, "the worker to start",
                 [log])
        assert process.poll() is None, f"the worker exited:\n{log.read_text()[-3000:]}"
        return process

    def kill(self, process: subprocess.Popen) -> None:
        """SIGKILL the worker and its pool processes (its own process group) at once."""
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)

    def stop_all(self) -> None:
        """SIGKILL every worker still running: the test is over, and a warm shutdown would only
        wait for each pool process to tear down its loaded model."""
        for process in self.running:
            if process.poll() is None:
                self.kill(process)


@pytest.fixture
def broker():
    if not redis_reachable():
        pytest.skip(f"worker tests need Redis on {REDIS_HOST}:{REDIS_PORT}, and nothing answers there")
    client = redis.Redis.from_url(BROKER_URL)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def producer(broker):
    """Sends tasks by name through the broker to their queues, as the web process does in production."""
    app = Celery("memseek-test-producer", broker=BROKER_URL, set_as_current=False)
    app.conf.task_routes = TASK_ROUTES
    yield app
    app.close()


@pytest.fixture
def workers(transactional_db, broker, tmp_path):
    # Depends on transactional_db so the workers are gone before the tables are flushed.
    running = Workers(tmp_path)
    yield running
    running.stop_all()


@pytest.fixture
def chat_server():
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture
def release_hang():
    """Set to answer the hung chat call of ``llm_workspace`` (at the latest when the test ends)."""
    release = threading.Event()
    yield release
    release.set()


@pytest.fixture
def llm_workspace(workspace, chat_server, release_hang, tmp_path):
    """The llm_scoring catalog pointed at ``chat_server``, whose first chat call hangs until
    ``release_hang`` is set and whose later calls score 8."""
    chat_server.chat.append(Hang(release_hang))
    chat_server.chat_default = {"score": 8}
    catalog_load(workspace=workspace, directory=llm_catalog_dir(tmp_path, chat_server.base_url))
    workspace.refresh_from_db()
    return workspace


def ready(record_ids) -> bool:
    return Record.objects.filter(id__in=record_ids, enriched_at__isnull=True).count() == 0


@pytest.mark.model
def test_worker_enriches_committed_records_with_real_embeddings(catalog, workers, producer):
    records = [pending_record(catalog, collection="main", text="The parcel arrived damaged."),
               pending_record(catalog, collection="main", text="Please send a replacement for the broken item."),
               pending_record(catalog, collection="tickets", text="Angry call about the delay.", type="complaint")]
    ids = [str(record.id) for record in records]
    workers.start()
    producer.send_task(TASK, args=[ids])
    wait_for(lambda: ready(ids), 60, "the records to become ready", workers.logs)
    embeddings = RecordEmbedding.objects.filter(record_id__in=ids, space="minilm-l6-v2")
    assert embeddings.count() == 3
    assert all(len(embedding.embedding) == 384 for embedding in embeddings)
    ticket = Record.objects.get(id=records[2].id)
    assert ticket.annotations == {"sentiment": {"label": "neutral"}}
    assert set(ticket.annotation_meta) == {"embedding_v1", "sentiment"}


def test_each_pool_process_loads_the_bundled_model_before_its_first_task(workers):
    workers.start()
    log = workers.logs[-1]
    wait_for(lambda: "loaded the bundled embedding model" in log.read_text(), 60,
             "a pool process to load the model without any task", workers.logs)
    assert "Task catalog_app.tasks.enrich_records[" not in log.read_text()  # no enrichment task loaded it


def _start_and_kill_mid_enrichment(workspace, workers, producer, chat_server, **env):
    """Send one memo's enrichment to a worker, hold its LLM call, and SIGKILL the worker while
    the record's transaction is open. Returns the record id."""
    memo = pending_record(workspace, collection="memos", text="Renewal is due next week; the customer is unhappy.")
    record_id = str(memo.id)
    first = workers.start(**env)
    producer.send_task(TASK, args=[[record_id]])
    assert chat_server.hang_started.wait(60), "the worker never called the model"
    workers.kill(first)
    # The killed transaction rolled back: no half-enriched state is visible.
    memo.refresh_from_db()
    assert not memo.ready and memo.annotation_meta == {}
    assert not RecordEmbedding.objects.filter(record_id=record_id).exists()
    return record_id


@pytest.mark.model
def test_killed_worker_task_is_redelivered_after_the_visibility_timeout(llm_workspace, workers, producer,
                                                                        chat_server, broker):
    env = {"CELERY_VISIBILITY_TIMEOUT": 5, "PENDING_RECOVERY_AGE_S": 3600}  # redelivery only, no recovery scan
    record_id = _start_and_kill_mid_enrichment(llm_workspace, workers, producer, chat_server, **env)
    # Let the unacknowledged message's visibility timeout pass, counted from its delivery as the
    # broker does (kombu keeps the delivery time as its score in ``unacked_index``).
    delivered = broker.zrange("unacked_index", 0, 0, withscores=True)
    assert len(delivered) == 1, delivered
    wait_for(lambda: time.time() - delivered[0][1] > env["CELERY_VISIBILITY_TIMEOUT"], 30,
             "the visibility timeout to pass")
    workers.start(**env)
    wait_for(lambda: ready([record_id]), 60, "the redelivered task to finish the record", workers.logs)
    memo = Record.objects.get(id=record_id)
    assert memo.scores == {"importance": 8.0}
    assert memo.annotation_meta["importance"]["status"] == "ok"
    assert RecordEmbedding.objects.filter(record_id=record_id, space="minilm-l6-v2").count() == 1


@pytest.mark.model
def test_restarted_worker_recovers_pending_records_as_it_starts(llm_workspace, workers, producer, chat_server,
                                                                broker):
    record_id = _start_and_kill_mid_enrichment(llm_workspace, workers, producer, chat_server,
                                               CELERY_VISIBILITY_TIMEOUT=3600, PENDING_RECOVERY_AGE_S=3600)
    created = Record.objects.get(id=record_id).created_at
    wait_for(lambda: (timezone.now() - created).total_seconds() > 1.5, 10,
             "the record to be older than the restarted worker's recovery age")
    workers.start(CELERY_VISIBILITY_TIMEOUT=3600, PENDING_RECOVERY_AGE_S=1, PENDING_RECOVERY_INTERVAL_S=3600)
    wait_for(lambda: ready([record_id]), 60, "the start-up recovery to finish the record", workers.logs)
    assert Record.objects.get(id=record_id).scores == {"importance": 8.0}
    # The killed worker's message is still parked unacknowledged: recovery, not redelivery, did it.
    assert broker.hlen("unacked") == 1


# Redelivery is an hour away, so only the recovery can finish the records. The age is longer
# than a worker takes to start, so the restarted worker's first scan finds them too young.
RECOVERY_AGE_S, RECOVERY_INTERVAL_S = 15, 1
RECOVERY_ENV = {"CELERY_VISIBILITY_TIMEOUT": 3600, "PENDING_RECOVERY_AGE_S": RECOVERY_AGE_S,
                "PENDING_RECOVERY_INTERVAL_S": RECOVERY_INTERVAL_S}
# Beyond the age and one interval: the worker's start, the model load and one task's claim.
RECOVERY_SLACK_S = 45


def memos(workspace, count: int) -> list[str]:
    return [str(pending_record(workspace, collection="memos", text=f"Memo {n}: the renewal is due next week.").id)
            for n in range(count)]


def start_with_model(workers, queues: str | None = None, args: tuple = (), **env) -> subprocess.Popen:
    """Start a worker and wait until its pool process has loaded the model, so that its first
    task reaches the model provider at once."""
    process = workers.start(queues, args=args, **env)
    log = workers.logs[-1]
    wait_for(lambda: "loaded the bundled embedding model" in log.read_text(), 120, "the model to load", [log])
    return process


def wait_for_recovery(ids, logs) -> None:
    """Wait until every record of ``ids`` is ready, at most until the oldest is as old as the
    recovery age, one interval and the slack."""
    oldest = min(Record.objects.filter(id__in=ids).values_list("created_at", flat=True))
    budget = RECOVERY_AGE_S + RECOVERY_INTERVAL_S + RECOVERY_SLACK_S - (timezone.now() - oldest).total_seconds()
    wait_for(lambda: ready(ids), budget, f"the recovery to finish {len(ids)} record(s)", logs)


def scored_importance(ids) -> list:
    return list(Record.objects.filter(id__in=ids).values_list("scores", flat=True))


@pytest.mark.model
def test_restarted_worker_finishes_the_records_its_killed_predecessor_held(llm_workspace, workers, producer,
                                                                           chat_server, broker):
    first = start_with_model(workers, **RECOVERY_ENV)
    ids = memos(llm_workspace, 20)
    producer.send_task(TASK, args=[ids])
    assert chat_server.hang_started.wait(60), "the worker never called the model"
    workers.kill(first)
    assert Record.objects.filter(id__in=ids, enriched_at__isnull=True).count() == 20
    time.sleep(2)
    workers.start(**RECOVERY_ENV)
    oldest = min(Record.objects.filter(id__in=ids).values_list("created_at", flat=True))
    assert (timezone.now() - oldest).total_seconds() < RECOVERY_AGE_S  # too young for the start-up scan
    wait_for_recovery(ids, workers.logs)
    assert scored_importance(ids) == [{"importance": 8.0}] * len(ids)
    assert broker.hlen("unacked") >= 1  # the killed worker's message is still parked: recovery did it


@pytest.mark.model
def test_records_whose_messages_the_broker_lost_are_finished(llm_workspace, release_hang, workers, producer,
                                                             chat_server, broker):
    start_with_model(workers, **RECOVERY_ENV)
    busy = memos(llm_workspace, 1)
    producer.send_task(TASK, args=[busy])
    assert chat_server.hang_started.wait(60), "the worker never called the model"
    ids = memos(llm_workspace, 10)
    producer.send_task(TASK, args=[ids])
    assert broker.llen(ENRICHMENT) >= 1  # queued behind the busy pool process
    broker.flushdb()  # what a restart does to a Redis that keeps nothing on disk
    release_hang.set()
    wait_for_recovery(ids, workers.logs)
    assert scored_importance(ids) == [{"importance": 8.0}] * len(ids)
    assert Record.objects.get(id=busy[0]).scores == {"importance": 5.0}  # the held call, finished by its own task


@pytest.mark.model
def test_a_worker_that_reconnects_to_the_broker_recovers_every_pending_record(catalog, workers, broker):
    workers.start(**RECOVERY_ENV)
    # Older than every window the running worker scans: as if its recovery's task had been lost too.
    record_id = str(pending_record(catalog, collection="main", text="The parcel arrived damaged.",
                                   age_s=10 * RECOVERY_AGE_S).id)
    time.sleep(3 * RECOVERY_INTERVAL_S)
    assert not ready([record_id])
    # Drop the worker's connections (only those to the test's own database), as a restarted broker does.
    database, own = str(broker.connection_pool.connection_kwargs["db"]), broker.client_id()
    for client in broker.client_list():
        if client["db"] == database and int(client["id"]) != own:
            broker.client_kill_filter(_id=client["id"])
    wait_for(lambda: ready([record_id]), 60, "the reconnected worker's recovery to finish the record", workers.logs)
    # The scans carry on over the new connection: a record whose task is lost now is recovered too.
    later = str(pending_record(catalog, collection="main", text="Lost after the reconnect.").id)
    wait_for_recovery([later], workers.logs)
    assert RecordEmbedding.objects.filter(record_id=later, space="minilm-l6-v2").count() == 1
