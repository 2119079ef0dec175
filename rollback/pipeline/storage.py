"""Where binlog bytes are read from: local paths (and `file://` URLs) memory-mapped, other URLs
(`s3a://`, `hdfs://`, `gs://`...) through fsspec when it is installed.

Decoding works on one buffer indexed by file offsets. A remote byte range is therefore written at
its own offset into a sparse local file and mapped: the holes cost neither disk nor memory, and the
decoder sees the positions the server wrote.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from typing import Any
from urllib.parse import urlparse

from rollback.base.errors import BinlogFormatError, SourceError
from rollback.binlog.constants import V4_HEADER_LEN
from rollback.binlog.reader import EVENT_HEADER, BinlogFile, read_file_facts
from rollback.binlog.rows import ROWS_EVENT_TYPES

_CHUNK = 8 << 20


def is_local(path: str) -> bool:
    scheme = urlparse(path).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")


def local_path(path: str) -> str:
    """The absolute local path of a local path or `file://` URL."""
    if path.startswith("file://"):
        path = urlparse(path).path
    return os.path.abspath(path)


def missing_local_files(paths: list[str]) -> list[str]:
    """The local paths (or file:// URLs) among `paths` that name no file."""
    return [p for p in paths if is_local(p) and not os.path.exists(local_path(p))]


def _fsspec() -> Any:
    try:
        import fsspec  # type: ignore[import-not-found]
    except ImportError:
        raise SourceError(
            "reading binlogs from URLs needs fsspec (pip install fsspec and its backend)"
        ) from None
    return fsspec


def _remote(url: str) -> Any:
    try:
        return _fsspec().open(url, "rb").open()
    except (OSError, ValueError) as exc:
        raise SourceError(f"{url}: cannot open: {exc}") from None


def size(path: str) -> int:
    """The size in bytes of a local file or a URL."""
    if is_local(path):
        return os.path.getsize(local_path(path))
    source = _remote(path)
    try:
        return int(source.seek(0, 2))
    finally:
        source.close()


def fsspec_fs(url: str) -> Any:
    """(filesystem, token, [path]) of a URL, through fsspec."""
    return _fsspec().get_fs_token_paths(url)


def exists(path: str) -> bool:
    if is_local(path):
        return os.path.exists(local_path(path))
    fs, _, paths = _fsspec().get_fs_token_paths(path)
    return bool(fs.exists(paths[0]))


class _Sparse:
    """A sparse temporary file of a remote file's size, filled where bytes were fetched, mapped."""

    def __init__(self, size: int):
        self.file = tempfile.TemporaryFile(prefix="mysql-rollback-range-")
        self.file.truncate(max(size, 1))
        self.size = size

    def put(self, offset: int, data: bytes) -> None:
        self.file.seek(offset)
        self.file.write(data)

    def map(self) -> tuple[mmap.mmap, memoryview]:
        self.file.flush()
        mapped = mmap.mmap(self.file.fileno(), 0, access=mmap.ACCESS_READ)
        return mapped, memoryview(mapped)[: self.size]


class PlanningView(BinlogFile):
    """A remote binlog for the planner: the FORMAT_DESCRIPTION, every event header and the bodies
    of all events but rows events are fetched; rows bodies stay holes."""

    def __init__(self, url: str, stop: int | None = None):
        self.path = url
        source = _remote(url)
        try:
            size = source.seek(0, 2)
            self.size = size
            sparse = _Sparse(size)
            source.seek(0)
            head = source.read(min(size, 4 + V4_HEADER_LEN))
            if len(head) < 4 + V4_HEADER_LEN:
                raise BinlogFormatError(url, 0, "not a binlog file (too short)")
            fde_len = EVENT_HEADER.unpack_from(head, 4)[3]
            source.seek(0)
            prefix = source.read(min(size, 4 + fde_len))
            facts, fde_end = read_file_facts(memoryview(prefix), url)
            sparse.put(0, prefix)
            end = size if stop is None else min(stop, size)
            pos = fde_end
            while pos + facts.header_len <= end:
                source.seek(pos)
                header = source.read(facts.header_len)
                length = EVENT_HEADER.unpack_from(header, 0)[3]
                if length < facts.header_len:
                    sparse.put(pos, header)
                    break
                if header[4] in ROWS_EVENT_TYPES:
                    sparse.put(pos, header)
                else:
                    sparse.put(pos, header + source.read(length - facts.header_len))
                pos += length
        finally:
            source.close()
        self._mmap, self.buf = sparse.map()
        self._sparse = sparse
        self.facts, self.fde_end = facts, fde_end

    def close(self) -> None:
        super().close()
        self._sparse.file.close()


class ByteRange:
    """Bytes [start, end) of a binlog as a buffer indexed by file offsets."""

    def __init__(self, location: str, start: int, end: int):
        self._mmap: mmap.mmap | None = None
        self._sparse: _Sparse | None = None
        if is_local(location):
            with open(local_path(location), "rb") as f:
                size = f.seek(0, 2)
                if size == 0:
                    raise BinlogFormatError(location, 0, "not a binlog file (empty)")
                self._mmap = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            self.buf = memoryview(self._mmap)
            return
        source = _remote(location)
        try:
            size = source.seek(0, 2)
            sparse = _Sparse(size)
            source.seek(start)
            pos = start
            while pos < end:
                data = source.read(min(_CHUNK, end - pos))
                if not data:
                    break
                sparse.put(pos, data)
                pos += len(data)
        finally:
            source.close()
        self._sparse = sparse
        self._mmap, self.buf = sparse.map()

    def close(self) -> None:
        try:
            self.buf.release()
            if self._mmap is not None:
                self._mmap.close()
        except BufferError:
            pass  # events still reference the map; the collector closes it
        if self._sparse is not None:
            self._sparse.file.close()

    def __enter__(self) -> ByteRange:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_for_planning(path: str, stop: int | None = None) -> BinlogFile:
    if is_local(path):
        return BinlogFile(local_path(path) if path.startswith("file://") else path)
    return PlanningView(path, stop)
