"""The partitioned pipeline: split or not, local or on Spark, a job writes the same bytes.

* A multi-megabyte single transaction (a DELETE of 100k rows) cut into 1 MB partitions gives the
  script, plan and change log of the unsplit job, byte for byte, and the Spark engine's script
  restores the table on the scratch MariaDB.
* The end-to-end workloads (mixed types, explicit transactions, key changes) and every corpus file
  with row events give byte-identical outputs on both engines, split into several partitions.
* Progress reaches the plan's totals; a progress callback that raises cancels the job; errors from
  inside a Spark task reach the caller as the typed one-line error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rollback import Filters, Options, Progress, RangeSpec, generate
from rollback.base.errors import BinlogFormatError, RollbackError, SchemaMismatch
from rollback.binlog.constants import EventType
from rollback.binlog.reader import BinlogFile
from rollback.schema.tables import ServerSchema
from tests.support.corpus import lane_ids, lanes_and
from tests.support.jobs import (
    UNSPLIT,
    Output,
    apply_script,
    range_of,
    run,
    sakila,
    same_without_plan,
)
from tests.support.restore import snapshot
from tests.support.workloads import SEED_STEPS

# ---- one huge transaction ----------------------------------------------------------------------------


def test_spark_splits_the_huge_transaction_and_its_script_restores_the_table(
    scratch_server, huge_delete, tmp_path, spark
):
    binlog_range, tables, before = huge_delete
    rng = range_of(binlog_range)
    schema = ServerSchema(scratch_server.connect)
    local = run(rng, tmp_path, "local", schema=schema, partition_bytes=UNSPLIT)
    on_spark = run(rng, tmp_path, "spark", False, schema=schema, engine="spark", partition_bytes=1 << 20)
    assert on_spark.report.engine == "spark" and on_spark.report.partitions >= 5
    assert same_without_plan(on_spark, local)
    assert snapshot(scratch_server, tables) != before
    apply_script(scratch_server, on_spark.script)
    assert snapshot(scratch_server, tables) == before


# ---- the end-to-end workload ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["flashback", "forward"])
def test_engines_agree_on_the_mixed_workload_whatever_the_cuts(scratch_server, mixed, tmp_path, spark, mode):
    binlog_range, _tables, _before = mixed
    rng = range_of(binlog_range)
    schema = ServerSchema(scratch_server.connect)
    unsplit = run(rng, tmp_path, "unsplit", schema=schema, mode=mode, partition_bytes=UNSPLIT)
    assert unsplit.report.statements > 500 and unsplit.report.transactions > 100
    for size in (700, 16 << 10) if mode == "flashback" else (3000,):
        split = run(rng, tmp_path, f"local-{size}", schema=schema, mode=mode, partition_bytes=size)
        assert split.report.partitions > 1
        assert split.same(unsplit), size
    on_spark = run(rng, tmp_path, "spark", schema=schema, mode=mode, engine="spark", partition_bytes=4 << 10)
    assert on_spark.report.engine == "spark" and on_spark.report.partitions > 10
    assert on_spark.same(unsplit)
    no_plan = run(
        rng, tmp_path, "no-plan", False, schema=schema, mode=mode, engine="spark", partition_bytes=4 << 10
    )
    assert same_without_plan(no_plan, unsplit)
    assert on_spark.report.to_dict() == dict(
        unsplit.report.to_dict(), partitions=on_spark.report.partitions, engine="spark"
    )


def test_the_spark_script_of_the_mixed_workload_restores_every_table(scratch_server, mixed, tmp_path, spark):
    binlog_range, tables, before = mixed
    schema = ServerSchema(scratch_server.connect)
    on_spark = run(
        range_of(binlog_range), tmp_path, "spark", schema=schema, engine="spark", partition_bytes=8 << 10
    )
    assert on_spark.report.partitions > 5
    apply_script(scratch_server, on_spark.script)
    assert snapshot(scratch_server, tables) == before


# ---- the corpus ---------------------------------------------------------------------------------------------


def _outcome(
    rng: RangeSpec, out_dir: Path, name: str, plan: bool = True, **options: Any
) -> Output | RollbackError:
    try:
        return run(rng, out_dir, name, plan, **options)
    except RollbackError as exc:
        return exc


WITH_ROWS = lanes_and(lambda lane: lane.with_rows())


@pytest.mark.corpus
@pytest.mark.parametrize(("lane", "rel"), WITH_ROWS, ids=lane_ids(WITH_ROWS))
def test_engines_agree_on_every_corpus_file_with_row_events(lane, rel, corpus_file, tmp_path, spark):
    """Split into about six partitions, on Spark and locally: the unsplit local job's bytes. Files whose
    binlog names no columns (no schema to render SQL with) compare their change logs only."""
    path = corpus_file(rel, lane)
    rng = RangeSpec([str(path)])
    mode = "flashback"
    unsplit = _outcome(rng, tmp_path, "unsplit", allow_partial=True, partition_bytes=UNSPLIT)
    if isinstance(unsplit, SchemaMismatch) and "carries no column names" in str(unsplit):
        mode = "changes"
        unsplit = _outcome(rng, tmp_path, "unsplit-changes", mode=mode, partition_bytes=UNSPLIT)
    size = max(256, path.stat().st_size // 6)
    split = _outcome(rng, tmp_path, "split", allow_partial=True, mode=mode, partition_bytes=size)
    on_spark = _outcome(
        rng, tmp_path, "spark", allow_partial=True, mode=mode, engine="spark", partition_bytes=size
    )
    no_plan = _outcome(
        rng, tmp_path, "no-plan", False, allow_partial=True, mode=mode, engine="spark", partition_bytes=size
    )
    for other in (split, on_spark, no_plan):
        if isinstance(unsplit, RollbackError):
            assert isinstance(other, RollbackError), other
            assert (type(other), str(other)) == (type(unsplit), str(unsplit))
        else:
            assert isinstance(other, Output), other
            assert other.same(unsplit) if other is not no_plan else same_without_plan(other, unsplit)
    if isinstance(on_spark, Output) and on_spark.report.partitions > 1:
        assert on_spark.report.engine == "spark"


# ---- progress, cancellation, errors ------------------------------------------------------------------------


@pytest.mark.corpus
@pytest.mark.parametrize("engine", ["local", "spark"])
def test_progress_reaches_the_totals_of_the_plan(engine, corpus_file, tmp_path, spark):
    rng = RangeSpec([str(sakila(corpus_file))])
    seen: list[Progress] = []
    options = Options(mode="changes", engine=engine, partition_bytes=128 << 10)
    report = generate(rng, Filters(), options, tmp_path / "s.sql", progress=seen.append)
    assert seen[-1].phase == "merging" and {p.phase for p in seen[:-1]} == {"decoding"}
    assert seen[-1].rows == sum(report.counts.values()) > 0
    decoding = [p for p in seen if p.phase == "decoding"]
    assert decoding and decoding[-1].bytes_done == decoding[-1].bytes_total == report.bytes_total
    assert decoding[-1].events_done == decoding[-1].events_total == report.events_total
    assert [p.bytes_done for p in decoding] == sorted(p.bytes_done for p in decoding)
    assert {p.engine for p in decoding} == {engine} and decoding[0].partitions == report.partitions > 5


class _Stop(Exception):
    pass


@pytest.mark.corpus
@pytest.mark.parametrize("engine", ["local", "spark"])
def test_a_progress_callback_that_raises_cancels_the_job_and_leaves_no_file(
    engine, corpus_file, tmp_path, spark
):
    rng = RangeSpec([str(sakila(corpus_file))])

    def stop(progress: Progress) -> None:
        raise _Stop()

    options = Options(mode="changes", engine=engine, partition_bytes=128 << 10)
    with pytest.raises(_Stop):
        generate(
            rng, Filters(), options, tmp_path / "s.sql", tmp_path / "p.jsonl", tmp_path / "c.jsonl", stop
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.corpus
def test_an_error_inside_a_spark_task_is_the_typed_error_of_the_local_engine(corpus_file, tmp_path, spark):
    source = corpus_file("rust-us__mysql-cdc-rs/tests/events/8.0/folder/binlog.000693")
    data = bytearray(source.read_bytes())
    with BinlogFile(source) as binlog:
        rows = [raw for raw in binlog.events() if raw.type_code == EventType.UPDATE_ROWS]
    victim = rows[len(rows) * 2 // 3]
    data[victim.pos + victim.length // 2] ^= 0xFF  # the planner frames it; a worker checks its CRC32
    broken = tmp_path / "broken.000001"
    broken.write_bytes(bytes(data))
    rng = RangeSpec([str(broken)])
    errors = []
    for engine in ("local", "spark"):
        options = Options(mode="changes", engine=engine, partition_bytes=64 << 10)
        with pytest.raises(RollbackError) as caught:
            generate(rng, Filters(), options, tmp_path / "s.sql")
        errors.append(caught.value)
    local, on_spark = errors
    assert type(on_spark) is type(local) and str(on_spark) == str(local)
    assert isinstance(local, BinlogFormatError) and local.offset == victim.pos and "CRC32" in local.reason
    assert not (tmp_path / "s.sql").exists()


@pytest.mark.corpus
def test_the_change_log_as_parquet_holds_the_json_lines_changes(corpus_file, tmp_path, spark):
    rng = RangeSpec([str(sakila(corpus_file))])
    options = dict(mode="changes", engine="spark", partition_bytes=256 << 10)
    as_json = run(rng, tmp_path, "jsonl", **options)
    parquet = tmp_path / "changes.parquet"
    generate(rng, Filters(), Options(changes_format="parquet", **options), tmp_path / "s.sql", None, parquet)
    lines = [json.loads(line) for line in as_json.changes.decode().splitlines()]
    rows = spark.read.parquet(str(parquet)).orderBy("pos", "row").collect()
    assert len(rows) == len(lines) > 1000
    for record, row in zip(sorted(lines, key=lambda r: (r["pos"], r["row"])), rows, strict=True):
        assert (row.file, row.pos, row.table, row.type, row.row) == (
            record["file"],
            record["pos"],
            record["table"],
            record["type"],
            record["row"],
        )
        assert json.loads(row.after) == record["after"] and row.before is None
        assert row.time is not None
    counts = spark.read.parquet(str(parquet)).groupBy("table").count().collect()
    assert sum(c["count"] for c in counts) == len(lines)


def test_the_cli_runs_flashback_on_spark_with_partitions_and_parquet(
    scratch_server, mixed, tmp_path, spark, capsys
):
    from rollback.cli.commands import main

    binlog_range, _tables, _before = mixed
    # named as the CLI names its --schema-dsn server: the scripts' headers say which schema source
    schema = ServerSchema(scratch_server.connect, f"{scratch_server.host}:{scratch_server.port}")
    local = run(range_of(binlog_range), tmp_path, "local", schema=schema, partition_bytes=UNSPLIT)
    args = [
        "flashback",
        *map(str, binlog_range.files),
        "--start-position",
        str(binlog_range.start_position),
        "--stop-position",
        str(binlog_range.stop_position),
        "--schema-dsn",
        scratch_server.dsn,
        "--engine",
        "spark",
        "--partition-size",
        "8k",
        "-o",
        str(tmp_path / "cli.sql"),
        "--plan",
        str(tmp_path / "cli.plan"),
        "--changes",
        str(tmp_path / "cli.parquet"),
        "--changes-format",
        "parquet",
    ]
    assert main(args) == 0, capsys.readouterr().err
    assert (tmp_path / "cli.sql").read_bytes() == local.script
    assert (tmp_path / "cli.plan").read_bytes() == local.plan
    assert spark.read.parquet(str(tmp_path / "cli.parquet")).count() == local.changes.count(b"\n")
    with pytest.raises(SystemExit):  # argparse refuses a size it cannot read
        main([*args[:-6], "--partition-size", "1x"])


@pytest.mark.corpus
def test_a_range_of_several_files_splits_and_merges_in_file_order(corpus_file, tmp_path, spark):
    """Two consecutive binlogs of one MySQL 8.0 server, from inside the first to inside the second."""
    first, second = (
        corpus_file(f"rust-us__mysql-cdc-rs/tests/events/8.0/folder/binlog.00069{n}") for n in (3, 4)
    )
    with BinlogFile(first) as a, BinlogFile(second) as b:
        start = [raw.pos for raw in a.events() if raw.type_code == EventType.XID][100] + 31  # after its XID
        stop = [raw.pos for raw in b.events() if raw.type_code == EventType.XID][-50]
    rng = RangeSpec([str(first), str(second)], start_position=start, stop_position=stop)
    unsplit = run(rng, tmp_path, "unsplit", mode="changes", partition_bytes=UNSPLIT)
    assert unsplit.report.partitions == 2  # one per file
    split = run(rng, tmp_path, "split", mode="changes", partition_bytes=64 << 10)
    on_spark = run(rng, tmp_path, "spark", mode="changes", engine="spark", partition_bytes=64 << 10)
    assert split.report.partitions > 10 and split.same(unsplit) and on_spark.same(unsplit)
    files = [json.loads(line)["file"] for line in unsplit.changes.decode().splitlines()]
    assert files == sorted(files) and set(files) == {first.name, second.name}


def test_engines_agree_on_the_seed_benchmark_steps(scratch_server, seed_db, tmp_path, spark):
    """The seed's steps (32,550-row UPDATEs and INSERT ... SELECT, the ALTERs): each step's range on
    Spark in 256 KB partitions gives the local unsplit job's bytes."""
    split = 0
    for index, step in enumerate(SEED_STEPS):
        rng = range_of(scratch_server.run_sql(step, database=seed_db))
        schema = ServerSchema(scratch_server.connect)  # the schema after this step (ALTERs change it)
        # (the ALTER steps log no row change: an empty range, allowed here)
        local = run(rng, tmp_path, f"local-{index}", schema=schema, partition_bytes=UNSPLIT, allow_empty=True)
        # Without a plan: the CLI's path (generated full-image statements), compared with the generic one.
        on_spark = run(
            rng,
            tmp_path,
            f"spark-{index}",
            False,
            schema=schema,
            engine="spark",
            partition_bytes=256 << 10,
            allow_empty=True,
        )
        assert same_without_plan(on_spark, local), step
        assert on_spark.report.engine == ("spark" if on_spark.report.partitions > 1 else "local")
        split += on_spark.report.partitions > 1
    assert split >= 4  # the big steps really ran as several Spark tasks


