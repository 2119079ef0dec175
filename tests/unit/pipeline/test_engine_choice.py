"""Which engine a job runs on and how big its partitions are: `auto` by the range's bytes (its bounds,
not whole files), the partition size by the slots Spark has; a failed Spark job's executor error on
one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollback import Filters, Options, RangeSpec, generate
from rollback.base.errors import SparkFailure
from rollback.pipeline.engines import choose_engine
from rollback.pipeline.engines.spark import spark_failure
from rollback.pipeline.plan import MIN_PARTITION_BYTES, TARGET_BYTES, partition_target, range_bytes
from rollback.request.spec import AUTO_SPARK_BYTES, EngineKind
from tests.support.jobs import sakila


@pytest.mark.parametrize(
    ("asked", "size", "engine", "reason"),
    [
        (
            EngineKind.AUTO,
            AUTO_SPARK_BYTES // 2,
            EngineKind.LOCAL,
            "auto: the range's 128.0 MiB is under 256.0 MiB",
        ),
        (EngineKind.AUTO, AUTO_SPARK_BYTES, EngineKind.SPARK, "auto: the range's 256.0 MiB is at least"),
        (EngineKind.LOCAL, 10 * AUTO_SPARK_BYTES, EngineKind.LOCAL, "asked for"),
        (EngineKind.SPARK, 1, EngineKind.SPARK, "asked for"),
    ],
)
def test_auto_runs_a_range_under_the_threshold_in_process_and_says_why(asked, size, engine, reason):
    chosen, why = choose_engine(asked, size, AUTO_SPARK_BYTES)
    assert chosen is engine and why.startswith(reason)


def test_partitions_are_sized_from_the_range_and_the_slots():
    assert partition_target(1 << 30, 1) == TARGET_BYTES  # in-process: the largest
    assert partition_target(256 << 20, 2) == (256 << 20) // 8  # four per slot
    assert partition_target(8 << 30, 2) == TARGET_BYTES  # capped
    assert partition_target(10 << 20, 8) == MIN_PARTITION_BYTES  # floored
    assert partition_target(40 << 20, 2) == 5 << 20


@pytest.mark.corpus
def test_the_range_size_counts_the_bounds_not_the_whole_files(corpus_file):
    path = str(sakila(corpus_file))
    size = Path(path).stat().st_size
    assert range_bytes(RangeSpec([path])) == size - 4
    assert range_bytes(RangeSpec([path], 1000, 5000)) == 4000
    assert range_bytes(RangeSpec([path, path], 1000, 5000)) == size - 1000 + 5000 - 4


@pytest.mark.corpus
def test_a_small_range_under_auto_runs_in_process_and_the_report_says_why(corpus_file, tmp_path):
    rng = RangeSpec([str(sakila(corpus_file))])
    report = generate(rng, Filters(), Options(mode="changes", partition_bytes=256 << 10), tmp_path / "s.sql")
    assert report.engine == "local" and report.partitions > 1
    assert report.engine_reason.startswith("auto: the range's 1.4 MiB is under 256.0 MiB")
    assert report.to_dict()["engine_reason"] == report.engine_reason


class CapturedException(Exception):
    """Stands for pyspark's exception of a failed job: matched by class name, as its real class is."""


def test_a_failed_spark_job_is_the_executors_own_error_on_one_line():
    text = (
        "An exception was thrown from the Python worker:\nTraceback (most recent call last):\n"
        '  File "worker.py", line 1, in main\n    import rollback\n'
        "ModuleNotFoundError: No module named 'rollback'\n"
    )
    failure = spark_failure(CapturedException(text), 4)
    assert isinstance(failure, SparkFailure) and failure.exit_code == 1
    line = failure.one_line()
    assert line.startswith("Spark gave up on a partition's task after 4 tries (spark.task.maxFailures): ")
    assert "ModuleNotFoundError: No module named 'rollback'" in line and "spark.pyspark.python" in line
    other = KeyboardInterrupt()
    assert spark_failure(other, 4) is other


@pytest.mark.parametrize(
    ("master", "warm", "engine", "reason"),
    [
        ("local[*]", False, EngineKind.LOCAL, "but Spark's master local[*] is local and not started"),
        ("local[2]", True, EngineKind.SPARK, "(master local[2], warm)"),
        ("spark://127.0.0.1:7077", False, EngineKind.SPARK, "(master spark://127.0.0.1:7077, cold)"),
    ],
)
def test_auto_on_a_large_range_takes_spark_only_where_it_brings_something(master, warm, engine, reason):
    # A cold local master starts a JVM for no core the local engine's workers lack (bench/README.md).
    chosen, why = choose_engine(EngineKind.AUTO, 2 * AUTO_SPARK_BYTES, AUTO_SPARK_BYTES, master, warm)
    assert chosen is engine and why.startswith("auto: the range's 512.0 MiB is at least 256.0 MiB")
    assert reason in why


def test_the_cli_with_its_defaults_keeps_a_large_range_in_process_on_a_cold_local_master(
    corpus_dir, tmp_path, monkeypatch, capsys
):
    from rollback.cli import commands as cli

    binlog = corpus_dir / "blackbeam__rust_mysql_common/test-data/binlogs/mariadb-bin.000001"
    monkeypatch.setenv("MYSQL_ROLLBACK_AUTO_SPARK_BYTES", "1K")  # the file is "large" here
    monkeypatch.delenv("MYSQL_ROLLBACK_SPARK_MASTER", raising=False)
    monkeypatch.delenv("MYSQL_ROLLBACK_ENGINE", raising=False)
    monkeypatch.setattr(
        "rollback.job.run.session_started", lambda: False
    )  # the suite's own Spark may be warm
    assert cli.main(["flashback", str(binlog), "-o", str(tmp_path / "r.sql")]) == 0
    err = capsys.readouterr().err
    assert (
        "engine local (auto: the range's " in err
        and "but Spark's master local[*] is local and not started" in err
    )
