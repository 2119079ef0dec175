"""SQL text: identifiers, literals for every MySQL type, row identification, statements.

One `TableRenderer` is prepared per (table map, schema) and renders every row of that table
without re-deciding anything per value: each column gets its literal function once.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from rollback.base import hotpath
from rollback.base.errors import RollbackError
from rollback.base.identifiers import quote_ident, quote_table
from rollback.base.render_text import comment_text
from rollback.binlog.columns import MISSING
from rollback.binlog.constants import ColumnType as T
from rollback.binlog.json_binary import decode_json
from rollback.binlog.table_map import TableMap
from rollback.schema.charsets import PYTHON_CODEC, charset_of_collation
from rollback.schema.tables import TableSchema

Literal = Callable[[Any], str]
_FLOAT32 = struct.Struct("<f")
_FLT_MAX = 3.4028234663852886e38


# Backslash means escape unless NO_BACKSLASH_ESCAPES; control characters do not survive copy/paste (and the
# client drops a carriage return before a line feed).
_UNSAFE_CHARS = re.compile("[\\\\\x00-\x1f\x7f]")


def quote_text(text: str) -> str:
    """A string literal of text (in the script's utf8mb4) that means the same under any sql_mode: quotes
    doubled; text with a backslash or a control character in hex (`'a\\'` would end the string elsewhere)."""
    if _UNSAFE_CHARS.search(text) is None:
        return "'" + text.replace("'", "''") + "'"
    return hex_literal(text.encode("utf-8"), "utf8mb4")


def temporal_literal(text: str) -> str:
    """A DATE/TIME/DATETIME/TIMESTAMP as the decoder writes it (digits and separators: nothing to escape)."""
    return "'" + text + "'"


def hex_literal(data: bytes, charset: str = "binary") -> str:
    if not data:
        return f"_{charset}''" if charset != "binary" else "_binary''"
    return f"_{charset} 0x{data.hex()}"


# Charsets whose characters Python maps to Unicode exactly as the server does: a readable literal in the
# script's utf8mb4 converts back to the same bytes. Any other charset is readable only for ASCII text.
_UNICODE_EXACT = frozenset(
    {"utf8mb4", "utf8mb3", "utf8", "utf16", "utf16le", "utf32", "ucs2", "ascii", "latin1"}
)
_NOT_ASCII_BASED = frozenset({"utf16", "utf16le", "utf32", "ucs2"})
_ROUND_TRIP = frozenset({"utf-8", "ascii"})


def string_literal(data: bytes, charset: str | None) -> str:
    """Readable when the bytes are valid text in the column's charset, else hex with a charset introducer.

    A readable literal carries no introducer: it is text in the script's own charset (utf8mb4), which the
    server converts to the column's charset. (`_latin1'é'` would reinterpret the UTF-8 bytes as latin1.)
    """
    if charset is None or charset == "binary":
        return hex_literal(data)
    codec = PYTHON_CODEC.get(charset)
    if codec is not None and (
        charset in _UNICODE_EXACT or (charset not in _NOT_ASCII_BASED and data.isascii())
    ):
        try:
            text = data.decode(codec)
        except UnicodeDecodeError:
            text = None
        # A strict UTF-8 (or ASCII) decode round-trips by definition; other codecs are checked.
        if (
            text is not None
            and _UNSAFE_CHARS.search(text) is None
            and (codec in _ROUND_TRIP or text.encode(codec) == data)
        ):
            return "'" + text.replace("'", "''") + "'"
    return hex_literal(data, charset)


class StringLiteral:
    """`string_literal` of one column's charset, for values of any bytes-like type. A class, not a
    closure, so that the compiled statements (compiled_plan) can see the charset and render the
    UTF-8 and ASCII ones in C."""

    __slots__ = ("charset",)

    def __init__(self, charset: str | None):
        self.charset = charset

    def __call__(self, value: Any) -> str:
        return string_literal(bytes(value), self.charset)


def bytes_hex_literal(value: Any) -> str:
    """hex_literal of any bytes-like value: the exact bytes (WHERE of strings: no collation)."""
    return hex_literal(bytes(value))


def float32_literal(value: float) -> str:
    """The shortest decimal that stores the same FLOAT (float32) value.

    Never beyond FLT_MAX as a double: the server refuses (strict) or clips a literal above it, and the
    shortest text of FLT_MAX (3.4028235e38) is above it.
    """
    if math.isnan(value) or math.isinf(value):
        raise ValueError("FLOAT column holds a non-finite value")
    target = _FLOAT32.pack(value)
    for digits in range(6, 10):
        text = f"{value:.{digits}g}"
        number = float(text)
        if abs(number) <= _FLT_MAX and _FLOAT32.pack(number) == target:
            return _float_text(text)
    return _float_text(repr(value))


def double_literal(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        raise ValueError("DOUBLE column holds a non-finite value")
    return _float_text(repr(value))


def _float_text(text: str) -> str:
    # Written with an exponent, the literal is a DOUBLE (not an exact DECIMAL) in MySQL and MariaDB.
    if "e" in text or "E" in text or "inf" in text or "nan" in text:
        return text
    return text + "e0"


def float32_where_literal(value: float) -> str:
    """For comparisons: the float32 widened to a double, exactly (the server compares FLOAT as DOUBLE)."""
    return double_literal(value)


def decimal_literal(value: Decimal) -> str:
    return format(value, "f")


def json_text(value: Any) -> str:
    """A JSON column value as text: binary JSON is decoded; a document rebuilt from a partial update is text."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return decode_json(bytes(value))
    raise ValueError("a partial JSON update without its before document cannot be rendered as SQL")


class BitLiteral:
    """A BIT(width) value as a bit-string literal, zero-filled to the column's width. A class, not a
    closure, so that the compiled statements can read the width and render it in C."""

    __slots__ = ("width",)

    def __init__(self, width: int):
        self.width = max(width, 1)

    def __call__(self, value: int) -> str:
        return "b'" + format(value, "b").zfill(self.width) + "'"


def bit_literal(width: int) -> Literal:
    return BitLiteral(width)


@dataclass(slots=True)
class ColumnRender:
    name: str  # quoted
    value: Literal  # for VALUES and SET
    where: Literal  # the right side of `exact`
    writable: bool  # False for generated columns
    exact: str = ""  # the left side of a byte-exact comparison, operator included: "CAST(`c` AS BINARY)<=>"
    null: str = ""  # the column is NULL
    stamped: bool = False  # ON UPDATE CURRENT_TIMESTAMP: an UPDATE must set it, or the server stamps it


class EnumLiteral:
    """An ENUM's literal by member index; 0 = the '' error value: its index keeps it exact. A class,
    not a closure, so that the compiled statements can look the members up in C."""

    __slots__ = ("literals",)

    def __init__(self, members: tuple[str, ...]):
        self.literals = ["0", *(quote_text(m) for m in members)]

    def __call__(self, index: int) -> str:
        literals = self.literals
        return literals[index] if 0 <= index < len(literals) else str(index)


def _enum_literal(members: tuple[str, ...] | None) -> Literal:
    if not members:
        return str  # the index: inserting a number into an ENUM stores that member
    return EnumLiteral(members)


class SetLiteral:
    """A SET's literal by bit mask: its members joined, quoted; a mask with a bit past the members
    as its number. A class, not a closure, so that the compiled statements can join the members in C
    (`quoted`: each member with its quotes doubled, or None when one needs hex: then it is called)."""

    __slots__ = ("members", "quoted")

    def __init__(self, members: tuple[str, ...]):
        self.members = members
        safe = all(_UNSAFE_CHARS.search(m) is None for m in members)
        self.quoted = [m.replace("'", "''") for m in members] if safe else None

    def __call__(self, mask: int) -> str:
        members = self.members
        if mask >> len(members):
            return str(mask)
        return quote_text(",".join(m for i, m in enumerate(members) if mask >> i & 1))


def _set_literal(members: tuple[str, ...] | None) -> Literal:
    if not members:
        return str
    return SetLiteral(members)


def column_literals(
    real_type: int, meta_length: int, charset: str | None, schema_column: Any, flavour: str
) -> tuple[Literal, Literal]:
    """(value literal, where literal) for a column."""
    if real_type in (T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG, T.YEAR):
        return str, str
    if real_type in (T.NEWDECIMAL, T.DECIMAL):
        return decimal_literal, decimal_literal
    if real_type == T.FLOAT:
        return float32_literal, float32_where_literal
    if real_type == T.DOUBLE:
        return double_literal, double_literal
    if real_type == T.BIT:
        lit = bit_literal(meta_length)
        return lit, lit
    if real_type in (T.DATE, T.NEWDATE, T.TIME, T.TIME2, T.DATETIME, T.DATETIME2, T.TIMESTAMP, T.TIMESTAMP2):
        return temporal_literal, temporal_literal
    if real_type == T.ENUM:
        lit = _enum_literal(schema_column.enum_values if schema_column else None)
        return lit, lit
    if real_type == T.SET:
        lit = _set_literal(schema_column.set_values if schema_column else None)
        return lit, lit
    if real_type == T.JSON:
        if flavour == "mariadb":
            lit = lambda v: quote_text(json_text(v))  # noqa: E731
        else:
            lit = lambda v: f"CAST({string_literal(json_text(v).encode(), 'utf8mb4')} AS JSON)"  # noqa: E731
        return lit, lit
    if real_type == T.GEOMETRY:

        def geometry(v: bytes) -> str:
            srid = int.from_bytes(v[:4], "little")
            option = ", 'axis-order=long-lat'" if srid and flavour == "mysql" else ""
            return f"ST_GeomFromWKB(0x{bytes(v[4:]).hex()}, {srid}{option})"

        return geometry, geometry
    if real_type == T.VECTOR:
        return hex_literal, hex_literal
    if real_type == T.STRING and _is_binary_char(charset, schema_column):
        # BINARY(n) is stored padded with 0x00 to n bytes, and the binlog drops the padding: put it back,
        # or the bytes compare unequal in WHERE (binary strings have no pad-space rule).
        def padded(v: bytes) -> str:
            return hex_literal(bytes(v).ljust(meta_length, b"\0"))

        return padded, padded
    # Strings and blobs: readable in SET/VALUES; in WHERE, exact bytes (no collation, no pad-space).
    return StringLiteral(charset), bytes_hex_literal


_STRING_TYPES = frozenset(
    {T.STRING, T.VARCHAR, T.VAR_STRING, T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB}
)
_BINARY_DATA_TYPES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})


