"""TABLE_MAP events: which table a table id means, its column types and metadata.

Body layout (after the post-header table_id:6 flags:2):

    db_len:1 db NUL  table_len:1 table NUL  column_count:lenenc  column_types:n
    metadata_len:lenenc  metadata  null_bitmap:(n+7)/8  [optional metadata TLVs]

The optional metadata (MySQL 8.0.1+ / MariaDB 10.5+ with binlog_row_metadata) is a list of
(type:1, length:lenenc, value) fields: signedness, charsets, column names, SET/ENUM strings,
geometry types, primary key, visibility, vector dimensions.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from enum import IntEnum

from rollback.base.errors import BinlogFormatError
from rollback.binlog.columns import ColumnSpec, parse_column_metadata
from rollback.binlog.constants import ColumnType, EventType
from rollback.binlog.packed import read_lenenc
from rollback.binlog.reader import FormatFacts, RawEvent


class OptionalMetadata(IntEnum):
    SIGNEDNESS = 1
    DEFAULT_CHARSET = 2
    COLUMN_CHARSET = 3
    COLUMN_NAME = 4
    SET_STR_VALUE = 5
    ENUM_STR_VALUE = 6
    GEOMETRY_TYPE = 7
    SIMPLE_PRIMARY_KEY = 8
    PRIMARY_KEY_WITH_PREFIX = 9
    ENUM_AND_SET_DEFAULT_CHARSET = 10
    ENUM_AND_SET_COLUMN_CHARSET = 11
    COLUMN_VISIBILITY = 12
    VECTOR_DIMENSIONALITY = 13


_NUMERIC = frozenset(
    {
        ColumnType.TINY,
        ColumnType.SHORT,
        ColumnType.INT24,
        ColumnType.LONG,
        ColumnType.LONGLONG,
        ColumnType.NEWDECIMAL,
        ColumnType.FLOAT,
        ColumnType.DOUBLE,
        ColumnType.DECIMAL,
    }
)
# Columns that DEFAULT_CHARSET / COLUMN_CHARSET list, in column order. MySQL 9 counts VECTOR columns
# among them (with the binary collation 63): vector.binlog's table `bar` (BIGINT, VECTOR(2), TEXT,
# VECTOR(4)) carries "default 63, the 2nd listed column 255", which only fits if both VECTORs are
# listed, and table `foo` (BIGINT, VECTOR(3)) carries a DEFAULT_CHARSET of 63 for its lone VECTOR.
# JSON and GEOMETRY columns are not listed (json-opaque.binlog's JSON-only table has no charset field).
_CHARACTER = frozenset(
    {
        ColumnType.STRING,
        ColumnType.VAR_STRING,
        ColumnType.VARCHAR,
        ColumnType.BLOB,
        ColumnType.TINY_BLOB,
        ColumnType.MEDIUM_BLOB,
        ColumnType.LONG_BLOB,
        ColumnType.VECTOR,
    }
)


@dataclass(slots=True)
class TableMap:
    table_id: int
    flags: int
    database: str
    table: str
    column_types: bytes
    column_meta: tuple[int, ...]
    nullable: tuple[bool, ...]
    # Optional metadata; None when the binlog does not carry it.
    unsigned: tuple[bool, ...] | None = None
    charsets: tuple[int | None, ...] | None = None  # collation id per column (None: not a string)
    column_names: tuple[str, ...] | None = None
    enum_values: dict[int, tuple[bytes, ...]] = field(default_factory=dict)
    set_values: dict[int, tuple[bytes, ...]] = field(default_factory=dict)
    geometry_types: dict[int, int] = field(default_factory=dict)
    primary_key: tuple[tuple[int, int], ...] | None = None  # (column index, prefix length or 0)
    visible: tuple[bool, ...] | None = None
    vector_dimensions: dict[int, int] = field(default_factory=dict)
    raw: bytes = b""  # the whole event, so a partition can carry the maps in force

    @property
    def column_count(self) -> int:
        return len(self.column_types)

    @property
    def qualified_name(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def real_types(self) -> tuple[int, ...]:
        return tuple(spec.real_type for spec in self.specs(None))

    def specs(self, unsigned_override: tuple[bool, ...] | None) -> tuple[ColumnSpec, ...]:
        """Column specs for the row decoder; signedness from the binlog, else from the caller (the schema)."""
        unsigned = self.unsigned or unsigned_override or (False,) * self.column_count
        return tuple(
            ColumnSpec(t, m, u) for t, m, u in zip(self.column_types, self.column_meta, unsigned, strict=True)
        )


def _bits_msb_first(data: bytes | memoryview, count: int) -> list[bool]:
    return [bool(data[i >> 3] & (0x80 >> (i & 7))) for i in range(count)]


# Decoded table maps by everything but the table id and flags (the body after the post-header):
# a binlog repeats the same map before every transaction on the table, and decoding one (names,
# metadata, column specs) costs fifty times a copy of the decoded one.
_KNOWN: dict[tuple[bytes, int, bool], TableMap] = {}
_KNOWN_MAX = 1024


def decode_table_map(raw: RawEvent, facts: FormatFacts) -> TableMap:
    body = raw.body
    post = facts.post_header_len(EventType.TABLE_MAP, 8)
    key = (bytes(body[post:]), post, facts.is_mariadb)
    known = _KNOWN.get(key)
    if known is not None:
        if post == 6:
            table_id, flags = struct.unpack_from("<IH", body, 0)
        else:
            table_id = int.from_bytes(body[0:6], "little")
            flags = struct.unpack_from("<H", body, 6)[0]
        return replace(known, table_id=table_id, flags=flags, raw=bytes(raw.data))
    tmap = _decode_table_map(raw, facts, body, post)
    if len(_KNOWN) >= _KNOWN_MAX:
        _KNOWN.clear()
    _KNOWN[key] = tmap
    return tmap


def _decode_table_map(raw: RawEvent, facts: FormatFacts, body: memoryview, post: int) -> TableMap:
    try:
        if post == 6:
            table_id, flags = struct.unpack_from("<IH", body, 0)
        else:
            table_id = int.from_bytes(body[0:6], "little")
            flags = struct.unpack_from("<H", body, 6)[0]
        pos = post
        db_len = body[pos]
        database = bytes(body[pos + 1 : pos + 1 + db_len]).decode("utf-8", "replace")
        pos += db_len + 2
        table_len = body[pos]
        table = bytes(body[pos + 1 : pos + 1 + table_len]).decode("utf-8", "replace")
        pos += table_len + 2
        count, pos = read_lenenc(body, pos)
        types = bytes(body[pos : pos + count])
        if len(types) != count:
            raise IndexError
        pos += count
        meta_len, pos = read_lenenc(body, pos)
        meta_block = bytes(body[pos : pos + meta_len])
        if len(meta_block) != meta_len:
            raise IndexError
        pos += meta_len
        null_len = (count + 7) // 8
        null_bits = bytes(body[pos : pos + null_len])
        if len(null_bits) != null_len:
            raise IndexError
        pos += null_len
    except (IndexError, struct.error):
        raise BinlogFormatError(None, raw.pos, "TABLE_MAP event truncated") from None
    except BinlogFormatError as exc:
        raise BinlogFormatError(None, raw.pos, f"TABLE_MAP event malformed: {exc.reason}") from None
    try:
        metas = parse_column_metadata(types, meta_block)
    except BinlogFormatError as exc:
        raise BinlogFormatError(None, raw.pos, f"TABLE_MAP of {database}.{table}: {exc.reason}") from None
    for kind, name in (("database", database), ("table", table)):
        _check_identifier(raw.pos, f"{kind} name", name)
    nullable = tuple(bool(null_bits[i >> 3] & (1 << (i & 7))) for i in range(count))
    tmap = TableMap(table_id, flags, database, table, types, metas, nullable, raw=bytes(raw.data))
    try:
        tmap.specs(None)  # metadata that no column can have (DECIMAL(15,16), BIT(0)...) is an error here
    except BinlogFormatError as exc:
        raise BinlogFormatError(None, raw.pos, f"TABLE_MAP of {database}.{table}: {exc.reason}") from None
    if pos < len(body):
        try:
            _read_optional_metadata(tmap, body[pos:], facts.is_mariadb)
        except (IndexError, struct.error, ValueError):
            raise BinlogFormatError(
                None, raw.pos, f"TABLE_MAP of {database}.{table}: optional metadata is malformed"
            ) from None
        except BinlogFormatError as exc:
            raise BinlogFormatError(
                None, raw.pos, f"TABLE_MAP of {database}.{table}: optional metadata: {exc.reason}"
            ) from None
    for index, name in enumerate(tmap.column_names or ()):
        _check_identifier(raw.pos, f"of {tmap.qualified_name}: column {index + 1} name", name)
    return tmap


def _key_columns(tmap: TableMap, keys: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    for index, _prefix in keys:
        if index >= tmap.column_count:
            raise BinlogFormatError(
                None, 0, f"the primary key names column {index + 1}, the table has {tmap.column_count}"
            )
    return tuple(keys)


def _check_identifier(at: int, what: str, name: str) -> None:
    # MySQL permits no NUL (U+0000) in an identifier, quoted or not: a name holding one was not
    # written by a server, and no statement can name that table or column.
    if "\0" in name:
        raise BinlogFormatError(
            None, at, f"TABLE_MAP {what} {name!r} holds a NUL byte, which no identifier can"
        )


def _read_optional_metadata(tmap: TableMap, block: memoryview, mariadb: bool = False) -> None:
    specs = tmap.specs(None)
    real = [s.real_type for s in specs]
    # MariaDB lists a column wherever its Field has signedness / a charset: YEAR (a Field_tiny) among
    # the SIGNEDNESS bits, GEOMETRY (a Field_blob of charset binary) among the charsets. MySQL lists neither.
    # Seen on MariaDB 10.11: (.., DOUBLE, YEAR, INT AS (..) VIRTUAL) carries the bits 0 1 0 for its last three.
    numeric_types = _NUMERIC | {ColumnType.YEAR} if mariadb else _NUMERIC
    character_types = _CHARACTER | {ColumnType.GEOMETRY} if mariadb else _CHARACTER
    numeric = [i for i, t in enumerate(real) if t in numeric_types]
    character = [i for i, t in enumerate(real) if t in character_types]
    enum_set = [i for i, t in enumerate(real) if t in (ColumnType.ENUM, ColumnType.SET)]
    enums = [i for i, t in enumerate(real) if t == ColumnType.ENUM]
    sets = [i for i, t in enumerate(real) if t == ColumnType.SET]
    geoms = [i for i, t in enumerate(real) if t == ColumnType.GEOMETRY]
    vectors = [i for i, t in enumerate(real) if t == ColumnType.VECTOR]
    charsets: list[int | None] = [None] * tmap.column_count
    pos = 0
    while pos < len(block):
        kind = block[pos]
        length, pos = read_lenenc(block, pos + 1)
        value = block[pos : pos + length]
        if len(value) != length:
            raise BinlogFormatError(None, pos, f"optional metadata field {kind} runs past the event end")
        pos += length
        if kind == OptionalMetadata.SIGNEDNESS:
            flags = _bits_msb_first(value, len(numeric))
            unsigned = [False] * tmap.column_count
            for idx, flag in zip(numeric, flags, strict=True):
                unsigned[idx] = flag and real[idx] != ColumnType.YEAR  # YEAR: counted, not signed
            tmap.unsigned = tuple(unsigned)
        elif kind in (OptionalMetadata.DEFAULT_CHARSET, OptionalMetadata.ENUM_AND_SET_DEFAULT_CHARSET):
            targets = character if kind == OptionalMetadata.DEFAULT_CHARSET else enum_set
            default, p = read_lenenc(value, 0)
            for idx in targets:
                charsets[idx] = default
            while p < len(value):
                nth, p = read_lenenc(value, p)
                collation, p = read_lenenc(value, p)
                charsets[targets[nth]] = collation
        elif kind in (OptionalMetadata.COLUMN_CHARSET, OptionalMetadata.ENUM_AND_SET_COLUMN_CHARSET):
            targets = character if kind == OptionalMetadata.COLUMN_CHARSET else enum_set
            p = 0
            for idx in targets:
                charsets[idx], p = read_lenenc(value, p)
        elif kind == OptionalMetadata.COLUMN_NAME:
            names, p = [], 0
            while p < len(value):
                n, p = read_lenenc(value, p)
                names.append(bytes(value[p : p + n]).decode("utf-8", "replace"))
                p += n
            if len(names) != tmap.column_count:
                raise BinlogFormatError(
                    None, pos, f"{len(names)} column names for {tmap.column_count} columns"
                )
            tmap.column_names = tuple(names)
        elif kind in (OptionalMetadata.SET_STR_VALUE, OptionalMetadata.ENUM_STR_VALUE):
            targets = sets if kind == OptionalMetadata.SET_STR_VALUE else enums
            out = tmap.set_values if kind == OptionalMetadata.SET_STR_VALUE else tmap.enum_values
            p = 0
            for idx in targets:
                count, p = read_lenenc(value, p)
                members = []
                for _ in range(count):
                    n, p = read_lenenc(value, p)
                    members.append(bytes(value[p : p + n]))
                    p += n
                out[idx] = tuple(members)
        elif kind == OptionalMetadata.GEOMETRY_TYPE:
            p = 0
            for idx in geoms:
                tmap.geometry_types[idx], p = read_lenenc(value, p)
        elif kind == OptionalMetadata.SIMPLE_PRIMARY_KEY:
            keys, p = [], 0
            while p < len(value):
                idx, p = read_lenenc(value, p)
                keys.append((idx, 0))
            tmap.primary_key = _key_columns(tmap, keys)
        elif kind == OptionalMetadata.PRIMARY_KEY_WITH_PREFIX:
            keys, p = [], 0
            while p < len(value):
                idx, p = read_lenenc(value, p)
                prefix, p = read_lenenc(value, p)
                keys.append((idx, prefix))
            tmap.primary_key = _key_columns(tmap, keys)
        elif kind == OptionalMetadata.COLUMN_VISIBILITY:
            tmap.visible = tuple(_bits_msb_first(value, tmap.column_count))
        elif kind == OptionalMetadata.VECTOR_DIMENSIONALITY:
            p = 0
            for idx in vectors:
                tmap.vector_dimensions[idx], p = read_lenenc(value, p)
        # Unknown kinds are skipped: their length is known.
    if any(c is not None for c in charsets):
        tmap.charsets = tuple(charsets)
