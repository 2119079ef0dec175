"""Key changes that chain through one rows event (`UPDATE t SET id = id + 1 ORDER BY id DESC`): each
reverse UPDATE frees the key the next one takes. The verified apply checks every row where the steps
before it left it, so a chain is no conflict (found by the suite's both-ways check, tests/support/both_ways.py)."""

from __future__ import annotations

import pytest

from rollback.target.execute import execute_plan
from tests.support.restore import apply_with_client, flashback, snapshot

DB = "key_chains"


def _forty_rows(server) -> None:
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v INT)",
            f"INSERT INTO {DB}.t SELECT seq, seq * 10 FROM {DB}.seq_1_to_40",
        ]
    )


@pytest.mark.parametrize(
    "incident",
    [
        ["UPDATE {db}.t SET id = id + 1 ORDER BY id DESC"],
        ["UPDATE {db}.t SET id = id - 1 ORDER BY id"],
        [
            "UPDATE {db}.t SET id = id + 1 ORDER BY id DESC",
            "UPDATE {db}.t SET id = id * 2, v = v + 1 WHERE id > 5 ORDER BY id DESC",
        ],
        # one statement that sets the key and another column: no later step checks what it left
        ["UPDATE {db}.t SET id = id * 2, v = v + 1 WHERE id > 5 ORDER BY id DESC"],
    ],
    ids=["up", "down", "twice", "key-and-value"],
)
@pytest.mark.parametrize("commit", [False, True], ids=["dry-run", "commit"])
def test_a_chain_of_key_changes_is_no_conflict(scratch_server, tmp_path, incident, commit):
    server = scratch_server
    _forty_rows(server)
    before = snapshot(server, [f"{DB}.t"])
    rng = server.run_sql([sql.format(db=DB) for sql in incident])
    _script, plan, _ = flashback(server, rng, tmp_path)
    result = execute_plan(plan, server.dsn, commit=commit)
    assert result.conflicts == []
    if commit:
        assert snapshot(server, [f"{DB}.t"]) == before


def test_a_chain_of_key_changes_restores_through_joined_statements(scratch_server, tmp_path):
    """The script's `--rows-per-statement` UPDATEs never set the key they find rows by (statement_batches)."""
    server = scratch_server
    _forty_rows(server)
    before = snapshot(server, [f"{DB}.t"])
    rng = server.run_sql(
        [
            f"UPDATE {DB}.t SET id = id + 1 ORDER BY id DESC",
            f"UPDATE {DB}.t SET id = id * 2, v = v + 1 WHERE id > 5 ORDER BY id DESC",
            f"UPDATE {DB}.t SET v = v - 3 WHERE id > 20",
        ]
    )
    script, _plan, _ = flashback(server, rng, tmp_path, rows_per_statement=1000)
    apply_with_client(server, script)
    assert snapshot(server, [f"{DB}.t"]) == before
