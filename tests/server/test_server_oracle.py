"""The server as oracle: values written to the scratch MariaDB, decoded from its binlog, equal what
SELECT returns for them.

For every column type MariaDB supports, rows of edge values (min, max, zero, NULL, negative,
fractional seconds 0-6, zero dates, negative TIME, empty strings, 4-byte UTF-8, latin1, binary with
0x00 bytes, large BLOBs and JSON documents, BIT(1..64), ENUM/SET, DECIMAL(65,30), FLOAT/DOUBLE, YEAR,
TIMESTAMP under a non-UTC session time zone, GEOMETRY) are inserted, updated and deleted; the three
binlog ranges are decoded and every image compared with SELECTs that print the exact stored value:
HEX() for bytes, CAST(... AS CHAR) for temporals and DECIMAL, UNIX_TIMESTAMP() for TIMESTAMP,
`+0` for BIT/ENUM/SET, CAST(... AS DOUBLE) for FLOAT.

Then the same with binlog_row_metadata=FULL (names, charsets and signedness from the binlog) and
with MariaDB's binlog compression (the compressed QUERY/ROWS events 165-171).
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest

from rollback.base.errors import BinlogFormatError
from rollback.binlog.columns import MISSING, ColumnSpec
from rollback.binlog.constants import ColumnType, EventType
from rollback.binlog.decode import RowsBatch, decode_stream, state_at
from rollback.binlog.reader import read_file_facts
from rollback.binlog.table_map import TableMap
from tests.support.decoding import iter_row_batches

SESSION = ["SET SESSION time_zone = '+05:30'", "SET SESSION sql_mode = ''"]


@dataclass(frozen=True)
class Column:
    name: str
    ddl: str
    kind: str  # how the SELECT prints it: int dec float double bit temporal timestamp bytes binary code
    select: str = ""  # the SELECT expression ({c} is the column); default by kind
    length: int = 0  # BINARY(n): the stored length (the binlog drops trailing 0x00)

    @property
    def expression(self) -> str:
        if self.select:
            return self.select.format(c=f"`{self.name}`")
        return {
            "int": "{c}",
            "dec": "CAST({c} AS CHAR)",
            "float": "CAST({c} AS DOUBLE)",
            "double": "{c}",
            "bit": "{c} + 0",
            "code": "{c} + 0",
            "temporal": "CAST({c} AS CHAR)",
            "timestamp": "CAST(UNIX_TIMESTAMP({c}) AS CHAR)",
            "bytes": "HEX({c})",
            "binary": "HEX({c})",
        }[self.kind].format(c=f"`{self.name}`")


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[str, ...], ...]  # SQL literals, without the id

    def create(self, db: str) -> str:
        body = ", ".join(f"`{c.name}` {c.ddl}" for c in self.columns)
        return f"CREATE TABLE {db}.{self.name} (id INT PRIMARY KEY, {body}) ENGINE=InnoDB"

    def insert(self, db: str) -> str:
        values = ", ".join(f"({i + 1}, {', '.join(row)})" for i, row in enumerate(self.rows))
        return f"INSERT INTO {db}.{self.name} VALUES {values}"

    def updates(self, db: str) -> list[str]:
        """Row i takes the values of row i+1 (the last one those of the first)."""
        out = []
        for i in range(len(self.rows)):
            source = self.rows[(i + 1) % len(self.rows)]
            sets = ", ".join(f"`{c.name}` = {v}" for c, v in zip(self.columns, source, strict=True))
            out.append(f"UPDATE {db}.{self.name} SET {sets} WHERE id = {i + 1}")
        return out

    def select(self, db: str) -> str:
        return f"SELECT id, {', '.join(c.expression for c in self.columns)} FROM {db}.{self.name} ORDER BY id"


def _ints() -> Table:
    types = [("TINYINT", 8), ("SMALLINT", 16), ("MEDIUMINT", 24), ("INT", 32), ("BIGINT", 64)]
    columns = []
    for sql, _ in types:
        columns.append(Column(f"s_{sql.lower()}", sql, "int"))
        columns.append(Column(f"u_{sql.lower()}", f"{sql} UNSIGNED", "int"))
    row_min = [v for _, b in types for v in (str(-(1 << (b - 1))), "0")]
    row_max = [v for _, b in types for v in (str((1 << (b - 1)) - 1), str((1 << b) - 1))]
    zero = ["0"] * 10
    null = ["NULL"] * 10
    negative = [v for _ in types for v in ("-1", "1")]
    high = [
        v for _, b in types for v in (str(-(1 << (b - 2))), str(1 << (b - 1)))
    ]  # sign bit of unsigned set
    return Table(
        "ints",
        tuple(columns),
        (tuple(row_min), tuple(row_max), tuple(zero), tuple(null), tuple(negative), tuple(high)),
    )


def _numbers() -> Table:
    columns = (
        Column("d65", "DECIMAL(65,30)", "dec"),
        Column("d10", "DECIMAL(10,2)", "dec"),
        Column("d5", "DECIMAL(5,0)", "dec"),
        Column("d18", "DECIMAL(18,9)", "dec"),
        Column("f", "FLOAT", "float"),
        Column("fu", "FLOAT UNSIGNED", "float"),
        Column("dbl", "DOUBLE", "double"),
        Column("b1", "BIT(1)", "bit"),
        Column("b5", "BIT(5)", "bit"),
        Column("b8", "BIT(8)", "bit"),
        Column("b17", "BIT(17)", "bit"),
        Column("b64", "BIT(64)", "bit"),
        Column("y", "YEAR", "int"),
    )
    big = "9" * 35 + "." + "9" * 30
    rows = (
        (
            f"-{big}",
            "-12345678.90",
            "-99999",
            "-123456789.123456789",
            "-3.4028234e38",
            "0",
            "-1.7976931348623157e308",
            "b'0'",
            "b'10101'",
            "b'11111111'",
            "b'10000000000000001'",
            "0xFFFFFFFFFFFFFFFF",
            "1901",
        ),
        (
            big,
            "12345678.90",
            "99999",
            "999999999.999999999",
            "3.14159",
            "3.4028234e38",
            "2.718281828459045",
            "b'1'",
            "b'0'",
            "b'10000000'",
            "b'1'",
            "0x8000000000000001",
            "2155",
        ),
        ("0", "0", "0", "0", "0", "0", "0", "b'0'", "b'0'", "b'0'", "b'0'", "0", "0"),
        ("NULL",) * 13,
        (
            "0.000000000000000000000000000001",
            "-0.01",
            "-1",
            "0.000000001",
            "1.17549435e-38",
            "1e-45",
            "5e-324",
            "1",
            "31",
            "127",
            "65536",
            "0x0102030405060708",
            "2000",
        ),
        (
            "-0.000000000000000000000000000001",
            "0.5",
            "1",
            "-0.000000001",
            "-0.1",
            "0.1",
            "-2.2250738585072014e-308",
            "0",
            "16",
            "1",
            "131071",
            "1",
            "69",
        ),
    )
    return Table("numbers", columns, rows)


def _temporals() -> Table:
    columns = [Column("d", "DATE", "temporal")]
    columns += [Column(f"dt{n}", f"DATETIME({n})", "temporal") for n in range(7)]
    columns += [Column(f"tm{n}", f"TIME({n})", "temporal") for n in range(7)]
    columns += [Column(f"ts{n}", f"TIMESTAMP({n}) NULL", "timestamp") for n in (0, 1, 3, 6)]

    def frac(text: str, n: int) -> str:
        return text + ("." + "987654"[:n] if n else "")

    def row(date: str, datetime: str, times: list[str], stamp: str) -> tuple[str, ...]:
        return (date, *[f"'{frac(datetime, n)}'" for n in range(7)], *times, *[stamp] * 4)

    rows = (
        row(
            "'1000-01-01'",
            "1000-01-01 00:00:00",
            ["'-838:59:59'"] + [f"'-838:59:58.{'9' * n}'" for n in range(1, 7)],
            "'1970-01-01 05:30:01'",
        ),  # the least TIMESTAMP: 1 s after the epoch, in +05:30
        row(
            "'9999-12-31'",
            "9999-12-31 23:59:59",
            ["'838:59:59'"] + [f"'838:59:58.{'9' * n}'" for n in range(1, 7)],
            "'2038-01-19 08:44:07'",
        ),  # the greatest: 2^31-1 s
        row("'0000-00-00'", "0000-00-00 00:00:00", ["'00:00:00'"] * 7, "'0000-00-00 00:00:00'"),
        ("NULL",) * len(columns),
        row(
            "'2024-02-29'",
            "2024-02-29 12:34:56",
            [f"'-12:34:56.{'789012'[:n]}'" if n else "'-12:34:56'" for n in range(7)],
            "'2024-02-29 12:34:56.654321'",
        ),
        row(
            "'2024-00-00'",
            "2024-00-15 10:00:00",
            [f"'-00:00:01.{'5' * n}'" if n else "'-00:00:01'" for n in range(7)],
            "'2001-09-09 07:16:40.5'",
        ),
        row(
            "'1999-12-31'",
            "2000-01-01 00:00:00",
            [f"'00:00:00.{'0' * (n - 1)}1'" if n else "'-00:00:00'" for n in range(7)],
            "'2024-03-31 02:30:00.000001'",
        ),
    )
    return Table("temporals", tuple(columns), rows)


def _hex(data: bytes, charset: str = "") -> str:
    return f"{charset} X'{data.hex()}'" if data else f"{charset} ''"


def _strings() -> Table:
    enum300 = ", ".join(f"'v{i}'" for i in range(300))
    set20 = ", ".join(f"'m{i}'" for i in range(20))
    columns = (
        Column("vc", "VARCHAR(20) CHARACTER SET utf8mb4", "bytes"),
        Column("vc_long", "VARCHAR(300) CHARACTER SET utf8mb4", "bytes"),
        Column("ch", "CHAR(10) CHARACTER SET utf8mb4", "bytes"),
        Column("ch_big", "CHAR(100) CHARACTER SET utf8mb4", "bytes"),
        Column("ch_latin", "CHAR(255) CHARACTER SET latin1", "bytes"),
        Column("vc_latin", "VARCHAR(50) CHARACTER SET latin1", "bytes"),
        Column("bin", "BINARY(8)", "binary", length=8),
        Column("vbin", "VARBINARY(20)", "bytes"),
        Column("tb", "TINYBLOB", "bytes"),
        Column("bl", "BLOB", "bytes"),
        Column("mb", "MEDIUMBLOB", "bytes"),
        Column("lb", "LONGBLOB", "bytes"),
        Column("tx", "TEXT CHARACTER SET utf8mb4", "bytes"),
        Column("js", "JSON", "bytes"),
        Column("en", "ENUM('a','b','c')", "code"),
        Column("en300", f"ENUM({enum300})", "code"),
        Column("st", "SET('x','y','z','w')", "code"),
        Column("st20", f"SET({set20})", "code"),
        Column("g", "GEOMETRY", "bytes"),
        Column("p", "POINT", "bytes"),
    )
    emoji = "😀𝄞 ok".encode()
    json_doc = '{"k": [' + ", ".join(f'{{"n": {i}, "s": "é{i}"}}' for i in range(4000)) + "]}"
    rows = (
        (
            "''",
            "''",
            "''",
            "''",
            "''",
            "''",
            "''",
            "''",
            "''",
            "''",
            "''",
            "''",
            "''",
            "'{}'",
            "''",
            "'v0'",
            "''",
            "''",
            "ST_GeomFromText('POINT(0 0)')",
            "ST_GeomFromText('POINT(0 0)')",
        ),
        (
            _hex(emoji, "_utf8mb4"),
            _hex("字".encode() * 300, "_utf8mb4"),
            "'ab  '",
            _hex("é".encode() * 100, "_utf8mb4"),
            _hex(b"caf\xe9 " * 51, "_latin1"),
            _hex(b"caf\xe9", "_latin1"),
            "X'0001000000000000'",
            "X'00FF00'",
            "X'00'",
            _hex(bytes(range(256)) * 3),
            "X'000000'",
            _hex(b"\x00\x01\x02" * 10),
            _hex(emoji, "_utf8mb4"),
            "'[1, 2.5, \"x\", null, true]'",
            "'c'",
            "'v299'",
            "'x,w'",
            "'m0,m19'",
            "ST_GeomFromText('POLYGON((0 0, 10 0, 10 10, 0 10, 0 0), (2 2, 3 2, 3 3, 2 2))', 4326)",
            "ST_GeomFromText('POINT(1.5 -2.25)')",
        ),
        (
            "'0123456789abcdefghij'",
            _hex("ä".encode() * 300, "_utf8mb4"),
            _hex("😀".encode() * 10, "_utf8mb4"),
            _hex("😀".encode() * 100, "_utf8mb4"),
            _hex(bytes(range(32, 255)) + b"xx", "_latin1"),
            "'plain'",
            "X'FFFFFFFFFFFFFFFF'",
            _hex(b"\x00" * 20),
            _hex(bytes(range(255))),
            _hex(b"\xab" * 65535),
            _hex(b"\x00\xff" * 50_000),
            f"REPEAT(X'00FF7F', {700_000})",
            _hex(("Ω" * 20_000).encode(), "_utf8mb4"),
            _hex(json_doc.encode(), "_utf8mb4"),
            "2",
            "'v150'",
            "'x,y,z,w'",
            "'m5'",
            "ST_GeomFromText('LINESTRING(0 0, 1 1, 2 4.5)')",
            "ST_GeomFromText('POINT(-180 90)')",
        ),
        ("NULL",) * 20,
    )
    return Table("strings", columns, rows)


TABLES = (_ints(), _numbers(), _temporals(), _strings())


# ---------------------------------------------------------------------------------------- decoding


def decode_range(
    rng,
    unsigned_for: Callable[[TableMap], tuple[bool, ...] | None] | None = None,
    specs_for: Callable[[TableMap], tuple[ColumnSpec, ...] | None] | None = None,
) -> list[RowsBatch]:
    batches = []
    for index, path in enumerate(rng.files):
        data = path.read_bytes()
        buf = memoryview(data)
        facts, _ = read_file_facts(buf, str(path))
        start = rng.start_position if index == 0 else 4
        stop = rng.stop_position if index == len(rng.files) - 1 else len(data)
        state = state_at(buf, facts, start, str(path))
        for _, batch in iter_row_batches(buf, state, start, stop, unsigned_for, specs_for=specs_for):
            if batch is not None:
                batches.append(batch)
    return batches


def event_types(rng) -> list[int]:
    types = []
    for index, path in enumerate(rng.files):
        data = path.read_bytes()
        facts, _ = read_file_facts(memoryview(data), str(path))
        start = rng.start_position if index == 0 else 4
        stop = rng.stop_position if index == len(rng.files) - 1 else len(data)
        state = state_at(data, facts, start, str(path))
        types += [d.raw.type_code for d in decode_stream(data, state, start, stop)]
    return types


def schema_unsigned(server, db: str) -> Callable[[TableMap], tuple[bool, ...] | None]:
    """Signedness from information_schema: what a schema source gives the decoder when the binlog has none."""
    cache: dict[str, tuple[bool, ...]] = {}

    def unsigned_for(tmap: TableMap) -> tuple[bool, ...] | None:
        if tmap.table not in cache:
            rows = server.query(
                "SELECT column_type FROM information_schema.columns WHERE table_schema=%s AND table_name=%s "
                "ORDER BY ordinal_position",
                (db, tmap.table),
            )
            cache[tmap.table] = tuple("unsigned" in r[0] for r in rows)
        return cache[tmap.table]

    return unsigned_for


def _seconds(text: str) -> Decimal:
    whole, _, frac = text.partition(".")
    if whole.startswith("0000-00-00"):
        return Decimal(0)
    seconds = calendar.timegm(time.strptime(whole, "%Y-%m-%d %H:%M:%S"))
    return Decimal(f"{seconds}.{frac}") if frac else Decimal(seconds)


def as_selected(column: Column, value: Any) -> Any:
    """Our decoded value in the form the column's SELECT expression prints."""
    if value is None:
        return None
    if column.kind in ("int", "bit", "code"):
        return int(value)
    if column.kind == "dec":
        return format(value, "f")
    if column.kind in ("float", "double"):
        return float(value)
    if column.kind == "temporal":
        return value
    if column.kind == "timestamp":
        return _seconds(value)
    if column.kind == "binary":
        return bytes(value).ljust(column.length, b"\x00").hex().upper()  # Field_string::pack drops the pad
    return bytes(value).hex().upper()


