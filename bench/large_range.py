"""A large multi-file binlog range made from one real server-written file, fast.

    .venv/bin/python bench/large_range.py SOURCE OUT_DIR --gb 5 [--file-mb 1024] [--check]

Writes `large-bin.000001`, `large-bin.000002`, ... into OUT_DIR: each file is the source's own
FORMAT_DESCRIPTION event, its GTID_LIST and BINLOG_CHECKPOINT (MariaDB) rewritten for the new
file, whole copies of the source's transactions (every event after those, up to the ROTATE or
STOP that ends the source), and a ROTATE naming the next file, as a server that rotated writes.
In every event the header's next position is rewritten and the CRC32 recomputed when the source's
FORMAT_DESCRIPTION says events carry one; MariaDB GTIDs are renumbered (copy k adds k times the
source's span of sequence numbers), so they are unique and increasing over the range, and each
file's GTID_LIST is the state before it. A file holds `file_bytes // body` copies (at least one,
and under 4 GiB: positions are 32-bit); the range holds enough copies for `total_bytes`: its row
changes are the copies times the source's. Each copy is patched in one buffer and written with
one write.

MySQL files with real GTIDs (not anonymous ones) are refused: renumbering them would need their
PREVIOUS_GTIDS rewritten too, which no bench needs.
"""

from __future__ import annotations

import argparse
import struct
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server id, length, next position, flags
MAGIC = b"\xfebin"
HEADER_LEN = 19
IN_USE = 0x1  # LOG_EVENT_BINLOG_IN_USE_F: the FDE's flag of a file not closed yet
FORMAT_DESCRIPTION, ROTATE, STOP, GTID, PREVIOUS_GTIDS = 15, 4, 3, 33, 35
BINLOG_CHECKPOINT, MARIA_GTID, GTID_LIST, START_ENCRYPTION = 161, 162, 163, 164
PROLOGUE = {FORMAT_DESCRIPTION, PREVIOUS_GTIDS, BINLOG_CHECKPOINT, GTID_LIST}
BASE_NAME = "large-bin"
MAX_FILE = (1 << 32) - (1 << 20)  # event positions are 32-bit: a file stays under 4 GiB


class SourceError(Exception):
    """The source file cannot be repeated (said in one line)."""


@dataclass
class Source:
    """What one source file gives every copy."""

    fde: bytes  # the FORMAT_DESCRIPTION event, its IN_USE flag cleared
    checksum: bool  # events end with a CRC32
    previous_gtids: bytes | None  # MySQL: kept as it is
    gtid_list: list[tuple[int, int, int]] | None  # MariaDB: (domain, server, seq) before the file
    body: bytes  # the events after the prologue, up to the closing ROTATE or STOP
    events: list[tuple[int, int]]  # (offset in body, length) of each body event
    gtids: list[tuple[int, int, int, int]]  # (offset in body, domain, server, seq) of MariaDB GTIDs
    template: tuple[int, int]  # (timestamp, server id) for the events we write


def _crc_len(fde: bytes) -> int:
    """4 when the FDE ends with the CRC32 algorithm byte (1): MySQL from 5.6.1, MariaDB from 5.3."""
    version = fde[HEADER_LEN + 2 : HEADER_LEN + 52].split(b"\0", 1)[0].decode("ascii", "replace")
    numbers = [int("".join(c for c in part if c.isdigit()) or 0) for part in version.split("-")[0].split(".")]
    numbers += [0] * (3 - len(numbers))
    has_alg = tuple(numbers[:3]) >= ((5, 3, 0) if "mariadb" in version.lower() else (5, 6, 1))
    return 4 if has_alg and fde[-5] == 1 else 0


