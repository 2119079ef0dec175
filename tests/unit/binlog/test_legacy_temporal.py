"""The old (pre-MySQL 5.6.4) TIME/DATETIME/TIMESTAMP layouts and MariaDB's "hires" ones, which it logs
under the same type codes (11, 12, 7) without metadata: row images built by hand from the server's
code, decoded on both hot paths; and where the precision comes from (legacy_temporal_specs).

Layouts, from MariaDB's sql/field.cc (10.3) unless said otherwise:
* TIME: Field_time::store_TIME int3store()s ±(hour*10000 + minute*100 + second), read back with
  sint3korr in Field_time::get_date.
* DATETIME: Field_datetime::store_TIME int8store()s TIME_to_ulonglong_datetime (YYYYMMDDhhmmss).
* TIMESTAMP: Field_timestamp::store_TIME int4store()s the seconds since the epoch (0: the zero date).
* TIME(n): Field_time_hires::store_TIME store_bigendian()s sec_part_shift(pack_time(), n) +
  zero_point in time_hires_bytes[n] = 3,4,4,5,5,5,6 bytes; zero_point = sec_part_shift((838:59:59 + 1 s)
  in microseconds, n) (its constructor in sql/field.h).
* DATETIME(n): Field_datetime_hires::store_TIME store_bigendian()s sec_part_shift(pack_time(), n) in
  datetime_hires_bytes[n] = 5,6,6,7,7,7,8 bytes; pack_time is
  ((((((year*13 + month)*32 + day)*24 + hour)*60 + minute)*60 + second)*10**6 + usec (sql-common/my_time.c).
* TIMESTAMP(n): Field_timestamp_hires::store_TIME mi_int4store()s the seconds (big-endian, unlike
  TIMESTAMP), then store_bigendian()s sec_part_shift(usec, n) in sec_part_bytes[n] = 0,1,1,2,2,3,3 bytes.
sec_part_shift(x, n) is x / 10**(6 - n).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from rollback.base import hotpath
from rollback.base.errors import SchemaMismatch
from rollback.binlog.columns import ColumnSpec
from rollback.binlog.constants import ColumnType as T
from rollback.binlog.rowdecoder import get_row_decoder
from rollback.binlog.table_map import TableMap
from rollback.schema.tables import Column, TableSchema, legacy_temporal_specs, parse_ddl, temporal_precision
from tests.support.columns import encode_datetime2, encode_time2
from tests.support.hotpath import compiled_core, hot_path

TIME_HIRES_BYTES = (3, 4, 4, 5, 5, 5, 6)
DATETIME_HIRES_BYTES = (5, 6, 6, 7, 7, 7, 8)
SEC_PART_BYTES = (0, 1, 1, 2, 2, 3, 3)
ZERO_POINT_SECONDS = 838 * 3600 + 59 * 60 + 59 + 1


def old_time(sign: int, hour: int, minute: int, second: int) -> bytes:
    return (sign * (hour * 10_000 + minute * 100 + second)).to_bytes(3, "little", signed=True)


def old_datetime(digits: int) -> bytes:
    return digits.to_bytes(8, "little")


def old_timestamp(seconds: int) -> bytes:
    return seconds.to_bytes(4, "little")


def time_hires(fsp: int, sign: int, hour: int, minute: int, second: int, usec: int) -> bytes:
    packed = sign * (((hour * 60 + minute) * 60 + second) * 10**6 + usec)
    raw = packed // 10 ** (6 - fsp) + ZERO_POINT_SECONDS * 10**fsp  # exact: usec has n digits
    return raw.to_bytes(TIME_HIRES_BYTES[fsp], "big")


def datetime_hires(fsp: int, year: int, month: int, day: int, hour: int, minute: int, second: int, usec: int):
    packed = (((((year * 13 + month) * 32 + day) * 24 + hour) * 60 + minute) * 60 + second) * 10**6 + usec
    return (packed // 10 ** (6 - fsp)).to_bytes(DATETIME_HIRES_BYTES[fsp], "big")


def timestamp_hires(fsp: int, seconds: int, usec: int) -> bytes:
    return seconds.to_bytes(4, "big") + (usec // 10 ** (6 - fsp)).to_bytes(SEC_PART_BYTES[fsp], "big")


# (column spec, stored bytes, the text the server prints for them)
VALUES = [
    (ColumnSpec(T.TIME), old_time(-1, 838, 59, 59), "-838:59:59"),
    (ColumnSpec(T.TIME), old_time(1, 838, 59, 59), "838:59:59"),
    (ColumnSpec(T.TIME), old_time(1, 0, 0, 0), "00:00:00"),
    (ColumnSpec(T.TIME), old_time(-1, 0, 0, 1), "-00:00:01"),
    (ColumnSpec(T.TIME), old_time(-1, 12, 34, 56), "-12:34:56"),
    (ColumnSpec(T.DATETIME), old_datetime(0), "0000-00-00 00:00:00"),
    (ColumnSpec(T.DATETIME), old_datetime(99991231235959), "9999-12-31 23:59:59"),
    (ColumnSpec(T.DATETIME), old_datetime(10000101000000), "1000-01-01 00:00:00"),
    (ColumnSpec(T.DATETIME), old_datetime(20240015100000), "2024-00-15 10:00:00"),
    (ColumnSpec(T.TIMESTAMP), old_timestamp(0), "0000-00-00 00:00:00"),
    (ColumnSpec(T.TIMESTAMP), old_timestamp(1), "1970-01-01 00:00:01"),
    (ColumnSpec(T.TIMESTAMP), old_timestamp(2**31 - 1), "2038-01-19 03:14:07"),
    (ColumnSpec(T.TIME, 1), time_hires(1, -1, 838, 59, 59, 0), "-838:59:59.0"),
    (ColumnSpec(T.TIME, 2), time_hires(2, 1, 838, 59, 59, 990_000), "838:59:59.99"),
    (ColumnSpec(T.TIME, 3), time_hires(3, -1, 0, 0, 0, 1_000), "-00:00:00.001"),
    (ColumnSpec(T.TIME, 3), time_hires(3, 1, 0, 0, 0, 0), "00:00:00.000"),
    (ColumnSpec(T.TIME, 4), time_hires(4, -1, 1, 2, 3, 999_900), "-01:02:03.9999"),
    (ColumnSpec(T.TIME, 5), time_hires(5, 1, 100, 0, 0, 10), "100:00:00.00001"),
    (ColumnSpec(T.TIME, 6), time_hires(6, -1, 0, 0, 0, 1), "-00:00:00.000001"),
    (ColumnSpec(T.TIME, 6), time_hires(6, 1, 838, 59, 59, 999_999), "838:59:59.999999"),
    (ColumnSpec(T.TIME, 6), time_hires(6, -1, 838, 59, 59, 999_999), "-838:59:59.999999"),
    (ColumnSpec(T.DATETIME, 1), datetime_hires(1, 0, 0, 0, 0, 0, 0, 0), "0000-00-00 00:00:00.0"),
    (ColumnSpec(T.DATETIME, 2), datetime_hires(2, 2024, 2, 29, 12, 0, 0, 500_000), "2024-02-29 12:00:00.50"),
    (ColumnSpec(T.DATETIME, 3), datetime_hires(3, 1000, 1, 1, 0, 0, 0, 1_000), "1000-01-01 00:00:00.001"),
    (ColumnSpec(T.DATETIME, 4), datetime_hires(4, 2001, 2, 3, 4, 5, 6, 700), "2001-02-03 04:05:06.0007"),
    (ColumnSpec(T.DATETIME, 5), datetime_hires(5, 2001, 0, 0, 0, 0, 0, 0), "2001-00-00 00:00:00.00000"),
    (ColumnSpec(T.DATETIME, 6), datetime_hires(6, 0, 0, 0, 0, 0, 0, 1), "0000-00-00 00:00:00.000001"),
    (
        ColumnSpec(T.DATETIME, 6),
        datetime_hires(6, 9999, 12, 31, 23, 59, 59, 999_999),
        "9999-12-31 23:59:59.999999",
    ),
    (ColumnSpec(T.TIMESTAMP, 1), timestamp_hires(1, 1, 900_000), "1970-01-01 00:00:01.9"),
    (ColumnSpec(T.TIMESTAMP, 2), timestamp_hires(2, 2**31 - 1, 990_000), "2038-01-19 03:14:07.99"),
    (ColumnSpec(T.TIMESTAMP, 3), timestamp_hires(3, 978307200, 1_000), "2001-01-01 00:00:00.001"),
    (ColumnSpec(T.TIMESTAMP, 4), timestamp_hires(4, 1, 999_900), "1970-01-01 00:00:01.9999"),
    (ColumnSpec(T.TIMESTAMP, 5), timestamp_hires(5, 1, 10), "1970-01-01 00:00:01.00001"),
    (ColumnSpec(T.TIMESTAMP, 6), timestamp_hires(6, 0, 0), "0000-00-00 00:00:00.000000"),
    (ColumnSpec(T.TIMESTAMP, 6), timestamp_hires(6, 1, 1), "1970-01-01 00:00:01.000001"),
    (ColumnSpec(T.TIMESTAMP, 6), timestamp_hires(6, 1, 999_999), "1970-01-01 00:00:01.999999"),
]


def test_hand_built_bytes_have_the_servers_widths():
    # A few by hand, so the helpers above are pinned too: TIME '-838:59:59' is -8385959 as 3 bytes LE,
    # TIME(1) '-838:59:59.0' is 1 tenth above MariaDB's zero point, TIMESTAMP(2) .99 is the byte 99.
    assert old_time(-1, 838, 59, 59) == bytes.fromhex("590a80")
    assert time_hires(1, -1, 838, 59, 59, 0) == bytes.fromhex("0000000a")
    assert timestamp_hires(2, 2**31 - 1, 990_000) == bytes.fromhex("7fffffff63")
    assert old_datetime(99991231235959) == (99991231235959).to_bytes(8, "little")
    for spec, raw, _text in VALUES:
        assert spec.width == len(raw), spec


@pytest.mark.parametrize("core", ["python", "compiled"])
def test_every_old_layout_decodes_to_the_servers_text_in_one_row(core):
    """All of VALUES as one row image (null bitmap, then the values), and again with every other
    column NULL, decoded by the row decoder the engine uses: the pure-Python one and the compiled core."""
    specs = tuple(spec for spec, _raw, _text in VALUES)
    texts = tuple(text for _spec, _raw, text in VALUES)
    bitmap_bytes = (len(VALUES) + 7) // 8
    full = bytes(bitmap_bytes) + b"".join(raw for _spec, raw, _text in VALUES)
    nulls = sum(1 << i for i in range(0, len(VALUES), 2))
    sparse = nulls.to_bytes(bitmap_bytes, "little") + b"".join(
        raw for i, (_spec, raw, _text) in enumerate(VALUES) if i % 2
    )
    data = full + sparse
    with hot_path(compiled_core() if core == "compiled" else None):
        assert (hotpath.CORE is None) == (core == "python")
        decoder = get_row_decoder(specs, (1 << len(specs)) - 1)
        rows = decoder.decode_rows(data, 0, len(data))
    assert rows == [texts, tuple(None if i % 2 == 0 else t for i, t in enumerate(texts))]


def _tmap(types: list[int]) -> TableMap:
    return TableMap(7, 1, "db", "t", bytes(types), (0,) * len(types), (True,) * len(types))


SCHEMA = parse_ddl(
    "CREATE TABLE t (id INT, t TIME, t3 TIME(3), d DATETIME, d6 DATETIME(6), "
    "s TIMESTAMP NULL, s2 TIMESTAMP(2) NULL)"
)[0]
OLD_CODES = [T.LONG, T.TIME, T.TIME, T.DATETIME, T.DATETIME, T.TIMESTAMP, T.TIMESTAMP]


def test_the_schema_gives_the_precision_the_binlog_leaves_out():
    specs = legacy_temporal_specs(_tmap(OLD_CODES), SCHEMA, None, mariadb=True)
    assert specs is not None
    assert [(s.type, s.meta, s.width) for s in specs] == [
        (T.LONG, 0, 4),
        (T.TIME, 0, 3),
        (T.TIME, 3, 5),
        (T.DATETIME, 0, 8),
        (T.DATETIME, 6, 8),  # the same width as DATETIME: a wrong guess would decode without an error
        (T.TIMESTAMP, 0, 4),
        (T.TIMESTAMP, 2, 5),
    ]


def test_old_codes_of_precision_0_and_new_codes_keep_the_table_maps_specs():
    schema = parse_ddl("CREATE TABLE t (id INT, t TIME, d DATETIME(6), s TIMESTAMP)")[0]
    tmap = TableMap(7, 1, "db", "t", bytes([T.LONG, T.TIME, T.DATETIME2, T.TIMESTAMP]), (0, 0, 6, 0), None)
    assert legacy_temporal_specs(tmap, schema, None, mariadb=True) is None


def test_signedness_from_the_schema_is_kept():
    schema = parse_ddl("CREATE TABLE t (id INT UNSIGNED, t TIME(3))")[0]
    specs = legacy_temporal_specs(_tmap([T.LONG, T.TIME]), schema, (True, False), mariadb=True)
    assert specs == (ColumnSpec(T.LONG, 0, True), ColumnSpec(T.TIME, 3))


def test_a_mysql_binlogs_old_codes_are_the_fixed_layouts_without_a_schema():
    assert legacy_temporal_specs(_tmap(OLD_CODES), None, None, mariadb=False) is None


def test_a_mariadb_binlog_without_the_precision_is_refused_naming_the_column():
    with pytest.raises(SchemaMismatch) as info:
        legacy_temporal_specs(_tmap(OLD_CODES), None, None, mariadb=True)
    assert str(info.value) == (
        "table db.t: column 2 has MariaDB's old TIME type code, which it also logs for TIME(1..6) without the "
        "precision, and no schema was given: give the schema with --schema-dsn or --schema-file"
    )
    # binlog_row_metadata=FULL names the columns but not their types
    named = TableSchema("db", "t", [Column("id"), Column("at")], source="binlog")
    with pytest.raises(
        SchemaMismatch,
        match=r"column 2 `at` has MariaDB's old DATETIME type code.*"
        r"the binlog's column metadata names no types: give the schema with --schema-dsn",
    ):
        legacy_temporal_specs(_tmap([T.LONG, T.DATETIME]), named, None, mariadb=True)


def test_temporal_precision_reads_the_type_text_of_either_source():
    assert [temporal_precision(c) for c in SCHEMA.columns] == [None, 0, 3, 0, 6, 0, 2]
    # information_schema's COLUMN_TYPE with show_old_temporals=ON
    assert temporal_precision(Column("a", "datetime", column_type="datetime(6) /* mariadb-5.3 */")) == 6
    assert temporal_precision(Column("a", "time")) is None  # the source did not say its type


def _flashback(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rollback.cli.commands", "flashback", *args], capture_output=True, text=True
    )


def test_a_mariadb_10_0_binlogs_hires_timestamps_roll_back_with_a_schema_file(corpus_dir, tmp_path):
    """pingcap/tiflow's MariaDB 10.0.17 file logs TIMESTAMP(3) and TIMESTAMP(4) under the old code
    without metadata (test_corpus.py: test_mariadb_hires_timestamps_decode_with_the_schema holds its
    values); a --schema-file gives the precision and the rollback compares the exact value."""
    binlog = str(corpus_dir / "pingcap__tiflow/mysql-bin.000001")
    ddl = tmp_path / "schema.sql"
    ddl.write_text(
        "CREATE TABLE steven.t (id int primary key, d timestamp(3));\n"
        "CREATE TABLE steven.t6 (id int primary key, d timestamp(4));\n"
    )
    for (start, stop), table, value in (
        ((1738, 1859), "t", "2022-05-16 14:53:10.000"),
        ((3487, 3609), "t6", "2022-05-18 03:10:02.0000"),
    ):
        script = tmp_path / f"{table}.sql"
        range_args = [binlog, "--start-position", str(start), "--stop-position", str(stop)]
        done = _flashback(*range_args, "--schema-file", str(ddl), "--full-where", "-o", str(script))
        assert done.returncode == 0, done.stderr
        assert (
            f"DELETE FROM `steven`.`{table}` WHERE `id`<=>1 AND `d`<=>'{value}' LIMIT 1;"
            in script.read_text()
        )


@pytest.mark.parametrize("core", ["python", "compiled"])
def test_a_table_map_mixing_old_and_new_codes_decodes_each_column_in_its_own_layout(core):
    """Stands in for a table mixing both formats, which the scratch MariaDB cannot make (an ALTER
    rebuilds every temporal column in the format mysql56_temporal_format says, and ALGORITHM=INSTANT is
    refused: tests/server/test_legacy_temporal.py); MySQL 5.6+ keeps old columns beside new ones under
    avoid_temporal_upgrade. Each column decodes in the layout its own code and precision give."""
    schema = parse_ddl(
        "CREATE TABLE t (a TIME(3), b TIME(3), c DATETIME(6), d DATETIME(6), e TIMESTAMP(2), f TIMESTAMP(2))"
    )[0]
    tmap = TableMap(
        7,
        1,
        "db",
        "t",
        bytes([T.TIME, T.TIME2, T.DATETIME, T.DATETIME2, T.TIMESTAMP, T.TIMESTAMP2]),
        (0, 3, 0, 6, 0, 2),
        None,
    )
    specs = legacy_temporal_specs(tmap, schema, None, mariadb=True)
    assert specs is not None and [s.width for s in specs] == [5, 5, 8, 8, 5, 5]
    row = bytes(1) + b"".join(
        [
            time_hires(3, -1, 1, 2, 3, 4_000),
            encode_time2(True, 1, 2, 3, 4_000, 3),
            datetime_hires(6, 2001, 2, 3, 4, 5, 6, 7),
            encode_datetime2(2001, 2, 3, 4, 5, 6, 7, 6),
            timestamp_hires(2, 1, 990_000),
            (1).to_bytes(4, "big")
            + bytes([99]),  # TIMESTAMP2(2): seconds, then hundredths (my_timestamp_to_binary)
        ]
    )
    with hot_path(compiled_core() if core == "compiled" else None):
        rows = get_row_decoder(specs, (1 << 6) - 1).decode_rows(row, 0, len(row))
    assert rows == [
        ("-01:02:03.004",) * 2 + ("2001-02-03 04:05:06.000007",) * 2 + ("1970-01-01 00:00:01.99",) * 2
    ]
