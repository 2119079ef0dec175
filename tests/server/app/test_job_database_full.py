"""The job database on a real full disk: its directory is a tmpfs of 2 MiB in a mount namespace of
the service process alone (unshare), filled up once the service has started (through
/proc/<pid>/root, which shows that namespace). An upload whose record cannot be written is a 507
with one line, and leaves no file behind; the service goes on answering."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.app import OPERATOR, servers_json
from tests.support.service import Service, service_env

MOUNTS = 'mount -t tmpfs -o size=2m tmpfs "$0/db" && exec "$@"'


@pytest.fixture
def service(scratch_server, service_process, tmp_path) -> Iterator[Service]:
    assert shutil.which("unshare") and subprocess.run(["unshare", "-rm", "true"]).returncode == 0
    data = tmp_path / "data"
    (data / "db").mkdir(parents=True)
    env = service_env(
        data,
        servers_json(scratch_server),
        MYSQL_ROLLBACK_DB_URL=f"sqlite:///{data / 'db' / 'jobs.sqlite3'}",
        MYSQL_ROLLBACK_ENGINE="local",
    )
    svc = service_process(
        data, env, tmp_path / "service.log", prefix=["unshare", "-rm", "sh", "-c", MOUNTS, str(data)]
    )
    svc.start()
    try:
        yield svc
    finally:
        svc.stop()


def _fill(directory: Path) -> None:
    with open(directory / "filler", "wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError:
            pass


def test_an_upload_whose_record_cannot_be_written_is_a_507_and_leaves_no_file(service, scratch_server):
    assert service.process is not None
    _fill(Path(f"/proc/{service.process.pid}/root") / str(service.data_dir / "db").lstrip("/"))
    path = scratch_server.binlog_files()[0]
    files = [("files", (path.name, path.read_bytes()[:4096], "application/octet-stream"))]
    for _ in range(3):  # the WAL may still have room for a page or two
        response = service.request("POST", "/api/uploads", OPERATOR, files=files)
        if response.status_code != 201:
            break
    assert response.status_code == 507, response.text
    detail = response.json()["detail"]
    assert detail.startswith("the job database cannot be written (") and "full" in detail, detail
    assert "\n" not in detail and str(service.data_dir) not in detail
    uploads = service.data_dir / "uploads"
    assert service.request("GET", "/api/jobs").status_code == 200  # reads still answer
    kept = sorted(p.name for p in uploads.iterdir()) if uploads.exists() else []
    assert len(kept) <= 2  # only the uploads that were recorded (when the WAL still had room)
    for upload_id in kept:
        assert service.request("GET", f"/api/uploads/{upload_id}").status_code == 200
    assert service.request("GET", "/health").status_code == 200