def read_source(path: Path) -> Source:
    data = path.read_bytes()
    if data[:4] != MAGIC:
        raise SourceError(f"{path}: not a binlog file")
    frames = []
    pos = 4
    while pos + HEADER_LEN <= len(data):
        _ts, type_code, _sid, length, _next, _flags = HEADER.unpack_from(data, pos)
        if length < HEADER_LEN or pos + length > len(data):
            raise SourceError(f"{path}: event at {pos} of length {length} runs past the end")
        frames.append((pos, type_code, length))
        pos += length
    if not frames or frames[0][1] != FORMAT_DESCRIPTION:
        raise SourceError(f"{path}: the first event is not a FORMAT_DESCRIPTION")
    fde = bytearray(data[4 : 4 + frames[0][2]])
    struct.pack_into("<H", fde, 17, HEADER.unpack_from(fde)[5] & ~IN_USE)  # its CRC excludes the flag
    crc = _crc_len(bytes(fde))
    previous = gtid_list = None
    first = 1
    while first < len(frames) and frames[first][1] in PROLOGUE:
        at, type_code, length = frames[first]
        event = data[at : at + length - crc]
        if type_code == PREVIOUS_GTIDS:
            previous = data[at : at + length]
        elif type_code == GTID_LIST:
            count = struct.unpack_from("<I", event, HEADER_LEN)[0] & 0x0FFFFFFF
            gtid_list = [struct.unpack_from("<IIQ", event, HEADER_LEN + 4 + 16 * i) for i in range(count)]
        first += 1
    last = len(frames)
    if frames[-1][1] in (ROTATE, STOP):
        last -= 1
    if first >= last:
        raise SourceError(f"{path}: no transactions to repeat")
    start = frames[first][0]
    body = data[start : frames[last - 1][0] + frames[last - 1][2]]
    events, gtids = [], []
    for at, type_code, length in frames[first:last]:
        if type_code in (GTID, START_ENCRYPTION, ROTATE, FORMAT_DESCRIPTION):
            raise SourceError(f"{path}: event type {type_code} at {at} cannot be repeated")
        events.append((at - start, length))
        if type_code == MARIA_GTID:
            seq, domain = struct.unpack_from("<QI", data, at + HEADER_LEN)
            server = HEADER.unpack_from(data, at)[2]
            gtids.append((at - start, domain, server, seq))
    stamp, _t, server_id, _l, _n, _f = HEADER.unpack_from(data, frames[last - 1][0])
    return Source(bytes(fde), crc == 4, previous, gtid_list, body, events, gtids, (stamp, server_id))


def _event(source: Source, type_code: int, body: bytes, pos: int) -> bytes:
    """A new event of ours at `pos`: header, body and CRC32 when the file uses them."""
    length = HEADER_LEN + len(body) + (4 if source.checksum else 0)
    stamp, server_id = source.template
    event = HEADER.pack(stamp, type_code, server_id, length, pos + length, 0) + body
    return event + struct.pack("<I", zlib.crc32(event)) if source.checksum else event


def _spans(source: Source) -> dict[tuple[int, int], tuple[int, int]]:
    """(first, last) sequence number of each (domain, server) among the body's GTIDs."""
    spans: dict[tuple[int, int], tuple[int, int]] = {}
    for _at, domain, server, seq in source.gtids:
        lo, hi = spans.get((domain, server), (seq, seq))
        spans[(domain, server)] = (min(lo, seq), max(hi, seq))
    return spans


def _prologue(source: Source, name: str, copies_before: int, step: int) -> bytes:
    out = bytearray(MAGIC + source.fde)
    if source.previous_gtids is not None:
        event = bytearray(source.previous_gtids)
        struct.pack_into("<I", event, 13, len(out) + len(event))
        if source.checksum:
            struct.pack_into("<I", event, len(event) - 4, zlib.crc32(event[:-4]))
        out += event
    if source.gtid_list is not None:
        state = {(domain, server): seq for domain, server, seq in source.gtid_list}
        if copies_before:
            for key, (_lo, hi) in _spans(source).items():
                state[key] = hi + (copies_before - 1) * step
        body = struct.pack("<I", len(state)) + b"".join(
            struct.pack("<IIQ", domain, server, seq) for (domain, server), seq in state.items()
        )
        out += _event(source, GTID_LIST, body, len(out))
        checkpoint = name.encode()
        out += _event(source, BINLOG_CHECKPOINT, struct.pack("<I", len(checkpoint)) + checkpoint, len(out))
    return bytes(out)


