"""A job's Python side runs in a process of its own (app/services/job_process.py): a Spark job's
partitions still run on the service's warm session, a cancel reaches the job there, and a job
whose process dies fails with one line while the service goes on."""

from __future__ import annotations

import signal
import time
from typing import Any

import psutil

from tests.support.app import FINAL, OPERATOR, servers_json
from tests.support.jobs import bulk_job
from tests.support.service import Service, service_env


def _range(scratch_server, rows: int) -> dict[str, Any]:
    return bulk_job(scratch_server, "jp", rows)


def _job_processes(service: Service) -> list[psutil.Process]:
    """The processes the service's fork server started (jobs, executions, outputs)."""
    assert service.process is not None
    found = []
    for child in psutil.Process(service.process.pid).children():
        if "forkserver" in " ".join(child.cmdline()):
            found += child.children()
    return found


def _javas(service: Service) -> list[psutil.Process]:
    assert service.process is not None
    return [p for p in psutil.Process(service.process.pid).children(recursive=True) if p.name() == "java"]


def test_a_spark_job_runs_its_partitions_on_the_services_warm_session(
    service_process, scratch_server, tmp_path
):
    env = service_env(
        tmp_path / "data",
        servers_json(scratch_server),
        MYSQL_ROLLBACK_WARM_SPARK="true",
        MYSQL_ROLLBACK_ENGINE="spark",
        MYSQL_ROLLBACK_PARTITION_BYTES=str(1 << 20),
    )
    service = service_process(tmp_path / "data", env, tmp_path / "service.log").start()
    try:
        warm = service.wait_warm()
        assert warm == "ready", warm
        jvm = _javas(service)
        assert len(jvm) == 1

        created = service.request("POST", "/api/jobs", OPERATOR, json=_range(scratch_server, 20_000))
        assert created.status_code == 202, created.text
        job = service.wait(created.json()["id"], timeout=240)
        assert job["state"] == "succeeded" and job["statements"] == 20_000, job
        engine = service.request("GET", f"/api/jobs/{job['id']}/summary").json()["engine"]
        assert engine["name"] == "spark" and engine["partitions"] > 2, engine
        log = (tmp_path / "service.log").read_text(errors="replace")
        assert f"job {job['id']}: {engine['partitions']} partition(s) on the service's Spark session" in log
        assert _javas(service) == jvm  # the job's process started no JVM of its own

        # A cancel reaches a job whose partitions run on the service's session.
        final: dict[str, Any] = {}
        for rows in (100_000, 400_000):
            created = service.request("POST", "/api/jobs", OPERATOR, json=_range(scratch_server, rows))
            job_id = created.json()["id"]
            while (now := service.request("GET", f"/api/jobs/{job_id}").json())["state"] not in FINAL:
                if now["progress"]["bytes"] > 0:  # its partitions are running
                    break
                time.sleep(0.05)
            asked = time.monotonic()
            cancelled = service.request("POST", f"/api/jobs/{job_id}/cancel", OPERATOR)
            if cancelled.status_code == 409:
                continue  # it ended first: a larger range
            final = service.wait(job_id, timeout=60)
            if final["state"] != "succeeded":
                assert time.monotonic() - asked < 10
                break
        assert final.get("state") == "cancelled", final
        assert not (service.data_dir / "jobs" / final["id"]).exists()
        assert service.request("GET", "/health").json()["spark"]["warm"] == "ready"
    finally:
        service.stop()


def test_a_job_whose_process_dies_fails_with_one_line(service, scratch_server):
    created = service.request("POST", "/api/jobs", OPERATOR, json=_range(scratch_server, 200_000))
    job_id = created.json()["id"]
    assert service.wait(job_id, until=("running", *FINAL))["state"] == "running"
    deadline = time.monotonic() + 30
    while not (processes := _job_processes(service)):
        assert time.monotonic() < deadline, "no job process"
        time.sleep(0.05)
    assert len(processes) == 1
    processes[0].send_signal(signal.SIGKILL)
    job = service.wait(job_id, timeout=30)
    assert job["state"] == "failed", job
    assert job["error"] == "the job's process ended without an outcome (exit code -9)", job
    assert not (service.data_dir / "jobs" / job_id).exists()
    # the service goes on: the next job runs
    again = service.request("POST", "/api/jobs", OPERATOR, json=_range(scratch_server, 100)).json()
    assert service.wait(again["id"])["state"] == "succeeded"