def exact_comparison(
    real_type: int,
    charset: str | None,
    schema_column: Any,
    flavour: str,
    name: str,
    where: Literal,
    width: int = 0,
) -> tuple[str, Literal]:
    """(left side with operator, right side) of a comparison that is true only for the very same stored value.

    `where` is the column's where literal (column_literals), `width` the pack length of an ENUM or SET. A plain `col<=>literal` follows the column's
    collation (case-, accent- and trailing-space-insensitive under *_ci and PAD SPACE collations) and the
    type's own equality (ENUM by member name, JSON by value, +0.0 = -0.0): rows that differ only there are
    different rows. A key compared by its collation is still safe (it is unique under it); a whole-row
    identification is not.
    """
    plain = f"{name}<=>"
    if real_type in (T.ENUM, T.SET):
        # By index: the '' member and the '' error value (index 0) are equal as strings.
        if real_type == T.SET and width == 8:
            # MariaDB's SET+0 is a signed BIGINT: a mask with its 64th member would compare as negative.
            return f"CAST({name}+0 AS UNSIGNED)<=>", str
        return f"{name}+0<=>", str
    if real_type == T.JSON and flavour == "mysql":
        # JSON equality is by value (1 = 1.0); the server's text of the document tells the types apart too.
        def json_where(v: Any) -> str:
            text = string_literal(json_text(v).encode(), "utf8mb4")
            return f"CAST({text} AS JSON) AND CAST({name} AS BINARY)<=>{text}"

        return plain, json_where
    if real_type in _STRING_TYPES or real_type == T.JSON:
        data_type = schema_column.data_type if schema_column is not None else ""
        if charset == "binary" or data_type in _BINARY_DATA_TYPES or data_type in _FIXED_BINARY_TYPES:
            return plain, where  # binary strings compare byte by byte
        # The stored bytes (CHAR without its trailing pad, as the binlog holds it) against the image's bytes.
        return f"CAST({name} AS BINARY)<=>", where
    if real_type in (T.FLOAT, T.DOUBLE) and flavour == "mysql":
        # MySQL stores -0.0 (MariaDB stores +0.0 for it), and -0.0 = +0.0: the sign of a zero is checked apart.
        def float_where(v: float) -> str:
            if v != 0.0:
                return where(v)
            if math.copysign(1.0, v) < 0:
                return f"-0e0 AND ATAN2({name},-1)<0"
            return f"0e0 AND ATAN2({name},-1)>0"

        return plain, float_where
    return plain, where


