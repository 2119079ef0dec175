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
import threading

from rollback.pipeline.engines.base import JobProgress
from rollback.pipeline.partition import JobSpec, PartitionProgress, run_partition
from rollback.pipeline.parts import Summary
from rollback.pipeline.plan import Partition

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


# The job and partitions forked workers run (inherited at the fork: only indexes travel to them).
_WORK: tuple[JobSpec, list[Partition]] | None = None


def _run_in_worker(position: int) -> tuple[int, Summary]:
    assert _WORK is not None
    job, partitions = _WORK
    return position, run_partition(job, partitions[position])


def run_forked(
    job: JobSpec, partitions: list[Partition], progress: JobProgress | None, processes: int
) -> list[Summary]:
    """run_local's summaries, the partitions run by `processes` forked workers (largest first, so
    that no large partition starts last); progress is told as each partition ends."""
    import multiprocessing

    global _WORK
    order = sorted(range(len(partitions)), key=lambda i: -partitions[i].size)
    done: dict[int, Summary] = {}
    _WORK = (job, partitions)
    try:
        with multiprocessing.get_context("fork").Pool(min(processes, len(partitions))) as pool:
            bytes_done = events_done = 0
            for position, summary in pool.imap_unordered(_run_in_worker, order, chunksize=1):
                done[position] = summary
                bytes_done += partitions[position].size
                events_done += partitions[position].events
                if progress is not None:
                    progress(bytes_done, events_done)
    finally:
        _WORK = None
    summaries: list[Summary] = []
    for position in range(len(partitions)):  # in order, up to the first failure, as run_local gives them
        summary = done[position]
        summaries.append(summary)
        if summary.error is not None:
            break
    return summaries


def _offset(progress: JobProgress, bytes_before: int, events_before: int) -> PartitionProgress:
    return lambda done, events: progress(bytes_before + done, events_before + events)
