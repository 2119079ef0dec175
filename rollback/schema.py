"""Table schemas: column names, keys, charsets, generated/invisible flags.

Sources, in order of trust: the binlog's own TABLE_MAP metadata (binlog_row_metadata=FULL),
a live server's information_schema, a DDL file. A schema whose column count or types
disagree with the table map is a SchemaMismatch, never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rollback.binlog.constants import ColumnType as T
from rollback.binlog.table_map import TableMap
from rollback.charsets import charset_of_collation
from rollback.errors import SchemaMismatch


@dataclass(slots=True)
class Column:
    name: str
    data_type: str = ""  # lower-case SQL type name (int, varchar, ...); "" when unknown
    unsigned: bool = False
    nullable: bool = True
    charset: str | None = None  # None: not a character column (or unknown)
    generated: bool = False
    invisible: bool = False
    enum_values: tuple[str, ...] | None = None
    set_values: tuple[str, ...] | None = None


@dataclass(slots=True)
class TableSchema:
    database: str
    table: str
    columns: list[Column]
    primary_key: tuple[int, ...] = ()
    unique_keys: list[tuple[int, ...]] = field(default_factory=list)  # NOT NULL unique keys only
    source: str = ""  # binlog | server | ddl

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def row_key(self) -> tuple[int, ...]:
        """Columns that identify a row: the primary key, else the first NOT NULL unique key, else ()."""
        if self.primary_key:
            return self.primary_key
        return self.unique_keys[0] if self.unique_keys else ()

    @property
    def unsigned(self) -> tuple[bool, ...]:
        return tuple(c.unsigned for c in self.columns)


class SchemaSource(Protocol):
    def lookup(self, database: str, table: str) -> TableSchema | None: ...


# Table-map type codes each SQL data type may appear as.
_COMPATIBLE: dict[str, frozenset[int]] = {
    "tinyint": frozenset({T.TINY}),
    "bool": frozenset({T.TINY}),
    "boolean": frozenset({T.TINY}),
    "smallint": frozenset({T.SHORT}),
    "mediumint": frozenset({T.INT24}),
    "int": frozenset({T.LONG}),
    "integer": frozenset({T.LONG}),
    "bigint": frozenset({T.LONGLONG}),
    "decimal": frozenset({T.NEWDECIMAL, T.DECIMAL}),
    "numeric": frozenset({T.NEWDECIMAL, T.DECIMAL}),
    "float": frozenset({T.FLOAT}),
    "double": frozenset({T.DOUBLE}),
    "real": frozenset({T.DOUBLE}),
    "bit": frozenset({T.BIT}),
    "year": frozenset({T.YEAR}),
    "date": frozenset({T.DATE, T.NEWDATE}),
    "time": frozenset({T.TIME, T.TIME2}),
    "datetime": frozenset({T.DATETIME, T.DATETIME2}),
    "timestamp": frozenset({T.TIMESTAMP, T.TIMESTAMP2}),
    "char": frozenset({T.STRING}),
    "binary": frozenset({T.STRING}),
    "varchar": frozenset({T.VARCHAR, T.VAR_STRING}),
    "varbinary": frozenset({T.VARCHAR, T.VAR_STRING}),
    "enum": frozenset({T.STRING, T.ENUM}),
    "set": frozenset({T.STRING, T.SET}),
    "json": frozenset({T.JSON, T.BLOB}),
    "vector": frozenset({T.VECTOR}),
    "inet6": frozenset({T.STRING}),
    "inet4": frozenset({T.STRING}),
    "uuid": frozenset({T.STRING}),
}
for _blob in ("tinyblob", "blob", "mediumblob", "longblob", "tinytext", "text", "mediumtext", "longtext"):
    _COMPATIBLE[_blob] = frozenset({T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB})
for _geo in (
    "geometry",
    "point",
    "linestring",
    "polygon",
    "multipoint",
    "multilinestring",
    "multipolygon",
    "geometrycollection",
    "geomcollection",
):
    _COMPATIBLE[_geo] = frozenset({T.GEOMETRY})


def check_schema(schema: TableSchema, tmap: TableMap, position: int | None) -> None:
    """Raise SchemaMismatch when the schema cannot describe this table map's rows."""
    where = f" at position {position}" if position is not None else ""
    if len(schema.columns) != tmap.column_count:
        raise SchemaMismatch(
            f"table {tmap.qualified_name}{where}: the binlog has {tmap.column_count} columns, "
            f"the {schema.source or 'given'} schema has {len(schema.columns)} "
            f"(was the table altered since? give the schema of the incident's time with --schema-file)"
        )
    real = tmap.real_types
    for index, column in enumerate(schema.columns):
        allowed = _COMPATIBLE.get(column.data_type)
        if allowed is not None and real[index] not in allowed:
            raise SchemaMismatch(
                f"table {tmap.qualified_name}{where}: column {index + 1} `{column.name}` is {column.data_type} "
                f"in the {schema.source or 'given'} schema but type code {real[index]} in the binlog"
            )


