"""`--net` without a plan: rows events whose rows the range changes once are not folded.

Their net statements are the plain script's, rendered event by event in the partitions' order
(rollback/net_script.py, NetChanges.settle). The script must be the one the fold of every change
gives: the plan's statements (a job with a plan folds every change) in the same order, and it must
restore the tables.
"""

from __future__ import annotations

from pathlib import Path

import pymysql
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollback import Filters, Options, generate
from rollback.errors import NetRefused
from rollback.schema import ServerSchema
from tests.support.examples import examples
from tests.support.restore import apply_with_client, flashback, range_spec, snapshot, span, statements

DB = "net_once"


def _table(server, rows: int = 60) -> None:
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, u INT NOT NULL UNIQUE, b VARCHAR(40), "
            "d DECIMAL(12,2), at DATETIME(3))",
            f"INSERT INTO {DB}.t SELECT seq, seq, CONCAT('row ', seq), seq / 7, "
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


def test_rows_deleted_once_among_rows_folded_give_the_folded_script(scratch_server, tmp_path):
    _table(scratch_server)
    before = snapshot(scratch_server, [f"{DB}.t"])
    rng = scratch_server.run_sql(
        [
            "UPDATE t SET b = CONCAT(b, '!') WHERE id <= 10",
            "DELETE FROM t WHERE id BETWEEN 30 AND 45",  # deleted once: not folded
            "UPDATE t SET b = CONCAT(b, '?') WHERE id <= 10",
            "DELETE FROM t WHERE id BETWEEN 5 AND 12",  # 5..10 folded (updated first), 11 and 12 once
            "UPDATE t SET d = d + 1 WHERE id BETWEEN 1 AND 3",
            "DELETE FROM t WHERE id > 55",
        ],
        database=DB,
    )
    folded = _plan_statements(scratch_server, rng, tmp_path)
    for size in (None, 2 << 10):  # in one partition and across several
        options = {"partition_bytes": size} if size else {}
        script = _net_script(scratch_server, rng, tmp_path, **options)
        assert statements(script) == folded
        assert len(folded) == 10 + 16 + 2 + 5
    apply_with_client(scratch_server, script)
    assert snapshot(scratch_server, [f"{DB}.t"]) == before


def test_a_row_waiting_for_another_folds_the_rows_deleted_once_too(scratch_server, tmp_path):
    """Row 2's reverse (newest) must wait for row 9's, which holds the unique value it takes back:
    the order is not newest first, so every change is folded and put in order."""
    _table(scratch_server, rows=5)
    before = snapshot(scratch_server, [f"{DB}.t"])
    rng = scratch_server.run_sql(
        [
            "UPDATE t SET u = 100 WHERE id = 2",  # frees u=2
            "INSERT INTO t VALUES (9, 2, 'late', 1, NULL)",  # takes it
            "DELETE FROM t WHERE id = 3",  # deleted once
            "UPDATE t SET b = 'changed' WHERE id = 2",  # row 2's newest change
        ],
        database=DB,
    )
    folded = _plan_statements(scratch_server, rng, tmp_path)
    assert [line.split(" WHERE ")[0][:30] for line in folded] == [
        "INSERT INTO `net_once`.`t` (`i",
        "DELETE FROM `net_once`.`t`",
        "UPDATE `net_once`.`t` SET `u`=",
    ]
    script = _net_script(scratch_server, rng, tmp_path)
    assert statements(script) == folded
    apply_with_client(scratch_server, script)
    assert snapshot(scratch_server, [f"{DB}.t"]) == before


operations = st.lists(
    st.tuples(
        st.sampled_from(["insert", "update", "update_key", "delete", "delete"]),
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
    return f"DELETE FROM t WHERE id = {key}"


@settings(
    max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(operations)
def test_random_sequences_give_the_folded_script(scratch_server, tmp_path_factory, steps):
    _table(scratch_server, rows=10)
    first = scratch_server.run_sql([])
    conn = scratch_server.connect(DB)
    try:
        with conn.cursor() as cur:
            for step in steps:
                try:
                    cur.execute(_statement(*step))
                except pymysql.err.IntegrityError:
                    pass  # a duplicate key: the server refused it
    finally:
        conn.close()
    rng = span(scratch_server, first, scratch_server.run_sql([]))
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
