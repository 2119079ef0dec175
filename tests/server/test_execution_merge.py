"""Merge execution (issue 28): a net plan undone column by column, keeping what the target changed since.

Each test builds its table, runs the incident, writes the net plan of it (tests/support/merge_plans.py),
then makes the later writes and executes the plan with merge=True on the scratch server; the tables are
compared with snapshots (checksum and rows) of what the merge must leave.
"""

from __future__ import annotations

import json
import threading
import uuid

import pytest

from rollback import (
    ExecutionConflict,
    ExecutionRefused,
    ResolutionsError,
    RollbackError,
    execute_plan,
    parse_resolutions,
)
from tests.support.merge_plans import rows_of, write_net_plan
from tests.support.restore import snapshot

pytestmark = pytest.mark.both_ways_off("rows change after the incident on purpose: the merge keeps them")

BEFORE = [(1, 1, "x", 10, 100), (2, 2, "y", 20, 200), (3, 3, "z", 30, 300), (4, 4, "w", 40, 400)]


@pytest.fixture()
def incident(scratch_server, tmp_path):
    """db.t before: rows 1-4. The incident: a,b of rows 1-3 changed, row 4 deleted, row 5 inserted."""
    db = f"mg_{uuid.uuid4().hex[:8]}"
    table = f"{db}.t"
    scratch_server.query(f"CREATE DATABASE {db}")
    scratch_server.query(
        f"CREATE TABLE {table} (id INT PRIMARY KEY, a INT, b VARCHAR(20), c INT, u INT UNIQUE) ENGINE=InnoDB"
    )
    values = ", ".join(f"({i}, {a}, '{b}', {c}, {u})" for i, a, b, c, u in BEFORE)
    scratch_server.query(f"INSERT INTO {table} VALUES {values}")
    before = rows_of(scratch_server, table)
    pre = snapshot(scratch_server, [table])
    conn = scratch_server.connect()
    with conn.cursor() as cur:
        cur.execute(f"UPDATE {table} SET a = a + 100, b = CONCAT(b, '!') WHERE id <= 3")
        cur.execute(f"DELETE FROM {table} WHERE id = 4")
        cur.execute(f"INSERT INTO {table} VALUES (5, 5, 'v', 50, 500)")
    conn.close()
    after = rows_of(scratch_server, table)
    plan = write_net_plan(tmp_path / "net.plan.jsonl", table, before, after, unique=["u"])
    yield {"table": table, "plan": plan, "before": pre, "server": scratch_server}
    scratch_server.query(f"DROP DATABASE {db}")


def later(server, *statements):
    conn = server.connect()
    with conn.cursor() as cur:
        for sql in statements:
            cur.execute(sql)
    conn.close()


def rows(server, table):
    return server.query(f"SELECT id, a, b, c, u FROM {table} ORDER BY id")


def expected(server, table, rows_):
    """The snapshot of a table holding exactly `rows_` (built beside it, then named as it)."""
    twin = table + "_expected"
    server.query(f"CREATE TABLE {twin} LIKE {table}")
    values = ", ".join("(" + ", ".join("NULL" if v is None else repr(v) for v in row) + ")" for row in rows_)
    server.query(f"INSERT INTO {twin} VALUES {values}")
    shot = snapshot(server, [twin])[twin]
    server.query(f"DROP TABLE {twin}")
    return {table: shot}


def test_later_change_of_another_column_is_kept_and_the_incident_undone(incident):
    server, table, plan = incident["server"], incident["table"], incident["plan"]
    later(server, f"UPDATE {table} SET c = c + 1 WHERE id <= 3")
    result = execute_plan(plan, server.dsn, commit=True, merge=True)
    assert result.committed and not result.conflicts
    want = [(1, 1, "x", 11, 100), (2, 2, "y", 21, 200), (3, 3, "z", 31, 300), (4, 4, "w", 40, 400)]
    assert snapshot(server, [table]) == expected(server, table, want)
    assert result.merge == {
        "restored": 5,
        "kept_later_changes": 3,
        "resolved": {"keep_now": 0, "take_before": 0, "take_before_where_unchanged": 0, "column": 0},
        "unresolved": 0,
    }
    assert result.to_dict()["merge"] == result.merge


