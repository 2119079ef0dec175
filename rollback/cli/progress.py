"""The progress display of `flashback`/`sql` on a terminal (rich), one row per phase: planning,
decoding and rendering (one pass per partition: each partition decodes, inverts and renders its
changes), merging the parts, applying the plan. Bytes, events or statements, rows and an ETA.
Nothing is drawn unless standard error is a terminal (see `for_stream`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from rollback import ExecutionObserver, ExecutionProgress, Progress

LABELS = {
    "planning": "planning",
    "decoding": "decoding+rendering",
    "merging": "merging",
    "applying": "applying",
}


def for_stream(stream: IO[str]) -> TerminalProgress | None:
    """A display on `stream` when it is a terminal; None (quiet) otherwise."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return TerminalProgress(stream) if tty else None


@contextmanager
def jvm_output_to(log_path: str | None) -> Iterator[None]:
    """While the block runs, file descriptor 2 is `log_path` (None: left alone): a JVM that Spark
    starts inside keeps that file as its standard error for its life, so its start-up lines and
    logging never reach the terminal. The progress display holds its own copy of the terminal."""
    if log_path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(log, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log)


class TerminalProgress(ExecutionObserver):
    """Called with the job's Progress while it generates; an ExecutionObserver while it applies."""

    def __init__(self, stream: IO[str]):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as Bars

        self._bars = Bars(
            TextColumn("{task.description:<18}"),
            BarColumn(bar_width=28),
            TaskProgressColumn(),
            TextColumn("{task.fields[detail]}"),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TimeElapsedColumn(),
            console=Console(file=self._own_copy(stream), force_terminal=True),
            refresh_per_second=5,
            redirect_stdout=False,  # standard output is the script
            redirect_stderr=False,
        )
        self._tasks: dict[str, Any] = {}
        self._stream = stream
        self._current: str | None = None
        self._bars.start()
        self._phase("planning", None)  # until the first partition reports: resolving and planning the range

    def _own_copy(self, stream: IO[str]) -> IO[str]:
        """The terminal itself (its own descriptor), whatever descriptor 2 becomes later."""
        self._copy: IO[str] | None = None
        try:
            self._copy = os.fdopen(os.dup(stream.fileno()), "w", encoding="utf-8", errors="replace")
        except (AttributeError, OSError, ValueError):
            return stream
        return self._copy

    def _phase(self, name: str, total: float | None) -> Any:
        if self._current is not None and self._current != name:
            task = self._tasks[self._current]
            self._bars.update(
                task, completed=self._bars.tasks[task].total or 1, total=self._bars.tasks[task].total or 1
            )
        self._current = name
        if name not in self._tasks:
            self._tasks[name] = self._bars.add_task(LABELS.get(name, name), total=total, detail="")
        return self._tasks[name]

    def __call__(self, p: Progress) -> None:
        phase = getattr(p, "phase", "decoding")
        if phase == "decoding":
            task = self._phase(phase, p.bytes_total or 1)
            self._bars.update(
                task,
                completed=p.bytes_done,
                total=p.bytes_total or 1,
                detail=f"{_mb(p.bytes_done)}/{_mb(p.bytes_total)} MB · {p.events_done:,}/{p.events_total:,} "
                f"events · {p.partitions} partition(s), {p.engine}",
            )
        else:
            task = self._phase(phase, 1)
            done = phase == "merging" and p.rows is not None
            self._bars.update(task, detail=f"{p.rows:,} rows" if done else "")

    def progress(self, state: ExecutionProgress) -> None:
        task = self._phase("applying", state.statements_total or 1)
        self._bars.update(
            task,
            completed=state.statements_done,
            total=state.statements_total or 1,
            detail=f"{state.statements_done:,}/{state.statements_total:,} statements · "
            f"{state.rows_affected:,} rows ({'dry run' if state.phase == 'check' else 'commit'})",
        )

    def close(self) -> None:
        if self._current is not None:
            task = self._tasks[self._current]
            total = self._bars.tasks[task].total or 1
            self._bars.update(task, completed=total)
        self._bars.stop()
        if self._copy is not None:
            self._copy.close()
            self._copy = None


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f}"
