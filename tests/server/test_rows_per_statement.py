"""`--rows-per-statement N`: the script's re-inserts, deletes by key and updates by key joined into
multi-row statements restore exactly what the one-row script restores (checksums, applied with
`mariadb`), while keyless deletes, updates that could meet a unique key's duplicate midway, and the
plan stay one row a statement."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.support.restore import apply_with_client, client_command, digest, flashback, statements

INCIDENT = [
    "DELETE FROM t WHERE id % 2 = 0",
    "UPDATE t SET a = a + 1, b = 'x' WHERE id % 3 = 0",
    "INSERT INTO t (id, a, b, c, d) SELECT seq + 10000, seq, 'late', NOW(3), -seq FROM seq_1_to_300",
    "DELETE FROM bag WHERE v = 1",
    "INSERT INTO bag VALUES (3), (3), (4)",
    # a unique column shifted in an order that works one row at a time: reversed, each row takes the
    # value the next one still holds, so those rows are not joined into one statement
    "UPDATE u SET code = code + 1 ORDER BY code DESC",
    "UPDATE u SET name = CONCAT(UPPER(name), ' ') WHERE id <= 4",
]


def _tables(server, database: str) -> None:
    server.run_sql([f"CREATE DATABASE {database}"])
    server.run_sql(
        [
            f"CREATE TABLE {database}.t (id INT PRIMARY KEY, a INT, b VARCHAR(64), c DATETIME(3), "
            "d DECIMAL(12,2), KEY(a))",
            f"INSERT INTO {database}.t SELECT seq, seq % 97, CONCAT('naïve ''quoted'' ', seq), "
            "'2024-01-01 00:00:00.123' + INTERVAL seq SECOND, seq / 7 FROM seq_1_to_3000",
            f"CREATE TABLE {database}.bag (v INT)",  # keyless, with duplicate rows
            f"INSERT INTO {database}.bag VALUES (1), (1), (2), (1)",
            f"CREATE TABLE {database}.u (id INT PRIMARY KEY, code INT UNIQUE, name VARCHAR(20) UNIQUE)",
            f"INSERT INTO {database}.u VALUES (1, 10, 'a'), (2, 11, 'b'), (3, 12, 'c'), (4, 13, 'd'), (5, 20, 'e')",
        ],
        database=database,
    )


def test_joined_statements_restore_what_one_row_statements_restore(scratch_server, tmp_path):
    restored = {}
    for rows, database in ((1, "rps_one"), (1000, "rps_joined")):
        _tables(scratch_server, database)
        tables = [f"{database}.t", f"{database}.bag", f"{database}.u"]
        before = digest(scratch_server, tables)
        rng = scratch_server.run_sql(INCIDENT, database=database)
        script, plan, report = flashback(
            scratch_server, rng, tmp_path, name=database, rows_per_statement=rows
        )
        lines = statements(script)
        if rows == 1:
            assert len(lines) == report.statements == 1500 + 500 + 300 + 3 + 3 + 5 + 4
        else:
            inserts = [s for s in lines if s.startswith(f"INSERT INTO `{database}`.`t`")]
            deletes = [s for s in lines if s.startswith(f"DELETE FROM `{database}`.`t`")]
            assert len(inserts) < 20 and sum(s.count("), (") + 1 for s in inserts) == 1500
            assert (
                len(deletes) <= 3 and sum(s.count(" OR ") + 1 for s in deletes) == 300
            )  # a join per rows event
            updates = [s for s in lines if s.startswith(f"UPDATE `{database}`.`t`")]
            assert len(updates) < 30 and sum(s.count(" OR ") + 1 for s in updates) == 500
            assert all("=CASE WHEN (`id`=" in s for s in updates)
            keyless = [s for s in lines if f"`{database}`.`bag`" in s]
            # keyless: each delete keeps its LIMIT 1 (a row may be there twice); re-inserts still join
            assert [s for s in keyless if s.startswith("DELETE")] == [
                f"DELETE FROM `{database}`.`bag` WHERE `v`<=>{v} LIMIT 1;" for v in (4, 3, 3)
            ]
            assert [s for s in keyless if s.startswith("INSERT")] == [
                f"INSERT INTO `{database}`.`bag` (`v`) VALUES (1), (1), (1);"
            ]
        plan_statements = [json.loads(line) for line in plan.read_text().splitlines() if line.strip()]
        assert len([p for p in plan_statements if p.get("sql")]) == 1500 + 500 + 300 + 3 + 3 + 5 + 4
        if rows > 1:
            shifted = [s for s in lines if s.startswith(f"UPDATE `{database}`.`u` SET `code`")]
            # ids 1-4 each take the code the next one holds before: one a statement; 5 joins 4
            assert len(shifted) == 4 and "WHEN (`id`=4) THEN 13 WHEN (`id`=5) THEN 20" in shifted[-1]
        apply_with_client(scratch_server, script)
        assert digest(scratch_server, tables) == before
        restored[rows] = before
    # the same rows in both databases, restored the same
    assert [v[1:] for v in restored[1].values()] == [v[1:] for v in restored[1000].values()]


@pytest.mark.both_ways_off("a key re-taken since the incident: the refusal is the point")
def test_a_duplicate_key_refuses_the_joined_insert_whole(scratch_server, tmp_path):
    """A row re-taken since the incident: the joined INSERT fails as a whole (the server's statement
    atomicity), as the first failing one-row INSERT would; nothing of that statement stays."""
    _tables(scratch_server, "rps_conflict")
    rng = scratch_server.run_sql(["DELETE FROM t WHERE id <= 10"], database="rps_conflict")
    scratch_server.run_sql(["INSERT INTO rps_conflict.t (id) VALUES (7)"])
    script, _plan, _report = flashback(scratch_server, rng, tmp_path, name="conflict", rows_per_statement=50)
    (joined,) = [s for s in statements(script) if s.startswith("INSERT")]
    assert joined.count("), (") == 9
    done = subprocess.run(client_command(scratch_server), input=script.read_bytes(), capture_output=True)
    assert done.returncode != 0 and b"Duplicate entry '7'" in done.stderr
    assert scratch_server.query("SELECT COUNT(*) FROM rps_conflict.t WHERE id <= 10") == [(1,)]
