"""Table schemas: column names, keys, charsets, generated/invisible flags.

Sources, in order of trust: the binlog's own TABLE_MAP metadata (binlog_row_metadata=FULL),
a live server's information_schema, a DDL file. A schema whose column count or types
disagree with the table map is a SchemaMismatch, never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from rollback.base.errors import SchemaMismatch
from rollback.binlog.columns import ColumnSpec
from rollback.binlog.constants import ColumnType as T
from rollback.binlog.table_map import TableMap
from rollback.schema.charsets import charset_of_collation


@dataclass(slots=True)
class Column:
    name: str
    data_type: str = ""  # lower-case SQL type name (int, varchar, ...); "" when unknown
    unsigned: bool = False
    nullable: bool = True
    charset: str | None = None  # None: not a character column (or unknown)
    generated: bool = False
    invisible: bool = False
    # ON UPDATE CURRENT_TIMESTAMP: the server stamps it on every UPDATE that leaves it out of its SET
    on_update: bool = False
    # a column the server adds and no statement may name (MariaDB's DB_ROW_HASH_n of a UNIQUE ... USING
    # HASH key): never written nor compared
    hidden: bool = False
    enum_values: tuple[str, ...] | None = None
    set_values: tuple[str, ...] | None = None
    column_type: str = ""  # the full type as the source prints it (varchar(10), int(11) unsigned); "" unknown
    dropped: bool = False  # --ddl keep: dropped since the binlog wrote it; never written nor compared
    # The schema history undid a MODIFY/CHANGE of it: its signedness before is known only to a table
    # map that carries signedness (binlog_row_metadata MINIMAL or FULL)
    unsure_sign: str = ""  # the DDL that left it unsure ("" when sure)
    # Its definition after the name as the DDL the schema history read gave it (type, charset,
    # default, comment...: what CHANGE COLUMN takes to put it back); "" when not known
    definition: str = ""


@dataclass(slots=True)
class TableSchema:
    database: str
    table: str
    columns: list[Column]
    primary_key: tuple[int, ...] = ()
    unique_keys: list[tuple[int, ...]] = field(default_factory=list)  # NOT NULL unique keys only
    source: str = ""  # binlog | server | ddl
    system_versioned: bool = False  # MariaDB WITH SYSTEM VERSIONING
    sequence: bool = False  # a MariaDB SEQUENCE: NEXTVAL and SETVAL are logged as row writes to it
    long_hashes: int = 0  # MariaDB UNIQUE ... USING HASH keys: each adds a hidden column to the binlog's rows
    keys: dict[str, str] | None = None  # schema history: key name (lower case) -> definition; None unknown
    # schema history: the table options named by the DDL that made it (kind -> text: engine ->
    # ENGINE=InnoDB); None unknown, and a kind not in it is the server's default at its CREATE
    options: dict[str, str] | None = None
    # every column of any unique index (primary, nullable, prefix ones too); None: not known
    unique_columns: frozenset[int] | None = None

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

    # What the user gave, as messages name it: "server information_schema of NAME", "DDL file F".
    @property
    def description(self) -> str: ...


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


def _as_of_incident(source: str) -> str:
    """What to do when the schema source describes the table as it is now, not as it was."""
    if source == "ddl":
        return (
            "the schema file must describe the table as of the incident, or --ddl keep follows the DDL since"
        )
    return "give its definition as of the incident with --schema-file, or --ddl keep to follow the DDL since"


_ROW_HASH = re.compile(r"DB_ROW_HASH_\d+")


def with_hidden_hashes(schema: TableSchema, tmap: TableMap) -> TableSchema:
    """The schema with the hidden DB_ROW_HASH_n columns MariaDB logs last for its UNIQUE ... USING HASH
    keys, when the table map has exactly those more columns (BIGINT), and no others."""
    extra = tmap.column_count - len(schema.columns)
    if not 0 < extra <= schema.long_hashes or any(t != T.LONGLONG for t in tmap.real_types[-extra:]):
        return schema
    hidden = [Column(f"DB_ROW_HASH_{n}", "bigint", generated=True, hidden=True) for n in range(1, extra + 1)]
    return replace(schema, columns=[*schema.columns, *hidden])


def check_schema(schema: TableSchema, tmap: TableMap, position: int | None) -> None:
    """Raise SchemaMismatch when the schema cannot describe this table map's rows."""
    where = f" at position {position}" if position is not None else ""
    if len(schema.columns) != tmap.column_count:
        raise SchemaMismatch(
            f"table {tmap.qualified_name}{where}: the binlog has {tmap.column_count} columns, "
            f"the {schema.source or 'given'} schema has {len(schema.columns)} "
            f"(was the table altered since? {_as_of_incident(schema.source)})"
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
                generated=bool(_ROW_HASH.fullmatch(name)) and tmap.real_types[i] == T.LONGLONG,
                hidden=bool(_ROW_HASH.fullmatch(name)) and tmap.real_types[i] == T.LONGLONG,
                enum_values=tuple(v.decode("utf-8", "replace") for v in enum) if enum is not None else None,
                set_values=tuple(v.decode("utf-8", "replace") for v in set_) if set_ is not None else None,
            )
        )
    pk = tuple(i for i, _prefix in tmap.primary_key or ())
    # A key on a column prefix does not identify a row by the prefix alone; the full column is what we have.
    return TableSchema(tmap.database, tmap.table, columns, pk, source="binlog")


