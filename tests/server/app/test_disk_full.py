"""The service on a real full disk and a real read-only data dir: a tmpfs of 256 KiB mounted on
data/jobs and a read-only tmpfs on data/uploads, in a mount namespace of the service process alone
(unshare). A job whose output does not fit fails with one clear line and leaves no output behind;
an upload that cannot be stored is a 507, not a 500; the service goes on answering."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

import pytest

from tests.support.app import OPERATOR, servers_json
from tests.support.service import Service, service_env

pytestmark = pytest.mark.server

MOUNTS = 'mount -t tmpfs -o size=256k tmpfs "$0/jobs" && mount -t tmpfs -o ro,size=64k tmpfs "$0/uploads" && exec "$@"'


def _namespaces_work() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    return probe.returncode == 0


@pytest.fixture(scope="module")
def service(scratch_server, tmp_path_factory) -> Iterator[Service]:
    assert _namespaces_work(), "this test needs unshare -rm (user and mount namespaces)"
    base = tmp_path_factory.mktemp("diskfull")
    data = base / "data"
    for sub in ("jobs", "uploads"):
        (data / sub).mkdir(parents=True)
    env = service_env(data, servers_json(scratch_server), MYSQL_ROLLBACK_ENGINE="local")
    svc = Service(data, env, base / "service.log", prefix=["unshare", "-rm", "sh", "-c", MOUNTS, str(data)])
    svc.start()
    try:
        yield svc
    finally:
        svc.stop()


def test_a_job_whose_output_does_not_fit_fails_with_one_clear_line(service, scratch_server):
    scratch_server.run_sql(
        [
            "CREATE DATABASE IF NOT EXISTS dfull",
            "CREATE TABLE IF NOT EXISTS dfull.t (id INT PRIMARY KEY, v TEXT)",
        ]
    )
    done = scratch_server.run_sql(
        "INSERT INTO t SELECT seq, REPEAT('v', 200) FROM seq_1_to_4000", database="dfull"
    )
    rng = {
        "start_file": done.start_file,
        "start_position": done.start_position,
        "stop_file": done.stop_file,
        "stop_position": done.stop_position,
    }
    created = service.request("POST", "/api/jobs", OPERATOR, json={"server": "scratch", "range": rng})
    assert created.status_code == 202, created.text
    job = service.wait(created.json()["id"])
    assert job["state"] == "failed", job
    assert job["error"].startswith(
        "the service's disk is full (No space left on device) while writing the job's output"
    )
    assert (
        "\n" not in job["error"]
        and "Traceback" not in job["error"]
        and str(service.data_dir) not in job["error"]
    )
    assert service.request("GET", f"/api/jobs/{job['id']}/script").status_code == 409
    # nothing of the job is left on the tmpfs: a small job fits again
    small = scratch_server.run_sql("INSERT INTO t VALUES (100000, 'x')", database="dfull")
    rng = {
        "start_file": small.start_file,
        "start_position": small.start_position,
        "stop_file": small.stop_file,
        "stop_position": small.stop_position,
    }
    again = service.wait(
        service.request("POST", "/api/jobs", OPERATOR, json={"server": "scratch", "range": rng}).json()["id"]
    )
    assert again["state"] == "succeeded", again
    scratch_server.query("DROP DATABASE dfull")


def test_an_upload_to_a_read_only_data_dir_is_a_507(service, scratch_server):
    path = scratch_server.binlog_files()[0]
    response = service.request(
        "POST",
        "/api/uploads",
        OPERATOR,
        files=[("files", (path.name, path.read_bytes()[:2048], "application/octet-stream"))],
    )
    assert response.status_code == 507, response.text
    assert response.json()["detail"].startswith(
        "the service may not write its data directory (Read-only file system)"
    )
    assert service.request("GET", "/health").status_code == 200
