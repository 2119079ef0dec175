"""The suite's own both-ways check (tests/support/both_ways.py) catches what it is there for: a script the
server rejects while its plan applies, a script and a plan that restore different rows, and a script the
client takes while its plan's checks see a conflict."""

from __future__ import annotations

import pytest

from rollback.target.execute import execute_plan
from tests.support.restore import apply_with_client, flashback

DB = "both_ways"


@pytest.fixture
def incident(scratch_server, tmp_path):
    server = scratch_server
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, a INT, b VARCHAR(10))",
            f"INSERT INTO {DB}.t VALUES (1, 10, 'x'), (2, 20, 'y'), (3, 30, 'z')",
        ]
    )
    rng = server.run_sql([f"DELETE FROM {DB}.t WHERE id = 2", f"UPDATE {DB}.t SET a = a + 1 WHERE id = 3"])
    script, plan, _ = flashback(server, rng, tmp_path)
    return server, script, plan


def test_the_check_is_installed_on_execute_plan(scratch_server):
    assert hasattr(execute_plan, "unchecked")


def test_a_script_that_restores_other_rows_than_its_plan_fails(incident):
    server, script, plan = incident
    text = script.read_text()
    assert "(2, 20, 'y')" in text
    script.write_text(text.replace("(2, 20, 'y')", "(2, 21, 'y')"))
    with pytest.raises(AssertionError, match="left different tables"):
        execute_plan(plan, server.dsn, commit=True)
    # the verified apply itself ran and committed before the comparison
    assert server.query(f"SELECT a FROM {DB}.t WHERE id = 2") == [(20,)]


def test_a_script_the_server_rejects_fails_although_the_plan_applies(incident):
    server, script, plan = incident
    text = script.read_text()
    script.write_text(text.replace("COMMIT;", f"INSERT INTO `{DB}`.`t` VALUES (1, 10, 'x');\nCOMMIT;", 1))
    with pytest.raises(AssertionError, match="mariadb client rejected"):
        execute_plan(plan, server.dsn, commit=False)
    assert server.query(f"SELECT id, a FROM {DB}.t ORDER BY id") == [(1, 10), (3, 31)]  # nothing applied


def test_a_script_the_client_takes_while_its_plan_sees_a_conflict_fails(incident):
    server, script, _plan = incident
    server.run_sql([f"UPDATE {DB}.t SET b = 'later' WHERE id = 3"])  # a later change the script overwrites
    with pytest.raises(AssertionError, match="dry run finds conflicts"):
        apply_with_client(server, script)
    assert server.query(f"SELECT id, a FROM {DB}.t ORDER BY id") == [(1, 10), (3, 31)]  # not applied