# The old (pre-MySQL 5.6.4) temporal type codes. MariaDB logs its own fractional "hires"
# TIME(n)/DATETIME(n)/TIMESTAMP(n) (tables made with mysql56_temporal_format=OFF) under these same codes
# and, unlike TIME2/DATETIME2/TIMESTAMP2, without a metadata byte: Field_time_hires & co. keep
# Field::do_save_field_metadata's "no metadata" (sql/field.h), so only the schema knows n.
_LEGACY_TEMPORAL: dict[int, str] = {T.TIME: "TIME", T.DATETIME: "DATETIME", T.TIMESTAMP: "TIMESTAMP"}
_PRECISION = re.compile(r"\((\d+)\)")


def temporal_precision(column: Column) -> int | None:
    """The fractional-second digits of a TIME/DATETIME/TIMESTAMP column as its type text gives them
    (``datetime(6)`` -> 6, ``time`` -> 0); None when its source did not say its type."""
    if column.data_type not in ("time", "datetime", "timestamp") or not column.column_type:
        return None
    found = _PRECISION.search(column.column_type)
    return int(found.group(1)) if found else 0


def legacy_temporal_specs(
    tmap: TableMap, schema: TableSchema | None, unsigned: tuple[bool, ...] | None, mariadb: bool
) -> tuple[ColumnSpec, ...] | None:
    """The column specs of a table map whose old-code temporal columns are MariaDB "hires" ones, with
    their precision from the schema; None when the table map's own specs decode its rows.

    A MySQL binlog's old codes are always the fixed old layouts. A MariaDB binlog's may be either, so
    a column whose precision the schema does not give is a SchemaMismatch naming it."""
    specs: list[ColumnSpec] | None = None
    for index, (code, meta) in enumerate(zip(tmap.column_types, tmap.column_meta, strict=True)):
        if code not in _LEGACY_TEMPORAL or meta:
            continue
        column = schema.columns[index] if schema is not None and index < len(schema.columns) else None
        fsp = temporal_precision(column) if column is not None else None
        if fsp is None:
            if mariadb:
                raise SchemaMismatch(_unknown_precision(tmap, index, schema))
            continue
        if fsp:
            specs = specs or list(tmap.specs(unsigned))
            specs[index] = ColumnSpec(code, fsp, specs[index].unsigned)
    return tuple(specs) if specs else None


def _unknown_precision(tmap: TableMap, index: int, schema: TableSchema | None) -> str:
    code = tmap.column_types[index]
    name = schema.columns[index].name if schema is not None and index < len(schema.columns) else ""
    column = f"column {index + 1}" + (f" `{name}`" if name else "")
    if schema is None:
        source = "no schema was given"
    elif schema.source == "binlog":
        source = "the binlog's column metadata names no types"
    else:
        source = f"the {schema.source or 'given'} schema does not give its type"
    return (
        f"table {tmap.qualified_name}: {column} has MariaDB's old {_LEGACY_TEMPORAL[code]} type code, which it "
        f"also logs for {_LEGACY_TEMPORAL[code]}(1..6) without the precision, and {source}: give the schema "
        "with --schema-dsn or --schema-file"
    )


# ---- information_schema ------------------------------------------------------------------------------

