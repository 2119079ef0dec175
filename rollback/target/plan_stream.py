"""What a one-transaction pass (a dry run, a commit) needs to start before it has read its plan
(execute.py's streamed pass): the plan's steps counted and its tables named from its bytes, without
parsing a line, and a producer of the pass's units run in a thread of its own, at most a few units
ahead of the pass.

Reading, parsing and cutting a 100k-row plan into batches took its client 0.2-0.3 s before the first
query went out, all of it with the server idle (bench/bench_apply.py); streamed, it runs beside the
server's work on the batches before.
"""

from __future__ import annotations

import json
import queue
import re
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# The "table" of a plan line, as the plan's writer puts it (rollback/pipeline/plan_lines.py), or as a
# compact JSON writer does (no space). A line written otherwise is met by the pass as a table it has
# not seen: the pass then stops and the careful path reads the whole plan first.
_TABLE_KEY = rb'"table": ?"'
_TABLE_NAME = rb'((?:[^"\\\n]|\\.)*)"'
MAX_TABLES = 64  # more tables than this: the careful path (each one found costs a scan of what is left)
CHUNK = 1 << 24


def scan(path: str | Path, longest: int, limit: int | None = None) -> tuple[int | None, list[str]] | None:
    """The plan's lines and its tables (as its lines name them), from its bytes; None when the plan is
    empty, may hold DDL (refused before anything connects, by the careful path), has a line of
    `longest` bytes or more (a statement or check that may not fit the target's packet: the careful
    path refuses it, naming it, before anything runs), or names too many tables. Read in chunks of
    whole lines (a file mapped into memory would count in the process's resident size); each table is
    found by one search from where the one before it was first named, skipping the names found.
    `limit`: only the whole lines of about that many first bytes, when the plan is longer (its lines
    are then None: the pass meets what the rest holds, line by line)."""
    lines = 0
    names: list[bytes] = []
    carry = b""  # the start of the line the chunk before ended in
    size = CHUNK if limit is None else max(1, min(CHUNK, limit))
    read = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(size), b""):
            if limit is not None and read >= limit:
                return None, [json.loads(b'"' + name + b'"') for name in names]
            read += len(chunk)
            first = chunk.find(b"\n") + 1
            if not first:
                carry += chunk
                if len(carry) >= longest:
                    return None
                continue
            last = chunk.rfind(b"\n") + 1
            head = carry + chunk[:first]  # one whole line
            if not _lines(head, 0, len(head), longest, names) or not _lines(
                chunk, first, last, longest, names
            ):
                return None
            lines += 1 + chunk.count(b"\n", first, last)
            carry = chunk[last:]
    if carry:
        lines += 1
        if not _lines(carry, 0, len(carry), longest, names):
            return None
    if not lines:
        return None
    return lines, [json.loads(b'"' + name + b'"') for name in names]


def _lines(data: bytes, start: int, end: int, longest: int, names: list[bytes]) -> bool:
    """Whole lines data[start:end] (no copy of them is made): the tables they name first added to
    `names`; False when one may hold DDL, is `longest` bytes or more, or there are too many tables."""
    if data.find(b'"ddl"', start, end) >= 0:
        return False
    if _line_of(data, start, end, longest):
        return False
    at = start
    while True:
        found = _table_pattern(names).search(data, at, end)
        if found is None:
            return True
        names.append(found.group(1))
        if len(names) > MAX_TABLES:
            return False
        at = found.start()


def _table_pattern(names: list[bytes]) -> re.Pattern[bytes]:
    """A line's "table" naming none of `names`."""
    if not names:
        return re.compile(_TABLE_KEY + _TABLE_NAME)
    known = b"|".join(re.escape(name) for name in names)
    return re.compile(_TABLE_KEY + rb"(?!(?:" + known + rb')")' + _TABLE_NAME)


