"""Event framing: magic, v4 headers, the FORMAT_DESCRIPTION facts, CRC32 checksums.

A binlog file is the 4 magic bytes `fe 62 69 6e` followed by events. Every v4 event
starts with a 19-byte header (the FORMAT_DESCRIPTION_EVENT states the real length):

    timestamp:4  type:1  server_id:4  event_length:4  next_position:4  flags:2

all little-endian. `event_length` counts the header, the body and, when the FDE says
the checksum algorithm is CRC32, a 4-byte CRC32 trailer over everything before it.

Framing is a pure function of (FormatFacts, bytes, offsets): iterating from any event
boundary needs only the facts of the file's FDE, which is what lets a planner cut a
file into partitions that decode independently.
"""

from __future__ import annotations

import mmap
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rollback.base.errors import BinlogFormatError
from rollback.base.server_version import version_tuple
from rollback.binlog.constants import (
    BINLOG_MAGIC,
    LOG_EVENT_BINLOG_IN_USE_F,
    V4_HEADER_LEN,
    ChecksumAlg,
    EventType,
)

# The v4 event header: timestamp, type code, server id, event length, next position, flags.
EVENT_HEADER = struct.Struct("<IBIIIH")
_FDE_FIXED = 2 + 50 + 4 + 1  # binlog_version, server_version, create_timestamp, header_length
# Events bigger than this are not written by any server (max_allowed_packet tops out at 1 GiB).
MAX_EVENT_LENGTH = 1 << 30


@dataclass(frozen=True, slots=True)
class FormatFacts:
    """What the FORMAT_DESCRIPTION_EVENT says about every later event of its file."""

    binlog_version: int
    server_version: str
    created: int
    header_len: int
    post_header_lens: bytes  # index event_type - 1
    checksum: ChecksumAlg

    @property
    def checksum_len(self) -> int:
        return 4 if self.checksum == ChecksumAlg.CRC32 else 0

    @property
    def is_mariadb(self) -> bool:
        return "mariadb" in self.server_version.lower()

    def post_header_len(self, type_code: int, default: int) -> int:
        index = type_code - 1
        if 0 <= index < len(self.post_header_lens):
            return self.post_header_lens[index]
        return default

    def to_dict(self) -> dict:
        return {
            "binlog_version": self.binlog_version,
            "server_version": self.server_version,
            "created": self.created,
            "header_len": self.header_len,
            "post_header_lens": self.post_header_lens.hex(),
            "checksum": int(self.checksum),
        }

    @classmethod
    def from_dict(cls, d: dict) -> FormatFacts:
        return cls(
            d["binlog_version"],
            d["server_version"],
            d["created"],
            d["header_len"],
            bytes.fromhex(d["post_header_lens"]),
            ChecksumAlg(d["checksum"]),
        )


# Facts for the events inside a TRANSACTION_PAYLOAD: same header and post-headers, no checksums.
def without_checksum(facts: FormatFacts) -> FormatFacts:
    return FormatFacts(
        facts.binlog_version,
        facts.server_version,
        facts.created,
        facts.header_len,
        facts.post_header_lens,
        ChecksumAlg.OFF,
    )


@dataclass(slots=True)
class RawEvent:
    """One framed event: header fields, the offset it starts at, and its bytes (header + body + checksum)."""

    pos: int
    timestamp: int
    type_code: int
    server_id: int
    length: int
    next_pos: int
    flags: int
    data: memoryview  # the whole event, checksum included
    header_len: int
    checksum_len: int

    @property
    def body(self) -> memoryview:
        return self.data[self.header_len : self.length - self.checksum_len]

    @property
    def end(self) -> int:
        return self.pos + self.length

    @property
    def type_name(self) -> str:
        try:
            return EventType(self.type_code).name
        except ValueError:
            return f"UNKNOWN_{self.type_code}"


def _fde_has_checksum_alg(server_version: str) -> bool:
    """Servers from MySQL 5.6.1 and MariaDB 5.3.0 end the FDE with a checksum-algorithm byte."""
    version = version_tuple(server_version)
    if "mariadb" in server_version.lower():
        return version >= (5, 3, 0)
    return version >= (5, 6, 1)


