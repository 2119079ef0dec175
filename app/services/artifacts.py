"""A job's files: line indexes for paging without reading from the start, the summary, SQL highlighting.

An index `<file>.idx` holds little-endian uint64s: the number of lines, then the byte offset of
every STRIDE-th line (0, STRIDE, 2*STRIDE, ...). A page seeks to the nearest indexed line and
skips at most STRIDE-1 lines. A job does not build them: the first page that reads a file does
(about 0.4 s of CPU per million lines), so a job nobody pages through never pays for them.
"""

from __future__ import annotations

import mmap
import os
import re
import threading
from array import array
from collections.abc import Iterator
from pathlib import Path

from markupsafe import Markup, escape

STRIDE = 1000
CHUNK = 1 << 16


def index_path(path: Path) -> Path:
    return path.with_name(path.name + ".idx")


def build_line_index(path: Path) -> int:
    """Write the index of `path`; returns its number of lines. The newlines are found by
    bytes.find over the mapped file (memchr): one short step per line, no object per line."""
    offsets = array("Q")
    lines = 0
    size = path.stat().st_size
    if size:
        offsets.append(0)
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            find = data.find
            at = 0  # where the next line starts
            while (newline := find(b"\n", at)) >= 0:
                lines += 1
                at = newline + 1
                if lines % STRIDE == 0 and at < size:
                    offsets.append(at)
        if at < size:  # a last line without a newline
            lines += 1
    header = array("Q", [lines])
    if header.itemsize != 8:  # pragma: no cover - 'Q' is 8 bytes on every platform we run on
        raise RuntimeError("unsigned long long is not 8 bytes")
    # two readers may build it at once: each writes its own file, the last rename wins (same bytes)
    tmp = index_path(path).with_name(f"{index_path(path).name}.{os.getpid()}.{threading.get_ident()}.part")
    with open(tmp, "wb") as out:
        header.tofile(out)
        offsets.tofile(out)
    tmp.replace(index_path(path))
    return lines


def _read_index(path: Path) -> tuple[int, array]:
    idx = index_path(path)
    if not idx.exists():
        build_line_index(path)
    data = array("Q")
    with open(idx, "rb") as f:
        data.frombytes(f.read())
    return data[0], data[1:]


def line_count(path: Path) -> int:
    return _read_index(path)[0]


def iter_lines(path: Path, offset: int, limit: int) -> Iterator[bytes]:
    """Lines [offset, offset + limit) of the file, read from the nearest indexed line."""
    total, offsets = _read_index(path)
    if offset >= total or limit <= 0:
        return
    with open(path, "rb") as f:
        f.seek(offsets[offset // STRIDE])
        for _ in range(offset % STRIDE):
            f.readline()
        for _ in range(min(limit, total - offset)):
            line = f.readline()
            if not line:
                return
            yield line


def page_chunks(path: Path, offset: int, limit: int) -> Iterator[bytes]:
    """The same lines, grouped into chunks of about 64 KiB for a streamed response."""
    buf: list[bytes] = []
    size = 0
    for line in iter_lines(path, offset, limit):
        buf.append(line)
        size += len(line)
        if size >= CHUNK:
            yield b"".join(buf)
            buf, size = [], 0
    if buf:
        yield b"".join(buf)


# ---- SQL highlighting for the preview ------------------------------------------------------------

_KEYWORDS = (
    "BEGIN|COMMIT|ROLLBACK|INSERT|INTO|VALUES|DELETE|FROM|UPDATE|SET|WHERE|LIMIT|AND|OR|IS|NOT|NULL|"
    "NAMES|SESSION|TRUE|FALSE"
)
_TOKEN = re.compile(
    r"(?P<comment>^--.*$)"
    r"|(?P<string>'(?:[^'\\]|\\.|'')*'?)"
    r"|(?P<ident>`(?:[^`]|``)*`?)"
    r"|(?P<number>\b-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b)"
    rf"|(?P<keyword>\b(?:{_KEYWORDS})\b)"
)


def highlight_sql(line: str) -> Markup:
    """One line of SQL as HTML with <span class="k|s|i|n|c"> around keywords, strings, identifiers,
    numbers and comments. Everything else is escaped; nothing is interpreted."""
    out: list[str] = []
    pos = 0
    classes = {"comment": "c", "string": "s", "ident": "i", "number": "n", "keyword": "k"}
    for match in _TOKEN.finditer(line):
        out.append(str(escape(line[pos : match.start()])))
        kind = match.lastgroup or "keyword"
        out.append(f'<span class="{classes[kind]}">{escape(match.group())}</span>')
        pos = match.end()
    out.append(str(escape(line[pos:])))
    return Markup("".join(out))
