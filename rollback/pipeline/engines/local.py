"""The local engine: the partitions of a job run on this machine, in this process or in forked ones.

One process runs them in order. With `processes` > 1 and more than one partition, a pool of that
many forked processes runs them (the parent only waits and collects): forking copies the imported
engine and the compiled core, so a worker starts in a few milliseconds, where a fresh interpreter
would spend a tenth of a second importing. Fork only when this process runs no other thread (a
thread holding a lock at the fork would leave it held forever in the child: the service's worker
threads, a terminal's progress display); otherwise the partitions run in order here, as before.
Both ways give the same summaries and the same part files.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import TYPE_CHECKING

from rollback.pipeline.engines.base import JobProgress
from rollback.pipeline.partition import JobSpec, PartitionProgress, run_partition
from rollback.pipeline.parts import Summary
from rollback.pipeline.plan import Partition

if TYPE_CHECKING:
    from concurrent.futures import Future
    from multiprocessing.process import BaseProcess

# A range from this size on runs in forked workers (one per usable CPU, PARTITIONS_PER_SLOT
# partitions each); below it, forking and merging more parts cost more than a second core gains.
FORK_BYTES = 4 << 20


class LocalEngine:
    def __init__(self, processes: int = 1) -> None:
        self.processes = processes

    def run(
        self, job: JobSpec, partitions: list[Partition], progress: JobProgress | None = None
    ) -> list[Summary]:
        if self.processes > 1 and len(partitions) > 1 and can_fork():
            return run_forked(job, partitions, progress, self.processes)
        return run_local(job, partitions, progress)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def can_fork() -> bool:
    return hasattr(os, "fork") and threading.active_count() == 1


def run_local(
    job: JobSpec, partitions: list[Partition], progress: JobProgress | None = None
) -> list[Summary]:
    """Summaries of the partitions in order; stops after the first one that failed."""
    summaries: list[Summary] = []
    bytes_before = events_before = 0
    for part in partitions:
        note: PartitionProgress | None = None
        if progress is not None:
            note = _offset(progress, bytes_before, events_before)
        summary = run_partition(job, part, note)
        summaries.append(summary)
        if summary.error is not None:
            break
        bytes_before += part.size
        events_before += part.events
    return summaries


def run_forked(
    job: JobSpec, partitions: list[Partition], progress: JobProgress | None, processes: int
) -> list[Summary]:
    """run_local's summaries, the partitions run by a pool of `processes` forked workers
    (concurrent.futures, a fork context). A worker is handed the next partition (largest first, so
    that no large one starts last) when it has reported the last one; progress is told as each
    partition ends; after an exception no partition starts, and it is raised here once the running
    ones ended. The job and the partitions reach the workers through the fork (with a fork context
    the initializer's arguments are inherited, not pickled): only partition numbers go to a worker,
    and pickled summaries come back."""
    # here, not at the top: a range too small to fork does not pay for importing the pool
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    pending = sorted(range(len(partitions)), key=lambda i: -partitions[i].size)
    slots = min(processes, len(partitions))
    running: dict[Future[Summary], int] = {}
    done: dict[int, Summary] = {}
    failure: BaseException | None = None
    before = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(
        slots, mp_context=multiprocessing.get_context("fork"), initializer=_adopt, initargs=(job, partitions)
    )
    workers: list[BaseProcess] = []

    def hand() -> None:
        if pending:
            position = pending.pop(0)
            running[pool.submit(_run, position)] = position

    finished = False
    try:
        for _ in range(slots):
            hand()
        workers = [p for p in multiprocessing.active_children() if p not in before]  # forked at the first
        bytes_done = events_done = 0
        while running:
            ended, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in ended:
                position = running.pop(future)
                error = future.exception()
                if error is not None:
                    failure = failure or _died(error, workers)
                    pending.clear()
                    continue
                done[position] = future.result()
                bytes_done += partitions[position].size
                events_done += partitions[position].events
                if progress is not None:
                    progress(bytes_done, events_done)
                hand()
        finished = True
    finally:
        if not finished:  # an error here (a cancel told through progress, an interrupt): stop them now
            for worker in workers:
                worker.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
    if failure is not None:
        raise failure
    summaries: list[Summary] = []
    for position in range(len(partitions)):  # in order, up to the first failure, as run_local gives them
        summary = done[position]
        summaries.append(summary)
        if summary.error is not None:
            break
    return summaries


def _died(error: BaseException, workers: list[BaseProcess]) -> BaseException:
    """The partition's own exception; a worker that died (the pool broke) in one line, as before."""
    from concurrent.futures.process import BrokenProcessPool

    if not isinstance(error, BrokenProcessPool):
        return error
    for worker in workers:
        worker.join(5)
    codes = [w.exitcode for w in workers if w.exitcode not in (None, 0, -signal.SIGTERM)]
    status = f"exit status {codes[0]}" if codes else "its exit status unknown"
    return RuntimeError(f"a local worker process ended unexpectedly ({status})")


# In a worker: the job and its partitions, inherited through the fork.
_job: JobSpec | None = None
_partitions: list[Partition] = []


def _adopt(job: JobSpec, partitions: list[Partition]) -> None:
    """The pool's initializer, in each worker: keep the job, and end with the parent. A worker
    waiting for its next partition would otherwise outlive a parent that was killed (a cancelled
    job's process): every worker holds the pool's queues open, so none would see them close."""
    import multiprocessing

    global _job, _partitions
    _job, _partitions = job, partitions
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_end_with, args=(parent.sentinel,), daemon=True).start()


def _end_with(sentinel: int) -> None:
    from multiprocessing.connection import wait

    wait([sentinel])
    os._exit(1)


def _run(position: int) -> Summary:
    return run_partition(_job, _partitions[position])  # type: ignore[arg-type]


def _offset(progress: JobProgress, bytes_before: int, events_before: int) -> PartitionProgress:
    return lambda done, events: progress(bytes_before + done, events_before + events)
