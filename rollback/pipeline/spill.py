"""Rendered text held for a partition until it writes its part files: the script's in memory up to a
limit, then spilled to a temporary file; the plan's (several times the script's size) the same way
with a limit of its own, each spill written in the order the part file will want it (newest chunk
first for a flashback), so that the part file gets the spilled text in long runs copied by the
kernel. Not to be confused with sources/spool.py, the server's binlog copies."""

from __future__ import annotations

import tempfile
from array import array
from collections.abc import Iterable
from typing import IO

from rollback.pipeline.file_copy import WRITE_BYTES, copy_range, write_pieces

SPILL_MEMORY = 64 << 20  # rendered script text kept in memory before the buffer spills to disk
# Plan text kept in memory before it spills: a partition of 28 MB of binlog (the 1M-row mixed file
# on two cores) renders ~92 MB of plan. Text in memory goes into the part file in one write; spilled
# text is written twice (the spool, then the kernel's copy into the part).
PLAN_MEMORY = 128 << 20


class SpillBuffer:
    """Rendered (script, plan) text per rows event, in binlog order; read back in either order
    (`newest_first`: the order the plan is expected to be read back in, newest chunk first)."""

    def __init__(
        self,
        directory: str,
        limit: int | None = None,
        plan_limit: int | None = None,
        newest_first: bool = False,
    ):
        self._directory = directory
        self._limit = SPILL_MEMORY if limit is None else limit
        self._file: IO[bytes] | None = None
        self._spilled = array("q")  # offset, script length per spilled chunk
        self._memory: list[bytes] = []
        self._memory_bytes = 0
        self._plan_limit = PLAN_MEMORY if plan_limit is None else plan_limit
        self._newest_first = newest_first
        self._plan: IO[bytes] | None = None  # the plan's spool
        self._plan_at = array("q")  # offset in the spool, plan length per spilled chunk
        self._plan_size = 0
        self._plan_memory: list[bytes] = []  # the plan text of the chunks after the spilled ones
        self._plan_memory_bytes = 0

    def __len__(self) -> int:
        return len(self._spilled) // 2 + len(self._memory)

    def add(self, script: str, plan: str) -> None:
        self.add_encoded(script.encode("utf-8"), plan.encode("utf-8"))

    def add_encoded(self, script: bytes, plan: bytes) -> None:
        self._plan_memory.append(plan)
        self._plan_memory_bytes += len(plan)
        if self._plan_memory_bytes > self._plan_limit:
            self._spill_plan()
        self._memory.append(script)
        self._memory_bytes += len(script)
        if self._memory_bytes > self._limit:
            self._spill()

    def _spill(self) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile(dir=self._directory, buffering=WRITE_BYTES)
        f = self._file
        f.seek(0, 2)
        for script in self._memory:
            self._spilled.extend((f.tell(), len(script)))
            f.write(script)
        self._memory.clear()
        self._memory_bytes = 0

    def _spill_plan(self) -> None:
        """The plan text in memory to the spool, newest chunk first when that is how it will be read."""
        if self._plan is None:
            self._plan = tempfile.TemporaryFile(dir=self._directory, buffering=0)
        chunks = self._plan_memory
        at = self._plan_at
        if self._newest_first:  # the block is written newest chunk first: chunk 0 ends it
            end = self._plan_size + self._plan_memory_bytes
            for plan in chunks:
                end -= len(plan)
                at.extend((end, len(plan)))
        else:
            offset = self._plan_size
            for plan in chunks:
                at.extend((offset, len(plan)))
                offset += len(plan)
        write_pieces(self._plan.fileno(), chunks[::-1] if self._newest_first else chunks)
        self._plan_size += self._plan_memory_bytes
        chunks.clear()
        self._plan_memory_bytes = 0

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
        """The plan text of `chunks`, in that order, appended to the file `out` (flushed first, then
        written through its descriptor). Text in memory goes out in gathered writes; runs of spilled
        chunks that lie one after the other in the spool are copied by the kernel at once."""
        out.flush()
        fd = out.fileno()
        spilled = len(self._plan_at) // 2
        memory = self._plan_memory
        at = self._plan_at
        source = self._plan.fileno() if self._plan is not None else -1
        pieces: list[bytes] = []
        start = end = 0  # the run of spool bytes not copied yet
        for index in chunks:
            if index >= spilled:
                plan = memory[index - spilled]
                if plan:
                    if end > start:
                        copy_range(source, fd, start, end - start)
                        start = end = 0
                    pieces.append(plan)
                continue
            offset, length = at[2 * index], at[2 * index + 1]
            if not length:
                continue
            if pieces:
                write_pieces(fd, pieces)
                pieces = []
            if offset != end:
                copy_range(source, fd, start, end - start)
                start = end = offset
            end += length
        if pieces:
            write_pieces(fd, pieces)
        copy_range(source, fd, start, end - start)

    def close(self) -> None:
        for f in (self._file, self._plan):
            if f is not None:
                f.close()