def test_the_strict_default_still_reports_the_later_change_as_a_conflict(incident):
    server, table, plan = incident["server"], incident["table"], incident["plan"]
    later(server, f"UPDATE {table} SET c = c + 1 WHERE id = 2")
    now = snapshot(server, [table])
    with pytest.raises(ExecutionConflict, match="the row changed since the incident"):
        execute_plan(plan, server.dsn, commit=True)
    assert snapshot(server, [table]) == now


def test_with_nothing_changed_since_merge_restores_what_the_strict_apply_restores(incident):
    server, table, plan = incident["server"], incident["table"], incident["plan"]
    result = execute_plan(plan, server.dsn, commit=True, merge=True)
    assert result.merge["restored"] == 5 and result.merge["kept_later_changes"] == 0
    assert snapshot(server, [table]) == incident["before"]


def test_a_later_change_of_the_same_column_aborts_with_three_versions_and_nothing_applied(incident):
    server, table, plan = incident["server"], incident["table"], incident["plan"]
    later(server, f"UPDATE {table} SET a = 7 WHERE id = 2")
    now = snapshot(server, [table])
    with pytest.raises(ExecutionConflict) as raised:
        execute_plan(plan, server.dsn, commit=True, merge=True)
    message = raised.value.one_line()
    assert "1 conflict(s) without a resolution" in message and "nothing was applied" in message
    assert "a before 2, after 102, now 7" in message
    assert snapshot(server, [table]) == now
    [conflict] = raised.value.result.conflicts
    assert conflict == {
        "table": table,
        "kind": "update",
        "file": "mysql-bin.000001",
        "pos": conflict["pos"],
        "key": {"id": 2},
        "columns": [
            {"name": "a", "before": 2, "after": 102, "now": 7, "changed_since": True},
            {"name": "b", "before": "y", "after": "y!", "now": "y!", "changed_since": False},
        ],
        "now_present": True,
        "resolution": None,
    }
    assert raised.value.result.merge["unresolved"] == 1


RESOLVED_ROW_2 = {
    "keep_now": (2, 7, "y!", 20, 200),
    "take_before": (2, 2, "y", 20, 200),
    "take_before_where_unchanged": (2, 7, "y", 20, 200),
    "column": (2, 2, "y!", 20, 200),
}


@pytest.mark.parametrize("choice", list(RESOLVED_ROW_2))
def test_a_same_column_conflict_resolved_each_way(incident, choice):
    server, table, plan = incident["server"], incident["table"], incident["plan"]
    later(server, f"UPDATE {table} SET a = 7 WHERE id = 2")
    entry = {"table": table, "key": {"id": 2}, "choice": choice}
    if choice == "column":
        entry["columns"] = {"a": "take_before", "b": "keep_now"}
    result = execute_plan(
        plan, server.dsn, commit=True, merge=True, resolutions=parse_resolutions({"rows": [entry]})
    )
    want = [(1, 1, "x", 10, 100), RESOLVED_ROW_2[choice], (3, 3, "z", 30, 300), (4, 4, "w", 40, 400)]
    assert snapshot(server, [table]) == expected(server, table, want)
    [conflict] = result.conflicts
    assert conflict["resolution"] == (
        {"choice": "column", "columns": entry["columns"]} if choice == "column" else choice
    )
    assert result.merge["resolved"][choice] == 1 and result.merge["restored"] == 4


def test_a_deleted_rows_key_taken_again_is_a_conflict_resolved_by_replacing_or_keeping(incident):
    server, table, plan = incident["server"], incident["table"], incident["plan"]
    later(server, f"INSERT INTO {table} VALUES (6, 6, 'n', 60, 400)")  # takes row 4's unique key u=400
    now = snapshot(server, [table])
    with pytest.raises(ExecutionConflict, match="its key is taken by another row now"):
        execute_plan(plan, server.dsn, commit=True, merge=True)
    assert snapshot(server, [table]) == now
    kept: list = []
    keep = execute_plan(
        plan,
        server.dsn,
        merge=True,
        resolutions=parse_resolutions({"tables": {table: "keep_now"}}),
        inspect=lambda conn: kept.append(_rows_in(conn, table)),
    )
    assert kept == [[(1, 1, "x", 10, 100), (2, 2, "y", 20, 200), (3, 3, "z", 30, 300), (6, 6, "n", 60, 400)]]
    assert keep.conflicts[0]["kind"] == "delete" and keep.conflicts[0]["resolution"] == "keep_now"
    assert keep.conflicts[0]["key"] == {"id": 4} and keep.conflicts[0]["now_present"]
    result = execute_plan(
        plan, server.dsn, commit=True, merge=True, resolutions=parse_resolutions({"default": "take_before"})
    )
    assert result.merge["resolved"]["take_before"] == 1
    want = [(1, 1, "x", 10, 100), (2, 2, "y", 20, 200), (3, 3, "z", 30, 300), (4, 4, "w", 40, 400)]
    assert snapshot(server, [table]) == expected(server, table, want)