_COLUMNS_SQL = """
SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, CHARACTER_SET_NAME, EXTRA, ORDINAL_POSITION
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION
"""
_KEYS_SQL = """
SELECT s.INDEX_NAME, s.COLUMN_NAME, s.NON_UNIQUE, s.SUB_PART, s.INDEX_TYPE
FROM information_schema.STATISTICS s
WHERE s.TABLE_SCHEMA = %s AND s.TABLE_NAME = %s ORDER BY s.INDEX_NAME, s.SEQ_IN_INDEX
"""


def schema_from_rows(
    database: str, table: str, columns: list[tuple], keys: list[tuple], source: str
) -> TableSchema:
    cols = []
    for name, data_type, column_type, is_nullable, charset, extra, _pos in columns:
        data_type = str(data_type).lower()
        members = str(column_type)  # ENUM/SET members keep their case: 'A' and 'a' can both be members
        column_type = members.lower()
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
                on_update="ON UPDATE" in extra,
                enum_values=_enum_members(members) if data_type == "enum" else None,
                set_values=_enum_members(members) if data_type == "set" else None,
                column_type=column_type,
            )
        )
    index_of = {c.name.lower(): i for i, c in enumerate(cols)}
    by_index: dict[str, list[tuple[int, bool, Any]]] = {}
    hashed: set[str] = set()
    for index_name, column_name, non_unique, sub_part, *index_type in keys:
        by_index.setdefault(str(index_name), []).append(
            (index_of[str(column_name).lower()], bool(int(non_unique)), sub_part)
        )
        if index_type and str(index_type[0]).upper() == "HASH" and not int(non_unique):
            hashed.add(str(index_name))
    primary: tuple[int, ...] = ()
    uniques: list[tuple[int, ...]] = []
    unique_columns = frozenset(i for parts in by_index.values() if not parts[0][1] for i, _, _ in parts)
    for index_name, parts in by_index.items():
        if any(non_unique for _, non_unique, _ in parts) or any(sub for _, _, sub in parts):
            continue
        key = tuple(i for i, _, _ in parts)
        if index_name == "PRIMARY":
            primary = key
        elif all(not cols[i].nullable for i in key):
            uniques.append(key)
    uniques.sort(key=len)
    return TableSchema(
        database,
        table,
        cols,
        primary,
        uniques,
        source=source,
        long_hashes=len(hashed),
        unique_columns=unique_columns,
    )


_TABLE_TYPE_SQL = (
    "SELECT TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s"
)


class ServerSchema:
    """Schemas read from a live server's information_schema (cached per table)."""

    def __init__(self, connect: Any, name: str = "", replication: Any = None):
        self.connect = connect  # a callable returning a DB-API connection (its binlog is read too)
        self.name = name  # host:port or the configured name; never a password
        # the server's address for the replication protocol (a DSN or ServerAddress: what SHOW BINLOG
        # EVENTS cannot show of its binlog is read that way); None: the SQL session only
        self.replication = replication
        self._cache: dict[tuple[str, str], TableSchema | None] = {}

    @property
    def description(self) -> str:
        return f"server information_schema of {self.name}" if self.name else "server information_schema"

    def lookup(self, database: str, table: str) -> TableSchema | None:
        key = (database, table)
        if key not in self._cache:
            conn = self.connect()
            try:
                with conn.cursor() as cur:
                    cur.execute(_COLUMNS_SQL, key)
                    columns = list(cur.fetchall())
                    cur.execute(_KEYS_SQL, key)
                    keys = list(cur.fetchall())
                    cur.execute(_TABLE_TYPE_SQL, key)
                    kind = cur.fetchone()
            finally:
                conn.close()
            schema = schema_from_rows(database, table, columns, keys, "server") if columns else None
            if schema is not None and kind is not None:
                schema.system_versioned = str(kind[0]).upper() == "SYSTEM VERSIONED"
                schema.sequence = str(kind[0]).upper() == "SEQUENCE"
            self._cache[key] = schema
        return self._cache[key]


class StaticSchema:
    """Schemas given up front (parsed from a DDL file, or built by a test)."""

    def __init__(self, schemas: list[TableSchema], path: str | None = None):
        self._schemas = {(s.database.lower(), s.table.lower()): s for s in schemas}
        self._tables = {s.table.lower(): s for s in schemas}
        self.path = path  # the DDL file they come from

    @property
    def description(self) -> str:
        return f"DDL file {self.path}" if self.path else "given schemas"

    def lookup(self, database: str, table: str) -> TableSchema | None:
        return self._schemas.get((database.lower(), table.lower())) or self._schemas.get(("", table.lower()))


