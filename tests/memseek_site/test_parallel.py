"""memseek_site.parallel: a process-wide pool of threads with persistent connections."""
import threading

import pytest
from django.db import connection, transaction

from memseek_site import parallel


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_tasks_run_on_pool_threads_and_results_keep_the_given_order():
    names = parallel.run_all([lambda i=i: (i, threading.current_thread().name) for i in range(5)])
    assert [index for index, _ in names] == [0, 1, 2, 3, 4]
    assert all(name.startswith("memseek-parallel-") for _, name in names)


@pytest.mark.django_db(transaction=True)
def test_pool_threads_keep_their_connections_between_calls(settings):
    settings.MEMSEEK = {"SEARCH_MAX_CONCURRENCY": 2}
    barrier = threading.Barrier(2, timeout=30)

    def pid_once_both_threads_run():
        barrier.wait()  # two tasks at once: one on each of the two threads
        return threading.current_thread().name, backend_pid()

    first = dict(parallel.run_all([pid_once_both_threads_run] * 2))
    second = dict(parallel.run_all([pid_once_both_threads_run] * 2))
    assert len(first) == 2 and first == second
    assert backend_pid() not in first.values()


@pytest.mark.django_db(transaction=True)
def test_a_connection_killed_between_calls_is_replaced_before_the_next_task(settings):
    settings.MEMSEEK = {"SEARCH_MAX_CONCURRENCY": 1}
    before = parallel.run_all([backend_pid, backend_pid])
    assert before[0] == before[1]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [before[0]])
    after = parallel.run_all([backend_pid, backend_pid])
    assert after[0] == after[1] != before[0]


@pytest.mark.django_db(transaction=True)
def test_the_first_failure_in_order_is_raised_after_every_task_finished():
    finished = []

    def fails(message):
        finished.append(message)
        raise ValueError(message)

    def slow_ok():
        threading.Event().wait(0.2)
        finished.append("ok")
        return 1

    with pytest.raises(ValueError, match="first"):
        parallel.run_all([slow_ok, lambda: fails("first"), lambda: fails("second")])
    assert sorted(finished) == ["first", "ok", "second"]


@pytest.mark.django_db(transaction=True)
def test_a_fan_out_inside_a_pool_thread_runs_in_that_thread(settings):
    settings.MEMSEEK = {"SEARCH_MAX_CONCURRENCY": 1}  # a nested submit to the one busy thread would hang

    def outer():
        return parallel.run_all([lambda: threading.current_thread().name] * 3)

    [inner] = parallel.run_all([outer, lambda: None])[:1]
    assert len(set(inner)) == 1 and inner[0].startswith("memseek-parallel-")


@pytest.mark.django_db(transaction=True)
def test_inside_a_transaction_tasks_run_here_and_see_its_rows():
    with transaction.atomic():
        here = backend_pid()
        assert parallel.run_all([backend_pid, backend_pid]) == [here, here]