def _rows_in(conn, table):
    with conn.cursor() as cur:
        cur.execute(f"SELECT id, a, b, c, u FROM {table} ORDER BY id")
        return list(cur.fetchall())


def test_keep_now_leaves_the_row_that_took_the_key(incident):
    server, table, plan = incident["server"], incident["table"], incident["plan"]
    later(server, f"INSERT INTO {table} VALUES (4, 9, 'new', 90, 900)")  # takes row 4's primary key
    result = execute_plan(
        plan, server.dsn, commit=True, merge=True, resolutions=parse_resolutions({"default": "keep_now"})
    )
    assert [c["key"] for c in result.conflicts] == [{"id": 4}]
    assert result.conflicts[0]["columns"][1] == {
        "name": "a",
        "before": 4,
        "after": None,
        "now": 9,
        "changed_since": True,
    }
    want = [(1, 1, "x", 10, 100), (2, 2, "y", 20, 200), (3, 3, "z", 30, 300), (4, 9, "new", 90, 900)]
    assert snapshot(server, [table]) == expected(server, table, want)


def test_an_inserted_row_updated_since_is_a_conflict(incident):
    server, table, plan = incident["server"], incident["table"], incident["plan"]
    later(server, f"UPDATE {table} SET c = 55 WHERE id = 5")
    with pytest.raises(ExecutionConflict) as raised:
        execute_plan(plan, server.dsn, commit=True, merge=True)
    [conflict] = raised.value.result.conflicts
    assert conflict["kind"] == "insert" and conflict["key"] == {"id": 5}
    changed = [c for c in conflict["columns"] if c["changed_since"]]
    assert changed == [{"name": "c", "before": None, "after": 50, "now": 55, "changed_since": True}]
    # take_before deletes it all the same; skip keeps it
    skipped = execute_plan(plan, server.dsn, commit=True, merge=True, on_conflict="skip")
    assert skipped.skipped == 1 and skipped.merge["resolved"]["keep_now"] == 1
    assert rows(server, table)[-1] == (5, 5, "v", 55, 500)


def test_take_before_deletes_an_inserted_row_changed_since(incident):
    server, table, plan = incident["server"], incident["table"], incident["plan"]
    later(server, f"UPDATE {table} SET c = 55 WHERE id = 5")
    execute_plan(
        plan, server.dsn, commit=True, merge=True, resolutions=parse_resolutions({"default": "take_before"})
    )
    assert snapshot(server, [table]) == incident["before"]


def test_a_change_committed_while_the_merge_waits_is_a_conflict_not_a_lost_update(incident):
    """Between the dry run and the real run another session changes a of row 1 and commits a moment later:
    the real run's locking read waits for it and sees the change: a conflict, the other session's value kept."""
    server, table, plan = incident["server"], incident["table"], incident["plan"]
    holders = []
    timers = []
    connections = []

    def factory():
        connections.append(1)
        if len(connections) == 3:  # side effects, dry run, then the real run
            conn = server.connect(autocommit=False)
            with conn.cursor() as cur:
                cur.execute("BEGIN")
                cur.execute(f"UPDATE {table} SET a = 77 WHERE id = 1")
            holders.append(conn)
            timers.append(threading.Timer(1.0, conn.commit))
            timers[-1].start()
        return server.connect(autocommit=False, client_flag=_multi())

    try:
        with pytest.raises(ExecutionConflict, match=r"a before 1, after 101, now 77"):
            execute_plan(plan, factory, commit=True, merge=True, lock_wait_timeout=20)
    finally:
        for timer in timers:  # its commit has its answer before the connection closes
            timer.join()
        for conn in holders:
            conn.close()
    assert rows(server, table)[0] == (1, 77, "x!", 10, 100)
    assert len(rows(server, table)) == 4  # row 5 still there: nothing applied