_FIXED_BINARY_TYPES = frozenset({"binary", "inet6", "inet4", "uuid"})


def _is_binary_char(charset: str | None, schema_column: Any) -> bool:
    """A fixed-length binary column (BINARY(n), INET6, INET4, UUID), whose trailing 0x00 the binlog drops."""
    data_type = schema_column.data_type if schema_column is not None else ""
    if data_type:
        return data_type in _FIXED_BINARY_TYPES
    return charset == "binary"


class TableRenderer:
    """Renders the statements of one table (one table-map signature and schema)."""

    def __init__(self, tmap: TableMap, schema: TableSchema | None, flavour: str, full_where: bool = False):
        self.tmap = tmap
        self.schema = schema
        self.full_where = full_where
        # What the partition asks of the schema for every rows event of the table, read once.
        self.schema_names = schema.names if schema is not None else None
        unsigned = schema.unsigned if schema is not None else None
        self.unsigned_of: Callable[[TableMap], tuple[bool, ...] | None] = lambda _tmap: unsigned
        self.table = quote_table(tmap.database, tmap.table)
        self.check_head = f"SELECT COUNT(*) FROM {self.table} WHERE "  # of exists and key_exists
        specs = tmap.specs(schema.unsigned if schema else None)
        names = (
            schema.names if schema else (tmap.column_names or tuple(f"@{i + 1}" for i in range(len(specs))))
        )
        self.named = schema is not None or bool(tmap.column_names)
        for name in (tmap.database, tmap.table, *names):
            if "\r\n" in name:
                raise RollbackError(
                    f"table {comment_text(tmap.qualified_name)}: the name {comment_text(name)} holds a carriage "
                    "return before a line feed, which the mysql client drops when it reads a script: "
                    "no script can name it; rename it for the rollback"
                )
        cols = []
        for i, spec in enumerate(specs):
            col = schema.columns[i] if schema else None
            charset = col.charset if col and col.charset else None
            if charset is None and tmap.charsets:
                charset = charset_of_collation(tmap.charsets[i])
            if charset is None and spec.real_type in (T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB):
                charset = None
            name = quote_ident(names[i])
            value, where = column_literals(spec.real_type, spec.length, charset, col, flavour)
            exact, where = exact_comparison(spec.real_type, charset, col, flavour, name, where, spec.length)
            cols.append(
                ColumnRender(
                    name,
                    value,
                    where,
                    not (col and col.generated),
                    exact,
                    f"{name}<=>NULL",
                    bool(col and col.on_update and not col.generated),
                )
            )
        self.columns = cols
        self.key = () if full_where or schema is None else schema.row_key
        self.keyed = bool(self.key)
        # columns of a unique index, or None when not known (then every column is treated as one)
        self.unique_columns = schema.unique_columns if schema is not None else None
        # Prepared once for the per-row paths: names, literal functions, and the all-columns forms.
        self._names = [c.name for c in cols]
        self._values = [c.value for c in cols]
        self._wheres = [c.where for c in cols]
        self._exacts = [c.exact for c in cols]
        self._nulls = [c.null for c in cols]
        # Columns no statement may name (schema.Column.hidden): left out of every comparison.
        self._hidden = frozenset(
            i for i in range(len(cols)) if schema is not None and schema.columns[i].hidden
        )
        self._all_writable = all(c.writable for c in cols)
        self._stamped = tuple(i for i, c in enumerate(cols) if c.stamped)
        self._insert_head = f"INSERT INTO {self.table} ({', '.join(self._names)}) VALUES ("
        self._full: FullImageStatements | None = None
        self._full_core: Any = None
        # A FLOAT is found by its exact value widened to a double (its where literal): the shortest text
        # that stores it (its value literal) compares unequal to it. Such tables take the generic path.
        self._float_key = any(
            specs[i].real_type == T.FLOAT for i in (schema.row_key if schema is not None else ())
        )
        self._key_parts = [(i, self._names[i], self._key_literal(i)) for i in self.key]
        # Key columns whose exact comparison no index serves (CAST, +0): compared by value as well, which the
        # exact comparison implies, so that a check or a --full-where statement still finds the row by its key.
        row_key = schema.row_key if schema is not None else ()
        self._lookup_parts = [
            (i, self._names[i], self._key_literal(i))
            for i in row_key
            if cols[i].exact != f"{cols[i].name}<=>"
        ]

    def _key_literal(self, index: int) -> Literal:
        column = self.columns[index]
        return column.where if self.tmap.real_types[index] == T.FLOAT else column.value

    def literal(self, index: int, value: Any) -> str:
        return "NULL" if value is None else self.columns[index].value(value)

    def where(self, image: Sequence[Any]) -> str:
        """Identify the row an image describes: by key (under its collation: the key is unique under it),
        else by every present column, byte-exact and NULL-safe (also when a key column is missing)."""
        if self.key and all(image[i] is not MISSING for i in self.key):
            return " AND ".join(
                [
                    f"{name}={value(image[i])}" if image[i] is not None else f"{name} IS NULL"
                    for i, name, value in self._key_parts
                ]
            )
        return self._exact(image)

    def _exact(self, image: Sequence[Any]) -> str:
        """Every present column compared byte-exactly, after the key columns no index serves that way."""
        parts = [
            f"{name}={value(image[i])}" if image[i] is not None else f"{name} IS NULL"
            for i, name, value in self._lookup_parts
            if image[i] is not MISSING
        ]
        hidden = self._hidden
        parts += [
            null if v is None else exact + where(v)
            for i, (exact, null, where, v) in enumerate(
                zip(self._exacts, self._nulls, self._wheres, image, strict=True)
            )
            if v is not MISSING and i not in hidden
        ]
        return " AND ".join(parts)

    def joinable_heads(self) -> tuple[bytes, bytes]:
        """(the head of a whole-row INSERT, of a DELETE): what statement_batches joins statements by."""
        return self._insert_head.encode("utf-8"), f"DELETE FROM {self.table} WHERE ".encode()

    def _limit(self) -> str:
        return "" if self.keyed else " LIMIT 1"

    def insert(self, image: Sequence[Any]) -> str:
        if self._all_writable and MISSING not in image:
            values = ", ".join(
                ["NULL" if v is None else value(v) for value, v in zip(self._values, image, strict=True)]
            )
            return f"{self._insert_head}{values});"
        idx = [i for i, v in enumerate(image) if v is not MISSING and self.columns[i].writable]
        names = ", ".join(self.columns[i].name for i in idx)
        values = ", ".join(self.literal(i, image[i]) for i in idx)
        return f"INSERT INTO {self.table} ({names}) VALUES ({values});"

    def delete(self, image: Sequence[Any]) -> str:
        return f"DELETE FROM {self.table} WHERE {self.where(image)}{self._limit()};"

    def update(self, set_image: Sequence[Any], where_image: Sequence[Any]) -> str | None:
        """UPDATE setting the columns of set_image that differ from where_image; None when nothing differs.
        A column the server stamps on update (ON UPDATE CURRENT_TIMESTAMP) is set even when unchanged."""
        sets = self.update_sets(set_image, where_image)
        return self.update_text(sets, self.where(where_image)) if sets else None

    def update_text(self, sets: Sequence[tuple[int, str]], where: str) -> str:
        """The UPDATE of `sets` ((column index, literal), update_sets) on the row `where` names."""
        assignments = ", ".join(f"{self._names[i]}={text}" for i, text in sets)
        return f"UPDATE {self.table} SET {assignments} WHERE {where}{self._limit()};"

    def update_sets(self, set_image: Sequence[Any], where_image: Sequence[Any]) -> list[tuple[int, str]]:
        """(column index, literal) of every column an UPDATE from where_image to set_image sets: those
        that differ, and with them the columns the server stamps on update."""
        columns = self.columns
        changed = [
            i
            for i, (v, w) in enumerate(zip(set_image, where_image, strict=True))
            if v is not MISSING and (w is MISSING or w != v) and columns[i].writable
        ]
        if changed and self._stamped:
            changed = sorted({*changed, *(i for i in self._stamped if set_image[i] is not MISSING)})
        return [(i, "NULL" if set_image[i] is None else self._values[i](set_image[i])) for i in changed]

    def joinable_update_columns(self) -> frozenset[int]:
        """Columns a joined UPDATE (statement_batches.join_updates) may set with CASE: not the key its
        rows are found by, and of a type whose literals keep their meaning as a CASE result (numbers,
        DECIMAL, temporal text, UTF-8 text, binary); ENUM, SET, BIT, JSON and other charsets' text
        are set one row a statement."""
        if not self.keyed:
            return frozenset()
        kinds = (_L_STR, _L_DECIMAL, _L_TEMPORAL, _L_HEX, _L_TEXT, _L_FLOAT32, _L_DOUBLE)
        joinable = []
        for i, column in enumerate(self.columns):
            kind, _fn, charset = _literal_plan(column.value)
            if i in self.key or kind not in kinds or not column.writable:
                continue
            if kind == _L_TEXT and charset not in (b"utf8mb4", b"utf8mb3", b"utf8"):
                continue
            joinable.append(i)
        return frozenset(joinable)

    def exists(self, image: Sequence[Any]) -> str:
        """A query counting the rows that match the image exactly (every present column, byte for byte):
        the conflict check, which must see a row whose case or trailing spaces changed since as changed."""
        return self.check_head + self._exact(image)

    def full_images(self) -> FullImageStatements | None:
        """Straight-line statement functions for rows whose images hold every column (FULL row
        images), generated once for this table; None when a column is not writable (generated) or
        is stamped on update (update sets it even when unchanged, which these functions do not).
        They return exactly what insert / delete / update return for such rows. With the compiled
        core (hotpath.CORE) they are its FullImages, run from the plan `compiled_plan` makes."""
        core = hotpath.CORE
        if (
            (self._full is None or self._full_core is not core)
            and self._all_writable
            and not self._stamped
            and not self._float_key
        ):
            self._full = _compile_full_images(self) if core is None else core.FullImages(*compiled_plan(self))
            self._full_core = core
        return self._full

    def key_exists(self, image: Sequence[Any]) -> str | None:
        """A query counting rows with the image's key (for a reverse INSERT: the key must be free)."""
        if not self.key or any(image[i] is MISSING for i in self.key):
            return None
        parts = [
            f"{name}={value(image[i])}" if image[i] is not None else f"{name} IS NULL"
            for i, name, value in self._key_parts
        ]
        return self.check_head + " AND ".join(parts)


