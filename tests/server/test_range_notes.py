"""The legitimate-change trap: a DELETE before the incident and another after it, each from its own
connection. A range that runs to the end of the log is taken as before (same exit code) but says so,
on stderr and in the report, with how to narrow it; a bounded range says nothing."""

from __future__ import annotations

import json

import pytest

from tests.support.restore import range_args, run_cli

DB = "notes"
OPEN_ENDED = "the range runs to the end of the log"


@pytest.fixture(scope="module")
def trap(scratch_server):
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(10))",
            f"INSERT INTO {DB}.t VALUES " + ", ".join(f"({i}, 'v{i}')" for i in range(1, 7)),
        ]
    )
    before = scratch_server.run_sql(f"DELETE FROM {DB}.t WHERE id = 1")  # legitimate: must stay deleted
    incident = scratch_server.run_sql(f"DELETE FROM {DB}.t WHERE id IN (2, 3)")
    after = scratch_server.run_sql(f"DELETE FROM {DB}.t WHERE id = 6")  # legitimate: must stay deleted
    return before, incident, after


def _notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("mysql-rollback: note: ")]


def test_a_range_to_the_end_of_the_log_says_what_else_it_holds(scratch_server, trap, tmp_path):
    before, _, after = trap
    names = [p.name for p in scratch_server.binlog_files()]
    files = [str(p) for p in scratch_server.binlog_files()[names.index(before.start_file) :]]
    report = tmp_path / "report.json"
    done = run_cli(
        "flashback",
        *files,
        "--start-position",
        str(before.start_position),
        "-t",
        f"{DB}.t",
        "--schema-dsn",
        scratch_server.dsn,
        "--engine",
        "local",
        "--report",
        str(report),
    )
    assert done.returncode == 0, done.stderr  # a warning, not a refusal
    assert done.stdout.count(f"INSERT INTO `{DB}`.`t`") == 4  # the trap: both legitimate rows come back
    # MariaDB before 11 writes no thread id for a transaction (its GTID event replaces BEGIN): the note
    # on connections needs a binlog that names them (tests/unit/test_range_notes.py)
    notes = _notes(done.stderr)
    assert len(notes) == 1 and OPEN_ENDED in notes[0] and "bound it" in notes[0], done.stderr
    facts = json.loads(report.read_text())
    assert facts["range_notes"] == [n.removeprefix("mysql-rollback: note: ") for n in notes]
    assert facts["range_notes"][0] in facts["warnings"]
    bounded = run_cli(
        "flashback",
        *range_args(before)[:-2],
        "--stop-position",
        str(after.start_position),
        "--schema-dsn",
        scratch_server.dsn,
        "--engine",
        "local",
    )
    assert bounded.returncode == 0, bounded.stderr
    assert _notes(bounded.stderr) == [], bounded.stderr


def test_the_incident_alone_gets_no_note(scratch_server, trap):
    _, incident, _ = trap
    done = run_cli(
        "flashback", *range_args(incident), "--schema-dsn", scratch_server.dsn, "--engine", "local"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(f"INSERT INTO `{DB}`.`t`") == 2 and "VALUES (1," not in done.stdout
    assert _notes(done.stderr) == [], done.stderr