def selected(column: Column, value: Any) -> Any:
    if value is None:
        return None
    if column.kind in ("int", "bit", "code"):
        return int(value)
    if column.kind in ("float", "double"):
        return float(value)
    if column.kind == "timestamp":
        return Decimal(value)
    if isinstance(value, bytes):
        return value.decode()
    return value


def assert_image(table: Table, image: tuple, expected: tuple, what: str) -> None:
    assert image[0] == expected[0], what
    assert len(image) == len(table.columns) + 1
    for column, value, want in zip(table.columns, image[1:], expected[1:], strict=True):
        assert value is not MISSING
        got = as_selected(column, value)
        assert got == selected(column, want), f"{what} {table.name}.{column.name}: decoded {value!r:.200}"


def run_workload(server, db: str, tables=TABLES, unsigned_from_schema: bool = True):
    """Create, insert, update, delete; decode each range and compare with SELECT. Returns the ranges."""
    server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}"])
    setup = server.run_sql([t.create(db) for t in tables])
    unsigned_for = schema_unsigned(server, db) if unsigned_from_schema else None

    inserted = server.run_sql(SESSION + [t.insert(db) for t in tables])
    snapshot_a = {t.name: server.query(t.select(db)) for t in tables}
    updated = server.run_sql(SESSION + [u for t in tables for u in t.updates(db)])
    snapshot_b = {t.name: server.query(t.select(db)) for t in tables}
    deleted = server.run_sql(SESSION + [f"DELETE FROM {db}.{t.name}" for t in tables])
    by_name = {t.name: t for t in tables}

    def rows_of(batches: list[RowsBatch], kind: str) -> dict[str, list]:
        out: dict[str, list] = {}
        for batch in batches:
            assert batch.kind == kind and batch.table.database == db
            out.setdefault(batch.table.table, []).extend(batch.rows)
        return out

    inserts = rows_of(decode_range(inserted, unsigned_for), "insert")
    assert set(inserts) == set(by_name)
    for name, rows in inserts.items():
        assert len(rows) == len(snapshot_a[name])
        for row, want in zip(sorted(rows, key=lambda r: r[0]), snapshot_a[name], strict=True):
            assert_image(by_name[name], row, want, f"insert id {want[0]}")

    updates = rows_of(decode_range(updated, unsigned_for), "update")
    for name, pairs in updates.items():
        assert len(pairs) == len(snapshot_a[name])
        before = {row[0]: row for row in snapshot_a[name]}
        after = {row[0]: row for row in snapshot_b[name]}
        for old, new in pairs:
            assert_image(by_name[name], old, before[old[0]], f"update before id {old[0]}")
            assert_image(by_name[name], new, after[new[0]], f"update after id {new[0]}")

    deletes = rows_of(decode_range(deleted, unsigned_for), "delete")
    for name, rows in deletes.items():
        after = {row[0]: row for row in snapshot_b[name]}
        assert sorted(r[0] for r in rows) == sorted(after)
        for row in rows:
            assert_image(by_name[name], row, after[row[0]], f"delete id {row[0]}")
    return setup, inserted, updated, deleted


