"""Retention: a deleted job takes its output, its upload (when no other job uses it) and its spooled
binlogs with it; jobs past MYSQL_ROLLBACK_RETENTION_DAYS expire unless they were applied; the disk
a job's output takes is reported."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update

from app.models import Job, utcnow
from app.services.retention import disk_usage, sweep
from tests.support.app import ADMIN, OPERATOR, VIEWER, auth, servers_json, wait_for_execution, wait_for_job

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def workload(scratch_server):
    scratch_server.run_sql(
        ["CREATE DATABASE IF NOT EXISTS ret", "CREATE TABLE IF NOT EXISTS ret.t (id INT PRIMARY KEY)"]
    )
    return scratch_server.run_sql([f"INSERT INTO ret.t VALUES ({i})" for i in range(1, 21)], own_file=True)


def _range(rng):
    return {
        "start_file": rng.start_file,
        "start_position": rng.start_position,
        "stop_file": rng.stop_file,
        "stop_position": rng.stop_position,
    }


def _job(client, body):
    created = client.post("/api/jobs", json=body, headers=auth(OPERATOR))
    assert created.status_code == 202, created.text
    job = wait_for_job(client, created.json()["id"])
    assert job["state"] == "succeeded", job
    return job


def test_deleting_a_job_removes_its_files_and_reports_its_disk(
    make_client, scratch_server, workload, tmp_path
):
    client = make_client(servers=servers_json(scratch_server), engine="local")
    data = tmp_path / "data"
    path = workload.files[0]
    upload = client.post(
        "/api/uploads",
        files=[("files", (path.name, path.read_bytes(), "application/octet-stream"))],
        headers=auth(OPERATOR),
    ).json()
    body = {
        "upload": upload["id"],
        "range": {"start_file": path.name, "start_position": 4},
        "options": {"schema_server": "scratch"},
    }
    on_upload = _job(client, body)
    assert (
        on_upload["disk_bytes"]
        == disk_usage(data / "jobs" / on_upload["id"])
        >= on_upload["script_bytes"]
        > 0
    )
    assert (
        f"{on_upload['disk_bytes']} bytes"
        in client.get(f"/jobs/{on_upload['id']}", headers=auth(VIEWER)).text
    )
    spooled = _job(client, {"server": "scratch_live", "range": _range(workload)})
    spool_files = list((data / "spool" / "scratch_live").glob(workload.start_file + "*"))
    assert spool_files

    assert client.delete(f"/api/jobs/{on_upload['id']}", headers=auth(VIEWER)).status_code == 403
    assert client.delete(f"/api/jobs/{on_upload['id']}", headers=auth(OPERATOR)).status_code == 204
    assert client.get(f"/api/jobs/{on_upload['id']}", headers=auth(VIEWER)).status_code == 404
    assert not (data / "jobs" / on_upload["id"]).exists() and not (data / "uploads" / upload["id"]).exists()
    assert client.delete(f"/api/jobs/{spooled['id']}", headers=auth(OPERATOR)).status_code == 204
    assert not any(p.exists() for p in spool_files)
    assert client.delete(f"/api/jobs/{spooled['id']}", headers=auth(OPERATOR)).status_code == 404


def test_jobs_past_retention_expire_unless_applied(make_client, scratch_server, workload, tmp_path):
    client = make_client(servers=servers_json(scratch_server), engine="local", retention_days=30)
    services = client.app.state.services
    old, applied = (_job(client, {"server": "scratch", "range": _range(workload)}) for _ in range(2))
    url = f"/api/jobs/{applied['id']}/executions"
    done = wait_for_execution(
        client, client.post(url, json={"target": "scratch", "dry_run": False}, headers=auth(ADMIN))
    )
    assert done["committed"], done
    scratch_server.run_sql([f"INSERT INTO ret.t VALUES ({i})" for i in range(1, 21)])  # as it was
    assert client.delete(f"/api/jobs/{applied['id']}", headers=auth(OPERATOR)).status_code == 403
    fresh = _job(client, {"server": "scratch", "range": _range(workload)})
    with services.db.session() as session:
        long_ago = utcnow() - timedelta(days=31)
        session.execute(
            update(Job).where(Job.id.in_([old["id"], applied["id"]])).values(finished_at=long_ago)
        )
        session.commit()
    assert sweep(services.db, services.settings) == 1
    jobs = services.settings.jobs_dir
    assert (
        client.get(f"/api/jobs/{old['id']}", headers=auth(VIEWER)).status_code == 404
        and not (jobs / old["id"]).exists()
    )
    for kept in (applied, fresh):
        assert client.get(f"/api/jobs/{kept['id']}", headers=auth(VIEWER)).status_code == 200
        assert (jobs / kept["id"] / "rollback.render.sql").exists()
