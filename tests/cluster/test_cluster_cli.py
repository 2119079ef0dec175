"""The CLI on a Spark standalone cluster whose second worker cannot see this machine's temporary
directory (tests/support/cluster.py): the script is byte for byte the local engine's; a node that
cannot read a file fails its tasks, Spark retries them on the other node and the job still succeeds;
an error on every node is shown as the executor's own, on one line; a corrupt binlog is the one
refusal line it is on the local engine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rollback.binlog.reader import BinlogFile
from rollback.binlog.rows import ROWS_EVENT_TYPES
from tests.support import REPO
from tests.support.cluster import ClusterBinlog


def cli(env: dict[str, str], *argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rollback.cli.commands", *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def ours(stderr: str) -> list[str]:
    """The CLI's own lines on stderr (the JVM may say things of its own before them)."""
    return [line for line in stderr.splitlines() if line.startswith("mysql-rollback:")]


def flashback(binlog: ClusterBinlog, out: Path, *extra: str) -> list[str]:
    return [
        "flashback",
        str(binlog.path),
        "--start-position",
        str(binlog.start),
        "--stop-position",
        str(binlog.stop),
        "-o",
        str(out),
        *extra,
    ]


def test_the_cluster_writes_the_local_engines_script_with_a_worker_that_sees_no_local_file(
    spark_cluster, cluster_binlog, tmp_path
):
    expected = cluster_binlog.local_script
    on_cluster = tmp_path / "cluster.sql"
    done = cli(
        spark_cluster.env(),
        *flashback(cluster_binlog, on_cluster, "--engine", "spark", "--partition-size", "256k"),
        "--spark-master",
        spark_cluster.master,
        "--work-dir",
        str(spark_cluster.shared),
    )
    assert done.returncode == 0, done.stderr
    assert "engine spark (asked for)" in done.stderr
    assert on_cluster.read_bytes() == expected and len(expected) > 1 << 20
    assert list(spark_cluster.shared.iterdir()) == []  # the staged copy is gone
    # Both workers ran partitions, the one that cannot see the driver's files among them.
    assert "Finished task" in spark_cluster.executor_logs(spark_cluster.isolated_work)


def test_a_node_that_cannot_read_the_binlog_fails_its_tasks_and_spark_runs_them_on_the_other(
    spark_cluster, cluster_binlog, tmp_path
):
    expected = cluster_binlog.local_script
    before = spark_cluster.executor_logs(spark_cluster.isolated_work)
    out = tmp_path / "retried.sql"
    # A file:// URL says "every node reads this path": the isolated worker cannot, so its tasks fail.
    argv = flashback(cluster_binlog, out, "--engine", "spark", "--partition-size", "128k")
    argv[1] = cluster_binlog.path.as_uri()
    env = spark_cluster.env(MYSQL_ROLLBACK_SPARK_CONF_spark__excludeOnFailure__enabled="true")
    done = cli(env, *argv, "--spark-master", spark_cluster.master)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == expected
    seen = spark_cluster.executor_logs(spark_cluster.isolated_work)[len(before) :]
    assert "FileNotFoundError" in seen and str(cluster_binlog.path) in seen


def test_an_error_on_every_executor_is_shown_as_the_executors_own_on_one_line(
    spark_cluster, cluster_binlog, tmp_path
):
    # Executors on a Python without the package: the cause, not "internal error" cut short.
    env = spark_cluster.env(
        MYSQL_ROLLBACK_SPARK_CONF_spark__pyspark__python="/usr/bin/python3",
        MYSQL_ROLLBACK_SPARK_CONF_spark__task__maxFailures="2",
    )
    done = cli(
        env,
        *flashback(cluster_binlog, tmp_path / "x.sql", "--engine", "spark", "--partition-size", "1M"),
        "--spark-master",
        spark_cluster.master,
        "--work-dir",
        str(spark_cluster.shared),
    )
    lines = ours(done.stderr)
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert "internal error" not in lines[0] and "Traceback" not in done.stderr
    assert "after 2 tries" in lines[0] and "No module named 'rollback'" in lines[0]
    assert "spark.pyspark.python" in lines[0]
    assert not (tmp_path / "x.sql").exists()


def test_a_corrupt_binlog_is_the_one_refusal_line_of_the_local_engine(
    spark_cluster, cluster_binlog, tmp_path
):
    data = bytearray(cluster_binlog.path.read_bytes())
    with BinlogFile(cluster_binlog.path) as binlog:
        rows = [raw for raw in binlog.events() if raw.type_code in ROWS_EVENT_TYPES]
    victim = rows[len(rows) * 2 // 3]
    data[victim.pos + victim.length // 2] ^= 0xFF  # the planner frames it; a worker checks its CRC32
    broken = tmp_path / cluster_binlog.path.name
    broken.write_bytes(bytes(data))
    copy = ClusterBinlog(broken, cluster_binlog.start, cluster_binlog.stop)
    local = cli(spark_cluster.env(), *flashback(copy, tmp_path / "l.sql", "--engine", "local"))
    on_cluster = cli(
        spark_cluster.env(),
        *flashback(copy, tmp_path / "c.sql", "--engine", "spark", "--partition-size", "256k"),
        "--spark-master",
        spark_cluster.master,
        "--work-dir",
        str(spark_cluster.shared),
    )
    assert local.returncode == on_cluster.returncode == 2, (local.stderr, on_cluster.stderr)
    assert ours(on_cluster.stderr) == ours(local.stderr) and len(ours(local.stderr)) == 1
    assert f"offset {victim.pos}" in local.stderr and "CRC32" in local.stderr
