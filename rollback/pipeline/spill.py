"""Rendered text held for a partition until it writes its part files: the script's and the plan's
(several times the script's size), each in memory up to a limit of its own, then spilled to a
temporary file, each spill written in the order the part file will want it (newest chunk first for
a flashback), so that the part file gets the spilled text in long runs copied by the kernel, never
read back through this process. Not to be confused with sources/spool.py, the server's binlog copies."""

from __future__ import annotations

import tempfile
from array import array
from collections.abc import Iterable
from typing import IO

from rollback.pipeline.file_copy import copy_range, write_pieces

SPILL_MEMORY = 64 << 20  # rendered script text kept in memory before it spills to disk
# Plan text kept in memory before it spills: a partition of 28 MB of binlog (the 1M-row mixed file
# on two cores) renders ~92 MB of plan. Text in memory goes into the part file in one write; spilled
# text is written twice (the spool, then the kernel's copy into the part).
PLAN_MEMORY = 128 << 20


class _Spool:
    """One text per chunk, in chunk order: in memory up to `limit` bytes, the older chunks spilled."""

    def __init__(self, directory: str, limit: int, newest_first: bool):
        self._directory = directory
        self._limit = limit
        self._newest_first = newest_first
        self._file: IO[bytes] | None = None
        self._at = array("q")  # offset in the spool, length per spilled chunk
        self._size = 0
        self._memory: list[bytes] = []  # the text of the chunks after the spilled ones
        self._memory_bytes = 0

    @property
    def spilled_bytes(self) -> int:
        return self._size

    @property
    def memory_bytes(self) -> int:
        return self._memory_bytes

    def add(self, text: bytes) -> None:
        self._memory.append(text)
        self._memory_bytes += len(text)
        if self._memory_bytes > self._limit:
            self._spill()

    def _spill(self) -> None:
        """The text in memory to the spool, newest chunk first when that is how it will be read."""
        if self._file is None:
            self._file = tempfile.TemporaryFile(dir=self._directory, buffering=0)
        chunks = self._memory
        at = self._at
        if self._newest_first:  # the run is written newest chunk first: chunk 0 ends it
            end = self._size + self._memory_bytes
            for text in chunks:
                end -= len(text)
                at.extend((end, len(text)))
        else:
            offset = self._size
            for text in chunks:
                at.extend((offset, len(text)))
                offset += len(text)
        write_pieces(self._file.fileno(), chunks[::-1] if self._newest_first else chunks)
        self._size += self._memory_bytes
        chunks.clear()
        self._memory_bytes = 0

    def get(self, index: int) -> bytes:
        spilled = len(self._at) // 2
        if index >= spilled:
            return self._memory[index - spilled]
        assert self._file is not None
        offset, length = self._at[2 * index], self._at[2 * index + 1]
        self._file.seek(offset)
        return self._file.read(length)

    def write(self, chunks: Iterable[int], fd: int) -> None:
        """The text of `chunks`, in that order, at `fd`'s position. Text in memory goes out in
        gathered writes; runs of spilled chunks that lie one after the other in the spool are copied
        by the kernel at once."""
        spilled = len(self._at) // 2
        memory = self._memory
        at = self._at
        source = self._file.fileno() if self._file is not None else -1
        pieces: list[bytes] = []
        start = end = 0  # the run of spool bytes not copied yet
        for index in chunks:
            if index >= spilled:
                text = memory[index - spilled]
                if text:
                    if end > start:
                        copy_range(source, fd, start, end - start)
                        start = end = 0
                    pieces.append(text)
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
        if self._file is not None:
            self._file.close()


class SpillBuffer:
    """Rendered (script, plan) text per rows event, in binlog order; written out in either order
    (`newest_first`: the order they are expected to be written in, newest chunk first)."""

    def __init__(
        self,
        directory: str,
        limit: int | None = None,
        plan_limit: int | None = None,
        newest_first: bool = False,
    ):
        self._script = _Spool(directory, SPILL_MEMORY if limit is None else limit, newest_first)
        self._plan = _Spool(directory, PLAN_MEMORY if plan_limit is None else plan_limit, newest_first)
        self._chunks = 0

    def __len__(self) -> int:
        return self._chunks

    def add(self, script: str, plan: str) -> None:
        self.add_encoded(script.encode("utf-8"), plan.encode("utf-8"))

    def add_encoded(self, script: bytes, plan: bytes) -> None:
        self._plan.add(plan)
        self._script.add(script)
        self._chunks += 1

    def get(self, index: int) -> bytes:
        """The script text of chunk `index`."""
        return self._script.get(index)

    def write_script(self, chunks: Iterable[int], out: IO[bytes]) -> None:
        """The script text of `chunks`, in that order, appended to the file `out` (flushed first,
        then written through its descriptor)."""
        out.flush()
        self._script.write(chunks, out.fileno())

    def write_plan(self, chunks: Iterable[int], out: IO[bytes]) -> None:
        """The plan text of `chunks`, in that order, appended to the file `out` (flushed first, then
        written through its descriptor)."""
        out.flush()
        self._plan.write(chunks, out.fileno())

    @property
    def plan_spilled_bytes(self) -> int:
        return self._plan.spilled_bytes

    @property
    def plan_memory_bytes(self) -> int:
        return self._plan.memory_bytes

    def close(self) -> None:
        self._script.close()
        self._plan.close()
