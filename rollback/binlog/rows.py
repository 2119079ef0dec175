"""WRITE/UPDATE/DELETE_ROWS events (v1 23-25, v2 30-32, PARTIAL_UPDATE 39, MariaDB compressed 166-171).

Post-header: table_id:6 flags:2, then for v2 events extra_len:2 (counting itself) and the
extra row info (type:1 ... ; type 1 is partition info). Body: column_count:lenenc, the
columns-present bitmap of the before image (or the only image), for updates the bitmap
of the after image, then the rows. Bitmaps are LSB-first. The rows are decoded lazily,
with the table map in force, by a decoder prepared once per table signature.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from rollback.binlog.constants import EventType
from rollback.binlog.packed import read_lenenc
from rollback.binlog.reader import FormatFacts, RawEvent
from rollback.errors import BinlogFormatError

INSERT, UPDATE, DELETE = "insert", "update", "delete"

_KIND: dict[int, str] = {
    EventType.WRITE_ROWS_V1: INSERT,
    EventType.UPDATE_ROWS_V1: UPDATE,
    EventType.DELETE_ROWS_V1: DELETE,
    EventType.WRITE_ROWS: INSERT,
    EventType.UPDATE_ROWS: UPDATE,
    EventType.DELETE_ROWS: DELETE,
    EventType.PARTIAL_UPDATE_ROWS: UPDATE,
    EventType.WRITE_ROWS_COMPRESSED_V1: INSERT,
    EventType.UPDATE_ROWS_COMPRESSED_V1: UPDATE,
    EventType.DELETE_ROWS_COMPRESSED_V1: DELETE,
    EventType.WRITE_ROWS_COMPRESSED: INSERT,
    EventType.UPDATE_ROWS_COMPRESSED: UPDATE,
    EventType.DELETE_ROWS_COMPRESSED: DELETE,
}
ROWS_EVENT_TYPES = frozenset(_KIND)
_V2 = frozenset(
    {
        EventType.WRITE_ROWS,
        EventType.UPDATE_ROWS,
        EventType.DELETE_ROWS,
        EventType.PARTIAL_UPDATE_ROWS,
        EventType.WRITE_ROWS_COMPRESSED,
        EventType.UPDATE_ROWS_COMPRESSED,
        EventType.DELETE_ROWS_COMPRESSED,
    }
)
_COMPRESSED = frozenset(range(EventType.WRITE_ROWS_COMPRESSED_V1, EventType.DELETE_ROWS_COMPRESSED + 1))
PRE_GA_ROWS_TYPES = frozenset(
    {EventType.PRE_GA_WRITE_ROWS, EventType.PRE_GA_UPDATE_ROWS, EventType.PRE_GA_DELETE_ROWS}
)


@dataclass(slots=True)
class RowsEvent:
    type_code: int
    kind: str  # insert | update | delete
    table_id: int
    flags: int
    column_count: int
    present: int  # columns-present bitmap of the before image (or the only image), bit i = column i
    present_after: int  # of the after image (updates); == present otherwise
    rows: bytes | memoryview  # the row images, decompressed
    partition_id: int | None = None
    source_partition_id: int | None = None

    @property
    def statement_end(self) -> bool:
        return bool(self.flags & 0x1)

    @property
    def partial(self) -> bool:
        return self.type_code == EventType.PARTIAL_UPDATE_ROWS


def _bitmap_int(data: bytes | memoryview) -> int:
    return int.from_bytes(data, "little")


def mariadb_uncompress(data: bytes | memoryview, where: int) -> bytes:
    """MariaDB's compressed-event payload: a header byte 0x8N, N big-endian bytes of the original length,
    then zlib data."""
    if not data or (data[0] & 0xE0) != 0x80:
        raise BinlogFormatError(None, where, "compressed event has no compression header")
    lenlen = data[0] & 0x07
    if lenlen < 1 or lenlen > 4 or len(data) < 1 + lenlen:
        raise BinlogFormatError(None, where, "compressed event has a bad length header")
    expected = int.from_bytes(data[1 : 1 + lenlen], "big")
    try:
        out = zlib.decompress(bytes(data[1 + lenlen :]))
    except zlib.error as exc:
        raise BinlogFormatError(None, where, f"compressed event does not inflate: {exc}") from None
    if len(out) != expected:
        raise BinlogFormatError(
            None, where, f"compressed event inflates to {len(out)} bytes, header says {expected}"
        )
    return out


def decode_rows_event(raw: RawEvent, facts: FormatFacts) -> RowsEvent:
    type_code = raw.type_code
    body = raw.body
    default_post = 10 if type_code in _V2 else 8
    post = facts.post_header_len(type_code, default_post)
    try:
        if post == 6:
            table_id, flags = struct.unpack_from("<IH", body, 0)
            pos = 6
        else:
            table_id = int.from_bytes(body[0:6], "little")
            flags = struct.unpack_from("<H", body, 6)[0]
            pos = 8
        partition_id = source_partition_id = None
        if type_code in _V2:
            extra_len = struct.unpack_from("<H", body, pos)[0]
            if extra_len < 2:
                raise BinlogFormatError(None, raw.pos, f"rows event extra-data length {extra_len} < 2")
            extra = body[pos + 2 : pos + extra_len]
            if len(extra) != extra_len - 2:
                raise IndexError
            if len(extra) >= 2 and extra[0] == 1:  # partition info
                partition_id, p = read_lenenc(extra, 1)
                if type_code in (EventType.UPDATE_ROWS, EventType.PARTIAL_UPDATE_ROWS) and p < len(extra):
                    source_partition_id, _ = read_lenenc(extra, p)
            pos += extra_len
        pos = max(pos, post)
        count, pos = read_lenenc(body, pos)
        nbytes = (count + 7) // 8
        present = _bitmap_int(body[pos : pos + nbytes])
        pos += nbytes
        kind = _KIND[type_code]
        present_after = present
        if kind == UPDATE:
            present_after = _bitmap_int(body[pos : pos + nbytes])
            pos += nbytes
        if pos > len(body):
            raise IndexError
    except (IndexError, struct.error):
        raise BinlogFormatError(None, raw.pos, f"{raw.type_name} event truncated in its header") from None
    rows: bytes | memoryview = body[pos:]
    if type_code in _COMPRESSED:
        rows = mariadb_uncompress(rows, raw.pos)
    return RowsEvent(
        type_code,
        kind,
        table_id,
        flags,
        count,
        present,
        present_after,
        rows,
        partition_id,
        source_partition_id,
    )
