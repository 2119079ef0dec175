"""ROLLBACK TO SAVEPOINT inside a logged transaction: the rows it undid never persisted, so no undo.

MariaDB truncates its transaction cache to the savepoint when it can; when the transaction also changed a
non-transactional table (MyISAM, Aria) it cannot, and the binlog keeps the InnoDB rows events logged after
the SAVEPOINT, followed by a `ROLLBACK TO` query. Every test here runs such transactions on the scratch
MariaDB and rolls back the binlog it wrote.
"""

from __future__ import annotations

import re

import pytest

from rollback import Filters, Options, generate
from rollback.base.errors import SavepointError
from rollback.binlog.decode import decode_stream, state_at
from rollback.binlog.reader import BinlogFile
from rollback.binlog.rows import RowsEvent
from rollback.schema.tables import ServerSchema
from tests.support.mariadb import BinlogRange
from tests.support.restore import (
    apply_with_client,
    flashback,
    range_args,
    range_spec,
    run_cli,
    snapshot,
    statements,
)

DB = "svp"
TABLES = [f"{DB}.t", f"{DB}.n"]  # the transactional tables (the MyISAM one is changed by its own groups)


@pytest.fixture
def db(scratch_server):
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB",
            f"CREATE TABLE {DB}.n (a INT, b VARCHAR(20)) ENGINE=InnoDB",  # no key: rows match by value
            f"CREATE TABLE {DB}.m (id INT PRIMARY KEY, v INT) ENGINE=MyISAM",
            f"CREATE TABLE {DB}.r (id INT PRIMARY KEY, v INT) ENGINE=Aria",
            f"INSERT INTO {DB}.t VALUES (1, 'one'), (2, 'two'), (3, 'three')",
            f"INSERT INTO {DB}.n VALUES (1, 'a'), (2, 'b')",
        ]
    )
    return scratch_server


def savepoint_workload(db: str) -> list[str]:
    """One transaction exercising nested savepoints, a reused name, RELEASE, quoting and case."""
    return [
        "BEGIN",
        f"INSERT INTO {db}.t VALUES (10, 'kept')",
        "SAVEPOINT s1",
        # undone: a DELETE of an existing row (its undo would INSERT a duplicate key) and a duplicate row
        # in the keyless table (its undo would delete the row that was there before)
        f"DELETE FROM {db}.t WHERE id = 1",
        f"INSERT INTO {db}.n VALUES (1, 'a')",
        f"INSERT INTO {db}.m VALUES (1, 1)",
        "ROLLBACK TO SAVEPOINT s1",
        f"UPDATE {db}.t SET v = 'changed' WHERE id = 2",
        "SAVEPOINT `Outer`",
        f"INSERT INTO {db}.t VALUES (11, 'undone')",
        "SAVEPOINT inner_one",
        f"DELETE FROM {db}.t WHERE id = 3",
        f"INSERT INTO {db}.m VALUES (2, 2)",
        "ROLLBACK WORK TO SAVEPOINT `outer`",  # another case, backquoted: the same savepoint
        f"INSERT INTO {db}.n VALUES (3, 'c')",
        "SAVEPOINT s1",  # the name again: it now marks this point
        f"DELETE FROM {db}.n WHERE a = 2",
        f"INSERT INTO {db}.r VALUES (1, 1)",
        "ROLLBACK TO s1",
        "SAVEPOINT `we``ird Ä`",
        f"INSERT INTO {db}.t VALUES (12, 'undone')",
        "RELEASE SAVEPOINT `we``ird Ä`",
        f"UPDATE {db}.t SET v = 'undone' WHERE id = 10",
        f"INSERT INTO {db}.m VALUES (3, 3)",
        "ROLLBACK TO s1",  # s1 outlived the RELEASE of a later savepoint: both changes are undone
        "SAVEPOINT `we``ird Ä`",
        f"UPDATE {db}.t SET v = 'undone' WHERE id = 2",
        f"INSERT INTO {db}.m VALUES (4, 4)",
        "ROLLBACK TO `WE``IRD ä`",
        f"INSERT INTO {db}.t VALUES (13, 'kept too')",
        "COMMIT",
    ]


def undone(sql: str) -> bool:
    """Whether a reverse statement undoes one of the changes the workload's savepoints rolled back."""
    if f"`{DB}`.`m`" in sql or f"`{DB}`.`r`" in sql:
        return False
    # the undone UPDATEs' reverses set 'kept' (id 10) and 'changed' (id 2) again
    if re.search(r"SET `v`='(kept|changed)'", sql):
        return True
    return (
        "'undone'" in sql or re.search(r"`id`=(1|3|11|12)\b|VALUES \((1|3|11|12),|`a`<=>2\b", sql) is not None
    )