def schema_from_table_map(tmap: TableMap) -> TableSchema | None:
    """The schema the binlog itself carries (binlog_row_metadata=FULL), or None without column names."""
    if not tmap.column_names or len(tmap.column_names) != tmap.column_count:
        return None
    unsigned = tmap.unsigned or (False,) * tmap.column_count
    columns = []
    for i, name in enumerate(tmap.column_names):
        collation = tmap.charsets[i] if tmap.charsets else None
        enum = tmap.enum_values.get(i)
        set_ = tmap.set_values.get(i)
        columns.append(
            Column(
                name,
                unsigned=unsigned[i],
                nullable=tmap.nullable[i],
                charset=charset_of_collation(collation),
                invisible=bool(tmap.visible and not tmap.visible[i]),
                enum_values=tuple(v.decode("utf-8", "replace") for v in enum) if enum is not None else None,
                set_values=tuple(v.decode("utf-8", "replace") for v in set_) if set_ is not None else None,
            )
        )
    pk = tuple(i for i, _prefix in tmap.primary_key or ())
    # A key on a column prefix does not identify a row by the prefix alone; the full column is what we have.
    return TableSchema(tmap.database, tmap.table, columns, pk, source="binlog")


# ---- information_schema ------------------------------------------------------------------------------

_COLUMNS_SQL = """
SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, CHARACTER_SET_NAME, EXTRA, ORDINAL_POSITION
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION
"""
_KEYS_SQL = """
SELECT s.INDEX_NAME, s.COLUMN_NAME, s.NON_UNIQUE, s.SUB_PART
FROM information_schema.STATISTICS s
WHERE s.TABLE_SCHEMA = %s AND s.TABLE_NAME = %s ORDER BY s.INDEX_NAME, s.SEQ_IN_INDEX
"""


def _enum_members(column_type: str) -> tuple[str, ...]:
    inner = column_type[column_type.index("(") + 1 : column_type.rindex(")")]
    return tuple(m.replace("''", "'") for m in re.findall(r"'((?:[^']|'')*)'", inner))


def schema_from_rows(
    database: str, table: str, columns: list[tuple], keys: list[tuple], source: str
) -> TableSchema:
    cols = []
    for name, data_type, column_type, is_nullable, charset, extra, _pos in columns:
        data_type = str(data_type).lower()
        column_type = str(column_type).lower()
        extra = str(extra or "").upper()
        cols.append(
            Column(
                name=str(name),
                data_type=data_type,
                unsigned="unsigned" in column_type,
                nullable=str(is_nullable).upper() == "YES",
                charset=str(charset) if charset else None,
                generated="GENERATED" in extra
                or "VIRTUAL" in extra
                or "PERSISTENT" in extra
                or "STORED" in extra,
                invisible="INVISIBLE" in extra,
                enum_values=_enum_members(str(column_type)) if data_type == "enum" else None,
                set_values=_enum_members(str(column_type)) if data_type == "set" else None,
            )
        )
    index_of = {c.name.lower(): i for i, c in enumerate(cols)}
    by_index: dict[str, list[tuple[int, bool, Any]]] = {}
    for index_name, column_name, non_unique, sub_part in keys:
        by_index.setdefault(str(index_name), []).append(
            (index_of[str(column_name).lower()], bool(int(non_unique)), sub_part)
        )
    primary: tuple[int, ...] = ()
    uniques: list[tuple[int, ...]] = []
    for index_name, parts in by_index.items():
        if any(non_unique for _, non_unique, _ in parts) or any(sub for _, _, sub in parts):
            continue
        key = tuple(i for i, _, _ in parts)
        if index_name == "PRIMARY":
            primary = key
        elif all(not cols[i].nullable for i in key):
            uniques.append(key)
    uniques.sort(key=len)
    return TableSchema(database, table, cols, primary, uniques, source=source)


