"""The local engine: the partitions of a job run in this process, in order (tests, small ranges)."""

from __future__ import annotations

from rollback.pipeline.engines.base import JobProgress
from rollback.pipeline.partition import JobSpec, PartitionProgress, run_partition
from rollback.pipeline.parts import Summary
from rollback.pipeline.plan import Partition


class LocalEngine:
    def run(
        self, job: JobSpec, partitions: list[Partition], progress: JobProgress | None = None
    ) -> list[Summary]:
        return run_local(job, partitions, progress)


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


def _offset(progress: JobProgress, bytes_before: int, events_before: int) -> PartitionProgress:
    return lambda done, events: progress(bytes_before + done, events_before + events)
