"""`--net` without a plan: a table the range only deletes from, each key once, is not folded.

Its net statements are the plain script's, rendered event by event and placed among the other
tables' net statements by their changes' order (rollback/job/net_script.py, NetChanges.settle). The
script must be the one the fold of every change gives: the statements of the same job with a plan
(which folds every change), in the same order, and it must restore the tables.
"""

from __future__ import annotations

from pathlib import Path

import pytest
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


# The DELETEs of a table a partition sees only deleted from are written from the images' bytes
# (partition._net_deletes_from_images): their statements and keys by the compiled core, their
# images kept as the binlog's bytes (parts.RawImages), decoded by the driver only if it folds the
# table after all; whether a key is deleted twice is read from the partitions' spans of keys first.


def _typed_table(server, name: str = "r", rows: int = 120) -> None:
    server.run_sql(
        [
            f"DROP TABLE IF EXISTS {DB}.{name}",
            f"""CREATE TABLE {DB}.{name} (id INT PRIMARY KEY, amount DECIMAL(20,6), note VARCHAR(60)
                CHARACTER SET utf8mb4, at DATETIME(6), big BIGINT UNSIGNED, f DOUBLE, e ENUM('x','y'))""",
            f"""INSERT INTO {DB}.{name} SELECT seq, IF(seq % 3 = 0, NULL, -seq * 1000.5 / 7),
                CONCAT('ligne ', seq, ' é ✓'), TIMESTAMP'2024-02-29 23:59:59.999999' - INTERVAL seq SECOND,
                18446744073709551615 - seq, seq / 3, IF(seq % 2, 'x', 'y') FROM {DB}.seq_1_to_{rows}""",
        ]
    )


def _spy(monkeypatch, owner, name: str) -> list:
    """The values a method returned, each time it was called."""
    calls: list = []
    method = getattr(owner, name)

    def spied(*args, **kwargs):
        value = method(*args, **kwargs)
        calls.append(value)
        return value

    monkeypatch.setattr(owner, name, spied)
    return calls


def test_deletes_in_early_partitions_of_a_table_changed_later_are_folded_from_the_binlogs_bytes(
    scratch_server, tmp_path, monkeypatch
):
    from rollback.pipeline.parts import RawImages

    _tables(scratch_server, rows=10)
    _typed_table(scratch_server)
    before = snapshot(scratch_server, [f"{DB}.r"])
    rng = scratch_server.run_sql(
        [
            "DELETE FROM r WHERE id <= 30",
            "DELETE FROM r WHERE id BETWEEN 41 AND 70",
            "DELETE FROM r WHERE id BETWEEN 71 AND 100",
            "INSERT INTO r (id, note) VALUES (5, 'the key again')",  # the table is changed otherwise
            "UPDATE r SET note = 'later' WHERE id > 110",
        ],
        database=DB,
    )
    folded = _plan_statements(scratch_server, rng, tmp_path)
    assert len(folded) == 30 + 30 + 30 + 10
    # The partitions in this process, whatever the tests before left running: the local engine forks its
    # workers only where this process has no other thread (local.can_fork), and the spy sees only this
    # process's reads.
    from rollback.pipeline.engines import local

    monkeypatch.setattr(local, "can_fork", lambda: False)
    decoded = _spy(monkeypatch, RawImages, "rows")
    script = _net_script(scratch_server, rng, tmp_path, partition_bytes=4 << 10)
    assert statements(script) == folded
    # every DELETE's bytes, decoded by the driver; and the images of the later INSERT and UPDATEs, which
    # the partition's steps hold as bytes too (partition._net_from_images): 1 + 10 pairs; and the UPDATEs'
    # pairs once more, by the last partition writing its share (the driver folds instead: the table's
    # keys are in every partition)
    assert len(decoded) >= 3 and sum(map(len, decoded)) == 90 + 1 + 2 * 10 + 2 * 10
    apply_with_client(scratch_server, script)
    assert snapshot(scratch_server, [f"{DB}.r"]) == before


def test_deletes_whose_keys_interleave_across_partitions_are_read_and_not_folded(
    scratch_server, tmp_path, monkeypatch
):
    from rollback.job.net_script import NetChanges
    from rollback.pipeline.parts import RawImages

    _tables(scratch_server, rows=10)
    _typed_table(scratch_server)
    scratch_server.run_sql(
        [
            f"DROP TABLE IF EXISTS {DB}.k",
            f"CREATE TABLE {DB}.k (a VARCHAR(20), b INT, c TEXT, PRIMARY KEY (a, b))",
            f"INSERT INTO {DB}.k SELECT CONCAT('k', seq % 7), seq, REPEAT('c', seq) FROM {DB}.seq_1_to_120",
        ]
    )
    tables = [f"{DB}.r", f"{DB}.k"]
    before = snapshot(scratch_server, tables)
    rng = scratch_server.run_sql(
        [
            "DELETE FROM r WHERE id % 2 = 0",  # one partition's keys span the next one's
            "DELETE FROM k WHERE b % 3 = 0",
            "DELETE FROM r WHERE id % 2 = 1 AND id < 90",
            "DELETE FROM k WHERE b % 3 = 1",
        ],
        database=DB,
    )
    folded = _plan_statements(scratch_server, rng, tmp_path)
    assert len(folded) == 60 + 45 + 40 + 40
    once = _spy(monkeypatch, NetChanges, "_once")
    decoded = _spy(monkeypatch, RawImages, "rows")
    script = _net_script(scratch_server, rng, tmp_path, partition_bytes=4 << 10)
    assert statements(script) == folded
    assert once == [True, True] and not decoded  # each key once: the plain statements, no image decoded
    apply_with_client(scratch_server, script)
    assert snapshot(scratch_server, tables) == before


def test_a_key_deleted_twice_by_a_table_only_deleted_from_is_folded_as_every_change(scratch_server, tmp_path):
    """A row put back without the binlog (sql_log_bin=0) and deleted again: the range deletes its
    key twice, so the table is folded, and the script is refused as the fold of every change is."""
    _tables(scratch_server, rows=40)
    rng = scratch_server.run_sql(
        [
            "DELETE FROM d WHERE id <= 20",
            "SET sql_log_bin = 0",
            "INSERT INTO d SELECT seq, seq, 'back', 1, NULL FROM seq_15_to_18",
            "SET sql_log_bin = 1",
            "DELETE FROM d WHERE id BETWEEN 15 AND 30",
        ],
        database=DB,
    )
    with pytest.raises(NetRefused, match="a DELETE of a key the range had deleted already") as refused:
        _plan_statements(scratch_server, rng, tmp_path)
    for size in (None, 2 << 10):  # in one partition (its keys twice) and across several (spans that meet)
        options = {"partition_bytes": size} if size else {}
        with pytest.raises(NetRefused) as again:
            _net_script(scratch_server, rng, tmp_path, **options)
        assert str(again.value) == str(refused.value)
