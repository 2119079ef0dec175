"""Batched verified apply: steps go to the server many a round trip (rollback/target/execute.py's _Batch), and
the outcome is the one of one step at a time: a conflict inside a batch applies nothing and names its
row, a row changed twice is restored in order, unique keys swap, keyless duplicates come back, and
random plans give the same tables batched and one step at a time."""

from __future__ import annotations

import threading
import time
from typing import Any

import pymysql
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymysql.constants import CLIENT

from rollback.base.errors import ConflictError, RollbackError
from rollback.target.execute import ExecutionFailed, connect_args, execute_plan
from tests.support.restore import incident_plan, snapshot

DB = "bx"
ROWS = 300  # steps of one table in one batch (execute.BATCH_STEPS)


class Counting(pymysql.connections.Connection):
    """A connection that counts the queries it sends (a batch is one query)."""

    queries = 0

    def query(self, sql: Any, unbuffered: bool = False) -> int:
        Counting.queries += 1
        return super().query(sql, unbuffered)


def batched(server: Any) -> Any:
    return lambda: Counting(**connect_args(server.dsn), client_flag=CLIENT.MULTI_STATEMENTS)


def one_at_a_time(server: Any) -> Any:
    return lambda: pymysql.connect(**connect_args(server.dsn))


@pytest.mark.parametrize("check_first", [True, False], ids=["dry-run-first", "commit-is-its-own-dry-run"])
def test_one_conflicting_row_in_a_batch_applies_nothing_and_names_it(scratch_server, tmp_path, check_first):
    data = incident_plan(
        scratch_server,
        tmp_path,
        DB,
        [f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(20))"]
        + [f"INSERT INTO {DB}.t SELECT seq, CONCAT('v', seq) FROM {DB}.seq_1_to_{ROWS}"],
        [f"DELETE FROM {DB}.t"],
    )
    Counting.queries = 0
    assert execute_plan(data["plan"], batched(scratch_server)).rows_affected == ROWS
    assert Counting.queries < ROWS / 10, Counting.queries  # the rows went in batches
    scratch_server.run_sql([f"INSERT INTO {DB}.t VALUES (150, 'taken later')"])
    changed = snapshot(scratch_server, data["tables"])
    with pytest.raises(
        ConflictError, match=rf"conflict at mysql-bin\.\d+:\d+ \({DB}\.t, .*key is taken; nothing"
    ):
        execute_plan(data["plan"], batched(scratch_server), commit=True, check_first=check_first)
    assert snapshot(scratch_server, data["tables"]) == changed
    dry = execute_plan(data["plan"], scratch_server.dsn, on_conflict="skip")
    assert [(c["table"], c["statement"]) for c in dry.conflicts] == [
        (f"{DB}.t", f"INSERT INTO `{DB}`.`t` (`id`, `v`) VALUES (150, 'v150');")
    ]
    result = execute_plan(
        data["plan"], scratch_server.dsn, commit=True, on_conflict="skip", check_first=check_first
    )
    assert result.committed and result.skipped == 1 and result.rows_affected == ROWS - 1
    rows = dict(scratch_server.query(f"SELECT id, v FROM {DB}.t"))
    assert rows[150] == "taken later" and len(rows) == ROWS
    assert all(rows[i] == f"v{i}" for i in rows if i != 150)


def test_a_row_updated_then_deleted_in_one_batch_is_restored_in_order(scratch_server, tmp_path):
    data = incident_plan(
        scratch_server,
        tmp_path,
        DB,
        [
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v INT)",
            f"INSERT INTO {DB}.t SELECT seq, seq FROM {DB}.seq_1_to_{ROWS}",
        ],
        [
            "BEGIN",
            f"UPDATE {DB}.t SET v = v + 1000 WHERE id % 3 = 0",
            f"DELETE FROM {DB}.t WHERE id % 2 = 0",  # every sixth row: updated, then deleted
            f"UPDATE {DB}.t SET v = -v WHERE id % 5 = 0",
            "COMMIT",
        ],
    )
    Counting.queries = 0
    result = execute_plan(data["plan"], batched(scratch_server), commit=True, check_first=False)
    assert result.committed and Counting.queries < 20
    assert snapshot(scratch_server, data["tables"]) == data["before"]


def test_unique_key_swaps_inside_one_batch(scratch_server, tmp_path):
    swaps = []
    for a in range(1, 41, 2):  # rows a and a + 1 swap their unique values through a free one
        swaps += [
            f"UPDATE {DB}.t SET u = -1 WHERE id = {a}",
            f"UPDATE {DB}.t SET u = {a} WHERE id = {a + 1}",
            f"UPDATE {DB}.t SET u = {a + 1} WHERE id = {a}",
        ]
    data = incident_plan(
        scratch_server,
        tmp_path,
        DB,
        [
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, u INT NOT NULL, UNIQUE KEY (u))",
            f"INSERT INTO {DB}.t SELECT seq, seq FROM {DB}.seq_1_to_50",
        ],
        ["BEGIN", *swaps, "COMMIT"],
    )
    Counting.queries = 0
    result = execute_plan(data["plan"], batched(scratch_server), commit=True, check_first=False)
    assert result.committed and result.rows_affected == len(swaps) and Counting.queries < 20
    assert snapshot(scratch_server, data["tables"]) == data["before"]


