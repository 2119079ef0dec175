"""What a one-transaction commit needs to start before it has read its plan (execute.py's streamed
pass): the plan's steps counted and its tables named from its bytes, without parsing a line, and a
producer of the pass's units run in a thread of its own, at most a few units ahead of the pass.

Reading, parsing and cutting a 100k-row plan into batches took its client 0.2-0.3 s before the first
query went out, all of it with the server idle (bench/bench_apply.py); streamed, it runs beside the
server's work on the batches before.
"""

from __future__ import annotations

import json
import mmap
import os
import queue
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# The "table" of a plan line, as the plan's writer puts it (rollback/pipeline/plan_lines.py). A line
# written otherwise is met by the pass as a table it has not seen: the pass then stops and the careful
# path reads the whole plan first.
_TABLE = rb'"table": "((?:[^"\\\n]|\\.)*)"'
MAX_TABLES = 64  # more tables than this: the careful path (each one found costs a scan of what is left)
CHUNK = 1 << 24


def scan(path: str | Path, longest: int) -> tuple[int, list[str]] | None:
    """The plan's lines and its tables (as its lines name them), from its bytes; None when the plan is
    empty, may hold DDL (refused before anything connects, by the careful path), has a line of
    `longest` bytes or more (a statement or check that may not fit the target's packet: the careful
    path refuses it, naming it, before anything runs), or names too many tables. Each table is found
    by one search from where the one before it was first named, skipping the names found: one pass
    over the bytes for a plan of a few tables."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if not size:
            return None
        lines = 0
        widest = 0
        carry = 0  # bytes of the line a chunk ends in
        for chunk in iter(lambda: f.read(CHUNK), b""):
            lines += chunk.count(b"\n")
            if size < longest:
                continue  # no line can be as long
            parts = chunk.split(b"\n")
            if len(parts) == 1:
                carry += len(chunk)
                continue
            widest = max(widest, carry + len(parts[0]), max(map(len, parts[1:-1]), default=0))
            carry = len(parts[-1])
        widest = max(widest, carry)
        if widest >= longest:
            return None
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            lines += data[size - 1 :] != b"\n"
            if data.find(b'"ddl"') >= 0:
                return None
            names: list[bytes] = []
            at = 0
            while len(names) <= MAX_TABLES:
                known = b"|".join(re.escape(name) for name in names)
                pattern = re.compile(
                    rb'"table": "(?!(?:' + known + rb')")((?:[^"\\\n]|\\.)*)"' if names else _TABLE
                )
                found = pattern.search(data, at)  # type: ignore[call-overload]
                if found is None:
                    return lines, [json.loads(b'"' + name + b'"') for name in names]
                names.append(found.group(1))
                at = found.start()
    return None


class Stopped(Exception):
    """The producer stopped the pass: a step the pass's preflight did not see, or a plan it could not
    read (the reason); what ran is rolled back and the careful path takes the plan from the start."""


class Ahead:
    """Runs `produce` in a thread of its own and hands its items over in order, at most `depth` ahead.
    `produce` yields items; it stops the pass by raising Stopped, and any other exception of its stops
    it too (the careful path then meets it again, where it is reported as ever)."""

    def __init__(self, produce: Callable[[threading.Event], Iterator[Any]], depth: int):
        self._produce = produce
        self._ready: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mysql-rollback-plan", daemon=True)

    def __enter__(self) -> Ahead:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._ready.get(timeout=0.05)  # a producer waiting to put one ends at its next try
            except queue.Empty:
                pass

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
            for item in self._produce(self._stop):
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
