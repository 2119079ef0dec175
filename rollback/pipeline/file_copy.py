"""Bytes appended to a file by its descriptor, at the descriptor's position: byte ranges of another
file copied in the kernel (copy_file_range(2)) when the system offers it, and pieces held in memory
gathered into one writev(2) per batch (no copy into a buffer of this process first)."""

from __future__ import annotations

import os
from collections.abc import Sequence

READ_STEP = 8 << 20  # the most bytes read at once when the kernel cannot copy
WRITEV_BATCH = min(1024, os.sysconf("SC_IOV_MAX")) if hasattr(os, "sysconf") else 1024


def copy_in_kernel(fd_in: int, fd_out: int, offset: int, length: int) -> bool:
    """Copy with copy_file_range(2): the bytes never pass through this process. False (nothing
    copied) when the system or the file systems do not offer it."""
    if not hasattr(os, "copy_file_range"):
        return False
    left = length
    try:
        while left > 0:
            done = os.copy_file_range(fd_in, fd_out, left, offset)
            if done == 0:
                raise RuntimeError("a file is shorter than the bytes asked of it")
            offset += done
            left -= done
    except OSError:
        if left != length:
            raise  # part of it copied: no way to fall back cleanly
        return False
    return True


def copy_range(fd_in: int, fd_out: int, offset: int, length: int) -> None:
    """`length` bytes of `fd_in` from `offset`, appended at `fd_out`'s position."""
    if length <= 0 or copy_in_kernel(fd_in, fd_out, offset, length):
        return
    while length > 0:
        data = os.pread(fd_in, min(length, READ_STEP), offset)
        if not data:
            raise RuntimeError("a file is shorter than the bytes asked of it")
        write_pieces(fd_out, [data])
        offset += len(data)
        length -= len(data)


def write_pieces(fd: int, pieces: Sequence[bytes]) -> None:
    """Every piece, in order, at `fd`'s position."""
    for start in range(0, len(pieces), WRITEV_BATCH):
        batch = pieces[start : start + WRITEV_BATCH]
        left = sum(len(p) for p in batch)
        done = os.writev(fd, batch)
        if done == left:
            continue
        rest = memoryview(b"".join(batch))[done:]  # a short write (a full disk, a signal): the rest in turn
        while rest:
            rest = rest[os.write(fd, rest) :]
