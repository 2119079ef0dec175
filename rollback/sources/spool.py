"""Spool a server's binlog range into local binlog files that the pipeline reads like any other.

`<spool>/<server>/<original file name>` is a valid binlog file: the magic, the file's own
FORMAT_DESCRIPTION event, and the server's events byte for byte at their original offsets. Bytes
that were not fetched (before the start position, or event groups a GTID start skips) are covered
by filler events, so that the file frames from offset 4 to its end like the server's:

    filler = IGNORABLE event (type 28), flags LOG_EVENT_IGNORABLE_F | LOG_EVENT_ARTIFICIAL_F,
             server id 0, body of zeros (written as a hole), CRC32 when the file has checksums

Artificial events of the stream (the ROTATE naming the file, MariaDB's GTID_LIST announcing a
GTID start, heartbeats) are not written. Beside each file, `<name>.spool.json` records which
byte ranges hold the server's events, the range fetched, the size and a CRC32 of the whole file;
a later run over a range the spool covers reuses the file once the server's FDE for that file
still matches and every CRC verifies.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from rollback.base.errors import BinlogFormatError, RangeError, SourceError
from rollback.binlog.constants import BINLOG_MAGIC, EventType
from rollback.binlog.reader import EVENT_HEADER, BinlogFile, FormatFacts, parse_format_description
from rollback.sources.ranges import BinlogPosition, ServerRange
from rollback.sources.server import LOG_EVENT_ARTIFICIAL_F, BinlogServer, DumpedEvent, restore_fde, same_fde

MANIFEST_SUFFIX = ".spool.json"
MANIFEST_FORMAT = 1
LOG_EVENT_IGNORABLE_F = 0x80
FILLER_FLAGS = LOG_EVENT_IGNORABLE_F | LOG_EVENT_ARTIFICIAL_F
FILLER_MARKER = b"mysql-rollback spool: bytes not fetched\x00"
FILLER_PIECE = 256 << 20  # the largest filler event; longer gaps get several
_ZEROS = bytes(1 << 20)
# Events at the head of a file, before its first transaction.
_FILE_HEADER_EVENTS = {
    EventType.FORMAT_DESCRIPTION,
    EventType.GTID_LIST,
    EventType.PREVIOUS_GTIDS,
    EventType.BINLOG_CHECKPOINT,
    EventType.START_ENCRYPTION,
}


@dataclass(frozen=True)
class SpooledFile:
    """One local binlog file and the range of it that holds the fetched events."""

    name: str
    path: Path
    start: int  # first byte of the range in this file (an event boundary)
    stop: int  # end of the range in this file (exclusive; the file may end there)
    segments: tuple[tuple[int, int], ...]  # byte ranges that hold the server's own events


@dataclass(frozen=True)
class Spool:
    directory: Path
    files: tuple[SpooledFile, ...]
    reused: tuple[str, ...] = ()  # names taken from an earlier run, unchanged

    @property
    def paths(self) -> list[Path]:
        return [f.path for f in self.files]

    @property
    def start(self) -> BinlogPosition:
        return BinlogPosition(self.files[0].name, self.files[0].start)

    @property
    def stop(self) -> BinlogPosition:
        return BinlogPosition(self.files[-1].name, self.files[-1].stop)


# --------------------------------------------------------------------------- fillers


def _crc_of_zeros(crc: int, count: int) -> int:
    while count > 0:
        chunk = min(count, len(_ZEROS))
        crc = zlib.crc32(_ZEROS[:chunk], crc)
        count -= chunk
    return crc


def filler_pieces(length: int, facts: FormatFacts) -> list[int]:
    """Lengths of the filler events that cover a gap of `length` bytes."""
    smallest = facts.header_len + facts.checksum_len
    if length < smallest:
        raise BinlogFormatError(None, None, f"a gap of {length} bytes is smaller than any event")
    count = -(-length // FILLER_PIECE)
    base, extra = divmod(length, count)
    return [base + (1 if i < extra else 0) for i in range(count)]


def write_filler(out: BinaryIO, pos: int, length: int, facts: FormatFacts, timestamp: int) -> None:
    """Write one filler event of `length` bytes at `pos`, where `out` is positioned."""
    header = bytearray(facts.header_len)
    next_pos = (pos + length) & 0xFFFFFFFF
    EVENT_HEADER.pack_into(header, 0, timestamp, EventType.IGNORABLE, 0, length, next_pos, FILLER_FLAGS)
    room = length - facts.header_len - facts.checksum_len
    head = bytes(header) + FILLER_MARKER[:room]
    out.write(head)
    if facts.checksum_len:
        crc = _crc_of_zeros(zlib.crc32(head), length - len(head) - 4)
        out.seek(pos + length - 4)
        out.write(struct.pack("<I", crc))
    else:
        out.seek(pos + length - 1)
        out.write(b"\x00")


def file_crc32(path: Path) -> int:
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            crc = zlib.crc32(chunk, crc)
    return crc


# --------------------------------------------------------------------------- writing one file


class _FileWriter:
    """Writes one spooled file: magic, FDE, then events at their offsets, fillers in the gaps."""

    def __init__(self, path: Path, name: str, fde: bytes):
        self.path = path
        self.name = name
        self.facts = parse_format_description(fde, 4, name)
        self.out: BinaryIO = open(path, "wb")  # noqa: SIM115 - closed by finish()
        self.out.write(BINLOG_MAGIC + fde)
        self.pos = 4 + len(fde)
        self.fde_end = self.pos
        self.segments: list[list[int]] = [[4, self.pos]]
        self.first_event: int | None = None  # where the first event after the FDE went
        self.first_body: int | None = None  # where the first event after the file's header events went
        self.to_end = False  # the file's last event (ROTATE or STOP) was written

    def fill_to(self, pos: int, timestamp: int) -> None:
        if pos < self.pos:
            raise SourceError(
                f"{self.name}: the server sent an event at {pos}, before {self.pos} already written"
            )
        if pos == self.pos:
            return
        for length in filler_pieces(pos - self.pos, self.facts):
            write_filler(self.out, self.pos, length, self.facts, timestamp)
            self.pos += length

    def write(self, event: DumpedEvent) -> None:
        assert event.pos is not None
        if self.facts.checksum_len and zlib.crc32(event.data[:-4]) != int.from_bytes(
            event.data[-4:], "little"
        ):
            raise SourceError(
                f"{self.name}: CRC32 mismatch in the event of type {event.type_code} at {event.pos}"
            )
        self.fill_to(event.pos, event.timestamp)
        self.out.write(event.data)
        if self.segments[-1][1] == event.pos:
            self.segments[-1][1] = event.end
        else:
            self.segments.append([event.pos, event.end])
        if self.first_event is None:
            self.first_event = event.pos
        if self.first_body is None and event.type_code not in _FILE_HEADER_EVENTS:
            self.first_body = event.pos
        self.pos = event.end
        self.to_end = event.type_code in (EventType.ROTATE, EventType.STOP)

    def close(self) -> None:
        self.out.close()


# --------------------------------------------------------------------------- one dump into files


@dataclass
class _Fetch:
    """Consumes one position dump and writes its files into `directory`: every event must follow
    the previous one exactly."""

    directory: Path
    stop: BinlogPosition
    start: BinlogPosition
    first_fde: bytes | None = None  # the start file's FDE as stored (the stream's is altered past 4)
    files: Sequence[str] | None = None  # the files the dump must visit, in order
    active: str | None = None  # the server's current binlog: its FDE on disk has the in-use flag
    writers: list[_FileWriter] = field(default_factory=list)
    cursor: BinlogPosition | None = None
    timestamp: int = 0

    def run(self, events: Iterator[DumpedEvent]) -> list[_FileWriter]:
        self.cursor = self.start
        try:
            for event in events:
                if self._take(event):
                    break
            else:
                self._end_of_log()
            if not self.writers:
                raise SourceError("the server ended the dump without sending a FORMAT_DESCRIPTION event")
            self.writers[-1].fill_to(self.stop.position, self.timestamp)
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()
            for writer in self.writers:
                writer.close()
        return self.writers

    def _take(self, event: DumpedEvent) -> bool:
        """Write one event; True once the stop position is reached."""
        if event.pos is None:
            return False
        self.timestamp = event.timestamp
        if event.type_code == EventType.FORMAT_DESCRIPTION:
            self._open(event)
            return self.cursor == self.stop
        writer = self.writers[-1] if self.writers else None
        if writer is None or event.file != writer.name:
            raise SourceError(
                f"the server sent an event of {event.file} before that file's FORMAT_DESCRIPTION"
            )
        assert self.cursor is not None
        # A position dump is contiguous, except right after a FORMAT_DESCRIPTION: MariaDB does
        # not send the START_ENCRYPTION event of an encrypted binlog.
        after_fde = self.cursor.position == writer.fde_end and event.pos > writer.fde_end
        if event.pos != self.cursor.position and not after_fde:
            if writer.first_event is None and event.file == self.start.file:
                raise RangeError(
                    f"position {self.start.position} in {event.file} is not the start of an event "
                    f"(the next event starts at {event.pos})"
                )
            raise SourceError(f"the server skipped from {self.cursor} to {event.file}:{event.pos}")
        if event.file == self.stop.file and event.end > self.stop.position:
            if event.pos < self.stop.position:
                raise RangeError(
                    f"stop position {self.stop.position} in {event.file} is inside an event "
                    f"({event.pos}..{event.end})"
                )
        writer.write(event)
        self.cursor = BinlogPosition(event.file, event.end)
        return self.cursor == self.stop

    def _open(self, event: DumpedEvent) -> None:
        if self.writers and self.writers[-1].name == event.file:
            return  # the same file's FDE again: nothing new
        if self.files is not None:
            index = len(self.writers)
            if index >= len(self.files) or self.files[index] != event.file:
                raise RangeError(
                    f"the dump went on to {event.file} without reaching the stop position {self.stop}"
                )
        first = not self.writers
        fde = self.first_fde if first and self.first_fde is not None else event.data
        fde = restore_fde(fde, in_use=event.file == self.active)
        writer = _FileWriter(self.directory / event.file, event.file, fde)
        self.writers.append(writer)
        if self.cursor is None or self.cursor.file != event.file:
            self.cursor = BinlogPosition(event.file, writer.pos)
        elif self.cursor.position < writer.pos:
            if self.cursor.position != 4:
                raise RangeError(
                    f"position {self.cursor.position} in {event.file} is inside its FORMAT_DESCRIPTION event"
                )
            self.cursor = BinlogPosition(event.file, writer.pos)

    def _end_of_log(self) -> None:
        """The dump reached the end of the log (EOF packet) without passing the stop position."""
        cursor = self.cursor
        if cursor == self.stop:
            return
        raise RangeError(f"the binary log ends at {cursor} before the stop position {self.stop}")


# --------------------------------------------------------------------------- manifests and reuse


def _identity(server: BinlogServer) -> dict[str, Any]:
    info = server.info
    return {
        "address": str(server.address),
        "server_id": info.server_id,
        "server_uuid": info.server_uuid,
        "version": info.version,
    }


def manifest_path(path: Path) -> Path:
    return path.with_name(path.name + MANIFEST_SUFFIX)


def _manifest(writer: _FileWriter, start: int, stop: int, identity: dict[str, Any]) -> dict[str, Any]:
    return {
        "format": MANIFEST_FORMAT,
        "server": identity,
        "file": writer.name,
        "size": writer.pos,
        "crc32": file_crc32(writer.path),
        "segments": [list(seg) for seg in writer.segments],
        "start": start,
        "stop": stop,
        "to_end": writer.to_end,
    }


def _covers(segments: Sequence[Sequence[int]], lo: int, hi: int) -> bool:
    at = lo
    for seg_lo, seg_hi in sorted((a, b) for a, b in segments):
        if seg_lo <= at < seg_hi:
            at = seg_hi
    return at >= hi or lo == hi


def _frames_and_verifies(path: Path) -> bool:
    try:
        with BinlogFile(path) as binlog:
            sum(1 for _ in binlog.events(verify=True))
    except (BinlogFormatError, BufferError):
        return False
    return True


def _reusable(
    server: BinlogServer, directory: Path, name: str, lo: int, hi: int | None, identity: dict[str, Any]
) -> SpooledFile | None:
    """The spooled file of an earlier run, if it covers [lo, hi) (hi None: to the file's end),
    comes from the same server and file, and every checksum verifies."""
    path = directory / name
    try:
        manifest = json.loads(manifest_path(path).read_text())
        size = path.stat().st_size
    except (OSError, ValueError):
        return None
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != MANIFEST_FORMAT
        or manifest.get("server") != identity
        or manifest.get("file") != name
        or manifest.get("size") != size
    ):
        return None
    segments = manifest.get("segments") or []
    if hi is None and not manifest.get("to_end"):
        return None
    end = size if hi is None else hi
    if end > size or not _covers(segments, 4, segments[0][1]) or not _covers(segments, lo, end):
        return None
    header = server.file_header(name)  # the server's FDE: a file of the same name after RESET MASTER differs
    with open(path, "rb") as f:
        if not same_fde(f.read(4 + len(header.fde))[4:], header.fde):
            return None
    if file_crc32(path) != manifest.get("crc32") or not _frames_and_verifies(path):
        return None
    return SpooledFile(name, path, lo, end, tuple((a, b) for a, b in segments))


# --------------------------------------------------------------------------- the public calls


class _Directory:
    """The spool directory of one server; creates it on demand and removes what a failed run made."""

    def __init__(self, spool_dir: Path | str, name: str):
        self.path = Path(spool_dir) / name
        self._made: list[Path] = []

    def temp(self) -> Path:
        for directory in (self.path.parent, self.path):
            if not directory.exists():
                directory.mkdir(parents=True, exist_ok=True)
                self._made.append(directory)
        tmp = self.path / f".fetch-{os.getpid()}-{secrets.token_hex(4)}"
        tmp.mkdir()
        return tmp

    def discard_after(self, tmp: Path) -> None:
        shutil.rmtree(tmp, ignore_errors=True)
        for directory in reversed(self._made):
            try:
                directory.rmdir()
            except OSError:
                pass


def _publish(
    writers: list[_FileWriter],
    directory: Path,
    bounds: list[tuple[int, int]],
    identity: dict[str, Any],
) -> list[SpooledFile]:
    """Move the finished files into place, each followed by its manifest."""
    spooled = []
    for writer, (start, stop) in zip(writers, bounds, strict=True):
        manifest = _manifest(writer, start, stop, identity)
        target = directory / writer.name
        os.replace(writer.path, target)
        tmp_manifest = writer.path.with_name(writer.name + MANIFEST_SUFFIX)
        tmp_manifest.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        os.replace(tmp_manifest, manifest_path(target))
        segments = tuple((a, b) for a, b in manifest["segments"])
        spooled.append(SpooledFile(writer.name, target, start, stop, segments))
    return spooled


def spool_range(
    server: BinlogServer, rng: ServerRange, spool_dir: Path | str, name: str | None = None
) -> Spool:
    """Fetch `rng` from the server into `<spool_dir>/<name>/` (name: the server's host_port).

    Files that an earlier run spooled over the same range are reused; the rest is fetched with
    one dump from the first file that is missing. Nothing is left behind when this fails.
    """
    server.check()
    identity = _identity(server)
    spool = _Directory(spool_dir, name or server.address.name)
    reused: list[SpooledFile] = []
    for file_name in rng.files:
        lo, hi = rng.bounds(file_name)
        found = _reusable(server, spool.path, file_name, lo, hi, identity)
        if found is None:
            break
        reused.append(found)
    remaining = rng.files[len(reused) :]
    if not remaining:
        return Spool(spool.path, tuple(reused), tuple(f.name for f in reused))
    first = remaining[0]
    start = BinlogPosition(first, rng.bounds(first)[0])
    first_fde = server.file_header(first).fde if start.position > 4 else None
    tmp = spool.temp()
    try:
        active = server.end_position()[0]
        fetch = _Fetch(tmp, rng.stop, start, first_fde, remaining, active)
        writers = fetch.run(server.dump(start.file, start.position))
        if [w.name for w in writers] != list(remaining):
            raise RangeError(f"the dump did not visit the files {', '.join(remaining)}")
        bounds = []
        for writer in writers:
            lo, hi = rng.bounds(writer.name)
            bounds.append((lo, writer.pos if hi is None else hi))
        fetched = _publish(writers, spool.path, bounds, identity)
    except BaseException:
        spool.discard_after(tmp)
        raise
    shutil.rmtree(tmp, ignore_errors=True)
    return Spool(spool.path, tuple(reused + fetched), tuple(f.name for f in reused))