def test_a_keyless_table_with_duplicate_rows(scratch_server, tmp_path):
    data = incident_plan(
        scratch_server,
        tmp_path,
        DB,
        [
            f"CREATE TABLE {DB}.k (a INT, b VARCHAR(8))",
            f"INSERT INTO {DB}.k SELECT seq % 7, CONCAT('b', seq % 3) FROM {DB}.seq_1_to_{ROWS}",
        ],
        ["BEGIN", f"UPDATE {DB}.k SET b = 'x' WHERE a = 1", f"DELETE FROM {DB}.k WHERE a >= 4", "COMMIT"],
    )
    Counting.queries = 0
    result = execute_plan(data["plan"], batched(scratch_server), commit=True, check_first=False)
    assert result.committed and Counting.queries < 20
    assert snapshot(scratch_server, data["tables"]) == data["before"]


# ---- batched and one step at a time give the same tables ----------------------------------------------

KEYS = st.integers(1, 12)
CHANGE = st.one_of(
    st.tuples(st.just("insert"), KEYS, st.integers(0, 9)),
    st.tuples(st.just("update"), KEYS, st.integers(0, 9)),
    st.tuples(st.just("delete"), KEYS, st.just(0)),
    st.tuples(st.just("bump"), st.integers(0, 9), st.just(0)),  # a many-row UPDATE by a non-key column
)


def _sql(change: tuple[str, int, int]) -> str:
    kind, key, value = change
    if kind == "insert":
        return f"INSERT IGNORE INTO {DB}.t VALUES ({key}, {value}, 'n{value}')"
    if kind == "update":
        return f"UPDATE IGNORE {DB}.t SET u = {value}, s = CONCAT(s, '+') WHERE id = {key}"
    if kind == "delete":
        return f"DELETE FROM {DB}.t WHERE id = {key}"
    return f"UPDATE IGNORE {DB}.t SET u = u + 1 WHERE u = {key}"


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    start=st.sets(KEYS, max_size=10),
    changes=st.lists(st.lists(CHANGE, min_size=1, max_size=6), min_size=1, max_size=5),
    later=st.lists(CHANGE, max_size=2),
)
def test_random_plans_give_the_same_tables_batched_and_one_step_at_a_time(
    scratch_server, tmp_path_factory, start, changes, later
):
    setup = [f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, u INT, s VARCHAR(40), UNIQUE KEY (u))"]
    setup += [f"INSERT IGNORE INTO {DB}.t VALUES ({k}, {k % 10}, 's{k}')" for k in sorted(start)]
    transactions = [s for tx in changes for s in ("BEGIN", *map(_sql, tx), "COMMIT")]
    data = incident_plan(
        scratch_server, tmp_path_factory.mktemp("random"), DB, setup, transactions, allow_empty=True
    )
    scratch_server.run_sql(["SET SESSION sql_log_bin = 0", *map(_sql, later)])  # conflicts, maybe
    changed = snapshot(scratch_server, data["tables"])
    outcomes = []
    for factory in (one_at_a_time(scratch_server), batched(scratch_server)):
        scratch_server.run_sql(
            ["SET SESSION sql_log_bin = 0", f"DELETE FROM {DB}.t"]
            + [f"INSERT INTO {DB}.t VALUES {row}" for row in changed[f"{DB}.t"][1]]
        )
        assert snapshot(scratch_server, data["tables"]) == changed
        try:
            result = execute_plan(data["plan"], factory, commit=True, on_conflict="skip", check_first=False)
            said: tuple[Any, ...] = (result.rows_affected, result.skipped, result.conflicts)
        except RollbackError as exc:  # a later row taking a unique value a re-insert needs, say
            said = (type(exc).__name__, str(exc))
        outcomes.append((said, snapshot(scratch_server, data["tables"])))
    assert outcomes[0] == outcomes[1]
    if not later:
        assert outcomes[1][1] == data["before"]


def test_re_deletes_go_in_batches_and_lock_only_the_rows_they_name(scratch_server, tmp_path):
    """The reverse of inserts: each batch one combined DELETE (its count checked) through the primary
    key, even on a table a little bigger than the batch, where a plain DELETE ... WHERE (k1) OR (k2) ...
    scans and locks every row: a session holding a row the plan does not name is not waited for."""
    data = incident_plan(
        scratch_server,
        tmp_path,
        DB,
        [
            f"CREATE TABLE {DB}.t (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b))",
            f"INSERT INTO {DB}.t SELECT seq, 'kept', seq FROM {DB}.seq_1_to_{ROWS}",
        ],
        [f"INSERT INTO {DB}.t SELECT seq, 'new', -seq FROM {DB}.seq_1_to_{ROWS}"],
    )
    holder = scratch_server.connect(autocommit=False)
    try:
        with holder.cursor() as cur:
            cur.execute(f"SELECT v FROM {DB}.t WHERE a = 1 AND b = 'kept' FOR UPDATE")
        Counting.queries = 0
        result = execute_plan(
            data["plan"], batched(scratch_server), commit=True, check_first=False, lock_wait_timeout=2
        )
        assert result.committed and result.rows_affected == ROWS
        assert Counting.queries < 20, Counting.queries  # not one DELETE a row
    finally:
        holder.rollback()
        holder.close()
    assert snapshot(scratch_server, data["tables"]) == data["before"]