def run_workload(server, db: str = DB) -> BinlogRange:
    return server.run_sql(savepoint_workload(db))


def test_the_binlog_keeps_rows_a_savepoint_rollback_undid(db):
    """The premise, checked on the server: the undone rows events and the ROLLBACK TO are in the binlog."""
    rng = run_workload(db)
    with BinlogFile(str(rng.files[-1])) as binlog:
        state = state_at(binlog.buf, binlog.facts, rng.start_position, binlog.path)
        seen = [
            getattr(d.event, "sql", None) or type(d.event).__name__
            for d in decode_stream(binlog.buf, state, rng.start_position, rng.stop_position)
            if isinstance(d.event, RowsEvent) or hasattr(d.event, "sql")
        ]
    assert "ROLLBACK TO `s1`" in seen and seen.count("RowsEvent") > 8
    assert db.query(f"SELECT id, v FROM {DB}.t ORDER BY id") == [
        (1, "one"),
        (2, "changed"),
        (3, "three"),
        (10, "kept"),
        (13, "kept too"),
    ]


@pytest.mark.parametrize("partition_bytes", [None, 256], ids=["one-partition", "256-byte-partitions"])
def test_rows_undone_by_rollback_to_savepoint_are_left_out_and_the_tables_restored(
    db, tmp_path, partition_bytes
):
    before = snapshot(db, TABLES)
    rng = run_workload(db)
    script, _plan, report = flashback(db, rng, tmp_path, partition_bytes=partition_bytes)
    if partition_bytes:
        assert report.partitions > 5
    apply_with_client(db, script)
    assert snapshot(db, TABLES) == before
    assert not any(undone(s) for s in statements(script))
    assert sum(1 for w in report.warnings if "ROLLBACK TO" in w) == 5, report.warnings


def test_both_engines_write_the_same_bytes_across_partitions(db, tmp_path, spark):
    rng = run_workload(db)
    outputs = []
    for engine in ("local", "spark"):
        out = tmp_path / engine
        out.mkdir()
        options = Options(schema=ServerSchema(db.connect), engine=engine, partition_bytes=200)
        report = generate(
            range_spec(rng), Filters(), options, out / "r.sql", out / "p.jsonl", out / "c.jsonl"
        )
        assert report.partitions > 5
        outputs.append(tuple((out / n).read_bytes() for n in ("r.sql", "p.jsonl", "c.jsonl")))
    assert outputs[0] == outputs[1]
    changes = outputs[0][2].decode()
    assert "undone" not in changes  # the change log leaves out what never happened too


def test_a_range_that_stops_before_the_rollback_to_leaves_out_the_rows_it_undid(db, tmp_path):
    rng = run_workload(db)
    # stop right after the last UPDATE, which the last ROLLBACK TO undid: the ROLLBACK TO is past the stop
    with BinlogFile(str(rng.files[-1])) as binlog:
        state = state_at(binlog.buf, binlog.facts, rng.start_position, binlog.path)
        ends = [
            d.outer_end
            for d in decode_stream(binlog.buf, state, rng.start_position, rng.stop_position)
            if isinstance(d.event, RowsEvent) and d.event.kind == "update"
        ]
    cut = BinlogRange(rng.start_file, rng.start_position, rng.stop_file, ends[-1], "", "", rng.files)
    script, _plan, report = flashback(db, cut, tmp_path)
    assert not any(undone(s) for s in statements(script))
    assert any("ends inside the transaction" in w for w in report.warnings)


def test_a_rollback_to_an_unknown_savepoint_refuses_the_transaction_with_its_position(db, tmp_path):
    # MariaDB compares savepoint names as utf8_general_ci, where ß equals s: the binlog says
    # `ROLLBACK TO s` after `SAVEPOINT ß`. Which rows it undid cannot be told exactly: refuse.
    rng = db.run_sql(
        [
            "BEGIN",
            f"INSERT INTO {DB}.t VALUES (20, 'x')",
            "SAVEPOINT `ß`",
            f"INSERT INTO {DB}.t VALUES (21, 'y')",
            f"INSERT INTO {DB}.m VALUES (20, 1)",
            "ROLLBACK TO s",
            "COMMIT",
        ]
    )
    with pytest.raises(SavepointError) as info:
        flashback(db, rng, tmp_path)
    message = str(info.value)
    assert "ROLLBACK TO `s`" in message and f"{rng.stop_file}:" in message
    done = run_cli("flashback", *range_args(rng), "--schema-dsn", db.dsn, "--engine", "local")
    assert done.returncode == 2
    assert done.stderr.startswith("mysql-rollback: error: ") and "ROLLBACK TO `s`" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
