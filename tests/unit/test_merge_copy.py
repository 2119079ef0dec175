"""copy_range: the kernel's file-to-file copy and the copy through memory give the same bytes,
interleaved with the merger's own writes (block headers between pieces)."""

from __future__ import annotations

import io
import os

from rollback.merge import copy_range


def test_file_to_file_copies_equal_the_copy_through_memory(tmp_path):
    part = tmp_path / "part.sql"
    part.write_bytes(os.urandom(3 << 20) + b"tail")
    pieces = [(0, 5), (7, 1 << 20), ((1 << 20) + 9, (2 << 20) - 9), (3 << 20, 4), (10, 0)]
    memory = io.BytesIO()
    with open(tmp_path / "out.sql", "wb") as out, open(part, "rb") as src:
        for start, length in pieces:
            out.write(b"-- header\n")  # buffered, then the kernel's copy after it
            copy_range(src, out, start, length)
            memory.write(b"-- header\n")
            copy_range(src, memory, start, length)
        out.write(b"END\n")
        memory.write(b"END\n")
    assert (tmp_path / "out.sql").read_bytes() == memory.getvalue()