# ---- other sessions: a change committed while a batch waits, a deadlock mid-batch -------------------


def _holding(server: Any, statements: list[str]) -> Any:
    """Another session with the statements run and not committed."""
    conn = server.connect(autocommit=False)
    with conn.cursor() as cur:
        cur.execute("BEGIN")
        for sql in statements:
            cur.execute(sql)
    return conn


@pytest.mark.parametrize("kind", ["update", "re-insert"])
def test_a_row_changed_while_its_batch_waits_is_a_conflict_not_a_lost_update(scratch_server, tmp_path, kind):
    """A CASE UPDATE finds its rows by their checks, and a multi-row INSERT checks its keys itself: a
    row another session holds is waited for, and what that session commits meanwhile is seen (the row
    no longer as the binlog left it, the key taken), named, and nothing is applied."""
    change = f"UPDATE {DB}.t SET v = CONCAT(v, '!')" if kind == "update" else f"DELETE FROM {DB}.t"
    data = incident_plan(
        scratch_server,
        tmp_path,
        DB,
        [
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(20))",
            f"INSERT INTO {DB}.t SELECT seq, CONCAT('v', seq) FROM {DB}.seq_1_to_{ROWS}",
        ],
        [change],
    )
    other = (
        f"UPDATE {DB}.t SET v = 'other' WHERE id = 150"
        if kind == "update"
        else f"INSERT INTO {DB}.t VALUES (150, 'other')"
    )
    holder = _holding(scratch_server, [other])
    timer = threading.Timer(1.0, holder.commit)
    timer.start()
    try:
        started = time.monotonic()
        with pytest.raises(ConflictError) as conflict:
            execute_plan(
                data["plan"], batched(scratch_server), commit=True, check_first=False, lock_wait_timeout=20
            )
        assert time.monotonic() - started >= 0.9  # it waited for the other session
    finally:
        timer.join()
        holder.close()
    message = conflict.value.one_line()
    assert f"({DB}.t, " in message and "nothing was applied" in message
    (named,) = conflict.value.result.conflicts  # the row, by its key
    assert named["table"] == f"{DB}.t" and named["statement"].endswith(
        "WHERE `id`=150;" if kind == "update" else "VALUES (150, 'v150');"
    )
    rows = dict(scratch_server.query(f"SELECT id, v FROM {DB}.t"))
    assert rows[150] == "other"
    assert len(rows) == (ROWS if kind == "update" else 1)


def test_a_deadlock_mid_batch_applies_nothing_and_says_so_in_one_line(scratch_server, tmp_path):
    """The batched apply has no retry for a deadlock: the server rolled the whole transaction back, so
    it stops with one line that says so, and nothing is applied. The apply's joined UPDATE locks the rows
    in plan order, newest change first (300 down to 2), and waits for row 1, which another session holds;
    that session then asks for row 2. The other session has written more (the server's victim is the
    transaction with less to undo)."""
    data = incident_plan(
        scratch_server,
        tmp_path,
        DB,
        [
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v INT)",
            f"CREATE TABLE {DB}.weight (id INT PRIMARY KEY)",
            f"INSERT INTO {DB}.t SELECT seq, seq FROM {DB}.seq_1_to_{ROWS}",
        ],
        [f"UPDATE {DB}.t SET v = v + 1"],
    )
    holder = _holding(
        scratch_server,
        [
            f"INSERT INTO {DB}.weight SELECT seq FROM {DB}.seq_1_to_20000",
            f"SELECT v FROM {DB}.t WHERE id = 1 FOR UPDATE",
        ],
    )

    def ask_for_the_row_before() -> None:
        time.sleep(1.0)  # the apply is waiting for row 1 by then
        with holder.cursor() as cur:
            cur.execute(f"SELECT v FROM {DB}.t WHERE id = 2 FOR UPDATE")

    asking = threading.Thread(target=ask_for_the_row_before)
    asking.start()
    try:
        with pytest.raises(ExecutionFailed) as failed:
            execute_plan(
                data["plan"], batched(scratch_server), commit=True, check_first=False, lock_wait_timeout=20
            )
        asking.join(10)
        assert not asking.is_alive()  # the other session got its row: the apply was the one rolled back
    finally:
        holder.rollback()
        holder.close()
    message = failed.value.one_line()
    assert message.startswith("deadlock with another session at mysql-bin.") and f"({DB}.t, " in message
    assert "\n" not in message and "nothing was applied" in message
    assert snapshot(scratch_server, data["tables"]) == data["after"]
