"""`--net`: one statement per row the range touches, restoring what the full script restores.

Rows updated many times, inserted then deleted, deleted then re-inserted under their key, moved to
another primary key, unique values shifted along a chain: the net script has one statement per row
whose image changed and gives the same tables (CHECKSUM TABLE ... EXTENDED and every row) as the full
script, applied with `mariadb` and through execute_plan. Rows exchanging keys and tables without a key
are refused with one line; a hypothesis test runs random sequences on the server.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollback import Filters, Options, generate
from rollback.base.errors import NetRefused
from rollback.schema.tables import ServerSchema
from rollback.target.execute import ExecutionRefused, execute_plan
from tests.support.restore import (
    apply_with_client,
    flashback,
    range_args,
    range_spec,
    restore_both_ways,
    run_as_an_application,
    run_cli,
    snapshot,
    statements,
)

INCIDENT = [
    # row 1..20: ten updates each; rows 21..30: moved to id + 1000 then updated
    *[f"UPDATE t SET a = a + {n}, b = CONCAT(b, '{n}') WHERE id <= 20" for n in range(10)],
    "UPDATE t SET id = id + 1000 WHERE id BETWEEN 21 AND 30",
    "UPDATE t SET a = -a WHERE id > 1000",
    # inserted, updated and deleted inside the range: nothing to undo
    "INSERT INTO t (id, a, b, u) SELECT seq + 5000, seq, 'gone', seq + 5000 FROM seq_1_to_15",
    "UPDATE t SET a = 0 WHERE id > 5000",
    "DELETE FROM t WHERE id > 5000",
    # deleted then inserted again under the same key: one update (row 31) or nothing (row 32)
    "DELETE FROM t WHERE id IN (31, 32)",
    "INSERT INTO t (id, a, b, u) VALUES (31, 7, 'new', 31), (32, 4, 'row 32', 32)",
    # a unique value shifted along a chain (into the value row 46 gave up), then a new row taking a freed one
    "UPDATE t SET u = 1000 WHERE id = 46",
    "UPDATE t SET u = u + 1 WHERE id BETWEEN 40 AND 45 ORDER BY u DESC",
    "DELETE FROM t WHERE id = 50",
    "INSERT INTO t (id, a, b, u) VALUES (9000, 1, 'late', 50)",
]
# rows 1..20, 21..30 (moved), 31, 40..46, 50 (deleted), 9000 (inserted)
NET_ROWS = 20 + 10 + 1 + 7 + 1 + 1


def _table(server, database: str) -> None:
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {database}",
            f"CREATE DATABASE {database}",
            f"CREATE TABLE {database}.t (id INT PRIMARY KEY, a INT, b VARCHAR(200), u INT NOT NULL UNIQUE, "
            "d DECIMAL(12,2) DEFAULT 1.50)",
            f"INSERT INTO {database}.t (id, a, b, u) SELECT seq, seq % 7, CONCAT('row ', seq), seq "
            f"FROM {database}.seq_1_to_60",
        ]
    )


def test_net_gives_one_statement_per_row_and_the_full_scripts_tables(scratch_server, tmp_path):
    restored = {}
    for net, database in ((False, "net_full"), (True, "net_net")):
        _table(scratch_server, database)
        before = snapshot(scratch_server, [f"{database}.t"])
        rng = scratch_server.run_sql(INCIDENT, database=database)
        script, plan, report = flashback(scratch_server, rng, tmp_path, name=database, net=net)
        lines = statements(script)
        if net:
            assert len(lines) == report.statements == NET_ROWS
            steps = [json.loads(line) for line in plan.read_text().splitlines()]
            assert [s["sql"] for s in steps] == lines
            # named as every plan names a table: the execution finds its triggers and engine by it
            assert {s["table"] for s in steps} == {f"{database}.t"}
            assert {s["merge"]["kind"] for s in steps} == {"update", "insert", "delete"}
            moved = [s for s in steps if s["merge"]["key"] == {"id": 1021}]
            assert len(moved) == 1 and moved[0]["type"] == "update"
            assert "`id`=21" in moved[0]["sql"] and moved[0]["sql"].endswith("WHERE `id`=1021;")
            [gone] = [s for s in steps if s["merge"]["kind"] == "delete"]
            assert gone["merge"]["key"] == {"id": 50} and gone["expect"] == 0
            decimal = next(c for c in gone["merge"]["columns"] if c["name"] == "d")
            assert (decimal["before"], decimal["before_sql"], decimal["after"]) == ("1.50", "1.50", None)
            # without a plan, the statements come from the table's full-image functions: the same bytes
            alone = tmp_path / "alone.sql"
            schema = ServerSchema(scratch_server.connect)
            generate(range_spec(rng), Filters(), Options(engine="local", schema=schema, net=True), alone)
            assert alone.read_bytes() == script.read_bytes()
        else:
            assert len(lines) > 3 * NET_ROWS
        apply_with_client(scratch_server, script)
        restored[net] = snapshot(scratch_server, [f"{database}.t"])
        assert restored[net] == before
    assert restored[False]["net_full.t"] == restored[True]["net_net.t"]


def test_a_net_plan_on_a_table_with_triggers_is_refused_as_the_full_plan_is(scratch_server, tmp_path):
    _table(scratch_server, "net_trig")
    scratch_server.run_sql(
        [
            "CREATE TABLE net_trig.audit (id INT AUTO_INCREMENT PRIMARY KEY, n INT)",
            "CREATE TRIGGER net_trig.t_upd AFTER UPDATE ON net_trig.t FOR EACH ROW INSERT INTO net_trig.audit (n) VALUES (1)",
        ]
    )
    rng = scratch_server.run_sql(["UPDATE t SET a = a + 1 WHERE id <= 3"], database="net_trig")
    scratch_server.run_sql(["DELETE FROM net_trig.audit"])
    _script, plan, _report = flashback(scratch_server, rng, tmp_path, net=True)
    with pytest.raises(ExecutionRefused, match="trigger"):
        execute_plan(plan, scratch_server.connect, commit=True)
    assert scratch_server.query("SELECT COUNT(*) FROM net_trig.audit") == [(0,)]


def test_net_restores_through_the_client_and_execute_plan(scratch_server, tmp_path):
    _table(scratch_server, "net_both")
    restore_both_ways(scratch_server, ["net_both.t"], ["USE net_both", *INCIDENT], tmp_path, net=True)


def test_a_value_of_a_nullable_unique_key_is_given_back_before_it_is_taken_back(scratch_server, tmp_path):
    # row 1 gives n=1 up, row 2 takes it, then row 1 changes again (its reverse comes first by age)
    scratch_server.run_sql(
        [
            "DROP DATABASE IF EXISTS net_nullable",
            "CREATE DATABASE net_nullable",
            "CREATE TABLE net_nullable.x (id INT PRIMARY KEY, n INT NULL UNIQUE, v VARCHAR(8))",
            "INSERT INTO net_nullable.x VALUES (1, 1, 'a'), (2, 2, 'b')",
        ]
    )
    before = snapshot(scratch_server, ["net_nullable.x"])
    rng = scratch_server.run_sql(
        [
            "UPDATE x SET n = NULL WHERE id = 1",
            "UPDATE x SET n = 1 WHERE id = 2",
            "UPDATE x SET v = 'late' WHERE id = 1",
        ],
        database="net_nullable",
    )
    script, _plan, _report = flashback(scratch_server, rng, tmp_path, net=True)
    assert statements(script) == [
        "UPDATE `net_nullable`.`x` SET `n`=2 WHERE `id`=2;",
        "UPDATE `net_nullable`.`x` SET `n`=1, `v`='a' WHERE `id`=1;",
    ]
    apply_with_client(scratch_server, script)
    assert snapshot(scratch_server, ["net_nullable.x"]) == before


def test_the_cli_writes_a_net_script(scratch_server, tmp_path):
    _table(scratch_server, "net_cli")
    rng = scratch_server.run_sql(INCIDENT, database="net_cli")
    out = tmp_path / "net.sql"
    done = run_cli("flashback", *range_args(rng), "--schema-dsn", scratch_server.dsn, "--net", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert len(statements(out)) == NET_ROWS


def test_rows_exchanging_keys_are_refused_with_one_line(scratch_server, tmp_path):
    _table(scratch_server, "net_swap")
    rng = scratch_server.run_sql(
        [
            "UPDATE t SET id = 100 WHERE id = 1",
            "UPDATE t SET id = 1 WHERE id = 2",
            "UPDATE t SET id = 2 WHERE id = 100",
        ],
        database="net_swap",
    )
    with pytest.raises(NetRefused) as refused:
        flashback(scratch_server, rng, tmp_path, net=True)
    message = str(refused.value)
    assert message.startswith("table `net_swap`.`t` at ")
    assert "no order of the net statements can be executed" in message
    assert message.endswith("generate the full script, without --net") and "\n" not in message
    done = run_cli("flashback", *range_args(rng), "--schema-dsn", scratch_server.dsn, "--net")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "without --net" in done.stderr


def test_a_table_without_a_key_is_refused_with_one_line(scratch_server, tmp_path):
    scratch_server.run_sql(
        ["DROP DATABASE IF EXISTS net_bag", "CREATE DATABASE net_bag", "CREATE TABLE net_bag.bag (v INT)"]
    )
    rng = scratch_server.run_sql(
        ["INSERT INTO bag VALUES (1), (1)", "DELETE FROM bag LIMIT 1"], database="net_bag"
    )
    with pytest.raises(NetRefused, match=r"^table `net_bag`.`bag` at .*no primary key.*without --net$"):
        flashback(scratch_server, rng, tmp_path, net=True)


# -- random sequences on the server


SMALL = "net_random"
operations = st.lists(
    st.tuples(
        st.sampled_from(["insert", "update", "update_key", "delete"]),
        st.integers(1, 4),
        st.integers(1, 4),
        st.integers(1, 4),
        st.integers(0, 2),
    ),
    min_size=1,
    max_size=20,
)


def _statement(kind: str, key: int, other: int, u: int, v: int) -> str:
    if kind == "insert":
        return f"INSERT INTO h VALUES ({key}, {u}, 'v{v}')"
    if kind == "update":
        return f"UPDATE h SET u = {u}, v = 'v{v}' WHERE id = {key}"
    if kind == "update_key":
        return f"UPDATE h SET id = {other}, v = 'v{v}' WHERE id = {key}"
    return f"DELETE FROM h WHERE id = {key}"


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations)
def test_random_sequences_net_reverse_restores_the_tables(scratch_server, tmp_path_factory, steps):
    server = scratch_server
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {SMALL}",
            f"CREATE DATABASE {SMALL}",
            f"CREATE TABLE {SMALL}.h (id INT PRIMARY KEY, u INT NOT NULL UNIQUE, v VARCHAR(4))",
            f"INSERT INTO {SMALL}.h VALUES (1, 1, 'v0'), (2, 2, 'v1'), (3, 4, 'v2')",
        ]
    )
    before = snapshot(server, [f"{SMALL}.h"])
    rng = run_as_an_application(server, SMALL, [_statement(*step) for step in steps])
    if snapshot(server, [f"{SMALL}.h"]) == before:
        return  # every step refused or undone by a later one: a range may still hold changes, but no net change
    out = tmp_path_factory.mktemp("net")
    try:
        script, plan, _report = flashback(server, rng, out, net=True, allow_empty=True)
    except NetRefused as refused:
        assert "no order of the net statements" in str(refused)
        return
    assert execute_plan(plan, server.dsn, commit=True).committed
    assert snapshot(server, [f"{SMALL}.h"]) == before
