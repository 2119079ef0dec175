"""Hostile binlogs built from real ones: an event replaced with crafted bytes (its length and CRC32
made right again), TRANSACTION_PAYLOAD bodies and zstd bombs, and the CLI run in a child process whose
peak memory is measured (and whose address space can be capped)."""

from __future__ import annotations

import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import zstandard

from tools.fuzz_decoder import lenenc, wait_measured

HEADER = struct.Struct("<IBIIIH")
TRANSACTION_PAYLOAD = 40
# MySQL 8.0 with binlog_transaction_compression=ON: FDE 4, PREVIOUS_GTIDS 126, GTID 197,
# TRANSACTION_PAYLOAD 274 (157 bytes: one INSERT), ROTATE 431; 475 bytes, CRC32.
COMPRESSED = "blackbeam__rust_mysql_common/test-data/binlogs/transaction_compression.000001"
COMPRESSED_PAYLOAD_AT = 274


def event_at(data: bytes, pos: int) -> bytes:
    length = HEADER.unpack_from(data, pos)[3]
    return data[pos : pos + length]


def with_body(data: bytes, pos: int, body: bytes, crc: bool = True) -> bytes:
    """`data` with the body of the event at `pos` replaced (header kept, length and CRC32 recomputed)."""
    old = event_at(data, pos)
    length = 19 + len(body) + (4 if crc else 0)
    event = bytearray(old[:19] + body)
    struct.pack_into("<I", event, 9, length)
    struct.pack_into("<I", event, 13, pos + length)
    if crc:
        event += struct.pack("<I", zlib.crc32(event))
    return data[:pos] + bytes(event) + data[pos + len(old) :]


def inner_event(type_code: int, body: bytes) -> bytes:
    """An event as it stands inside a TRANSACTION_PAYLOAD: a v4 header, no checksum."""
    return HEADER.pack(0, type_code, 1, 19 + len(body), 0, 0) + body


def payload_body(payload: bytes, uncompressed: int | None, compression: int = 0) -> bytes:
    """A TRANSACTION_PAYLOAD body: its header fields (size, compression, uncompressed size), then `payload`."""
    fields = b""
    for field, value in ((1, len(payload)), (2, compression), (3, uncompressed)):
        if value is not None:
            encoded = lenenc(value)
            fields += lenenc(field) + lenenc(len(encoded)) + encoded
    return fields + b"\x00" + payload


def zstd_of(chunks: list[bytes] | bytes, repeat: int = 1) -> bytes:
    """One zstd frame of `chunks` repeated `repeat` times, compressed as a stream (never held whole)."""
    compressor = zstandard.ZstdCompressor(level=3).compressobj()
    parts = [chunks] if isinstance(chunks, bytes) else chunks
    out = []
    for _ in range(repeat):
        for part in parts:
            out.append(compressor.compress(part))
    out.append(compressor.flush())
    return b"".join(out)


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    peak_rss: int  # bytes, the child's ru_maxrss


def run_cli(args: list[str | Path], address_space: int | None = None, timeout: float = 120) -> Run:
    """`mysql-rollback ARGS` in a child process (its address space capped to `address_space` bytes);
    returns what it printed and its peak resident memory (tools.fuzz_decoder.wait_measured)."""
    command = shutil.which("mysql-rollback", path=str(Path(sys.executable).parent))
    prefix = [command] if command else [sys.executable, "-m", "rollback.cli.commands"]

    def limit() -> None:
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        # the user's defaults (log format, hot path...) are not the test's: none reaches the child
        env = {k: v for k, v in os.environ.items() if not k.startswith("MYSQL_ROLLBACK_")}
        process = subprocess.Popen(
            [*prefix, *map(str, args)],
            stdout=out,
            stderr=err,
            preexec_fn=limit,
            start_new_session=True,
            env=env,
        )
        status, peak, hung = wait_measured(process.pid, timeout)
        if hung:
            raise TimeoutError(f"{args} still running after {timeout} s")
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(process.returncode, out.read().decode(), err.read().decode(), peak)


# ------------------------------------------------------------------------------- crafted row events
# minimal.binlog (MySQL 5.7.44, CRC32): everything up to its first TABLE_MAP (FDE, GTIDs, CREATE
# TABLE, BEGIN) is kept, then a crafted TABLE_MAP and rows event of table id 109, then its XID.
MINIMAL = "Fanduzi__BinlogVisualizer/cmd/binlogviz/testdata/minimal.binlog"
_MINIMAL_TABLE_MAP_AT, _MINIMAL_XID = 500, (599, 630)
TABLE_ID = 109
LONG, NEWDECIMAL, DOUBLE, FLOAT, VARCHAR, JSON, STRING = 3, 246, 5, 4, 15, 245, 254
WRITE_ROWS, UPDATE_ROWS, DELETE_ROWS, PARTIAL_UPDATE_ROWS = 30, 31, 32, 39
COLUMN_NAME, SIMPLE_PRIMARY_KEY = 4, 8


@dataclass
class Column:
    name: bytes
    type: int
    meta: bytes = b""


def optional_field(kind: int, value: bytes) -> bytes:
    return bytes([kind]) + lenenc(len(value)) + value


def table_map_body(db: bytes, table: bytes, columns: list[Column], optional: bytes | None = None) -> bytes:
    """A TABLE_MAP body; `optional` defaults to the column names and the first column as primary key."""
    meta = b"".join(c.meta for c in columns)
    if optional is None:
        names = b"".join(lenenc(len(c.name)) + c.name for c in columns)
        optional = optional_field(COLUMN_NAME, names) + optional_field(SIMPLE_PRIMARY_KEY, b"\x00")
    return (
        TABLE_ID.to_bytes(6, "little")
        + b"\x01\x00"
        + bytes([len(db)])
        + db
        + b"\x00"
        + bytes([len(table)])
        + table
        + b"\x00"
        + lenenc(len(columns))
        + bytes(c.type for c in columns)
        + lenenc(len(meta))
        + meta
        + b"\xff" * ((len(columns) + 7) // 8)
        + optional
    )


def rows_body(type_code: int, columns: int, rows: bytes) -> bytes:
    """A v2 rows event body with every column present (in both images of an update)."""
    bitmap = ((1 << columns) - 1).to_bytes((columns + 7) // 8, "little")
    images = 2 if type_code in (UPDATE_ROWS, PARTIAL_UPDATE_ROWS) else 1
    return (
        TABLE_ID.to_bytes(6, "little") + b"\x01\x00" + b"\x02\x00" + lenenc(columns) + bitmap * images + rows
    )


def crafted_binlog(minimal: bytes, table_map: bytes, rows_type: int, rows: bytes) -> bytes:
    """minimal.binlog's first transaction with its TABLE_MAP and WRITE_ROWS replaced."""
    head = minimal[:_MINIMAL_TABLE_MAP_AT]
    tmap = with_body(
        minimal[:_MINIMAL_TABLE_MAP_AT] + event_at(minimal, _MINIMAL_TABLE_MAP_AT), len(head), table_map
    )
    out = tmap
    pos = len(out)
    out = with_body(out + event_at(minimal, 553), pos, rows)
    out = bytearray(out)
    out[pos + 4] = rows_type
    struct.pack_into("<I", out, len(out) - 4, zlib.crc32(out[pos : len(out) - 4]))
    start, end = _MINIMAL_XID
    return bytes(out) + minimal[start:end]