def parse_format_description(data: bytes | memoryview, pos: int, path: str | None = None) -> FormatFacts:
    """Decode a FORMAT_DESCRIPTION_EVENT (header included) into FormatFacts and verify its own CRC."""
    data = memoryview(data)
    if len(data) < V4_HEADER_LEN + _FDE_FIXED:
        raise BinlogFormatError(path, pos, "FORMAT_DESCRIPTION event is too short")
    _ts, type_code, _sid, length, _next, flags = EVENT_HEADER.unpack_from(data, 0)
    if type_code != EventType.FORMAT_DESCRIPTION:
        raise BinlogFormatError(path, pos, f"expected FORMAT_DESCRIPTION event, found type {type_code}")
    if length > len(data) or length < V4_HEADER_LEN + _FDE_FIXED:
        raise BinlogFormatError(path, pos, f"FORMAT_DESCRIPTION event length {length} is impossible")
    body = data[V4_HEADER_LEN:length]
    binlog_version = struct.unpack_from("<H", body, 0)[0]
    server_version = bytes(body[2:52]).split(b"\0", 1)[0].decode("ascii", "replace")
    created = struct.unpack_from("<I", body, 52)[0]
    header_len = body[56]
    if header_len < V4_HEADER_LEN:
        raise BinlogFormatError(path, pos, f"FORMAT_DESCRIPTION declares header length {header_len} < 19")
    checksum = ChecksumAlg.OFF
    post_end = len(body)
    if _fde_has_checksum_alg(server_version):
        alg = body[len(body) - 5]
        if alg not in (ChecksumAlg.OFF, ChecksumAlg.CRC32, ChecksumAlg.UNDEF):
            raise BinlogFormatError(path, pos, f"unknown checksum algorithm {alg} in FORMAT_DESCRIPTION")
        checksum = ChecksumAlg.CRC32 if alg == ChecksumAlg.CRC32 else ChecksumAlg.OFF
        post_end = len(body) - 5
        if checksum == ChecksumAlg.CRC32:
            expected = struct.unpack_from("<I", data, length - 4)[0]
            event = bytearray(data[: length - 4])
            # A file still open has LOG_EVENT_BINLOG_IN_USE_F set; the CRC was computed without it.
            struct.pack_into("<H", event, 17, flags & ~LOG_EVENT_BINLOG_IN_USE_F)
            if zlib.crc32(event) != expected:
                raise BinlogFormatError(path, pos, "CRC32 mismatch in FORMAT_DESCRIPTION event")
    return FormatFacts(
        binlog_version, server_version, created, header_len, bytes(body[57:post_end]), checksum
    )


class BinlogFile:
    """A binlog or relay-log file on disk, memory-mapped; knows its FORMAT_DESCRIPTION facts."""

    def __init__(self, path: str | Path):
        self.path = str(path)
        try:
            with open(self.path, "rb") as f:
                size = f.seek(0, 2)
                if size == 0:
                    raise BinlogFormatError(self.path, 0, "not a binlog file (empty)")
                self._mmap = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as exc:
            raise BinlogFormatError(self.path, None, f"cannot read file: {exc.strerror or exc}") from None
        self.buf = memoryview(self._mmap)
        self.size = size
        self.facts, self.fde_end = read_file_facts(self.buf, self.path)

    def close(self) -> None:
        """Unmap the file. Events still referenced by the caller keep views into the map; then the
        map is left for the garbage collector to close once the last view is gone."""
        try:
            self.buf.release()
            self._mmap.close()
        except BufferError:
            pass

    def release(self, end: int) -> None:
        """Drop the mapped pages before `end` from this process's memory: a walk that has passed them
        keeps its resident size to what is ahead instead of the whole file (the pages stay in the page
        cache, and a later read maps them again: the map is a read-only view of the file)."""
        end -= end % mmap.PAGESIZE
        if end > 0 and hasattr(mmap, "MADV_DONTNEED"):
            self._mmap.madvise(mmap.MADV_DONTNEED, 0, end)

    def __enter__(self) -> BinlogFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def events(
        self, start: int | None = None, end: int | None = None, verify: bool = True
    ) -> Iterator[RawEvent]:
        """Events from `start` (default: the first event after the magic) up to `end` (default: end of file)."""
        return iter_events(
            self.buf,
            self.facts,
            4 if start is None else start,
            self.size if end is None else end,
            self.path,
            verify,
        )


def read_file_facts(buf: memoryview, path: str | None = None) -> tuple[FormatFacts, int]:
    """Check the magic and decode the first event (the FDE). Returns the facts and the FDE's end offset."""
    if len(buf) < 4 or bytes(buf[:4]) != BINLOG_MAGIC:
        raise BinlogFormatError(path, 0, f"not a binlog file (magic is {bytes(buf[:4]).hex() or 'missing'})")
    if len(buf) < 4 + V4_HEADER_LEN:
        raise BinlogFormatError(path, 4, "file ends inside the first event header (truncated)")
    _ts, type_code, _sid, length, _next, _flags = EVENT_HEADER.unpack_from(buf, 4)
    if type_code == EventType.START_V3:
        raise BinlogFormatError(path, 4, "binlog format v1/v3 (MySQL before 5.0) is not supported")
    if type_code != EventType.FORMAT_DESCRIPTION:
        raise BinlogFormatError(path, 4, f"first event is type {type_code}, not FORMAT_DESCRIPTION")
    if 4 + length > len(buf):
        raise BinlogFormatError(path, 4, f"FORMAT_DESCRIPTION event of length {length} runs past end of file")
    facts = parse_format_description(buf[4 : 4 + length], 4, path)
    return facts, 4 + length