class SchemaResolver:
    """Picks the schema of each table map and checks it against the map.

    With column names in the binlog (binlog_row_metadata=FULL) the names are the truth: the source
    adds what the binlog cannot say (keys, generated columns, SQL types), column by column BY NAME,
    and a binlog column the source lacks or types differently is a SchemaMismatch. Without names,
    the source's columns are matched by position (count and types checked here; whether the table
    changed since is the job's later check, rollback.job.schema_proof)."""

    def __init__(self, source: SchemaSource | None = None):
        self.source = source
        self._checked: dict[tuple[str, str, bytes, tuple[int, ...]], TableSchema | None] = {}

    def resolve(self, tmap: TableMap, position: int | None = None) -> TableSchema | None:
        key = (tmap.database, tmap.table, tmap.column_types, tmap.column_meta)
        if key in self._checked:
            return self._checked[key]
        where = f" at position {position}" if position is not None else ""
        named = schema_from_table_map(tmap)
        source = self.source
        if source is None:
            if named is not None and _looks_versioned(named, tmap):
                raise SchemaMismatch(
                    f"table {tmap.qualified_name}{where} looks system-versioned (its binlog columns end with "
                    "row_start, row_end): its row changes include history rows that plain DML cannot "
                    "restore; give a schema source (--schema-dsn) if it is not versioned"
                )
            if named is not None and [n.lower() for n in named.names] == list(_SEQUENCE_COLUMNS):
                raise SchemaMismatch(_sequence(tmap, where))
            schema = named
        else:
            found = source.lookup(tmap.database, tmap.table)
            if found is None:
                raise SchemaMismatch(_missing_table(tmap, where, source, named is not None))
            if found.sequence:
                raise SchemaMismatch(_sequence(tmap, where))
            if found.system_versioned:
                raise SchemaMismatch(
                    f"table {tmap.qualified_name}{where} is system-versioned (WITH SYSTEM VERSIONING): its "
                    "row changes include the history rows the server keeps, which plain DML cannot write or "
                    "remove; mysql-rollback does not roll back system-versioned tables"
                )
            schema = (
                _by_name(named, found, tmap, where) if named is not None else with_hidden_hashes(found, tmap)
            )
        if schema is not None:
            check_schema(schema, tmap, position)
        self._checked[key] = schema
        return schema


# The columns of a MariaDB SEQUENCE, as FULL metadata names them.
_SEQUENCE_COLUMNS = (
    "next_not_cached_value",
    "minimum_value",
    "maximum_value",
    "start_value",
    "increment",
    "cache_size",
    "cycle_option",
    "cycle_count",
)


def _sequence(tmap: TableMap, where: str) -> str:
    return (
        f"table {tmap.qualified_name}{where} is a SEQUENCE: NEXTVAL and SETVAL are logged as row writes to it, "
        "which no DML can undo (the server refuses INSERT and DELETE on a sequence); select the other tables "
        "(--table; --allow-partial-transactions where a transaction wrote both), and set the sequence with "
        "SETVAL if it must go back"
    )


def _missing_table(tmap: TableMap, where: str, source: SchemaSource, named: bool) -> str:
    if isinstance(source, StaticSchema) and source.path:
        return f"table {tmap.qualified_name}{where}: the schema file {source.path} has no CREATE TABLE for it"
    # Without names a schema file is matched by position: the DDL that dropped the table follows the
    # range, and only --trust-schema accepts a definition the DDL after the range cannot confirm.
    trust = "" if named else " and --trust-schema"
    return (
        f"table {tmap.qualified_name}{where} no longer exists at the schema source ({source.description}); "
        f"give its definition as of the incident with --schema-file{trust}"
    )


def _looks_versioned(schema: TableSchema, tmap: TableMap) -> bool:
    """MariaDB's implicit system-versioning columns, as FULL metadata names them."""
    names = [n.lower() for n in schema.names]
    return names[-2:] == ["row_start", "row_end"] and tmap.real_types[-2] in (T.TIMESTAMP2, T.LONGLONG)


