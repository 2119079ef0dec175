"""The local engine: the partitions of a job run in this process, in order (tests, small ranges)."""

from __future__ import annotations

from collections.abc import Callable

from rollback.pipeline.partition import JobSpec, PartitionProgress, Summary, run_partition
from rollback.pipeline.plan import Partition

# (bytes done, events done) over the whole job
JobProgress = Callable[[int, int], None]


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
