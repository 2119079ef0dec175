"""The proof of the flashback engine: after a workload, our rollback SQL restores every table exactly."""

from __future__ import annotations

import random

import pytest

from rollback.base.errors import ConflictError, IrreversibleChange
from rollback.target.execute import execute_plan
from tests.support.restore import apply_with_client, flashback, range_args, run_cli
from tests.support.workloads import TABLES, checksums, rows, workload


@pytest.fixture(scope="module")
def db(scratch_server):
    name = "restore"
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {name}", f"CREATE DATABASE {name}"])
    scratch_server.run_sql([ddl.format(db=name) for ddl in TABLES.values()])
    seed = workload(random.Random(1), name, 60, 10_000)
    scratch_server.run_sql(seed)
    return name


def test_rollback_of_a_mixed_workload_restores_checksums_and_rows(scratch_server, db, tmp_path):
    before_sums, before_rows = checksums(scratch_server, db), rows(scratch_server, db)
    rng = scratch_server.run_sql(
        [
            "BEGIN",
            *workload(random.Random(2), db, 120, 20_000),
            "COMMIT",
            *workload(random.Random(3), db, 80, 30_000),
            f"DELETE FROM {db}.pk",
            f"UPDATE {db}.uniq SET v = NULL",
        ]
    )
    assert checksums(scratch_server, db) != before_sums
    script, _plan, report = flashback(scratch_server, rng, tmp_path)
    assert report.statements > 300
    text = script.read_text()
    assert text.index("SET NAMES utf8mb4") < text.index("BEGIN;")
    # The plain command-line client applies it.
    apply_with_client(scratch_server, script, tcp=True)
    assert checksums(scratch_server, db) == before_sums
    assert rows(scratch_server, db) == before_rows


def test_execution_dry_run_changes_nothing_and_commit_restores(scratch_server, db, tmp_path):
    before_sums = checksums(scratch_server, db)
    rng = scratch_server.run_sql(workload(random.Random(4), db, 60, 40_000))
    after_sums = checksums(scratch_server, db)
    _script, plan, _report = flashback(scratch_server, rng, tmp_path)
    dry = execute_plan(plan, scratch_server.dsn)
    assert dry.dry_run and dry.statements > 0 and not dry.conflicts
    assert checksums(scratch_server, db) == after_sums
    real = execute_plan(plan, scratch_server.dsn, commit=True)
    assert real.committed
    assert checksums(scratch_server, db) == before_sums


@pytest.mark.both_ways_off("a row changed since the incident: the conflict is the point")
def test_conflicting_row_is_detected_before_anything_is_applied(scratch_server, db, tmp_path):
    scratch_server.run_sql(
        [f"CREATE TABLE {db}.conf (code CHAR(4) NOT NULL, v INT, UNIQUE KEY (code))"]
        + [f"INSERT INTO {db}.conf VALUES ('c{i}', {i})" for i in range(5)]
    )
    rng = scratch_server.run_sql([f"UPDATE {db}.conf SET v = 70"])
    scratch_server.run_sql([f"UPDATE {db}.conf SET v = 80 WHERE code = 'c3'"])  # changed after the incident
    after = scratch_server.query(f"CHECKSUM TABLE {db}.conf EXTENDED")
    _script, plan, _report = flashback(scratch_server, rng, tmp_path)
    with pytest.raises(ConflictError, match="changed since the incident"):
        execute_plan(plan, scratch_server.dsn, commit=True)
    assert scratch_server.query(f"CHECKSUM TABLE {db}.conf EXTENDED") == after
    skipped = execute_plan(plan, scratch_server.dsn, commit=True, on_conflict="skip")
    assert skipped.committed and skipped.skipped == 1 and skipped.statements == 4
    assert scratch_server.query(f"SELECT code, v FROM {db}.conf ORDER BY code") == [
        ("c0", 0),
        ("c1", 1),
        ("c2", 2),
        ("c3", 80),
        ("c4", 4),
    ]


def test_cli_flashback_prints_script_and_refuses_bad_input(scratch_server, db, tmp_path):
    rng = scratch_server.run_sql([f"DELETE FROM {db}.nopk WHERE a = 1"])
    out = run_cli("flashback", *range_args(rng), "--schema-dsn", scratch_server.dsn)
    assert out.returncode == 0, out.stderr
    assert "INSERT INTO `restore`.`nopk`" in out.stdout
    bad = run_cli("flashback", *range_args(rng), "--start-position", str(rng.start_position + 1))
    assert bad.returncode == 2
    assert (
        bad.stderr.count("\n") == 1
        and "not an event boundary" in bad.stderr
        and "Traceback" not in bad.stderr
    )


def test_minimal_images_restore_updates_and_refuse_deletes_precisely(scratch_server_factory, tmp_path):
    server = scratch_server_factory(row_image="MINIMAL")
    server.run_sql(
        ["CREATE DATABASE IF NOT EXISTS m", "CREATE TABLE m.t (id INT PRIMARY KEY, a INT, b VARCHAR(9))"]
        + [f"INSERT INTO m.t VALUES ({i}, {i * 10}, 'v{i}')" for i in range(1, 6)]
    )
    before = server.query("CHECKSUM TABLE m.t EXTENDED")
    update = server.run_sql(["UPDATE m.t SET a = a + 1 WHERE id <= 3"])
    # The UPDATE's before image holds only the key: the old values of `a` are lost.
    with pytest.raises(IrreversibleChange, match=r"update on m\.t .*missing a"):
        flashback(server, update, tmp_path, name="u")
    delete = server.run_sql(["DELETE FROM m.t WHERE id = 5"])
    with pytest.raises(IrreversibleChange, match=r"delete on m\.t .*missing a, b"):
        flashback(server, delete, tmp_path, name="d")
    assert not (tmp_path / "d.sql").exists()
    assert server.query("CHECKSUM TABLE m.t EXTENDED") != before


def test_noblob_images_restore_updates_of_present_columns(scratch_server_factory, tmp_path):
    server = scratch_server_factory(row_image="NOBLOB")
    server.run_sql(
        ["CREATE DATABASE IF NOT EXISTS n", "CREATE TABLE n.t (id INT PRIMARY KEY, a INT, doc BLOB)"]
        + [f"INSERT INTO n.t VALUES ({i}, {i}, REPEAT('x', {i * 100}))" for i in range(1, 6)]
    )
    before = server.query("CHECKSUM TABLE n.t EXTENDED")
    rng = server.run_sql(["UPDATE n.t SET a = a * 7 WHERE id > 1"])
    script, _plan, _report = flashback(server, rng, tmp_path, name="n")
    apply_with_client(server, script)
    assert server.query("CHECKSUM TABLE n.t EXTENDED") == before
