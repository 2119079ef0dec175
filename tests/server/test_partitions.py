"""A job cut into partitions on the local engine writes the bytes of the unsplit job: one huge
transaction, and statements and plan lines spilled to disk."""

from __future__ import annotations

import pytest

from rollback.pipeline import spill
from rollback.schema.tables import ServerSchema
from tests.support.jobs import (
    HUGE_ROWS,
    UNSPLIT,
    range_of,
    run,
)


def test_a_huge_transaction_cut_into_1mb_partitions_gives_the_unsplit_bytes(
    scratch_server, huge_delete, tmp_path
):
    binlog_range, _tables, _before = huge_delete
    rng = range_of(binlog_range)
    assert binlog_range.stop_position - binlog_range.start_position > 5 << 20
    schema = ServerSchema(scratch_server.connect)
    unsplit = run(rng, tmp_path, "unsplit", schema=schema, partition_bytes=UNSPLIT)
    split = run(rng, tmp_path, "split", schema=schema, partition_bytes=1 << 20)
    assert unsplit.report.partitions == 1 and split.report.partitions >= 5
    assert unsplit.report.statements == HUGE_ROWS == split.report.statements
    assert unsplit.report.transactions == 1 == split.report.transactions
    assert split.script == unsplit.script
    assert split.plan == unsplit.plan
    assert split.changes == unsplit.changes
    text = split.script.decode()
    assert text.count("BEGIN;") == 1 and text.count("COMMIT;") == 1
    # Newest change first: the DELETE removed ids in order, so the rollback re-inserts the last id first.
    first_insert = next(line for line in text.splitlines() if line.startswith("INSERT"))
    assert f"VALUES ({HUGE_ROWS}, " in first_insert


def test_a_partition_spilling_its_statements_to_disk_writes_the_same_bytes(
    scratch_server, mixed, tmp_path, monkeypatch
):
    binlog_range, _tables, _before = mixed
    rng = range_of(binlog_range)
    schema = ServerSchema(scratch_server.connect)
    in_memory = run(rng, tmp_path, "memory", schema=schema, partition_bytes=UNSPLIT)
    monkeypatch.setattr(spill, "SPILL_MEMORY", 2000)
    spilled = run(rng, tmp_path, "spilled", schema=schema, partition_bytes=UNSPLIT)
    assert spilled.same(in_memory)


@pytest.mark.parametrize("mode", ["flashback", "forward"])
def test_a_partition_spilling_its_plan_to_disk_writes_the_same_bytes(
    scratch_server, mixed, tmp_path, monkeypatch, mode
):
    """The plan's text past its memory budget goes to a spool (newest chunk first for a flashback)
    and from there into the part file: a budget of a few bytes spills after every rows event, one
    of 50 kB spills a few chunks at a time, and both give the bytes of the plan kept in memory."""
    binlog_range, _tables, _before = mixed
    rng = range_of(binlog_range)
    schema = ServerSchema(scratch_server.connect)
    in_memory = run(rng, tmp_path, "memory", schema=schema, mode=mode, partition_bytes=UNSPLIT)
    assert len(in_memory.plan) > 200_000  # several budgets' worth below
    for budget in (8, 50_000):
        monkeypatch.setattr(spill, "PLAN_MEMORY", budget)
        spilled = run(rng, tmp_path, f"spilled-{budget}", schema=schema, mode=mode, partition_bytes=UNSPLIT)
        assert spilled.same(in_memory)
        split = run(rng, tmp_path, f"split-{budget}", schema=schema, mode=mode, partition_bytes=64 << 10)
        assert split.report.partitions > 1 and split.same(in_memory)