class ServerSchema:
    """Schemas read from a live server's information_schema (cached per table)."""

    def __init__(self, connect: Any):
        self._connect = connect  # a callable returning a DB-API connection
        self._cache: dict[tuple[str, str], TableSchema | None] = {}

    def lookup(self, database: str, table: str) -> TableSchema | None:
        key = (database, table)
        if key not in self._cache:
            conn = self._connect()
            try:
                with conn.cursor() as cur:
                    cur.execute(_COLUMNS_SQL, key)
                    columns = list(cur.fetchall())
                    cur.execute(_KEYS_SQL, key)
                    keys = list(cur.fetchall())
            finally:
                conn.close()
            self._cache[key] = schema_from_rows(database, table, columns, keys, "server") if columns else None
        return self._cache[key]


class StaticSchema:
    """Schemas given up front (parsed from a DDL file, or built by a test)."""

    def __init__(self, schemas: list[TableSchema]):
        self._schemas = {(s.database.lower(), s.table.lower()): s for s in schemas}
        self._tables = {s.table.lower(): s for s in schemas}

    def lookup(self, database: str, table: str) -> TableSchema | None:
        return self._schemas.get((database.lower(), table.lower())) or self._schemas.get(("", table.lower()))


class SchemaResolver:
    """Picks the schema of each table map: binlog metadata first, then the configured source; checks it."""

    def __init__(self, source: SchemaSource | None = None):
        self.source = source
        self._checked: dict[tuple[str, str, bytes, tuple[int, ...]], TableSchema | None] = {}

    def resolve(self, tmap: TableMap, position: int | None = None) -> TableSchema | None:
        key = (tmap.database, tmap.table, tmap.column_types, tmap.column_meta)
        if key in self._checked:
            return self._checked[key]
        schema = schema_from_table_map(tmap)
        if schema is not None and self.source is not None:
            extra = self.source.lookup(tmap.database, tmap.table)
            if extra is not None and len(extra.columns) == len(schema.columns):
                # The binlog names the columns; the server adds what the binlog cannot say.
                for mine, theirs in zip(schema.columns, extra.columns, strict=True):
                    mine.generated = theirs.generated
                    mine.data_type = theirs.data_type
                if not schema.primary_key:
                    schema.primary_key = extra.primary_key
                schema.unique_keys = extra.unique_keys
        elif schema is None and self.source is not None:
            schema = self.source.lookup(tmap.database, tmap.table)
        if schema is not None:
            check_schema(schema, tmap, position)
        self._checked[key] = schema
        return schema


# ---- DDL files -------------------------------------------------------------------------------------

_CREATE_RE = re.compile(
    r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?((?:`[^`]+`|\w+)(?:\s*\.\s*(?:`[^`]+`|\w+))?)\s*\(",
    re.IGNORECASE,
)


def _unquote(name: str) -> str:
    name = name.strip()
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def _split_top_level(body: str) -> list[str]:
    parts, depth, current, quote = [], 0, [], ""
    for ch in body:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