class PlanLineWriter(Protocol):
    """What FullImageStatements.plan writes a plan line with (rollback.pipeline.plan_lines.PlanLines;
    the compiled core writes the same text from `head` and `tail`)."""

    @property
    def head(self) -> bytes: ...

    @property
    def tail(self) -> bytes: ...

    def forward(self, kind: str, sql: str) -> str: ...

    def reverse(self, row: int, kind: str, check: str | None, expect: int | None, sql: str) -> str: ...


@dataclass(slots=True)
class FullImageStatements:
    """INSERT, DELETE and UPDATE of one table for images without MISSING values (see full_images),
    and the conflict checks of their reverses. The compiled core's FullImages has the same members."""

    insert: Callable[[Sequence[Any]], str]
    delete: Callable[[Sequence[Any]], str]
    update: Callable[[Sequence[Any], Sequence[Any]], str | None]  # (set image, where image)
    source: str
    exists: Callable[[Sequence[Any]], str]  # TableRenderer.exists
    key_exists: Callable[[Sequence[Any]], str | None]  # TableRenderer.key_exists

    def statements(self, kind: str, rows: list, forward: bool) -> list[str]:
        """What invert_rows (flashback, newest row first) or forward_row (`sql`) render for the rows
        of one event with FULL images."""
        if forward:
            if kind == "insert":
                return [self.insert(row) for row in rows]
            if kind == "delete":
                return [self.delete(row) for row in rows]
            statements = [self.update(after, before) for before, after in rows]
        else:
            if kind == "insert":
                return [self.delete(row) for row in reversed(rows)]
            if kind == "delete":
                return [self.insert(row) for row in reversed(rows)]
            statements = [self.update(before, after) for before, after in reversed(rows)]
        return [sql for sql in statements if sql is not None]

    def script(self, kind: str, rows: list, forward: bool) -> tuple[bytes, int, int]:
        """The statements of `statements` as the script's UTF-8 text, one per line, with their count
        and the length in bytes of the longest one."""
        return _lines(self.statements(kind, rows, forward))

    def plan(
        self,
        kind: str,
        rows: list,
        forward: bool,
        plan_lines: PlanLineWriter,
        indexes: Sequence[int] | None = None,
    ) -> tuple[bytes, int, int, bytes]:
        """`script`'s three, and the plan's lines of the statements as UTF-8 (one per line, written
        by `plan_lines`): a reverse statement with the check invert.invert_row gives it. `indexes`:
        each row's index in its event, when `rows` are a selection of it."""
        if forward:
            statements = self.statements(kind, rows, forward)
            lines = [plan_lines.forward(kind, sql) for sql in statements]
        else:
            statements, lines = [], []
            for at in range(len(rows) - 1, -1, -1):
                row = rows[at]
                check: str | None
                if kind == "insert":
                    sql, check, expect = self.delete(row), self.exists(row), 1
                elif kind == "delete":
                    sql, check, expect = self.insert(row), self.key_exists(row), 0
                else:
                    before, after = row
                    update = self.update(before, after)
                    if update is None:
                        continue
                    sql, check, expect = update, self.exists(after), 1
                statements.append(sql)
                index = at if indexes is None else indexes[at]
                lines.append(plan_lines.reverse(index, kind, check, expect, sql))
        data, count, longest = _lines(statements)
        return data, count, longest, _lines(lines)[0]


