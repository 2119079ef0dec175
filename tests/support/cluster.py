"""The `spark_cluster` fixture: a Spark standalone cluster on 127.0.0.1, started with pyspark's own
`spark-class` once per test run: one Master and two Workers of one core each, with their own work
directories. The second worker stands in for another machine: it runs in its own mount namespace
with a private tmpfs over this machine's temporary directory (where the tests keep their binlogs,
outputs, service data dirs and the drivers' Spark directories), so it cannot see any of them. Only
`shared` (outside the temporary directory) is seen by both: the work dir the jobs stage binlogs in.
Everything is stopped at the end of the run, whatever happened.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rollback import Filters, Options, RangeSpec, generate

START_SECONDS = 120  # the machine is shared: JVMs start slowly under load


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class SparkCluster:
    master: str  # spark://127.0.0.1:PORT
    ui: str  # the master's web UI (its /json/ lists the workers)
    base: Path
    shared: Path  # seen by every node: the work dir of the jobs
    isolated_work: Path  # the work dir of the worker that sees nothing of this machine's temporary dir
    processes: list[subprocess.Popen] = field(default_factory=list)

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a driver (CLI or service) on this cluster: the tests' own configuration
        removed, executors small enough for two on this machine."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("MYSQL_ROLLBACK_")}
        env.update(
            SPARK_LOCAL_IP="127.0.0.1",
            MYSQL_ROLLBACK_SPARK_CONF_spark__executor__memory="512m",
        )
        env.update(extra)
        return env

    def alive_workers(self) -> int:
        with urllib.request.urlopen(f"{self.ui}/json/", timeout=5) as response:
            return int(json.load(response).get("aliveworkers", 0))

    def executor_logs(self, work: Path) -> str:
        """Every executor's stderr under a worker's work dir (app-*/N/stderr)."""
        return "\n".join(p.read_text(errors="replace") for p in sorted(work.glob("app-*/*/stderr")))


def _hiding_script(base: Path) -> str:
    """The shell lines that hide the temporary directory from a worker. What every node has installed
    (this checkout and its virtual environment, with pyspark) stays visible even when it lies under
    the temporary directory, as a clone in /tmp does: it is bind-mounted aside first, then back."""
    tmp = Path(tempfile.gettempdir()).resolve()
    installed = {Path(__file__).resolve().parents[2], Path(sys.prefix).resolve(), spark_home().resolve()}
    keep = sorted(p for p in installed if p.is_relative_to(tmp))
    lines = ["set -e"]
    holds = []
    for index, path in enumerate(keep):
        hold = base / "keep" / str(index)
        hold.mkdir(parents=True, exist_ok=True)
        holds.append(hold)
        lines.append(f"mount --bind {shlex.quote(str(path))} {shlex.quote(str(hold))}")
    lines.append(f"mount -t tmpfs tmpfs {shlex.quote(str(tmp))}")
    for path, hold in zip(keep, holds, strict=True):
        lines.append(f"mkdir -p {shlex.quote(str(path))}")
        lines.append(f"mount --bind {shlex.quote(str(hold))} {shlex.quote(str(path))}")
    lines.append('exec "$@"')
    return "\n".join(lines)


def _spawn(command: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)  # its own session: the JVM and the executors it started
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[SparkCluster]:
    """A running standalone cluster (master + two 1-core workers, one isolated); stopped at the end."""
    home = spark_home()
    base = Path(tempfile.mkdtemp(prefix="mysql-rollback-cluster-", dir="/var/tmp"))
    for name in ("shared", "logs", "worker-1", "worker-2"):
        (base / name).mkdir()
    os.chmod(base / "shared", 0o777)
    port, ui_port = _free_port(), _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MYSQL_ROLLBACK_")},
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
    }
    spark_class = str(home / "bin" / "spark-class")
    cluster = SparkCluster(
        f"spark://127.0.0.1:{port}",
        f"http://127.0.0.1:{ui_port}",
        base,
        base / "shared",
        base / "worker-2",
    )
    try:
        cluster.processes.append(
            _spawn(
                [
                    spark_class,
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--webui-port",
                    str(ui_port),
                ],
                base / "logs" / "master.log",
                env,
            )
        )

        def worker(index: int) -> list[str]:
            return [
                spark_class,
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--cores",
                "1",
                "--memory",
                "1G",
                "--webui-port",
                str(_free_port()),
                "--work-dir",
                str(base / f"worker-{index}"),
                cluster.master,
            ]

        cluster.processes.append(_spawn(worker(1), base / "logs" / "worker-1.log", env))
        # Another machine: a private tmpfs over the temporary directory, in its own mount namespace.
        hide = ["unshare", "-m", "--propagation", "private", "sh", "-c", _hiding_script(base), "sh"]
        cluster.processes.append(_spawn([*hide, *worker(2)], base / "logs" / "worker-2.log", env))
        deadline = time.monotonic() + START_SECONDS
        while True:
            for proc in cluster.processes:
                assert proc.poll() is None, _logs(base)
            try:
                if cluster.alive_workers() == 2:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"the cluster did not start:\n{_logs(base)}"
            time.sleep(0.5)
        yield cluster
    finally:
        for proc in reversed(cluster.processes):
            _stop(proc)
        shutil.rmtree(base, ignore_errors=True)


def _logs(base: Path) -> str:
    return "\n".join(
        f"== {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted((base / "logs").iterdir())
    )


@dataclass
class ClusterBinlog:
    path: Path  # a copy in this machine's temporary directory: the isolated worker cannot see it
    start: int
    stop: int
    local_script: bytes = b""  # the script of its range on the local engine, in this process


@pytest.fixture(scope="session")
def cluster_binlog(scratch_server_factory, tmp_path_factory) -> ClusterBinlog:
    """A binlog file of a few MB that names its columns (binlog_row_metadata=FULL: no schema source
    needed): inserts, updates and deletes in transactions of several sizes."""
    server = scratch_server_factory(row_metadata="FULL")
    db = "cluster"
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY, n BIGINT, note VARCHAR(80) CHARACTER SET utf8mb4, "
            "at DATETIME(3), doc TEXT)",
        ]
    )
    rng = server.run_sql(
        [
            f"INSERT INTO {db}.t SELECT seq, seq * 31, CONCAT('row ', seq, ' é'), "
            f"TIMESTAMP'2024-05-01 00:00:00' + INTERVAL seq SECOND, REPEAT('d', seq % 50) FROM seq_1_to_20000",
            f"UPDATE {db}.t SET n = n + 1, note = CONCAT(note, '!') WHERE id % 3 = 0",
            "BEGIN",
            *[
                f"UPDATE {db}.t SET doc = 'x{i}' WHERE id BETWEEN {i * 100} AND {i * 100 + 40}"
                for i in range(60)
            ],
            "COMMIT",
            f"DELETE FROM {db}.t WHERE id % 7 = 0",
        ],
        database=db,
        own_file=True,
    )
    (source,) = rng.files
    target = tmp_path_factory.mktemp("cluster-binlog") / source.name
    shutil.copyfile(source, target)
    script = target.with_suffix(".local.sql")
    generate(
        RangeSpec([str(target)], rng.start_position, rng.stop_position),
        Filters(),
        Options(engine="local"),
        script,
    )
    return ClusterBinlog(target, rng.start_position, rng.stop_position, script.read_bytes())
