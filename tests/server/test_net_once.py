"""`--net` without a plan: a table the range only deletes from, each key once, is not folded.

Its net statements are the plain script's, rendered event by event and placed among the other
tables' net statements by their changes' order (rollback/job/net_script.py, NetChanges.settle). The
script must be the one the fold of every change gives: the statements of the same job with a plan
(which folds every change), in the same order, and it must restore the tables.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollback import Filters, Options, generate
from rollback.base.errors import NetRefused
from rollback.schema.tables import ServerSchema
from tests.support.examples import examples
from tests.support.restore import (
    apply_with_client,
    flashback,
    range_spec,
    run_as_an_application,
    snapshot,
    statements,
)

DB = "net_once"


def _tables(server, rows: int = 60) -> None:
    """`t`, which the tests change every way, and `d`, which they only delete from."""
    server.run_sql([f"DROP DATABASE IF EXISTS {DB}", f"CREATE DATABASE {DB}"])
    for table in ("t", "d"):
        server.run_sql(
            [
                f"CREATE TABLE {DB}.{table} (id INT PRIMARY KEY, u INT NOT NULL UNIQUE, b VARCHAR(40), "
                "d DECIMAL(12,2), at DATETIME(3))",
                f"INSERT INTO {DB}.{table} SELECT seq, seq, CONCAT('row ', seq), seq / 7, "
                f"TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND FROM {DB}.seq_1_to_{rows}",
            ]
        )


def _plan_statements(server, rng, tmp_path, **options) -> list[str]:
    """The net statements of a job with a plan: every change folded."""
    script, _plan, _report = flashback(server, rng, tmp_path, name="folded", net=True, **options)
    return statements(script)


def _net_script(server, rng, tmp_path, **options) -> Path:
    """The net script alone (no plan): rows events changed once are not folded."""
    script = tmp_path / "once.sql"
    schema = ServerSchema(server.connect)
    generate(range_spec(rng), Filters(), Options(engine="local", schema=schema, net=True, **options), script)
    return script


def test_a_table_only_deleted_from_among_tables_folded_gives_the_folded_script(scratch_server, tmp_path):
    _tables(scratch_server)
    before = snapshot(scratch_server, [f"{DB}.t", f"{DB}.d"])
    rng = scratch_server.run_sql(
        [
            "UPDATE t SET b = CONCAT(b, '!') WHERE id <= 10",
            "DELETE FROM d WHERE id BETWEEN 30 AND 45",
            "UPDATE t SET u = 100 WHERE id = 2",  # frees u=2
            "INSERT INTO t VALUES (99, 2, 'late', 1, NULL)",  # takes it
            "DELETE FROM d WHERE id BETWEEN 5 AND 12",
            "UPDATE t SET b = 'changed' WHERE id = 2",  # row 2's newest change: it waits for row 99's
            "DELETE FROM t WHERE id BETWEEN 8 AND 12",
            "DELETE FROM d WHERE id > 55",
        ],
        database=DB,
    )
    folded = _plan_statements(scratch_server, rng, tmp_path)
    assert len(folded) == 10 + 1 + 2 + 16 + 8 + 5  # t: rows 1..10, 99, 11, 12; d: the deleted rows
    # row 2's reverse comes after row 99's, not where its newest change would put it
    reverse_of = [line for line in folded if "`t`" in line]
    assert reverse_of.index(f"DELETE FROM `{DB}`.`t` WHERE `id`=99;") < next(
        i for i, line in enumerate(reverse_of) if line.startswith(f"UPDATE `{DB}`.`t` SET `u`=2")
    )
    for size in (None, 2 << 10):  # in one partition and across several
        options = {"partition_bytes": size} if size else {}
        script = _net_script(scratch_server, rng, tmp_path, **options)
        assert statements(script) == folded
    apply_with_client(scratch_server, script)
    assert snapshot(scratch_server, [f"{DB}.t", f"{DB}.d"]) == before


def test_a_table_deleted_from_and_changed_otherwise_is_folded(scratch_server, tmp_path):
    _tables(scratch_server, rows=20)
    before = snapshot(scratch_server, [f"{DB}.d"])
    rng = scratch_server.run_sql(
        [
            "DELETE FROM d WHERE id <= 5",
            "UPDATE d SET b = 'x' WHERE id BETWEEN 6 AND 8",
            "DELETE FROM d WHERE id BETWEEN 7 AND 9",
        ],
        database=DB,
    )
    folded = _plan_statements(scratch_server, rng, tmp_path)
    assert len(folded) == 5 + 1 + 3
    script = _net_script(scratch_server, rng, tmp_path)
    assert statements(script) == folded
    apply_with_client(scratch_server, script)
    assert snapshot(scratch_server, [f"{DB}.d"]) == before


operations = st.lists(
    st.tuples(
        st.sampled_from(["insert", "update", "update_key", "delete", "delete_d"]),
        st.integers(1, 12),
        st.integers(1, 12),
        st.integers(1, 12),
    ),
    min_size=1,
    max_size=25,
)


def _statement(kind: str, key: int, other: int, u: int) -> str:
    if kind == "insert":
        return f"INSERT INTO t VALUES ({key}, {u}, 'new', 1.25, NULL)"
    if kind == "update":
        return f"UPDATE t SET u = {u}, b = CONCAT(b, '+') WHERE id = {key}"
    if kind == "update_key":
        return f"UPDATE t SET id = {other} WHERE id = {key}"
    if kind == "delete_d":
        return f"DELETE FROM d WHERE id BETWEEN {key} AND {key + other % 3}"
    return f"DELETE FROM t WHERE id = {key}"


@settings(
    max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(operations)
def test_random_sequences_give_the_folded_script(scratch_server, tmp_path_factory, steps):
    _tables(scratch_server, rows=10)
    rng = run_as_an_application(scratch_server, DB, [_statement(*step) for step in steps])
    out = tmp_path_factory.mktemp("once")
    try:
        folded = _plan_statements(scratch_server, rng, out, allow_empty=True)
    except NetRefused as refused:  # the script without a plan must say the same
        try:
            _net_script(scratch_server, rng, out, allow_empty=True)
        except NetRefused as again:
            assert str(again) == str(refused)
            return
        raise AssertionError(f"only the job with a plan was refused: {refused}") from None
    assert statements(_net_script(scratch_server, rng, out, allow_empty=True)) == folded