def _lines(texts: list[str]) -> tuple[bytes, int, int]:
    """(the texts as UTF-8 lines, their count, the longest one's bytes)"""
    if not texts:
        return b"", 0, 0
    text = "\n".join(texts) + "\n"
    data = text.encode("utf-8")
    if len(data) == len(text):
        longest = max(map(len, texts))
    else:
        longest = max(len(sql.encode("utf-8")) for sql in texts)
    return data, len(texts), longest


# Literal kinds of the compiled core (rollback/_speedups.pyx's L_* constants).
_L_CALL, _L_STR, _L_DECIMAL, _L_TEMPORAL, _L_TEXT, _L_HEX, _L_ASCII, _L_ENUM = 0, 1, 2, 3, 4, 5, 6, 7
_L_FLOAT32, _L_DOUBLE, _L_ASCII_OR_CALL, _L_BIT, _L_SET = 8, 9, 10, 11, 12
_UTF8_CODECS = {"utf-8": _L_TEXT, "ascii": _L_ASCII}
_ASCII = bytes(range(128))
# Charsets whose Python codec reads every ASCII byte as that ASCII character (checked, not assumed):
# for them string_literal of ASCII-only bytes is the ASCII text, which the core renders in C.
_ASCII_AS_ASCII = frozenset(
    charset
    for charset, codec in PYTHON_CODEC.items()
    if codec is not None
    and charset not in _NOT_ASCII_BASED
    and _ASCII.decode(codec, "replace") == _ASCII.decode()
)


