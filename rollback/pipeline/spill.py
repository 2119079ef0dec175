"""Rendered text held for a partition until it writes its part files: in memory up to a limit, then
spilled to a temporary file (not to be confused with sources/spool.py, the server's binlog copies)."""

from __future__ import annotations

import tempfile
from array import array
from typing import IO

SPILL_MEMORY = 64 << 20  # rendered text kept in memory before the buffer spills to disk


class SpillBuffer:
    """Rendered (script, plan) text per rows event, in binlog order; in memory up to a limit, then
    in a temporary file. Read back in either order."""

    def __init__(self, directory: str, limit: int | None = None):
        self._directory = directory
        self._limit = SPILL_MEMORY if limit is None else limit
        self._file: IO[bytes] | None = None
        self._spilled = array("q")  # offset, script length, plan length per spilled chunk
        self._memory: list[tuple[bytes, bytes]] = []
        self._memory_bytes = 0

    def __len__(self) -> int:
        return len(self._spilled) // 3 + len(self._memory)

    def add(self, script: str, plan: str) -> None:
        self.add_encoded(script.encode("utf-8"), plan.encode("utf-8"))

    def add_encoded(self, script: bytes, plan: bytes) -> None:
        item = (script, plan)
        self._memory.append(item)
        self._memory_bytes += len(item[0]) + len(item[1])
        if self._memory_bytes > self._limit:
            self._spill()

    def _spill(self) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile(dir=self._directory)
        f = self._file
        f.seek(0, 2)
        for script, plan in self._memory:
            self._spilled.extend((f.tell(), len(script), len(plan)))
            f.write(script)
            f.write(plan)
        self._memory.clear()
        self._memory_bytes = 0

    def get(self, index: int) -> tuple[bytes, bytes]:
        spilled = len(self._spilled) // 3
        if index >= spilled:
            return self._memory[index - spilled]
        assert self._file is not None
        offset, s_len, p_len = self._spilled[3 * index : 3 * index + 3]
        self._file.seek(offset)
        data = self._file.read(s_len + p_len)
        return data[:s_len], data[s_len:]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