# -------------------------------------------------------------------------------------------- tests


def test_every_type_round_trips_through_the_binlog(scratch_server):
    _, inserted, updated, _ = run_workload(scratch_server, "oracle_types")
    # the transaction of every row change is named by its MariaDB GTID
    for rng in (inserted, updated):
        domain, server_id, first = (int(x) for x in rng.gtid_before.split("-"))
        last = int(rng.gtid_after.split("-")[2])
        expected = {f"{domain}-{server_id}-{seq}" for seq in range(first + 1, last + 1)}
        assert {b.tx.gtid for b in decode_range(rng)} == expected


def test_unsigned_columns_without_metadata_decode_signed(scratch_server):
    """Without binlog_row_metadata=FULL and without a schema the binlog cannot say UNSIGNED: the raw
    two's complement comes back, as mysqlbinlog shows it; the schema hook restores the value."""
    db = "oracle_unsigned"
    table = Table("u", (Column("v", "INT UNSIGNED", "int"),), (("4294967295",),))
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}", table.create(db)])
    rng = scratch_server.run_sql([table.insert(db)])
    (batch,) = decode_range(rng)
    assert batch.table.unsigned is None
    assert batch.rows == [(1, -1)]
    (batch,) = decode_range(rng, schema_unsigned(scratch_server, db))
    assert batch.rows == [(1, 4294967295)]