def _literal_plan(literal: Literal) -> tuple[int, Literal | None, bytes | None]:
    """(kind, function to call, charset for hex) of a literal function: the ones the core renders
    in C are recognised by identity; every other one is called."""
    if literal is str:
        return _L_STR, None, None
    if literal is decimal_literal:
        return _L_DECIMAL, None, None
    if literal is temporal_literal:
        return _L_TEMPORAL, None, None
    if literal is bytes_hex_literal:
        return _L_HEX, None, None
    if isinstance(literal, EnumLiteral):
        return _L_ENUM, literal, None
    if isinstance(literal, BitLiteral):
        return _L_BIT, literal, None
    if isinstance(literal, SetLiteral) and literal.quoted is not None:
        return _L_SET, literal, None
    if literal is float32_literal:  # the function stays: the core calls it for what it leaves (NaN)
        return _L_FLOAT32, literal, None
    if literal is double_literal or literal is float32_where_literal:
        return _L_DOUBLE, literal, None
    if isinstance(literal, StringLiteral):
        charset = literal.charset
        if charset is None or charset == "binary":
            return _L_HEX, None, None
        kind = _UTF8_CODECS.get(PYTHON_CODEC.get(charset) or "")
        if kind is not None and charset in _UNICODE_EXACT:
            return kind, None, charset.encode("utf-8")
        if charset in _ASCII_AS_ASCII:
            return _L_ASCII_OR_CALL, literal, charset.encode("utf-8")
    return _L_CALL, literal, None


