"""Issue 25 class 6: TIME/DATETIME/TIMESTAMP columns in MariaDB's old formats (tables made with
mysql56_temporal_format=OFF) restore exactly, by checksum, through the `mariadb` client and --execute;
where neither the binlog nor a schema says a column's precision, the rollback is refused."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from rollback.binlog.constants import ColumnType as T
from rollback.binlog.decode import decode_stream, state_at
from rollback.binlog.reader import read_file_facts
from rollback.binlog.table_map import TableMap
from rollback.schema.tables import schema_from_file
from rollback.target.execute import execute_plan
from tests.support.mariadb import BinlogRange, ScratchServer
from tests.support.restore import (
    apply_with_client,
    flashback,
    range_args,
    restore_both_ways,
    run_cli,
    snapshot,
)

COLUMNS = (
    "t TIME, t3 TIME(3), t6 TIME(6), d DATETIME, d6 DATETIME(6), "
    "s TIMESTAMP NULL DEFAULT NULL, s2 TIMESTAMP(2) NULL DEFAULT NULL"
)
# Each column at its edges: the zero date, negative and extreme TIME, .000001 and .999999.
ROWS = [
    "(1, '-838:59:59', '-00:00:00.001', '-12:34:56.000001', '0000-00-00 00:00:00', "
    "'0000-00-00 00:00:00.000000', '1970-01-01 00:00:01', '2001-02-03 04:05:06.07')",
    "(2, '838:59:59', '838:59:59.000', '00:00:00.999999', '9999-12-31 23:59:59', "
    "'9999-12-31 23:59:59.999999', '2038-01-19 03:14:07', '2038-01-19 03:14:07.99')",
    "(3, '00:00:00', '-838:59:59.000', '-00:00:00.000001', '1000-01-01 00:00:00', "
    "'1000-01-01 00:00:00.000001', '0000-00-00 00:00:00', '1970-01-01 00:00:01.01')",
    "(4, NULL, '-00:00:00.999', '838:59:58.999999', '2024-02-29 12:00:00', NULL, NULL, NULL)",
]
UTC = "SET time_zone = '+00:00'"


@contextmanager
def old_temporal_format(server: ScratchServer) -> Iterator[None]:
    """Tables created inside use the old formats; the variable is global and the server shared by the
    whole suite, so it is put back whatever happens."""
    ((before,),) = server.query("SELECT @@GLOBAL.mysql56_temporal_format")
    server.run_sql(["SET GLOBAL mysql56_temporal_format = OFF"])
    try:
        yield
    finally:
        server.run_sql([f"SET GLOBAL mysql56_temporal_format = {'ON' if before else 'OFF'}"])


def _logged_codes(rng: BinlogRange, table: str) -> list[int]:
    """The type codes the first table map of `table` in `rng` gives its columns."""
    for index, path in enumerate(rng.files):
        data = path.read_bytes()
        facts, _ = read_file_facts(memoryview(data), str(path))
        start = rng.start_position if index == 0 else 4
        stop = rng.stop_position if index == len(rng.files) - 1 else len(data)
        for decoded in decode_stream(data, state_at(data, facts, start, str(path)), start, stop):
            event = decoded.event
            if isinstance(event, TableMap) and event.qualified_name == table:
                return list(event.column_types)
    raise AssertionError(f"no table map of {table}")


OLD = [T.LONG, T.TIME, T.TIME, T.TIME, T.DATETIME, T.DATETIME, T.TIMESTAMP, T.TIMESTAMP]
NEW = [T.LONG, T.TIME2, T.TIME2, T.TIME2, T.DATETIME2, T.DATETIME2, T.TIMESTAMP2, T.TIMESTAMP2]


def _incident(table: str) -> list[str]:
    return [
        UTC,
        f"UPDATE {table} SET t6 = '-00:00:01.5', d6 = '2020-02-29 23:59:59.999999', s2 = '2001-01-01 00:00:00.01' "
        "WHERE id = 2",
        f"UPDATE {table} SET id = id + 10",
        f"DELETE FROM {table} WHERE id = 11",
        f"INSERT INTO {table} VALUES (5, '-01:02:03', '01:02:03.004', '-00:00:00.000001', "
        "'1999-12-31 23:59:59', '0000-00-00 00:00:00.000001', '2000-01-01 00:00:00', '2000-01-01 00:00:00.5')",
    ]


@pytest.mark.parametrize("schema", ["server", "file"])
def test_old_format_temporal_columns_restore_exactly(scratch_server, tmp_path, schema):
    server = scratch_server
    db = f"legacy_temporal_{schema}"
    server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}"])
    with old_temporal_format(server):
        server.run_sql(
            [
                f"CREATE TABLE {db}.keyed (id INT PRIMARY KEY, {COLUMNS})",
                f"CREATE TABLE {db}.keyless (id INT, {COLUMNS})",
            ]
        )
    tables = [f"{db}.keyed", f"{db}.keyless"]
    filled = server.run_sql([UTC] + [f"INSERT INTO {table} VALUES {', '.join(ROWS)}" for table in tables])
    assert _logged_codes(filled, f"{db}.keyless") == OLD  # MariaDB's old formats, all under the old codes
    options = {}
    if schema == "file":
        ddl = tmp_path / "schema.sql"
        ddl.write_text(
            "".join(server.query(f"SHOW CREATE TABLE {table}")[0][1] + ";\n" for table in tables).replace(
                "CREATE TABLE `", f"CREATE TABLE `{db}`.`"
            )
        )
        options["schema"] = schema_from_file(ddl)
    restore_both_ways(server, tables, [s for table in tables for s in _incident(table)], tmp_path, **options)


@pytest.mark.parametrize("way", ["client", "execute"])
def test_an_incident_on_old_format_columns_restores_after_the_table_was_upgraded(
    scratch_server, tmp_path, way
):
    """MariaDB keeps no table with both formats: an ALTER rebuilds every temporal column in the format
    mysql56_temporal_format says (ALGORITHM=INSTANT is refused: "Cannot change column type"). A table
    upgraded after the incident has the new formats while the incident's rows are in the old ones: the
    schema server's precision still decodes them, and the rollback restores the rows exactly (by checksum
    against the same rows written in the new formats)."""
    server = scratch_server
    db = f"legacy_temporal_upgraded_{way}"
    table, twin = f"{db}.t", f"{db}.expected"
    server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}"])
    with old_temporal_format(server):
        server.run_sql([f"CREATE TABLE {table} (id INT, {COLUMNS})"])  # keyless
    rows = f"VALUES {', '.join(ROWS)}"
    server.run_sql([UTC, f"INSERT INTO {table} {rows}", f"CREATE TABLE {twin} (id INT, {COLUMNS})"])
    server.run_sql([UTC, f"INSERT INTO {twin} {rows}"])
    incident = server.run_sql(_incident(table))
    assert _logged_codes(incident, table) == OLD
    with pytest.raises(
        Exception, match="ALGORITHM=INSTANT is not supported. Reason: Cannot change column type"
    ):
        server.run_sql([f"ALTER TABLE {table} ADD COLUMN z INT, ALGORITHM=INSTANT"])
    server.run_sql([f"ALTER TABLE {table} FORCE, ALGORITHM=COPY"])  # the upgrade, after the incident
    probe = [f"INSERT INTO {t} (id) VALUES (99)" for t in (table, twin)]
    upgraded = server.run_sql([*probe, *(f"DELETE FROM {t} WHERE id = 99" for t in (table, twin))])
    assert _logged_codes(upgraded, table) == _logged_codes(upgraded, twin) == NEW
    # --trust-schema: the ALTER after the range changed no column but the formats
    script, plan, _report = flashback(server, incident, tmp_path, name=way, trust_schema=True)
    if way == "client":
        apply_with_client(server, script)
    else:
        assert execute_plan(plan, server.dsn, commit=True).committed
    restored, expected = snapshot(server, [table, twin]).values()
    assert restored == expected


def test_old_format_columns_without_a_schema_are_refused_naming_the_column(scratch_server_factory, tmp_path):
    """With binlog_row_metadata=FULL the binlog names the columns but not a TIME's precision: MariaDB logs
    TIME and TIME(3) under one type code, so without a schema source the rollback is refused."""
    server = scratch_server_factory(row_metadata="FULL")
    db = "legacy_temporal_refused"
    server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}"])
    with old_temporal_format(server):
        server.run_sql([f"CREATE TABLE {db}.t (id INT, a INT, t3 TIME(3))"])
    server.run_sql([f"INSERT INTO {db}.t VALUES (1, 1, '-01:00:00.5')"])
    before = snapshot(server, [f"{db}.t"])
    rng = server.run_sql([f"UPDATE {db}.t SET a = 2"])
    out = run_cli("flashback", *range_args(rng), "-o", str(tmp_path / "r.sql"))
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    assert f"table {db}.t: column 3 `t3` has MariaDB's old TIME type code" in out.stderr
    assert "--schema-dsn or --schema-file" in out.stderr
    assert not (tmp_path / "r.sql").exists()
    # The schema server gives the precision: the same range restores.
    ok = run_cli("flashback", *range_args(rng), "--schema-dsn", server.dsn, "-o", str(tmp_path / "r.sql"))
    assert ok.returncode == 0, ok.stderr
    assert "`t3`<=>'-01:00:00.500'" in (tmp_path / "r.sql").read_text()  # keyless: every column compared
    apply_with_client(server, tmp_path / "r.sql")
    assert snapshot(server, [f"{db}.t"]) == before
