"""`--net` without a plan: each partition's share of the script, written by the partition itself.

Where no key a partition changes is changed in another partition and no row's reverse waits for
another's, the partitions write their net statements themselves and the driver joins them, without
folding a step (rollback/render/net_local.py, NetChanges.shared). The script must be, byte for
byte, the one the fold of every change gives: the statements of the same job with a plan (which
always folds), in the same order; and where the shares cannot be used, the fold runs as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollback import Filters, Options, generate
from rollback.base.errors import NetRefused
from rollback.job.net_script import NetChanges
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

DB = "net_shares"
TABLES = [f"{DB}.p", f"{DB}.s", f"{DB}.u"]


def _tables(server, rows: int = 40) -> None:
    """`p`: a primary key alone; `s`: a case-insensitive string key (compared loosely); `u`: a second
    unique key beside the primary key."""
    server.run_sql([f"DROP DATABASE IF EXISTS {DB}", f"CREATE DATABASE {DB}"])
    server.run_sql(
        [
            f"CREATE TABLE {DB}.p (id INT PRIMARY KEY, a INT, b VARCHAR(40), d DECIMAL(12,2), at DATETIME(3))",
            f"INSERT INTO {DB}.p SELECT seq, seq, CONCAT('row ', seq), seq / 7, "
            f"TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND FROM {DB}.seq_1_to_{rows}",
            f"CREATE TABLE {DB}.s (k VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci PRIMARY KEY, "
            "n INT)",
            f"INSERT INTO {DB}.s SELECT CONCAT('k', seq), seq FROM {DB}.seq_1_to_{rows}",
            f"CREATE TABLE {DB}.u (id INT PRIMARY KEY, u INT NOT NULL UNIQUE, b VARCHAR(40))",
            f"INSERT INTO {DB}.u SELECT seq, seq, CONCAT('row ', seq) FROM {DB}.seq_1_to_{rows}",
        ]
    )


def _folded(server, rng, out: Path, **options) -> list[str]:
    """The net statements of the job with a plan: every change folded."""
    script, _plan, _report = flashback(server, rng, out, name="folded", net=True, **options)
    return statements(script)


def _shared(server, rng, out: Path, size: int, **options) -> Path:
    """The net script alone, cut into partitions of `size` bytes."""
    script = out / f"shared-{size}.sql"
    schema = ServerSchema(server.connect)
    generate(
        range_spec(rng),
        Filters(),
        Options(engine="local", schema=schema, net=True, partition_bytes=size, **options),
        script,
    )
    return script


def _spy(monkeypatch) -> tuple[list, list]:
    """What NetChanges.shared returned each time, and the blocks of steps the driver read."""
    shared_calls: list = []
    steps_read: list = []
    shared, steps = NetChanges.shared, NetChanges.steps

    def spied_shared(self, plan_path):
        body = shared(self, plan_path)
        shared_calls.append((self.parts, body is not None))
        return body

    def spied_steps(self, block):
        steps_read.append(block)
        return steps(self, block)

    monkeypatch.setattr(NetChanges, "shared", spied_shared)
    monkeypatch.setattr(NetChanges, "steps", spied_steps)
    return shared_calls, steps_read


def _transactions(server, statements_by_tx: list[list[str]]):
    """Each list of statements in one transaction."""
    flat = []
    for block in statements_by_tx:
        flat += ["BEGIN", *block, "COMMIT"]
    return server.run_sql(flat, database=DB)


def test_rows_each_changed_in_one_partition_are_written_by_the_partitions(
    scratch_server, tmp_path, monkeypatch
):
    """The bench's `mixed` shape: each transaction inserts rows, updates them and deletes half; no
    key in two transactions. Every partition writes its share and the driver folds nothing."""
    _tables(scratch_server)
    before = snapshot(scratch_server, TABLES)
    blocks = []
    for n in range(12):
        lo = 1000 + n * 20
        blocks.append(
            [
                f"INSERT INTO p SELECT seq, seq * 3, CONCAT('new ', seq), seq / 3, NULL FROM seq_{lo}_to_{lo + 19}",
                f"UPDATE p SET a = a + 1, b = CONCAT(b, '!') WHERE id BETWEEN {lo} AND {lo + 19}",
                f"DELETE FROM p WHERE id BETWEEN {lo} AND {lo + 9}",
                f"DELETE FROM s WHERE k = 'k{n + 10}'",  # a table only deleted from, beside it
            ]
        )
    rng = _transactions(scratch_server, blocks)
    folded = _folded(scratch_server, rng, tmp_path)
    assert len(folded) == 12 * (10 + 1)
    shared_calls, steps_read = _spy(monkeypatch)
    for size in (3 << 10, 6 << 10):
        script = _shared(scratch_server, rng, tmp_path, size)
        assert statements(script) == folded
        assert shared_calls[-1][0] > 3 and shared_calls[-1][1]  # several partitions, each a share
    assert not steps_read
    apply_with_client(scratch_server, script)
    assert snapshot(scratch_server, TABLES) == before


def test_a_key_changed_in_two_partitions_is_folded(scratch_server, tmp_path, monkeypatch):
    """The same rows updated in every transaction: their keys are in every partition's share, so the
    driver folds the steps, and the script is the folded one."""
    _tables(scratch_server)
    before = snapshot(scratch_server, TABLES)
    blocks = [[f"UPDATE p SET a = a + {n}, b = CONCAT(b, '{n}') WHERE id <= 30"] for n in range(10)]
    rng = _transactions(scratch_server, blocks)
    folded = _folded(scratch_server, rng, tmp_path)
    assert len(folded) == 30
    shared_calls, steps_read = _spy(monkeypatch)
    script = _shared(scratch_server, rng, tmp_path, 2 << 10)
    assert statements(script) == folded
    assert shared_calls == [(shared_calls[0][0], False)] and shared_calls[0][0] > 3 and steps_read
    apply_with_client(scratch_server, script)
    assert snapshot(scratch_server, TABLES) == before


@pytest.mark.parametrize(
    "blocks, why",
    [
        # `u`'s second unique key: u = 5 freed by one row and taken by another; the order is the fold's
        (
            [
                ["UPDATE u SET u = 500 WHERE id = 5"],
                ["UPDATE u SET u = 5 WHERE id = 6"],
                ["UPDATE u SET b = 'later' WHERE id = 5"],
            ],
            "a second unique key",
        ),
        # `s`'s loose key: 'k3' deleted, 'K3' inserted (equal to the collation)
        (
            [
                ["UPDATE s SET n = 0 WHERE k = 'k5'"],
                ["DELETE FROM s WHERE k = 'k3'"],
                ["INSERT INTO s VALUES ('K3', 99)"],
            ],
            "a loose key",
        ),
    ],
)
def test_a_table_whose_rows_may_wait_for_each_other_is_folded(
    scratch_server, tmp_path, monkeypatch, blocks, why
):
    _tables(scratch_server)
    before = snapshot(scratch_server, TABLES)
    rng = _transactions(scratch_server, blocks)
    folded = _folded(scratch_server, rng, tmp_path)
    shared_calls, steps_read = _spy(monkeypatch)
    script = _shared(scratch_server, rng, tmp_path, 1 << 20)
    assert statements(script) == folded, why
    assert shared_calls == [(1, False)] and steps_read, why
    apply_with_client(scratch_server, script)
    assert snapshot(scratch_server, TABLES) == before


operations = st.lists(
    st.tuples(
        st.sampled_from(
            ["insert", "update", "delete", "update_s", "insert_s", "delete_s", "update_u", "swap_u"]
        ),
        st.integers(1, 50),
        st.integers(1, 4),
    ),
    min_size=1,
    max_size=40,
)


def _statement(kind: str, key: int, width: int) -> str:
    last = key + width - 1
    if kind == "insert":
        return f"INSERT INTO p SELECT seq, seq, 'new', 1.25, NULL FROM seq_{key + 100}_to_{last + 100}"
    if kind == "update":
        return f"UPDATE p SET a = a + 1, b = CONCAT(b, '+') WHERE id BETWEEN {key} AND {last + 100}"
    if kind == "delete":
        return f"DELETE FROM p WHERE id BETWEEN {key} AND {last}"
    if kind == "update_s":
        return f"UPDATE s SET n = n + 1 WHERE k = 'k{key}'"
    if kind == "insert_s":
        return f"INSERT INTO s VALUES ('K{key}', {key})"
    if kind == "delete_s":
        return f"DELETE FROM s WHERE k = 'k{key}'"
    if kind == "update_u":
        return f"UPDATE u SET b = CONCAT(b, '*') WHERE id = {key}"
    return f"UPDATE u SET u = {key + width} WHERE id = {key}"


@settings(
    max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(operations, st.sampled_from([1 << 10, 3 << 10, 1 << 20]))
def test_random_changes_give_the_folded_script_whoever_writes_it(
    scratch_server, tmp_path_factory, steps, size
):
    _tables(scratch_server)
    rng = run_as_an_application(scratch_server, DB, [_statement(*step) for step in steps])
    out = tmp_path_factory.mktemp("shares")
    try:
        folded = _folded(scratch_server, rng, out, allow_empty=True)
    except NetRefused as refused:  # the script without a plan must say the same
        with pytest.raises(NetRefused) as again:
            _shared(scratch_server, rng, out, size, allow_empty=True)
        assert str(again.value) == str(refused)
        return
    assert statements(_shared(scratch_server, rng, out, size, allow_empty=True)) == folded


def test_net_partitions_end_between_transactions_unless_one_outgrows_twice_the_target(scratch_server):
    """A transaction's rows are one partition's alone when the cut waits for its end: --net's
    planner cuts between transactions, and inside one only past twice the target size."""
    from rollback.pipeline.plan import plan_range

    _tables(scratch_server)
    blocks = [[f"UPDATE p SET a = a + {n}, b = CONCAT(b, '{n}') WHERE id <= 30"] for n in range(10)]
    rng = range_spec(_transactions(scratch_server, blocks))
    size = 2 << 10  # each transaction about 3 kB: more than the target, less than twice it
    anywhere = plan_range(rng, size).partitions
    between = plan_range(rng, size, whole_transactions=True).partitions
    assert any(part.block is not None for part in anywhere[1:])  # cut inside a transaction
    assert len(between) > 3 and all(part.block is None for part in between[1:])
    inside = plan_range(rng, 1 << 10, whole_transactions=True).partitions  # each one over twice it
    assert any(part.block is not None for part in inside[1:])


@pytest.mark.parametrize("every", [2, 3])
def test_a_table_whose_events_come_as_bytes_and_as_decoded_rows_gives_the_folded_script(
    scratch_server, tmp_path, monkeypatch, every
):
    """Where the compiled core does not take an event from its images' bytes (here: every `every`-th
    one), the partition decodes its rows; the table's steps that held images as bytes are decoded
    then, and its later events are decoded too (partition._net_decoded): the script is the same."""
    import rollback._speedups as core

    _tables(scratch_server)
    before = snapshot(scratch_server, TABLES)
    blocks = []
    for n in range(6):
        lo = 1000 + n * 20
        blocks.append(
            [
                f"INSERT INTO p SELECT seq, seq, CONCAT('new ', seq), seq / 3, NULL FROM seq_{lo}_to_{lo + 19}",
                f"UPDATE p SET a = a + 1 WHERE id BETWEEN {lo} AND {lo + 19}",
                f"UPDATE p SET b = CONCAT(b, '?') WHERE id BETWEEN {n * 5 + 1} AND {n * 5 + 5}",
                f"DELETE FROM p WHERE id BETWEEN {lo} AND {lo + 4}",
            ]
        )
    rng = _transactions(scratch_server, blocks)
    folded = _folded(scratch_server, rng, tmp_path)
    taken = core.image_rows
    calls = []

    def sometimes(*args, **kwargs):
        calls.append(1)
        if len(calls) % every == 0:
            raise ValueError("not taken here")
        return taken(*args, **kwargs)

    monkeypatch.setattr(core, "image_rows", sometimes)
    assert statements(_shared(scratch_server, rng, tmp_path, 1 << 20)) == folded  # one partition, here
    assert len(calls) == every  # taken from the bytes, then not: the table's later events decoded
    assert statements(_shared(scratch_server, rng, tmp_path, 3 << 10)) == folded  # several, in workers
    apply_with_client(scratch_server, _shared(scratch_server, rng, tmp_path, 1 << 20))
    assert snapshot(scratch_server, TABLES) == before