def compiled_plan(renderer: TableRenderer) -> tuple[Any, ...]:
    """The arguments of the compiled core's FullImages for a table: the heads of its statements and,
    per column, its literal plans and comparison texts (what _compile_full_images generates)."""
    columns = []
    for i, column in enumerate(renderer.columns):
        name = renderer._names[i]
        columns.append(
            (
                *_literal_plan(column.value),
                *_literal_plan(column.where),
                f"{name}=",
                f"{name} IS NULL",
                column.exact,
                column.null,
            )
        )
    lookup = tuple(i for i, _name, _value in renderer._lookup_parts)
    return (
        renderer._insert_head,
        f"DELETE FROM {renderer.table} WHERE ",
        f"UPDATE {renderer.table} SET ",
        f"{renderer._limit()};",
        tuple(columns),
        tuple(renderer.key) if renderer.key else lookup,
        bool(renderer.key),
        lookup,
        renderer.check_head,
    )


def _compile_full_images(renderer: TableRenderer) -> FullImageStatements:
    """Generate the statement functions of a table: one unpacking, one test and one literal call per
    column, no per-row lists of columns, no generic loops (the TableRenderer methods' exact text)."""
    n = len(renderer.columns)
    env: dict[str, Any] = {
        "INSERT_HEAD": renderer._insert_head,
        "DELETE_HEAD": f"DELETE FROM {renderer.table} WHERE ",
        "UPDATE_HEAD": f"UPDATE {renderer.table} SET ",
        "TAIL": f"{renderer._limit()};",
    }
    for i in range(n):
        name = renderer._names[i]
        env[f"V{i}"] = renderer._values[i]
        env[f"W{i}"] = renderer._wheres[i]
        env[f"EQ{i}"] = f"{name}="
        env[f"ISNULL{i}"] = f"{name} IS NULL"
        env[f"EXACT{i}"] = renderer._exacts[i]
        env[f"NULL{i}"] = renderer._nulls[i]

    def by_value(var: str, columns: Sequence[int]) -> list[str]:
        return [f"{{EQ{i} + V{i}({var}{i}) if {var}{i} is not None else ISNULL{i}}}" for i in columns]

    def where(var: str) -> str:
        if renderer.key:
            parts = by_value(var, renderer.key)
        else:
            parts = by_value(var, [i for i, _name, _value in renderer._lookup_parts])
            parts += [f"{{NULL{i} if {var}{i} is None else EXACT{i} + W{i}({var}{i})}}" for i in range(n)]
        return "f'" + " AND ".join(parts) + "'"

    values = ", ".join(f'{{"NULL" if v{i} is None else V{i}(v{i})}}' for i in range(n))
    unpack_v = "".join(f"v{i}, " for i in range(n))
    unpack_s = "".join(f"s{i}, " for i in range(n))
    unpack_w = "".join(f"w{i}, " for i in range(n))
    lines = [
        "def insert(image):",
        f"    {unpack_v}= image",
        f"    return f'{{INSERT_HEAD}}{values});'",
        "def delete(image):",
        f"    {unpack_w}= image",
        f"    return DELETE_HEAD + {where('w')} + TAIL",
        "def update(set_image, where_image):",
        f"    {unpack_s}= set_image",
        f"    {unpack_w}= where_image",
        "    sets = []",
    ]
    for i in range(n):
        lines.append(f"    if w{i} != s{i}:")
        lines.append(f'        sets.append(EQ{i} + ("NULL" if s{i} is None else V{i}(s{i})))')
    lines += [
        "    if not sets:",
        "        return None",
        f"    return UPDATE_HEAD + ', '.join(sets) + ' WHERE ' + {where('w')} + TAIL",
    ]
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<statements of {renderer.table}>", "exec"), env)
    return FullImageStatements(
        env["insert"], env["delete"], env["update"], source, renderer.exists, renderer.key_exists
    )
