"""The service's one door into the flashback engine: run a range with progress and cancellation.

The engine writes the script, plan and change log; they appear only when the job succeeds. It
reports progress through a callback; the service records it at most every `interval` seconds,
and cancels a job by raising from that callback (the engine then writes nothing).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rollback
from rollback import Filters, Options, RangeSpec, Report


class Cancelled(Exception):
    """The job was cancelled; nothing was written."""


@dataclass
class Progress:
    bytes_done: int
    bytes_total: int
    events: int
    events_total: int = 0


@dataclass
class Artifacts:
    script: Path
    plan: Path | None = None  # None: not written
    changes: Path | None = None


def range_sizes(rng: RangeSpec) -> list[tuple[int, int]]:
    """(start, stop) byte offsets of the range within each file, before the engine plans it."""
    bounds = []
    last = len(rng.files) - 1
    for index, path in enumerate(rng.files):
        size = os.path.getsize(path)
        start = rng.start_position if index == 0 and rng.start_position else 4
        stop = rng.stop_position if index == last and rng.stop_position else size
        bounds.append((start, min(stop, size)))
    return bounds


def run(
    rng: RangeSpec,
    filters: Filters,
    options: Options,
    out: Artifacts,
    on_progress: Callable[[Progress], None],
    cancelled: Callable[[], bool],
    spark: Any = None,
    interval: float = 0.5,
) -> tuple[Report, Progress]:
    """Write the script (and the plan and change log when `out` names them); on any failure none
    of them exists. `spark`: another process's Spark session for the Spark engine
    (app/services/job_process.py), None: this process's."""
    last = [0.0]

    def note(p: rollback.Progress) -> None:
        if cancelled():
            raise Cancelled()
        now = time.monotonic()
        if now - last[0] >= interval:
            last[0] = now
            on_progress(Progress(p.bytes_done, p.bytes_total, p.events_done, p.events_total))

    report = rollback.generate(
        rng, filters, options, out.script, out.plan, out.changes, progress=note, spark=spark
    )
    return report, Progress(report.bytes_total, report.bytes_total, report.events_total, report.events_total)
