"""WRITE/UPDATE/DELETE_ROWS events (v1 23-25, v2 30-32, PARTIAL_UPDATE 39, MariaDB compressed 166-171).

Post-header: table_id:6 flags:2, then for v2 events extra_len:2 (counting itself) and the
extra row info (type:1 ... ; type 1 is partition info). Body: column_count:lenenc, the
columns-present bitmap of the before image (or the only image), for updates the bitmap
of the after image, then the rows. Bitmaps are LSB-first. The rows are decoded lazily,
with the table map in force, by a decoder prepared once per table signature.

PARTIAL_UPDATE_ROWS (39, binlog_row_value_options=PARTIAL_JSON) differs only in its after
images (sql/rpl_record.cc, pack_row / unpack_row):

    value_options:lenenc  [partial_bits: ceil(J/8) bytes, only when value_options & PARTIAL_JSON]
    null_bits  values...

J counts every JSON column of the table map (not only those in the image); partial bit k
(LSB-first) says the k-th JSON column is written as a diff: a 4-byte LE length and a
Json_diff_vector (see json_binary.decode_json_diff) instead of its binary document. The
server only accepts value_options 0 or 1. :func:`decode_partial_pairs` reads these images.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any

from rollback.base.errors import BinlogFormatError
from rollback.binlog.columns import MISSING, ColumnSpec, read_value
from rollback.binlog.constants import ColumnType, EventType
from rollback.binlog.json_binary import JsonDiff, apply_json_diffs, decode_json, decode_json_diff
from rollback.binlog.packed import read_lenenc
from rollback.binlog.reader import MAX_EVENT_LENGTH, FormatFacts, RawEvent
from rollback.binlog.rowdecoder import RowDecoder

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


# The most deflate inflates per compressed byte: a 258-byte match costs at least 2 bits (RFC 1951's
# densest code), so 1032 bytes per byte; a header claiming more is not zlib output.
DEFLATE_MAX_RATIO = 1032


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
    if expected > MAX_EVENT_LENGTH:
        raise BinlogFormatError(None, where, f"compressed event claims {expected} bytes uncompressed")
    if expected > (len(data) - 1 - lenlen) * DEFLATE_MAX_RATIO:
        raise BinlogFormatError(
            None,
            where,
            f"compressed event claims {expected} bytes uncompressed, more than its {len(data)} bytes can hold",
        )
    inflater = zlib.decompressobj()
    try:
        # never inflate more than the header promises (a few bytes can claim gigabytes)
        out = inflater.decompress(bytes(data[1 + lenlen :]), expected + 1)
    except zlib.error as exc:
        raise BinlogFormatError(None, where, f"compressed event does not inflate: {exc}") from None
    if len(out) > expected:
        raise BinlogFormatError(
            None, where, f"compressed event inflates to more than the {expected} bytes its header says"
        )
    if not inflater.eof:  # with room for one byte more than expected, only a cut stream stops short
        raise BinlogFormatError(
            None, where, "compressed event does not inflate: the zlib stream is truncated"
        )
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


# ------------------------------------------------------------------------------------------------
# PARTIAL_UPDATE_ROWS after images

PARTIAL_JSON_UPDATES = 1  # the only bit of binlog_row_value_options


class JsonText(str):
    """The full after value of a JSON column that the event logged as a PARTIAL_JSON diff: the
    diffs applied to the before image's document, as JSON text in MySQL's print format (other
    JSON values of a row stay binary JSON bytes)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class JsonPartial:
    """A JSON after value logged as a diff whose before document is not in the event (MINIMAL
    before image): only the changes are known, not the whole document."""

    diffs: tuple[JsonDiff, ...]


Row = tuple[Any, ...]


def decode_partial_pairs(
    specs: tuple[ColumnSpec, ...],
    data: bytes,
    before_decoder: RowDecoder,
    after_decoder: RowDecoder,
) -> list[tuple[Row, Row]]:
    """(before, after) pairs of a PARTIAL_UPDATE_ROWS body. Diff-logged JSON columns become
    JsonText (before document known) or JsonPartial (it is not); everything else decodes as in
    UPDATE_ROWS. Offsets in errors are relative to ``data``."""
    return decode_partial_pairs_part(specs, data, 0, -1, before_decoder, after_decoder)[0]


