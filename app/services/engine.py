"""The service's one door into the flashback engine: run a range with progress and cancellation.

The engine writes the script, plan and change log beside each other; they appear only when the
job succeeds. Progress (bytes of the range read, events seen) is reported through a callback at
most every `interval` seconds, and a cancellation is noticed at the next rows event or commit.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollback import flashback
from rollback.binlog.reader import BinlogFile
from rollback.flashback import Filters, Flashback, Options, RangeSpec, Report


class Cancelled(Exception):
    """The job was cancelled; nothing was written."""


@dataclass
class Progress:
    bytes_done: int
    bytes_total: int
    events: int
    rows: int
    events_total: int = 0


@dataclass
class Artifacts:
    script: Path
    plan: Path
    changes: Path


def range_sizes(rng: RangeSpec) -> list[tuple[int, int]]:
    """(start, stop) byte offsets of the range within each file."""
    bounds = []
    last = len(rng.files) - 1
    for index, path in enumerate(rng.files):
        size = os.path.getsize(path)
        start = rng.start_position if index == 0 and rng.start_position else 4
        stop = rng.stop_position if index == last and rng.stop_position else size
        bounds.append((start, min(stop, size)))
    return bounds


class _TrackedFlashback(Flashback):
    """The local engine with two hooks: progress reports and a cancellation check."""

    def __init__(
        self,
        rng: RangeSpec,
        filters: Filters,
        options: Options,
        on_progress: Callable[[Progress], None],
        cancelled: Callable[[], bool],
        interval: float,
    ):
        super().__init__(rng, filters, options)
        self._on_progress = on_progress
        self._cancelled = cancelled
        self._interval = interval
        self._bounds = range_sizes(rng)
        self._total = sum(max(0, b - a) for a, b in self._bounds)
        self._before = 0  # bytes of the files already read
        self._index = 0
        self._events = 0
        self._rows = 0
        self._last = 0.0

    def progress(self) -> Progress:
        start, stop = self._bounds[self._index] if self._bounds else (0, 0)
        within = min(max(self.progress_bytes - start, 0), stop - start)
        return Progress(self._before + within, self._total, self._events, self._rows)

    def _tick(self) -> None:
        self._events += 1
        if self._cancelled():
            raise Cancelled()
        now = time.monotonic()
        if now - self._last >= self._interval:
            self._last = now
            self._on_progress(self.progress())

    def _files(self) -> Iterator[tuple[int, str]]:
        for index, path in super()._files():
            self._index = index
            self.progress_bytes = 0
            yield index, path
            start, stop = self._bounds[index]
            self._before += max(0, stop - start)

    def _take(self, current: Any, batch: Any, *rest: Any) -> None:
        self._rows += len(batch.rows)
        super()._take(current, batch, *rest)
        self._tick()

    def _finish(self, *args: Any) -> None:
        super()._finish(*args)
        self._tick()


def engine_options(options: Options, engine: str) -> Options:
    """Ask for the Spark pipeline when the engine offers the choice (Options.engine)."""
    if any(f.name == "engine" for f in dataclasses.fields(Options)):
        return dataclasses.replace(options, engine=engine)  # type: ignore[call-arg]
    return options


def _has_progress_api() -> bool:
    return "progress" in inspect.signature(flashback.generate).parameters


def run(
    rng: RangeSpec,
    filters: Filters,
    options: Options,
    out: Artifacts,
    on_progress: Callable[[Progress], None],
    cancelled: Callable[[], bool],
    interval: float = 0.5,
) -> tuple[Report, Progress]:
    """Write script, plan and change log for the range; on any failure none of them exists."""
    for path in rng.files:
        with BinlogFile(path):  # a clear BinlogFormatError before any output is opened
            pass
    if _has_progress_api():
        return _run_with_callback(rng, filters, options, out, on_progress, cancelled, interval)
    job = _TrackedFlashback(rng, filters, options, on_progress, cancelled, interval)
    parts = [Path(str(p) + ".part") for p in (out.script, out.plan, out.changes)]
    try:
        with (
            open(parts[0], "w", encoding="utf-8") as script,
            open(parts[1], "w", encoding="utf-8") as plan,
            open(parts[2], "w", encoding="utf-8") as changes,
        ):
            report = job.run(script, plan, changes)
        if cancelled():
            raise Cancelled()
        for part, final in zip(parts, (out.script, out.plan, out.changes), strict=True):
            os.replace(part, final)
    finally:
        for part in parts:
            part.unlink(missing_ok=True)
    done = job.progress()
    done.bytes_done = done.bytes_total
    return report, done


def _run_with_callback(
    rng: RangeSpec,
    filters: Filters,
    options: Options,
    out: Artifacts,
    on_progress: Callable[[Progress], None],
    cancelled: Callable[[], bool],
    interval: float,
) -> tuple[Report, Progress]:
    """The engine's own progress callback: an exception it raises stops the job, and no file appears."""
    last = [0.0]
    latest = [Progress(0, 0, 0, 0)]

    def note(p: Any) -> None:
        latest[0] = Progress(p.bytes_done, p.bytes_total, p.events_done, 0, getattr(p, "events_total", 0))
        if cancelled():
            raise Cancelled()
        now = time.monotonic()
        if now - last[0] >= interval:
            last[0] = now
            on_progress(latest[0])

    report = flashback.generate(rng, filters, options, out.script, out.plan, out.changes, progress=note)  # type: ignore[call-arg]
    total = getattr(report, "bytes_total", 0) or latest[0].bytes_total
    events = getattr(report, "events_total", 0) or latest[0].events
    return report, Progress(total, total, events, 0, events)