def _key_columns(spec: str, index_of: dict[str, int]) -> tuple[tuple[int, ...], bool]:
    inner = spec[spec.index("(") + 1 : spec.rindex(")")]
    cols, prefixed = [], False
    for part in _split_top_level(inner):
        m = re.match(r"(`[^`]+`|\w+)\s*(\(\s*\d+\s*\))?", part)
        if not m:
            continue
        cols.append(index_of[_unquote(m.group(1)).lower()])
        prefixed = prefixed or bool(m.group(2))
    return tuple(cols), prefixed


def parse_ddl(text: str, default_database: str = "") -> list[TableSchema]:
    """CREATE TABLE statements (as SHOW CREATE TABLE prints them) -> schemas."""
    schemas = []
    for match in _CREATE_RE.finditer(text):
        qualified = [_unquote(p) for p in re.split(r"\s*\.\s*(?=(?:[^`]*`[^`]*`)*[^`]*$)", match.group(1))]
        database, table = (
            (qualified[0], qualified[1]) if len(qualified) == 2 else (default_database, qualified[0])
        )
        depth, i = 1, match.end()
        while i < len(text) and depth:
            if text[i] == "(":
                depth += 1
            elif text[i] == ")":
                depth -= 1
            elif text[i] in "'\"":
                i = text.index(text[i], i + 1)
            i += 1
        items = _split_top_level(text[match.end() : i - 1])
        columns: list[Column] = []
        key_specs: list[str] = []
        for item in items:
            head = item.split(None, 1)[0].upper() if item.split() else ""
            if head in (
                "PRIMARY",
                "UNIQUE",
                "KEY",
                "INDEX",
                "CONSTRAINT",
                "FULLTEXT",
                "SPATIAL",
                "FOREIGN",
                "CHECK",
            ):
                key_specs.append(item)
                continue
            m = re.match(r"(`(?:[^`]|``)+`|\w+)\s+(\w+)(.*)", item, re.S)
            if not m:
                continue
            name, data_type, rest = _unquote(m.group(1)), m.group(2).lower(), m.group(3)
            upper = rest.upper()
            charset_m = re.search(r"CHARACTER\s+SET\s+(\w+)|CHARSET\s+(\w+)", rest, re.I)
            enum_values = (
                _enum_members(data_type + rest[: rest.index(")") + 1])
                if data_type in ("enum", "set")
                else None
            )
            columns.append(
                Column(
                    name=name,
                    data_type=data_type,
                    unsigned="UNSIGNED" in upper,
                    nullable="NOT NULL" not in upper and " PRIMARY KEY" not in upper,
                    charset=(charset_m.group(1) or charset_m.group(2)).lower() if charset_m else None,
                    generated=bool(re.search(r"\bGENERATED\s+ALWAYS\b|\bAS\s*\(", rest, re.I)),
                    invisible="INVISIBLE" in upper,
                    enum_values=enum_values if data_type == "enum" else None,
                    set_values=enum_values if data_type == "set" else None,
                )
            )
            if " PRIMARY KEY" in f" {upper}":
                key_specs.append(f"PRIMARY KEY (`{name}`)")
        index_of = {c.name.lower(): i for i, c in enumerate(columns)}
        primary: tuple[int, ...] = ()
        uniques: list[tuple[int, ...]] = []
        for spec in key_specs:
            upper = spec.upper()
            if "(" not in spec or upper.startswith(("FOREIGN", "CHECK")) or "FOREIGN KEY" in upper:
                continue
            cols, prefixed = _key_columns(spec, index_of)
            if prefixed:
                continue
            if "PRIMARY KEY" in upper:
                primary = cols
            elif upper.startswith("UNIQUE") or " UNIQUE " in f" {upper} ":
                if all(not columns[i].nullable for i in cols):
                    uniques.append(cols)
        uniques.sort(key=len)
        schemas.append(TableSchema(database, table, columns, primary, uniques, source="ddl"))
    return schemas


def schema_from_file(path: str | Path, default_database: str = "") -> StaticSchema:
    return StaticSchema(parse_ddl(Path(path).read_text(encoding="utf-8"), default_database))