def decode_partial_pairs_part(
    specs: tuple[ColumnSpec, ...],
    data: bytes,
    pos: int,
    limit: int,
    before_decoder: RowDecoder,
    after_decoder: RowDecoder,
) -> tuple[list[tuple[Row, Row]], int]:
    """decode_partial_pairs a part at a time: the first ``limit`` pairs from ``pos`` (every one
    when ``limit`` < 0) and the position after them."""
    json_columns = [i for i, spec in enumerate(specs) if spec.type == ColumnType.JSON]
    partial_bytes = (len(json_columns) + 7) // 8
    after_columns = after_decoder.columns
    end = len(data)
    pairs = []
    while pos < end and limit:
        limit -= 1
        before, pos = before_decoder.decode(data, pos, end)
        options_at = pos
        options, pos = read_lenenc(data, pos)
        if options > PARTIAL_JSON_UPDATES:
            raise BinlogFormatError(
                None, options_at, f"PARTIAL_UPDATE_ROWS value_options {options} is unknown"
            )
        partial: set[int] = set()
        if options & PARTIAL_JSON_UPDATES:
            if pos + partial_bytes > end:
                raise BinlogFormatError(
                    None, pos, "PARTIAL_UPDATE_ROWS partial-JSON bitmap runs past the event end"
                )
            bits = int.from_bytes(data[pos : pos + partial_bytes], "little")
            pos += partial_bytes
            partial = {col for k, col in enumerate(json_columns) if bits >> k & 1}
        if partial.isdisjoint(after_columns):
            after, pos = after_decoder.decode(data, pos, end)
        else:
            after, pos = _after_image_with_diffs(specs, after_columns, partial, data, pos, before)
        pairs.append((before, after))
    return pairs, pos


def _after_image_with_diffs(
    specs: tuple[ColumnSpec, ...],
    columns: tuple[int, ...],
    partial: set[int],
    data: bytes,
    pos: int,
    before: Row,
) -> tuple[Row, int]:
    """One after image in which the columns of ``partial`` hold JSON diffs; values are read one by
    one (these images are rare, so no compiled decoder)."""
    nbytes = (len(columns) + 7) // 8
    if pos + nbytes > len(data):
        raise BinlogFormatError(None, pos, "row image NULL bitmap runs past the event end")
    nulls = int.from_bytes(data[pos : pos + nbytes], "little")
    pos += nbytes
    row: list[Any] = [MISSING] * len(specs)
    for k, col in enumerate(columns):
        if nulls >> k & 1:
            row[col] = None
            continue
        start = pos
        try:
            if col in partial:
                length = struct.unpack_from("<I", data, pos)[0]
                pos += 4
                if pos + length > len(data):
                    raise IndexError
                diffs = tuple(decode_json_diff(data[pos : pos + length]))
                pos += length
                row[col] = _apply_diffs(before[col] if col < len(before) else MISSING, diffs, col, start)
            else:
                row[col], pos = read_value(specs[col], data, pos)
                if pos > len(data):
                    raise IndexError
        except (IndexError, struct.error):
            raise BinlogFormatError(
                None, start, f"row image of table column {col + 1} runs past the event end"
            ) from None
        except (ValueError, OverflowError) as exc:
            raise BinlogFormatError(
                None, start, f"row image of table column {col + 1} holds an invalid value: {exc}"
            ) from None
        except BinlogFormatError as exc:
            raise BinlogFormatError(
                None, start, f"JSON diff of table column {col + 1}: {exc.reason}"
            ) from None
    return tuple(row), pos


def _apply_diffs(before_value: Any, diffs: tuple[JsonDiff, ...], col: int, at: int) -> JsonText | JsonPartial:
    if before_value is MISSING:
        return JsonPartial(diffs)
    if before_value is None:
        raise BinlogFormatError(
            None, at, f"JSON diff of table column {col + 1} applies to a NULL before value"
        )
    if isinstance(before_value, JsonText):
        before_text = str(before_value)
    else:
        before_text = decode_json(bytes(before_value))
    return JsonText(apply_json_diffs(before_text, diffs))
