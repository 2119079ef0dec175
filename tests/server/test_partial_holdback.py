"""--allow-partial never leaves a row worse than the incident left it.

Under MINIMAL row images a DELETE cannot be undone (its before image holds only the key). When the same
key is inserted again afterwards, undoing that INSERT alone deletes the new row and cannot bring back
the old one: the row ends up missing. Every change newer than an irreversible change to a row is held
back and listed instead, following the row when an UPDATE moves its key, across partitions too.
"""

from __future__ import annotations

import pytest

from rollback import Filters, Options, generate
from rollback.schema.tables import ServerSchema
from tests.support.restore import apply_with_client, range_args, range_spec, run_cli

DB = "hold"
HELD = "an older change to this row cannot be restored"


@pytest.fixture(scope="module")
def minimal(scratch_server_factory):
    return scratch_server_factory(row_image="MINIMAL")


@pytest.fixture
def incident(minimal):
    """The rows before, the range of the incident, and the rows after it."""
    minimal.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(20))",
            f"INSERT INTO {DB}.t VALUES (1, 'one'), (2, 'two'), (3, 'three'), (4, 'four')",
        ]
    )
    rng = minimal.run_sql(
        [
            f"DELETE FROM {DB}.t WHERE id = 1",  # irreversible: MINIMAL logs only the key
            f"INSERT INTO {DB}.t VALUES (1, 'again')",  # the key again: held back
            f"UPDATE {DB}.t SET id = 10 WHERE id = 1",  # the row moves: held back, 10 followed
            f"UPDATE {DB}.t SET id = 11 WHERE id = 10",  # held back, 11 followed
            f"INSERT INTO {DB}.t VALUES (20, 'new')",  # unrelated: undone
            f"UPDATE {DB}.t SET id = 21 WHERE id = 2",  # unrelated: undone
            f"INSERT INTO {DB}.t VALUES (30, 'x')",
            f"UPDATE {DB}.t SET id = 10 WHERE id = 30",  # key 10 again, but after the row left it: held
        ]
    )
    return rng


def rows(server) -> list[tuple]:
    return server.query(f"SELECT id, v FROM {DB}.t ORDER BY id")


def run(server, rng, out, **options):
    out.mkdir()
    report = generate(
        range_spec(rng),
        Filters(),
        Options(
            **{"engine": "local", "schema": ServerSchema(server.connect), "allow_partial": True, **options}
        ),
        out / "r.sql",
        out / "p.jsonl",
    )
    return (out / "r.sql").read_bytes(), (out / "p.jsonl").read_bytes(), report


def test_newer_changes_to_a_row_whose_older_change_is_irreversible_are_held_back(minimal, incident, tmp_path):
    script, _plan, report = run(minimal, incident, tmp_path / "unsplit")
    apply_with_client(minimal, tmp_path / "unsplit" / "r.sql")
    # 20 and 21 undone; the row that took key 1 stays where it went (11), and nothing is lost
    assert rows(minimal) == [(2, "two"), (3, "three"), (4, "four"), (10, "x"), (11, "again")]
    held = [i["type"] for i in report.irreversible if i["reason"] == HELD]
    assert held == ["insert", "update", "update", "update"], report.irreversible
    assert report.irreversible_count == 5  # the DELETE itself, and the four it holds back
    assert script.decode().count(f"({HELD})") == 4  # listed in the header


def test_held_back_changes_follow_the_row_across_partitions_on_both_engines(
    minimal, incident, tmp_path, spark
):
    unsplit = run(minimal, incident, tmp_path / "unsplit")
    local = run(minimal, incident, tmp_path / "local", engine="local", partition_bytes=100)
    on_spark = run(minimal, incident, tmp_path / "spark", engine="spark", partition_bytes=100)
    assert local[2].partitions >= 6 and on_spark[2].engine == "spark"
    assert local[:2] == unsplit[:2] == on_spark[:2]
    assert local[2].irreversible == unsplit[2].irreversible == on_spark[2].irreversible


def test_the_cli_exits_3_and_lists_the_held_back_changes(minimal, incident, tmp_path):
    script = tmp_path / "r.sql"
    done = run_cli(
        "flashback", *range_args(incident), "--schema-dsn", minimal.dsn, "--allow-partial", "-o", str(script)
    )
    assert done.returncode == 3, done.stderr
    assert "5 row change(s) could not be restored" in done.stderr
    header = [line for line in script.read_text().splitlines() if line.startswith("-- irreversible:")]
    assert len(header) == 5 and sum(HELD in line for line in header) == 4