# ---- --net ---------------------------------------------------------------------------------------------------


def test_engines_agree_on_the_net_script_of_rows_touched_many_times(scratch_server, tmp_path, spark):
    """--net folds a table's changes in the driver: split or not, local or on Spark, the same bytes,
    and the Spark engine's net script restores the table."""
    db = "net_engines"
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"""CREATE TABLE {db}.o (id INT PRIMARY KEY, code INT NOT NULL UNIQUE, amount DECIMAL(12,2),
                note VARCHAR(60) CHARACTER SET utf8mb4, created DATETIME(6), doc JSON, flags BLOB)""",
            f"""INSERT INTO {db}.o SELECT seq, seq, seq / 100, CONCAT('order ', seq, ' ü'),
                TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND, JSON_OBJECT('n', seq),
                UNHEX(HEX(seq)) FROM seq_1_to_400""",
        ],
        database="mysql",
    )
    tables = [f"{db}.o"]
    before = snapshot(scratch_server, tables)
    rng = scratch_server.run_sql(
        [
            *[
                f"UPDATE {db}.o SET amount = amount + {n}, note = CONCAT(note, '{n}') WHERE id % 3 = {n % 3}"
                for n in range(30)
            ],
            f"UPDATE {db}.o SET id = id + 1000 WHERE id BETWEEN 100 AND 150",
            f"DELETE FROM {db}.o WHERE id BETWEEN 200 AND 260",
            f"INSERT INTO {db}.o (id, code, note) SELECT seq, seq, 'back' FROM seq_200_to_230",
            f"INSERT INTO {db}.o (id, code, note) SELECT seq, seq, 'brief' FROM seq_5000_to_5050",
            f"DELETE FROM {db}.o WHERE id >= 5000",
            f"UPDATE {db}.o SET code = 9999 WHERE id = 321",
            f"UPDATE {db}.o SET code = code + 1 WHERE id BETWEEN 300 AND 320 ORDER BY code DESC",
        ],
        database=db,
    )
    schema = ServerSchema(scratch_server.connect)
    unsplit = run(range_of(rng), tmp_path, "unsplit", schema=schema, net=True, partition_bytes=UNSPLIT)
    # every row of the 400 changed (the 51 inserted and deleted ones: nothing), one statement each
    assert unsplit.report.statements == 400 < sum(unsplit.report.counts.values())
    split = run(range_of(rng), tmp_path, "local-split", schema=schema, net=True, partition_bytes=8 << 10)
    assert split.report.partitions > 5 and split.same(unsplit)
    on_spark = run(
        range_of(rng), tmp_path, "spark", schema=schema, net=True, engine="spark", partition_bytes=8 << 10
    )
    assert on_spark.report.engine == "spark" and on_spark.report.partitions > 5
    assert on_spark.same(unsplit)
    apply_script(scratch_server, on_spark.script)
    assert snapshot(scratch_server, tables) == before