def _by_name(named: TableSchema, found: TableSchema, tmap: TableMap, where: str) -> TableSchema:
    """The binlog's columns, completed from the source's columns of the same names."""
    position_of = {c.name.lower(): j for j, c in enumerate(found.columns)}
    mine_of: dict[int, int] = {}  # source column index -> binlog column index
    real = tmap.real_types
    for i, mine in enumerate(named.columns):
        j = position_of.get(mine.name.lower())
        if j is None and mine.hidden:
            continue
        if j is None:
            raise SchemaMismatch(
                f"table {tmap.qualified_name}{where}: column {i + 1} `{mine.name}` of the binlog is not in the "
                f"{found.source} schema (renamed or dropped since the incident?); {_as_of_incident(found.source)}"
            )
        theirs = found.columns[j]
        allowed = _COMPATIBLE.get(theirs.data_type)
        if allowed is not None and real[i] not in allowed:
            raise SchemaMismatch(
                f"table {tmap.qualified_name}{where}: column {i + 1} `{mine.name}` is {theirs.data_type} in the "
                f"{found.source} schema but type code {real[i]} in the binlog (altered since the incident?); "
                f"{_as_of_incident(found.source)}"
            )
        mine.generated = theirs.generated
        mine.on_update = theirs.on_update
        mine.data_type = theirs.data_type
        mine.column_type = theirs.column_type  # the precision of a MariaDB 'hires' temporal column
        mine_of[j] = i

    def in_binlog(key: tuple[int, ...]) -> tuple[int, ...] | None:
        return tuple(mine_of[j] for j in key) if key and all(j in mine_of for j in key) else None

    if not named.primary_key:
        named.primary_key = in_binlog(found.primary_key) or ()
    named.unique_keys = [k for k in map(in_binlog, found.unique_keys) if k is not None]
    if found.unique_columns is not None:  # a unique column the binlog does not carry is set by nothing
        named.unique_columns = frozenset(mine_of[j] for j in found.unique_columns if j in mine_of)
    return named


# ---- DDL files -------------------------------------------------------------------------------------
#
# CREATE TABLE statements as SHOW CREATE TABLE prints them (MariaDB and MySQL), or as a person wrote
# them. A small scanner keeps quoted strings ('...' with '' and backslash escapes), quoted identifiers
# (`...` with ``) and comments apart from the structure, so that names and defaults may hold any
# character. MySQL's versioned comments (/*!80023 INVISIBLE */) count as text, other comments do not.

_IDENT = r"(?:`(?:[^`]|``)+`|\w+)"
_CREATE_RE = re.compile(
    rf"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"
    rf"({_IDENT})(?:\s*\.\s*({_IDENT}))?\s*\(",
    re.IGNORECASE,
)
_VERSIONING = re.compile(r"\bWITH\s+SYSTEM\s+VERSIONING\b|\bAS\s+ROW\s+(?:START|END)\b", re.IGNORECASE)
_KEY_WORDS = frozenset(
    {"PRIMARY", "UNIQUE", "KEY", "INDEX", "CONSTRAINT", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK", "PERIOD"}
)
_CHARACTER_TYPES = frozenset(
    {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set", "character", "nchar"}
)
_BINARY_TYPES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})


def _unquote(name: str) -> str:
    name = name.strip()
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def _strip_comments(text: str) -> str:
    """The text without comments (versioned /*!NNNNN ... */ comments keep their content), quotes intact."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"`":
            end = _quoted_end(text, i)
            out.append(text[i:end])
            i = end
        elif text.startswith("/*!", i) or text.startswith("/*M!", i):  # MariaDB's own: /*M!100301 ... */
            i += 3 if text[i + 2] == "!" else 4
            while i < n and text[i].isdigit():
                i += 1
            out.append(" ")
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            out.append(" ")
        elif text.startswith("*/", i):  # the end of a versioned comment
            i += 2
            out.append(" ")
        elif ch == "#" or (text.startswith("--", i) and (i + 2 == n or text[i + 2] in " \t\r\n")):
            end = text.find("\n", i)
            i = n if end < 0 else end
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _quoted_end(text: str, start: int) -> int:
    """The index just past the quoted string or identifier that opens at `start`."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and quote != "`":
            i += 2
            continue
        if ch == quote:
            if i + 1 < len(text) and text[i + 1] == quote:
                i += 2
                continue
            return i + 1
        i += 1
    return len(text)


def _closing_paren(text: str, open_at: int) -> int:
    """The index of the parenthesis that closes the one at `open_at` (len(text) when none does)."""
    depth, i = 0, open_at
    while i < len(text):
        ch = text[i]
        if ch in "'\"`":
            i = _quoted_end(text, i)
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(text)