def _multi():
    from pymysql.constants import CLIENT

    return CLIENT.MULTI_STATEMENTS


def test_a_plan_without_merge_data_is_refused(incident, tmp_path):
    server = incident["server"]
    plain = tmp_path / "plain.plan.jsonl"
    lines = [json.loads(line) for line in incident["plan"].read_text().splitlines()]
    plain.write_text(
        "".join(json.dumps({k: v for k, v in line.items() if k != "merge"}) + "\n" for line in lines)
    )
    with pytest.raises(RollbackError, match="the plan was not written with --net"):
        execute_plan(plain, server.dsn, merge=True)


def test_a_column_choice_naming_an_unchanged_column_is_refused_before_anything_runs(incident):
    server, table, plan = incident["server"], incident["table"], incident["plan"]
    doc = {"rows": [{"table": table, "key": {"id": 2}, "choice": "column", "columns": {"c": "take_before"}}]}
    with pytest.raises(ResolutionsError, match=r"rows\[0\]: column 'c' of .* is not one the range changed"):
        execute_plan(plan, server.dsn, merge=True, resolutions=parse_resolutions(doc))


def test_take_before_on_a_taken_key_counts_as_a_delete_for_the_trigger_check(incident):
    # REPLACE deletes the row that took the key: its DELETE triggers fire, which the plan's own statements
    # (an INSERT, UPDATEs) never set off; the execution is refused unless accepted
    server, table = incident["server"], incident["table"]
    # without the incident's INSERT of row 5, whose reverse DELETE would meet the trigger on its own
    steps = [json.loads(line) for line in incident["plan"].read_text().splitlines()]
    plan = incident["plan"].with_name("no-insert.plan.jsonl")
    plan.write_text("".join(json.dumps(s) + "\n" for s in steps if s["merge"]["kind"] != "insert"))
    audit = table + "_audit"
    server.query(f"CREATE TABLE {audit} (id INT) ENGINE=InnoDB")
    server.query(
        f"CREATE TRIGGER {table}_gone AFTER DELETE ON {table} FOR EACH ROW INSERT INTO {audit} VALUES (OLD.id)"
    )
    later(server, f"INSERT INTO {table} VALUES (6, 6, 'n', 60, 400)")  # takes row 4's unique key u=400
    now = snapshot(server, [table, audit])
    replace = parse_resolutions({"default": "take_before"})
    with pytest.raises(ExecutionRefused, match="trigger"):
        execute_plan(plan, server.dsn, commit=True, merge=True, resolutions=replace)
    assert snapshot(server, [table, audit]) == now
    kept = execute_plan(
        plan, server.dsn, commit=True, merge=True, resolutions=parse_resolutions({"default": "keep_now"})
    )
    assert kept.committed and kept.conflicts[0]["resolution"] == "keep_now"
    assert server.query(f"SELECT id FROM {audit}") == []


@pytest.mark.parametrize("merge", [True, False], ids=["merge", "strict"])
def test_a_plan_naming_its_table_quoted_still_meets_its_trigger(incident, merge):
    """A hand-written net plan may name its table `db`.`t` (the merge reads both forms): the target's
    triggers are still looked up by db.t, so an UPDATE trigger refuses the execution before anything
    runs, whichever path (streamed or read whole) would have run the plan."""
    server, table = incident["server"], incident["table"]
    assert '"table":"`' in incident["plan"].read_text()
    audit = table + "_audit"
    server.query(f"CREATE TABLE {audit} (id INT) ENGINE=InnoDB")
    server.query(
        f"CREATE TRIGGER {table}_changed AFTER UPDATE ON {table} FOR EACH ROW INSERT INTO {audit} VALUES (OLD.id)"
    )
    now = snapshot(server, [table, audit])
    with pytest.raises(ExecutionRefused, match=rf"trigger .*{table.split('.')[1]}_changed"):
        execute_plan(incident["plan"], server.dsn, commit=True, merge=merge)
    assert snapshot(server, [table, audit]) == now
