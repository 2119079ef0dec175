"""The proof of the flashback engine: after a workload, our rollback SQL restores every table exactly."""

from __future__ import annotations

import random

import pytest

from rollback.errors import ConflictError, IrreversibleChange
from rollback.execute import execute_plan
from tests.support.restore import apply_with_client, flashback, range_args, run_cli

TABLES = {
    "pk": """CREATE TABLE {db}.pk (
        id INT PRIMARY KEY, name VARCHAR(40) CHARACTER SET utf8mb4, amount DECIMAL(12,3), f FLOAT, d DOUBLE,
        ts TIMESTAMP(3) NULL, dt DATETIME(6), tm TIME(2), dte DATE, yr YEAR, b BIT(10),
        e ENUM('a','b','c'), s SET('x','y','z'), bin VARBINARY(20), l1 VARCHAR(20) CHARACTER SET latin1,
        j LONGTEXT, blb BLOB, u BIGINT UNSIGNED, neg TINYINT)""",
    "nopk": "CREATE TABLE {db}.nopk (a INT, b VARCHAR(10), c DOUBLE)",
    "uniq": "CREATE TABLE {db}.uniq (code CHAR(8) NOT NULL, v INT, UNIQUE KEY (code))",
}


def checksums(server, db):
    return {t: server.query(f"CHECKSUM TABLE {db}.{t} EXTENDED")[0][1] for t in TABLES}


def rows(server, db):
    return {t: sorted(map(repr, server.query(f"SELECT * FROM {db}.{t}"))) for t in TABLES}


def _literal(v):
    return "NULL" if v is None else repr(v)


def workload(rng: random.Random, db: str, n: int, start_id: int) -> list[str]:
    statements = []
    ids = []
    next_id = start_id
    for _ in range(n):
        op = rng.random()
        if op < 0.45 or not ids:
            next_id += 1
            ids.append(next_id)
            name = rng.choice(
                ["plain", "it's", 'quote"s', "emoji 😀", "tab\there", "back\\\\slash", "", None]
            )
            statements.append(
                f"INSERT INTO {db}.pk VALUES ({next_id}, {_literal(name)}, {rng.randint(-(10**8), 10**8)}/1000, "
                f"{rng.uniform(-1e6, 1e6)}, {rng.uniform(-1e300, 1e300)}, '2024-03-01 10:00:00.123', "
                f"'2024-02-29 23:59:59.999999', '-12:30:01.5', '0000-00-00', 2024, b'1010101010', "
                f"'{rng.choice('abc')}', 'x,z', 0x00270a5c{rng.randint(0, 255):02x}, 'caf\\xe9', "
                f'\'{{"k": [1, 2.5, "s"]}}\', REPEAT(0x00ff, {rng.randint(0, 300)}), 18446744073709551615, -128)'
            )
            statements.append(f"INSERT INTO {db}.nopk VALUES ({rng.randint(1, 5)}, 'dup', 1.5)")
            statements.append(
                f"INSERT IGNORE INTO {db}.uniq VALUES ('k{rng.randint(1, 50)}', {rng.randint(1, 9)})"
            )
        elif op < 0.75:
            target = rng.choice(ids)
            statements.append(
                f"UPDATE {db}.pk SET name = CONCAT(IFNULL(name, ''), 'x'), amount = amount + 1, f = f * 2, "
                f"ts = NULL, e = 'b' WHERE id = {target}"
            )
            statements.append(f"UPDATE {db}.nopk SET c = c + 1 WHERE a = {rng.randint(1, 5)} LIMIT 1")
            statements.append(f"UPDATE {db}.uniq SET v = v + 1 WHERE code = 'k{rng.randint(1, 50)}'")
        elif op < 0.85:
            old = rng.choice(ids)
            next_id += 1
            statements.append(f"UPDATE {db}.pk SET id = {next_id} WHERE id = {old}")
            ids[ids.index(old)] = next_id
        else:
            victim = ids.pop(rng.randrange(len(ids)))
            statements.append(f"DELETE FROM {db}.pk WHERE id = {victim}")
            statements.append(f"DELETE FROM {db}.nopk WHERE a = {rng.randint(1, 5)} LIMIT 1")
    return statements


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