def iter_events(
    buf: memoryview,
    facts: FormatFacts,
    start: int,
    end: int,
    path: str | None = None,
    verify: bool = True,
) -> Iterator[RawEvent]:
    """Frame events in buf[start:end]. `start` must be an event boundary; the last event must end at `end`."""
    header_len = facts.header_len
    checksum_len = facts.checksum_len
    unpack = EVENT_HEADER.unpack_from
    crc32 = zlib.crc32
    limit = min(end, len(buf))
    pos = start
    while pos < limit:
        if pos + header_len > limit:
            if limit < len(buf):
                raise BinlogFormatError(
                    path, pos, f"the range end {end} falls inside the event header at {pos}"
                )
            raise BinlogFormatError(
                path, pos, f"truncated event header ({limit - pos} of {header_len} bytes)"
            )
        timestamp, type_code, server_id, length, next_pos, flags = unpack(buf, pos)
        if length < header_len + checksum_len:
            raise BinlogFormatError(path, pos, f"event length {length} is smaller than its header")
        if length > MAX_EVENT_LENGTH:
            raise BinlogFormatError(path, pos, f"event length {length} is impossible")
        if pos + length > limit:
            if pos + length > len(buf):
                raise BinlogFormatError(
                    path, pos, f"truncated event: length {length} runs past end of file at {len(buf)}"
                )
            raise BinlogFormatError(path, pos, f"event of length {length} crosses the range end {end}")
        data = buf[pos : pos + length]
        if checksum_len and verify:
            stored = int.from_bytes(data[length - 4 :], "little")
            if type_code == EventType.FORMAT_DESCRIPTION:
                parse_format_description(data, pos, path)
            elif crc32(data[: length - 4]) != stored:
                raise BinlogFormatError(
                    path, pos, f"CRC32 mismatch in event type {type_code} of length {length}"
                )
        yield RawEvent(
            pos, timestamp, type_code, server_id, length, next_pos, flags, data, header_len, checksum_len
        )
        pos += length


def skip_run(
    buf: memoryview,
    pos: int,
    stop: int,
    cut_at: int,
    header_len: int,
    checksum_len: int,
    kinds: bytes,
) -> tuple[int, int, int]:
    """(position after the run, events in it, timestamp of its last event or -1): the events from
    `pos` whose type `kinds[type]` marks, framed as iter_events frames them, up to the first other
    event, the first that cannot be framed (iter_events, called there, raises its located error), or
    the first position at or past `cut_at` or `stop`. The planner skips runs of rows events with it;
    the compiled core's `skip_run` (rollback/_speedups.pyx) is its twin."""
    if len(kinds) != 256 or pos < 0 or header_len < V4_HEADER_LEN:
        raise ValueError("skip_run: kinds marks 256 event types, pos >= 0, header_len >= 19")
    end = min(stop, len(buf))
    walk_end = min(cut_at, end)
    unpack = EVENT_HEADER.unpack_from
    count = 0
    timestamp = -1
    while pos < walk_end and pos + header_len <= end:
        stamp, type_code, _sid, length, _next, _flags = unpack(buf, pos)
        if not kinds[type_code]:
            break
        if length < header_len + checksum_len or length > MAX_EVENT_LENGTH or pos + length > end:
            break
        timestamp = stamp
        count += 1
        pos += length
    return pos, count, timestamp


def scan_headers(
    buf: memoryview, facts: FormatFacts, start: int, end: int, path: str | None = None
) -> Iterator[tuple[int, int, int, int]]:
    """(pos, type_code, length, timestamp) of each event, reading only headers: what a planner needs."""
    unpack = EVENT_HEADER.unpack_from
    header_len = facts.header_len
    limit = min(end, len(buf))
    pos = start
    while pos < limit:
        if pos + header_len > limit:
            raise BinlogFormatError(
                path, pos, f"truncated event header ({limit - pos} of {header_len} bytes)"
            )
        timestamp, type_code, _sid, length, _next, _flags = unpack(buf, pos)
        if length < header_len or pos + length > len(buf) or length > MAX_EVENT_LENGTH:
            raise BinlogFormatError(path, pos, f"event length {length} is impossible here")
        yield pos, type_code, length, timestamp
        pos += length
