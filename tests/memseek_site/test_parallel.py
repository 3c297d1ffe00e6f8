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
def test_a_fan_out_inside_the_only_pool_thread_runs_in_that_thread(settings):
    settings.MEMSEEK = {"SEARCH_MAX_CONCURRENCY": 1}  # waiting for the one busy thread would hang

    def outer():
        return parallel.run_all([lambda: threading.current_thread().name] * 3)

    [inner] = parallel.run_all([outer, lambda: None])[:1]
    assert len(set(inner)) == 1 and inner[0].startswith("memseek-parallel-")


@pytest.mark.django_db(transaction=True)
def test_a_fan_out_inside_a_pool_thread_runs_its_tasks_concurrently_on_idle_threads(settings):
    settings.MEMSEEK = {"SEARCH_MAX_CONCURRENCY": 4}
    barrier = threading.Barrier(3, timeout=30)  # one after another, the first would wait forever

    def together(i):
        barrier.wait()
        return i, threading.current_thread().name

    def outer():
        return parallel.run_all([lambda i=i: together(i) for i in range(3)])

    inner, _ = parallel.run_all([outer, lambda: None])
    assert [i for i, _ in inner] == [0, 1, 2] and len({name for _, name in inner}) == 3


@pytest.mark.django_db(transaction=True)
def test_fan_outs_on_every_pool_thread_at_once_finish(settings):
    settings.MEMSEEK = {"SEARCH_MAX_CONCURRENCY": 2}
    both_busy = threading.Barrier(2, timeout=30)

    def outer(name):
        both_busy.wait()  # each of the two threads runs one outer task: no thread is idle
        return parallel.run_all([lambda i=i: (name, i) for i in range(3)])

    assert parallel.run_all([lambda: outer("a"), lambda: outer("b")]) == [[("a", i) for i in range(3)],
                                                                          [("b", i) for i in range(3)]]


@pytest.mark.django_db(transaction=True)
def test_a_nested_fan_out_raises_its_first_failure_after_every_task_finished(settings):
    settings.MEMSEEK = {"SEARCH_MAX_CONCURRENCY": 3}
    finished = []

    def fails(message):
        finished.append(message)
        raise ValueError(message)

    def outer():
        return parallel.run_all([lambda: finished.append("ok"), lambda: fails("first"), lambda: fails("second")])

    with pytest.raises(ValueError, match="first"):
        parallel.run_all([outer, lambda: None])
    assert sorted(finished) == ["first", "ok", "second"]


@pytest.mark.django_db(transaction=True)
def test_inside_a_transaction_tasks_run_here_and_see_its_rows():
    with transaction.atomic():
        here = backend_pid()
        assert parallel.run_all([backend_pid, backend_pid]) == [here, here]