def _line_of(data: bytes, start: int, end: int, longest: int) -> bool:
    """Whether a line of data[start:end] is `longest` bytes or more. Such a line holds a whole block of
    half that size (blocks from `start` on), with no line break in it: only blocks without one are
    measured to the line's ends, so a plan of short lines costs one search a block."""
    block = max(1, longest // 2)
    at = start
    while at + block <= end:
        if data.find(b"\n", at, at + block) < 0:
            begins = data.rfind(b"\n", start, at) + 1 or start
            ends = data.find(b"\n", at + block, end)
            if (end if ends < 0 else ends) - begins >= longest:
                return True
        at += block
    return False


class LineCount:
    """The plan's lines (as scan counts them), counted in a thread of its own while the pass runs; `lines`
    is None until then (or when the file cannot be read: the pass counts its steps at the end). Read a
    megabyte at a time, so that the count holds the interpreter only a moment at once."""

    def __init__(self, path: str | Path):
        self.lines: int | None = None
        threading.Thread(target=self._count, args=(path,), name="mysql-rollback-count", daemon=True).start()

    def _count(self, path: str | Path) -> None:
        lines = 0
        last = b"\n"
        try:
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    lines += chunk.count(b"\n")
                    last = chunk[-1:]
        except OSError:
            return
        self.lines = lines + (last != b"\n")


class Stopped(Exception):
    """The producer stopped the pass: a step the pass's preflight did not see, or a plan it could not
    read (the reason); what ran is rolled back and the careful path takes the plan from the start."""


# While a producer runs, the interpreter offers the GIL to another thread every millisecond instead of
# every 5: the pass's thread, woken by each answer of the server to a batch, otherwise waited up to 5 ms
# for the busy producer to give way. The 100k-row incident's verified commit took a median 0.61 s
# against 0.71 s (12 runs alternated, bench/README.md); at 1M it made no difference.
SWITCH_SECONDS = 0.001


class _QuickSwitches:
    """The process's GIL switch interval at SWITCH_SECONDS while any producer runs (the passes of a
    parallel apply run theirs at once), and as it was once the last has ended."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._before = 0.0

    def start(self) -> None:
        with self._lock:
            if not self._running:
                self._before = sys.getswitchinterval()
                sys.setswitchinterval(min(self._before, SWITCH_SECONDS))
            self._running += 1

    def end(self) -> None:
        with self._lock:
            self._running -= 1
            if not self._running:
                sys.setswitchinterval(self._before)


_quick_switches = _QuickSwitches()


class Ahead:
    """Runs `produce` in a thread of its own and hands its items over in order, at most `depth` ahead.
    `produce` yields items; it stops the pass by raising Stopped, and any other exception of its stops
    it too (the careful path then meets it again, where it is reported as ever). A pass that ends
    early leaves the producer at its next item."""

    def __init__(self, produce: Callable[[], Iterator[Any]], depth: int):
        self._produce = produce
        self._ready: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mysql-rollback-plan", daemon=True)

    def __enter__(self) -> Ahead:
        _quick_switches.start()
        try:
            self._thread.start()
        except BaseException:
            _quick_switches.end()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        try:
            while self._thread.is_alive():
                try:
                    self._ready.get(timeout=0.05)  # a producer waiting to put one ends at its next try
                except queue.Empty:
                    pass
        finally:
            _quick_switches.end()

    def _put(self, item: tuple[str, Any]) -> bool:
        while not self._stop.is_set():
            try:
                self._ready.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            for item in self._produce():
                if not self._put(("item", item)):
                    return
        except Stopped as exc:
            self._put(("stopped", str(exc)))
            return
        except Exception as exc:  # noqa: BLE001 - the careful path meets it again and reports it
            self._put(("stopped", f"{type(exc).__name__}: {exc}"))
            return
        self._put(("end", None))

    def __iter__(self) -> Iterator[Any]:
        while True:
            try:
                kind, item = self._ready.get(timeout=0.1)
            except queue.Empty:
                if not self._thread.is_alive() and self._ready.empty():
                    raise Stopped("the plan's reader ended without a word") from None
                continue
            if kind == "end":
                return
            if kind == "stopped":
                raise Stopped(item)
            yield item
