"""A service job on the Spark standalone cluster (tests/support/cluster.py): an uploaded binlog, which
only the service's machine holds, gives the local engine's script byte for byte; the job record says
which engine ran and why; and the warm service session, capped by MYSQL_ROLLBACK_SPARK_CORES_MAX,
leaves a core for a second application, which runs while the service keeps its session (and whose
partitions mostly have nothing to send back but empty parts)."""

from __future__ import annotations

import subprocess
import sys

from tests.support import REPO
from tests.support.app import OPERATOR, TOKENS


def test_a_service_job_on_the_cluster_writes_the_local_engines_script_and_leaves_cores_to_others(
    spark_cluster, cluster_binlog, service_process, tmp_path
):
    binlog = cluster_binlog
    data = tmp_path / "data"
    env = spark_cluster.env(
        MYSQL_ROLLBACK_DATA_DIR=str(data),
        MYSQL_ROLLBACK_API_TOKENS=TOKENS,
        MYSQL_ROLLBACK_SERVERS="{}",
        MYSQL_ROLLBACK_SPARK_MASTER=spark_cluster.master,
        MYSQL_ROLLBACK_WORK_DIR=str(spark_cluster.shared),
        MYSQL_ROLLBACK_AUTO_SPARK_BYTES=str(1 << 20),  # the default engine, auto: this range goes to Spark
        MYSQL_ROLLBACK_PARTITION_BYTES=str(256 << 10),
        MYSQL_ROLLBACK_SPARK_CORES_MAX="1",
    )
    service = service_process(data, env, tmp_path / "service.log").start()
    try:
        upload = service.request(
            "POST",
            "/api/uploads",
            OPERATOR,
            files=[("files", (binlog.path.name, binlog.path.read_bytes(), "application/octet-stream"))],
        )
        assert upload.status_code == 201, upload.text
        body = {
            "upload": upload.json()["id"],
            "range": {
                "start_file": binlog.path.name,
                "start_position": binlog.start,
                "stop_file": binlog.path.name,
                "stop_position": binlog.stop,
            },
        }
        created = service.request("POST", "/api/jobs", OPERATOR, json=body)
        assert created.status_code == 202, created.text
        job = service.wait(created.json()["id"], timeout=300)
        assert job["state"] == "succeeded", (job, (tmp_path / "service.log").read_text()[-3000:])
        engine = service.request("GET", f"/api/jobs/{job['id']}/summary").json()["engine"]
        assert engine["name"] == "spark" and engine["partitions"] > 4
        assert engine["reason"].startswith("auto: the range's ")
        script = service.request("GET", f"/api/jobs/{job['id']}/script").content

        assert script == binlog.local_script
        # A second application on the same cluster while the service holds its session: it gets the
        # core the service left. Only the deletes: most partitions have no statement (empty parts).
        local = tmp_path / "local.sql"
        on_cluster = tmp_path / "cluster.sql"
        argv = [sys.executable, "-m", "rollback.cli.commands", "flashback", str(binlog.path)]
        argv += ["--start-position", str(binlog.start), "--stop-position", str(binlog.stop)]
        for out, engine in ((local, ["--engine", "local"]), (on_cluster, ["--engine", "spark"])):
            done = subprocess.run(
                [
                    *argv,
                    "-o",
                    str(out),
                    *engine,
                    "--type",
                    "delete",
                    "--partition-size",
                    "512k",
                    "--work-dir",
                    str(spark_cluster.shared),
                ],
                cwd=REPO,
                env=spark_cluster.env(MYSQL_ROLLBACK_SPARK_MASTER=spark_cluster.master),
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, done.stderr
        assert local.read_bytes() == on_cluster.read_bytes() and b"INSERT INTO" in local.read_bytes()
        assert list(spark_cluster.shared.iterdir()) == []
    finally:
        service.stop()
