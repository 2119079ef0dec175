"""The local engine in forked processes gives what it gives in one: the same outputs and report, the
summaries in partition order up to the first failure; it forks only a process without other threads."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import threading
import time
from pathlib import Path

import pytest

from rollback import RangeSpec
from rollback.pipeline.engines import local
from rollback.pipeline.parts import Summary
from tests.support.jobs import run, sakila


class _Part:
    def __init__(self, index: int):
        self.index, self.size, self.events = index, 100 * (index + 1), 1


@pytest.mark.corpus
def test_partitions_in_forked_processes_give_the_outputs_of_one_process(corpus_file, tmp_path, monkeypatch):
    rng = RangeSpec([str(sakila(corpus_file))])
    forks: list[int] = []
    forked = local.run_forked
    monkeypatch.setattr(local, "run_forked", lambda *a: forks.append(a[-1]) or forked(*a))
    monkeypatch.setattr(local, "usable_cpus", lambda: 2)
    monkeypatch.setattr(local, "can_fork", lambda: True)  # under xdist the test process has threads
    in_two = run(rng, tmp_path, "two", mode="changes", partition_bytes=256 << 10)
    assert forks == [2]
    monkeypatch.setattr(local, "usable_cpus", lambda: 1)
    in_one = run(rng, tmp_path, "one", mode="changes", partition_bytes=256 << 10)
    assert in_one.report.partitions == in_two.report.partitions > 4
    assert in_two.same(in_one) and in_two.changes
    assert in_two.report.to_dict() == in_one.report.to_dict()


def test_forked_summaries_stop_after_the_first_failure_as_in_one_process(monkeypatch, tmp_path):
    def fake(job, part, progress=None):
        summary = Summary(part.index, bytes=part.size, events=1)
        if part.index == 2:
            summary.error = {"type": "RangeError", "message": "bad"}
        return summary

    monkeypatch.setattr(local, "run_partition", fake)
    parts = [_Part(i) for i in range(5)]
    heard: list[tuple[int, int]] = []
    forked = local.run_forked(None, parts, lambda done, events: heard.append((done, events)), 2)  # type: ignore[arg-type]
    alone = local.run_local(None, parts)  # type: ignore[arg-type]
    assert [s.index for s in forked] == [s.index for s in alone] == [0, 1, 2]
    assert forked[2].error == alone[2].error
    assert heard[-1] == (sum(p.size for p in parts), 5)  # every partition ran and was heard of


def test_a_process_with_other_threads_runs_its_partitions_in_order_here(monkeypatch):
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        assert not local.can_fork()
        monkeypatch.setattr(local, "run_forked", lambda *a: pytest.fail("forked beside a thread"))
        monkeypatch.setattr(local, "run_local", lambda job, parts, progress=None: ["serial"])
        assert local.LocalEngine(2).run(None, [object(), object()]) == ["serial"]  # type: ignore[arg-type]
    finally:
        stop.set()
        worker.join()


def test_an_exception_in_a_worker_is_raised_here_after_every_worker_ended(monkeypatch):
    def fake(job, part, progress=None):
        if part.index == 3:
            raise ValueError("a bug in partition 3")
        return Summary(part.index, bytes=part.size, events=1)

    monkeypatch.setattr(local, "run_partition", fake)
    with pytest.raises(ValueError, match="a bug in partition 3"):
        local.run_forked(None, [_Part(i) for i in range(6)], None, 2)  # type: ignore[arg-type]


def test_a_worker_that_dies_is_an_error_not_a_hang(monkeypatch):
    def fake(job, part, progress=None):
        if part.index == 1:
            os._exit(9)
        return Summary(part.index, bytes=part.size, events=1)

    monkeypatch.setattr(local, "run_partition", fake)
    with pytest.raises(RuntimeError, match="ended unexpectedly .exit status 9"):
        local.run_forked(None, [_Part(i) for i in range(4)], None, 2)  # type: ignore[arg-type]


def test_each_summary_says_when_its_partition_started_on_the_machines_clock(monkeypatch):
    from rollback.pipeline import partition

    class TenMilliseconds:  # a partition's run; run_partition around it stamps the summary
        def __init__(self, job, part, progress=None):
            self.part = part

        def run(self):
            time.sleep(0.01)
            return Summary(self.part.index, bytes=self.part.size, events=1)

    monkeypatch.setattr(partition, "_Run", TenMilliseconds)
    parts = [_Part(i) for i in range(4)]
    before = time.monotonic()
    for summaries in (local.run_forked(None, parts, None, 2), local.run_local(None, parts)):  # type: ignore[arg-type]
        assert all(before < s.started < time.monotonic() - 0.01 for s in summaries)
    alone = local.run_local(None, parts)  # type: ignore[arg-type]
    assert [s.started for s in alone] == sorted(s.started for s in alone)  # in order, one after the other
    assert alone[-1].started - alone[0].started >= 0.03
    assert all(s.seconds >= 0.01 and 0 <= s.cpu < s.seconds for s in alone)  # a sleep takes no CPU


def test_the_job_reaches_the_workers_through_the_fork_not_pickled(monkeypatch):
    class Unpicklable:  # a local class with a lambda: pickle refuses it
        check = staticmethod(lambda: "inherited")

    def fake(job, part, progress=None):
        assert job.check() == "inherited"
        return Summary(part.index, bytes=part.size, events=1)

    monkeypatch.setattr(local, "run_partition", fake)
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(Unpicklable())
    forked = local.run_forked(Unpicklable(), [_Part(i) for i in range(4)], None, 2)  # type: ignore[arg-type]
    assert [s.index for s in forked] == [0, 1, 2, 3]


def _ended(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except FileNotFoundError:
        return True


def test_the_workers_end_with_a_parent_that_is_killed(monkeypatch, tmp_path):
    """A cancelled job's process is killed after its grace time: its workers, one inside a partition
    and one waiting for the next, end with it instead of waiting forever."""

    def fake(job, part, progress=None):
        (tmp_path / str(os.getpid())).write_text("")
        time.sleep(120 if part.index == 0 else 1)  # the quick one waits until the other worker took its part
        return Summary(part.index, bytes=part.size, events=1)

    monkeypatch.setattr(local, "run_partition", fake)
    parent = multiprocessing.get_context("fork").Process(
        target=local.run_forked, args=(None, [_Part(0), _Part(1)], None, 2)
    )
    parent.start()
    deadline = time.monotonic() + 30
    while len(list(tmp_path.iterdir())) < 2:
        assert time.monotonic() < deadline, "the two workers did not start"
        time.sleep(0.05)
    workers = [int(p.name) for p in tmp_path.iterdir()]
    parent.kill()
    parent.join()
    deadline = time.monotonic() + 10
    while not all(_ended(pid) for pid in workers):
        assert time.monotonic() < deadline, "a worker outlived its killed parent"
        time.sleep(0.05)


def test_a_cancel_told_through_progress_stops_the_running_workers_at_once(monkeypatch):
    class Cancelled(Exception):
        pass

    def fake(job, part, progress=None):
        time.sleep(120 if part.index == 0 else 0.5)
        return Summary(part.index, bytes=part.size, events=1)

    def cancel(done, events):
        raise Cancelled()

    monkeypatch.setattr(local, "run_partition", fake)
    started = time.monotonic()
    with pytest.raises(Cancelled):
        local.run_forked(None, [_Part(0), _Part(1)], cancel, 2)  # type: ignore[arg-type]
    assert time.monotonic() - started < 30, "the worker inside its partition was left running"
