"""What every engine is: runs a job's partitions, gives their summaries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from rollback.pipeline.partition import JobSpec
from rollback.pipeline.parts import Summary
from rollback.pipeline.plan import Partition

# (bytes done, events done) over the whole job
JobProgress = Callable[[int, int], None]


class Engine(Protocol):
    def run(
        self, job: JobSpec, partitions: list[Partition], progress: JobProgress | None = None
    ) -> list[Summary]:
        """Summaries of the partitions, in partition order (the local engine stops after a failure)."""
        ...


class LentSpark(Engine, Protocol):
    """A Spark session held by another process, lent to a job that runs in a process of its own (the
    service's warm session, for its jobs' processes): the job's partitions run there, and its slots
    are counted there, so that the job's process starts no JVM of its own."""

    def slots(self) -> int:
        """Tasks the session runs at once."""
        ...