def _patch(source: Source, copy: bytearray, base: int, shift: int) -> None:
    """Rewrite one copy of the body in place: next positions from `base`, GTIDs moved on by
    `shift`, CRC32s recomputed."""
    view = memoryview(copy)
    pack = struct.pack_into
    crc32 = zlib.crc32
    for at, _domain, _server, seq in source.gtids:
        pack("<Q", copy, at + HEADER_LEN, seq + shift)
    for at, length in source.events:
        pack("<I", copy, at + 13, base + at + length)
        if source.checksum:
            pack("<I", copy, at + length - 4, crc32(view[at : at + length - 4]))


def write_range(
    source_path: Path, out_dir: Path, total_bytes: int, file_bytes: int = 1 << 30
) -> tuple[list[Path], int]:
    """Write the range into `out_dir`; return its files and how many copies of the source's
    transactions it holds."""
    source = read_source(source_path)
    size = len(source.body)
    copies = max(1, -(-total_bytes // size))
    per_file = max(1, min(file_bytes, MAX_FILE) // size)
    step = max((hi - lo + 1 for lo, hi in _spans(source).values()), default=0)
    files: list[Path] = []
    out_dir.mkdir(parents=True, exist_ok=True)
    done = 0
    while done < copies:
        name = f"{BASE_NAME}.{len(files) + 1:06d}"
        path = out_dir / name
        head = _prologue(source, name, done, step)
        pos = len(head)
        with open(path, "wb", buffering=0) as out:
            out.write(head)
            for _ in range(min(per_file, copies - done)):
                copy = bytearray(source.body)
                _patch(source, copy, pos, done * step)
                out.write(copy)
                pos += size
                done += 1
            next_name = f"{BASE_NAME}.{len(files) + 2:06d}".encode()
            out.write(_event(source, ROTATE, struct.pack("<Q", 4) + next_name, pos))
        files.append(path)
    return files, copies


def row_changes(paths: list[Path]) -> int:
    """Row images in the files, decoded by our own reader with every CRC32 verified."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from rollback.binlog.decode import StreamState, decode_stream, rows_batch
    from rollback.binlog.reader import BinlogFile
    from rollback.binlog.rows import RowsEvent

    rows = 0
    for path in paths:
        with BinlogFile(path) as binlog:
            state = StreamState(binlog.facts, path=binlog.path)
            for decoded in decode_stream(binlog.buf, state, 4, binlog.size):
                if isinstance(decoded.event, RowsEvent):
                    rows += len(rows_batch(decoded, decoded.event, state).rows)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="a binlog file written by a server")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--gb", type=float, default=5.0, help="size of the range (GB, 10^9 bytes)")
    parser.add_argument("--file-mb", type=int, default=1024, help="largest file (MiB; one copy at least)")
    parser.add_argument("--check", action="store_true", help="decode the range: rows = copies x source's")
    args = parser.parse_args()
    started = time.perf_counter()
    try:
        files, copies = write_range(args.source, args.out_dir, int(args.gb * 1e9), args.file_mb << 20)
    except SourceError as exc:
        sys.exit(f"large_range: {exc}")
    seconds = time.perf_counter() - started
    total = sum(path.stat().st_size for path in files)
    print(f"{len(files)} files, {copies} copies, {total / 1e9:.2f} GB in {seconds:.1f} s")
    if args.check:
        expected = copies * row_changes([args.source])
        found = row_changes(files)
        print(f"row changes: {found:,} (expected {expected:,})")
        if found != expected:
            sys.exit("large_range: the range's row changes are not copies x the source's")


if __name__ == "__main__":
    main()