def test_full_row_metadata_names_charsets_and_signedness(scratch_server_factory):
    server = scratch_server_factory(row_metadata="FULL")
    db = "oracle_full"
    _, inserted, _, _ = run_workload(server, db, unsigned_from_schema=False)
    collations = dict(server.query("SELECT collation_name, id FROM information_schema.collations"))
    for batch in decode_range(inserted):
        tmap = batch.table
        info = server.query(
            "SELECT column_name, column_type, collation_name, data_type FROM information_schema.columns "
            "WHERE table_schema=%s AND table_name=%s ORDER BY ordinal_position",
            (db, tmap.table),
        )
        assert tmap.column_names == tuple(r[0] for r in info)
        numeric = {"tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "float", "double"}
        assert tmap.unsigned == tuple(r[3] in numeric and "unsigned" in r[1] for r in info)
        for index, (_, _, collation, data_type) in enumerate(info):
            if data_type in ("enum", "set", "char", "varchar", "text", "tinytext", "mediumtext", "longtext"):
                assert tmap.charsets is not None and tmap.charsets[index] == collations[collation], (
                    tmap.column_names[index]
                )
            if data_type in ("binary", "varbinary", "blob", "tinyblob", "mediumblob", "longblob"):
                assert tmap.charsets is not None and tmap.charsets[index] == 63
        if tmap.table == "strings":
            assert tmap.enum_values[16][299] == b"v299" and tmap.set_values[18][19] == b"m19"  # en300, st20
            assert tmap.enum_values[15] == (b"a", b"b", b"c")
            assert tmap.primary_key == ((0, 0),)


def test_compressed_binlog_events_decode_to_the_same_rows(scratch_server_factory):
    server = scratch_server_factory(extra_args=("--log-bin-compress=ON", "--log-bin-compress-min-len=10"))
    setup, inserted, updated, deleted = run_workload(server, "oracle_compressed")
    assert EventType.QUERY_COMPRESSED in event_types(setup)  # the CREATE TABLE statements
    kinds = set(event_types(inserted) + event_types(updated) + event_types(deleted))
    compressed_rows = {
        EventType.WRITE_ROWS_COMPRESSED_V1,
        EventType.UPDATE_ROWS_COMPRESSED_V1,
        EventType.DELETE_ROWS_COMPRESSED_V1,
        EventType.WRITE_ROWS_COMPRESSED,
        EventType.UPDATE_ROWS_COMPRESSED,
        EventType.DELETE_ROWS_COMPRESSED,
    }
    # one of each kind (v1 by default on MariaDB); an event that does not shrink stays plain (the
    # all-NULL row of `strings` is written as a plain WRITE_ROWS_V1)
    assert kinds & compressed_rows == {
        EventType.WRITE_ROWS_COMPRESSED_V1,
        EventType.UPDATE_ROWS_COMPRESSED_V1,
        EventType.DELETE_ROWS_COMPRESSED_V1,
    }


def test_mariadb_hires_temporals_decode_with_the_schema(scratch_server_factory):
    """mysql56_temporal_format=OFF: TIME(n)/DATETIME(n)/TIMESTAMP(n) in MariaDB's own 'hires' layout,
    logged under the old type codes without metadata. The binlog alone cannot decode them (a clear
    error says the schema is needed); with the precision from information_schema it decodes exactly."""
    server = scratch_server_factory(extra_args=("--mysql56-temporal-format=OFF",))
    db = "oracle_hires"
    table = _temporals()
    server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}", table.create(db)])
    inserted = server.run_sql(SESSION + [table.insert(db)])
    expected = server.query(table.select(db))
    with pytest.raises(BinlogFormatError, match="the table schema is needed") as info:
        decode_range(inserted)
    assert info.value.path == str(inserted.files[0])
    precision = server.query(
        "SELECT datetime_precision FROM information_schema.columns WHERE table_schema=%s AND table_name=%s "
        "ORDER BY ordinal_position",
        (db, table.name),
    )

    def schema(tmap: TableMap) -> tuple[ColumnSpec, ...]:
        assert set(tmap.column_types[1:]) <= {
            ColumnType.DATE,
            ColumnType.TIME,
            ColumnType.DATETIME,
            ColumnType.TIMESTAMP,
        }
        return tuple(
            ColumnSpec(
                code,
                (fsp or 0) if code in (ColumnType.TIME, ColumnType.DATETIME, ColumnType.TIMESTAMP) else meta,
            )
            for code, meta, (fsp,) in zip(tmap.column_types, tmap.column_meta, precision, strict=True)
        )

    batches = decode_range(inserted, specs_for=schema)
    rows = sorted((row for b in batches for row in b.rows), key=lambda r: r[0])
    assert len(rows) == len(expected)
    for row, want in zip(rows, expected, strict=True):
        assert_image(table, row, want, f"hires insert id {want[0]}")
