"""Rendered text held for a partition until it writes its part files: the script's in memory up to a
limit, then spilled to a temporary file; the plan's (several times the script's size, read back
once) appended to a temporary file of its own as it comes. Not to be confused with
sources/spool.py, the server's binlog copies."""

from __future__ import annotations

import os
import tempfile
from array import array
from collections.abc import Iterable
from typing import IO

SPILL_MEMORY = 64 << 20  # rendered script text kept in memory before the buffer spills to disk
COPY_STEP = 8 << 20  # the most plan text read back at once
# Writes of a rows event's text each (~20 kB) cost the kernel 2.5x what 1 MiB writes cost.
WRITE_BUFFER = 1 << 20


class SpillBuffer:
    """Rendered (script, plan) text per rows event, in binlog order; read back in either order."""

    def __init__(self, directory: str, limit: int | None = None):
        self._directory = directory
        self._limit = SPILL_MEMORY if limit is None else limit
        self._file: IO[bytes] | None = None
        self._spilled = array("q")  # offset, script length per spilled chunk
        self._memory: list[bytes] = []
        self._memory_bytes = 0
        self._plan: IO[bytes] | None = None
        self._plan_at = array("q")  # offset, plan length per chunk
        self._plan_size = 0

    def __len__(self) -> int:
        return len(self._spilled) // 2 + len(self._memory)

    def add(self, script: str, plan: str) -> None:
        self.add_encoded(script.encode("utf-8"), plan.encode("utf-8"))

    def add_encoded(self, script: bytes, plan: bytes) -> None:
        self._plan_at.extend((self._plan_size, len(plan)))
        if plan:
            if self._plan is None:
                self._plan = tempfile.TemporaryFile(dir=self._directory, buffering=WRITE_BUFFER)
            self._plan.write(plan)
            self._plan_size += len(plan)
        self._memory.append(script)
        self._memory_bytes += len(script)
        if self._memory_bytes > self._limit:
            self._spill()

    def _spill(self) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile(dir=self._directory, buffering=WRITE_BUFFER)
        f = self._file
        f.seek(0, 2)
        for script in self._memory:
            self._spilled.extend((f.tell(), len(script)))
            f.write(script)
        self._memory.clear()
        self._memory_bytes = 0

    def get(self, index: int) -> bytes:
        """The script text of chunk `index`."""
        spilled = len(self._spilled) // 2
        if index >= spilled:
            return self._memory[index - spilled]
        assert self._file is not None
        offset, length = self._spilled[2 * index : 2 * index + 2]
        self._file.seek(offset)
        return self._file.read(length)

    def write_plan(self, chunks: Iterable[int], out: IO[bytes]) -> None:
        """The plan text of `chunks`, in that order, appended to `out` (best a file with a large
        buffer: a chunk is one rows event's lines). Runs of chunks that lie one after the other in
        the spool are read at once."""
        if self._plan is None:
            return
        self._plan.flush()
        at = self._plan_at
        source = self._plan.fileno()
        start = end = 0
        for index in chunks:
            offset, length = at[2 * index], at[2 * index + 1]
            if offset != end or end - start >= COPY_STEP:
                self._copy(source, start, end - start, out)
                start = end = offset
            end += length
        self._copy(source, start, end - start, out)

    @staticmethod
    def _copy(source: int, offset: int, length: int, out: IO[bytes]) -> None:
        if length:
            data = os.pread(source, length, offset)
            if len(data) != length:
                raise RuntimeError("the plan's spool is shorter than its chunks say")
            out.write(data)

    def close(self) -> None:
        for f in (self._file, self._plan):
            if f is not None:
                f.close()
