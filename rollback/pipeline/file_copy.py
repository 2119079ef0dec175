"""Bytes appended to a file by its descriptor, at the descriptor's position: byte ranges of another
file copied in the kernel (copy_file_range(2)) when the system offers it, and pieces held in memory
gathered into writev(2) calls of about 1 MiB (no copy into a buffer of this process first)."""

from __future__ import annotations

import os
from collections.abc import Sequence

# Bytes per write, here and as the write buffer of the part files and spools. Measured on this
# project's machine (Linux 6.18, ext4, a VM that hands free memory back to its host): 300 MB written
# into pages not freed in the last second cost 0.06 CPU-s in 1 MiB writes, 0.6-0.8 in 16 MiB writes;
# 96 MB as writev calls of 1024 pieces (~20 MB each) 0.20, in ~1 MiB calls 0.03; writes of a rows
# event's text each (~20 kB) cost the kernel 2.5x what 1 MiB writes cost. copy_file_range costs the
# same at any size.
WRITE_BYTES = 1 << 20
WRITEV_PIECES = min(1024, os.sysconf("SC_IOV_MAX")) if hasattr(os, "sysconf") else 1024


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
        data = os.pread(fd_in, min(length, WRITE_BYTES), offset)
        if not data:
            raise RuntimeError("a file is shorter than the bytes asked of it")
        _write_all(fd_out, [data])
        offset += len(data)
        length -= len(data)


def write_pieces(fd: int, pieces: Sequence[bytes]) -> None:
    """Every piece, in order, at `fd`'s position: gathered into writes of about WRITE_BYTES (a
    larger piece goes in slices of that size)."""
    batch: list[bytes | memoryview] = []
    size = 0
    for piece in pieces:
        if len(piece) > WRITE_BYTES:
            if batch:
                _write_all(fd, batch, size)
                batch, size = [], 0
            view = memoryview(piece)
            for start in range(0, len(view), WRITE_BYTES):
                _write_all(fd, [view[start : start + WRITE_BYTES]])
            continue
        batch.append(piece)
        size += len(piece)
        if size >= WRITE_BYTES or len(batch) == WRITEV_PIECES:
            _write_all(fd, batch, size)
            batch, size = [], 0
    if batch:
        _write_all(fd, batch, size)


def _write_all(fd: int, batch: list[bytes | memoryview], size: int = -1) -> None:
    if size < 0:
        size = sum(len(p) for p in batch)
    done = os.writev(fd, batch)
    if done == size:
        return
    rest = memoryview(b"".join(batch))[done:]  # a short write (a full disk, a signal): the rest in turn
    while rest:
        rest = rest[os.write(fd, rest) :]