def _split_top_level(body: str, separator: str = ",") -> list[str]:
    parts: list[str] = []
    depth, start, i = 0, 0, 0
    while i < len(body):
        ch = body[i]
        if ch in "'\"`":
            i = _quoted_end(body, i)
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == separator and depth == 0:
            parts.append(body[start:i].strip())
            start = i + 1
        i += 1
    if body[start:].strip():
        parts.append(body[start:].strip())
    return parts


def _blank_strings(text: str) -> str:
    """Quoted strings replaced by '' (keywords inside DEFAULT 'NOT NULL' are not keywords)."""
    out, i = [], 0
    while i < len(text):
        if text[i] in "'\"":
            end = _quoted_end(text, i)
            out.append("''")
            i = end
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _string_value(literal: str) -> str:
    """The value of a quoted string literal: '' and backslash escapes undone."""
    inner = literal[1:-1]
    out, i = [], 0
    while i < len(inner):
        ch = inner[i]
        if ch == "\\" and i + 1 < len(inner):
            nxt = inner[i + 1]
            out.append({"n": "\n", "t": "\t", "r": "\r", "0": "\0", "Z": "\x1a"}.get(nxt, nxt))
            i += 2
        elif ch == literal[0] and i + 1 < len(inner) and inner[i + 1] == ch:
            out.append(ch)
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _enum_members(column_type: str) -> tuple[str, ...]:
    """Members of enum('a','b') / set(...) as a column type prints them."""
    open_at = column_type.index("(")
    inner = column_type[open_at + 1 : _closing_paren(column_type, open_at)]
    return tuple(_string_value(part) for part in _split_top_level(inner) if part[:1] in ("'", '"'))


def _charset_of(rest: str) -> str | None:
    """The charset a column definition names, directly or through its collation."""
    m = re.search(r"\b(?:CHARACTER\s+SET|CHARSET)\s+(\w+)", rest, re.I)
    if m:
        return m.group(1).lower()
    m = re.search(r"\bCOLLATE\s+(\w+)", rest, re.I)
    if m:
        return m.group(1).lower().split("_", 1)[0]  # utf8mb4_bin -> utf8mb4, binary -> binary
    return None


def _table_charset(options: str) -> str | None:
    m = re.search(r"\b(?:CHARACTER\s+SET|CHARSET)\s*=?\s*(\w+)", options, re.I)
    if m:
        return m.group(1).lower()
    m = re.search(r"\bCOLLATE\s*=?\s*(\w+)", options, re.I)
    return m.group(1).lower().split("_", 1)[0] if m else None


def _key_columns(spec: str, index_of: dict[str, int]) -> tuple[int, ...] | None:
    """The columns of a key definition; None when a part is an expression or a column prefix."""
    open_at = spec.find("(")
    if open_at < 0:
        return None
    cols = []
    for part in _split_top_level(spec[open_at + 1 : _closing_paren(spec, open_at)]):
        m = re.fullmatch(rf"({_IDENT})(?:\s+(?:ASC|DESC))?", part.strip(), re.I)
        if not m or _unquote(m.group(1)).lower() not in index_of:
            return None  # a functional key part ((abs(x))) or a prefix (name(10)): not a column's value
        cols.append(index_of[_unquote(m.group(1)).lower()])
    return tuple(cols) or None


