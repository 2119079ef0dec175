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
