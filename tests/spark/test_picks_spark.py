"""Precise selection on Spark: picks, dependent rows and partial transactions come out the same from
Spark tasks over small partitions as from one in-process partition (the partitions' key files and
partial counts merge in the driver)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from rollback import Filters, Options, ServerSchema, generate
from tests.support.restore import range_spec

DB = "picks_spark"


@pytest.fixture(scope="module")
def interleaved(scratch_server):
    """60 transactions of three applications taking turns; every fifth touches a row another wrote."""
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, app CHAR(1), v INT)",
            f"INSERT INTO {DB}.t VALUES " + ", ".join(f"({i}, '{'ABC'[i % 3]}', {i})" for i in range(90)),
        ]
    )
    statements = []
    for k in range(60):
        app = "ABC"[k % 3]
        own = [i for i in range(90) if "ABC"[i % 3] == app][k // 3 % 30]
        rows = f"({own}, {(own + 1) % 90})" if k % 5 == 0 else f"({own})"
        statements.append(f"UPDATE {DB}.t SET v = v + {k + 1}, app = app WHERE id IN {rows}")
    rng = scratch_server.run_sql(statements)
    return rng, _gtids(rng)


def _gtids(rng) -> list[str]:
    """The range's GTIDs in order, read from the change log of an unfiltered job."""
    with tempfile.TemporaryDirectory() as tmp:
        changes = Path(tmp) / "c.jsonl"
        generate(
            range_spec(rng),
            Filters(),
            Options(engine="local", mode="changes"),
            Path(tmp) / "s.sql",
            None,
            changes,
        )
        seen: list[str] = []
        for line in changes.read_text().splitlines():
            gtid = json.loads(line)["gtid"]
            if not seen or seen[-1] != gtid:
                seen.append(gtid)
        return seen


@pytest.mark.parametrize("pick", ["gtids", "where"])
def test_spark_and_local_agree_on_picks_and_dependent_rows(
    scratch_server, interleaved, tmp_path, spark, pick
):
    rng, gtids = interleaved
    assert len(gtids) == 60
    filters = (
        Filters(include_gtid=",".join(gtids[0::3]))  # application A
        if pick == "gtids"
        else Filters(where="app = 'B'")
    )
    outputs = {}
    for engine, size in (("local", None), ("spark", 2 << 10)):
        script = tmp_path / f"{engine}.sql"
        options = Options(
            engine=engine,
            partition_bytes=size,
            schema=ServerSchema(scratch_server.connect),
            allow_partial_transactions=True,
        )
        outputs[engine] = (generate(range_spec(rng), filters, options, script), script.read_bytes())
    (local, local_script), (spark_report, spark_script) = outputs["local"], outputs["spark"]
    assert spark_report.engine == "spark" and spark_report.partitions > 3
    assert spark_script == local_script
    assert spark_report.dependencies == local.dependencies
    assert spark_report.partial_transactions == local.partial_transactions
    # A's transactions that also touched a B row: every such row is changed again later by B (excluded).
    assert local.dependency_count > 0 if pick == "gtids" else local.partial_transactions