def _column(item: str, table_charset: str | None) -> tuple[Column, bool, bool] | None:
    """A column definition -> (column, inline PRIMARY KEY, inline UNIQUE)."""
    m = re.match(rf"({_IDENT})\s+(\w+)", item, re.S)
    if not m:
        return None
    name, data_type = _unquote(m.group(1)), m.group(2).lower()
    rest = item[m.end() :]
    type_args = ""
    if rest.lstrip().startswith("("):
        open_at = item.index("(", m.end())
        close = _closing_paren(item, open_at)
        type_args = item[open_at : close + 1]
        rest = item[close + 1 :]
    bare = _blank_strings(rest)
    upper = " ".join(bare.upper().split())
    generated = bool(
        re.search(r"\bGENERATED\s+ALWAYS\b|^\s*AS\s*\(|\s(?:VIRTUAL|PERSISTENT|STORED)\b", upper)
    )
    # PRIMARY KEY, or KEY alone (MySQL's shorthand for it), not UNIQUE KEY
    primary = bool(re.search(r"\bPRIMARY\s+KEY\b", upper) or re.search(r"(?<!UNIQUE)\s+KEY\b", " " + upper))
    unique = bool(re.search(r"\bUNIQUE\b", upper))
    charset = _charset_of(bare)
    if charset is None and data_type in _CHARACTER_TYPES:
        charset = table_charset
    if data_type in _BINARY_TYPES:
        charset = "binary"
    members = _enum_members(data_type + type_args) if data_type in ("enum", "set") and type_args else None
    column = Column(
        name=name,
        data_type=data_type,
        unsigned=bool(re.search(r"\bUNSIGNED\b", upper)),
        nullable=not re.search(r"\bNOT\s+NULL\b", upper) and not primary,
        charset=charset,
        generated=generated,
        invisible=bool(re.search(r"\bINVISIBLE\b", upper)),
        on_update=bool(re.search(r"\bON\s+UPDATE\b", upper)),
        enum_values=members if data_type == "enum" else None,
        set_values=members if data_type == "set" else None,
        column_type=(
            data_type + type_args + (" unsigned" if re.search(r"\bUNSIGNED\b", upper) else "")
        ).lower(),
    )
    return column, primary, unique


def parse_ddl(text: str, default_database: str = "") -> list[TableSchema]:
    """CREATE TABLE statements (as SHOW CREATE TABLE prints them) -> schemas.

    Statements without a column list (CREATE TABLE ... LIKE, ... AS SELECT without one) describe
    nothing and are skipped."""
    text = _strip_comments(text)
    schemas = []
    position = 0
    while True:
        match = _CREATE_RE.search(text, position)
        if match is None:
            break
        first, second = match.group(1), match.group(2)
        database, table = (
            (_unquote(first), _unquote(second)) if second else (default_database, _unquote(first))
        )
        open_at = match.end() - 1
        close = _closing_paren(text, open_at)
        end = text.find(";", close)
        end = len(text) if end < 0 else end
        position = close + 1
        options = text[close + 1 : end]
        next_create = _CREATE_RE.search(text, close + 1)
        if next_create is not None and next_create.start() < end:
            options = text[close + 1 : next_create.start()]
        table_charset = _table_charset(options)
        columns: list[Column] = []
        key_specs: list[str] = []
        inline_keys: list[tuple[str, int]] = []
        for item in _split_top_level(text[open_at + 1 : close]):
            head = item.split(None, 1)[0].upper() if item.split() else ""
            if head in _KEY_WORDS:
                key_specs.append(item)
                continue
            parsed = _column(item, table_charset)
            if parsed is None:
                continue
            column, primary, unique = parsed
            if primary:
                inline_keys.append(("PRIMARY", len(columns)))
            elif unique:
                inline_keys.append(("UNIQUE", len(columns)))
            columns.append(column)
        index_of = {c.name.lower(): i for i, c in enumerate(columns)}
        primary_key: tuple[int, ...] = ()
        uniques: list[tuple[int, ...]] = []
        for kind, index in inline_keys:
            if kind == "PRIMARY":
                primary_key = (index,)
            elif not columns[index].nullable:
                uniques.append((index,))
        for spec in key_specs:
            upper = " ".join(_blank_strings(spec).upper().split())
            is_primary = bool(re.match(r"(?:CONSTRAINT\s+(?:\S+\s+)?)?PRIMARY\s+KEY\b", upper))
            is_unique = bool(re.match(r"(?:CONSTRAINT\s+(?:\S+\s+)?)?UNIQUE\b", upper))
            if not (is_primary or is_unique):
                continue
            cols = _key_columns(spec, index_of)
            if cols is None:
                continue
            if is_primary:
                primary_key = cols
                for i in cols:
                    columns[i].nullable = False
            elif all(not columns[i].nullable for i in cols) and cols not in uniques:
                uniques.append(cols)
        uniques.sort(key=len)
        versioned = bool(_VERSIONING.search(_blank_strings(text[match.start() : close + 1] + options)))
        schemas.append(
            TableSchema(
                database, table, columns, primary_key, uniques, source="ddl", system_versioned=versioned
            )
        )
    return schemas


def schema_from_file(path: str | Path, default_database: str = "") -> StaticSchema:
    return StaticSchema(parse_ddl(Path(path).read_text(encoding="utf-8"), default_database), str(path))
