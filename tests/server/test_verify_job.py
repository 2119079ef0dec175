"""`verify --job ID --service URL`: the plan of a service job (GET /api/jobs/{id}/plan) applied to a
scratch copy and compared with the checksums taken before the change, against a real service process
and the scratch server; the token from the environment; a wrong token or job is one line (exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from xml.etree import ElementTree

import pytest

from rollback.cli import commands as cli
from tests.support import REPO
from tests.support.app import OPERATOR, VIEWER, servers_json
from tests.support.service import service_env

DB = "vjob"


@pytest.fixture(scope="module")
def job(scratch_server, service_process, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("verify-job")
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.a (id INT PRIMARY KEY, v VARCHAR(20))",
            f"CREATE TABLE {DB}.b (id INT PRIMARY KEY, n INT)",
            f"INSERT INTO {DB}.a VALUES " + ", ".join(f"({i}, 'v{i}')" for i in range(1, 21)),
            f"INSERT INTO {DB}.b VALUES " + ", ".join(f"({i}, {i})" for i in range(1, 11)),
        ]
    )
    before = tmp / "before.json"
    assert cli.main(["checksum", scratch_server.dsn, "-d", DB, "-o", str(before)]) == 0
    rng = scratch_server.run_sql([f"DELETE FROM {DB}.a WHERE id > 10", f"UPDATE {DB}.b SET n = 0"])
    data = tmp / "data"
    service = service_process(
        data, service_env(data, servers_json(scratch_server)), tmp / "service.log"
    ).start()
    try:
        created = service.request(
            "POST",
            "/api/jobs",
            OPERATOR,
            json={
                "server": "scratch",
                "range": {
                    "start_file": rng.start_file,
                    "start_position": rng.start_position,
                    "stop_file": rng.stop_file,
                    "stop_position": rng.stop_position,
                },
                "mode": "flashback",
            },
        )
        assert created.status_code == 202, created.text
        done = service.wait(created.json()["id"])
        assert done["state"] == "succeeded", done
        yield {"id": done["id"], "service": service, "before": before, "tmp": tmp}
    finally:
        service.stop()


def _verify(scratch_server, job, *extra: str, token: str | None = VIEWER) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYSQL_ROLLBACK_")}
    if token is not None:
        env["MYSQL_ROLLBACK_TOKEN"] = token
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rollback.cli.commands",
            "verify",
            "--service",
            job["service"].url,
            "--target",
            scratch_server.dsn,
            "--expected",
            str(job["before"]),
            *extra,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, proc.stdout, proc.stderr


def test_the_plan_route_serves_the_jobs_plan(job):
    response = job["service"].request("GET", f"/api/jobs/{job['id']}/plan")
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/x-ndjson")
    steps = [json.loads(line) for line in response.text.splitlines() if line.strip()]
    assert len(steps) == 10 + 10 and {s["table"] for s in steps} == {f"{DB}.a", f"{DB}.b"}
    assert job["service"].request("GET", "/api/jobs/nope/plan").status_code == 404
    assert (
        job["service"]
        .request("GET", f"/api/jobs/{job['id']}/plan", token="wrong-token-0123456789")
        .status_code
        == 401
    )
    paths = job["service"].request("GET", "/openapi.json").json()["paths"]
    assert "get" in paths["/api/jobs/{job_id}/plan"]


def test_verify_a_service_job_restores_every_table(scratch_server, job):
    report, junit = job["tmp"] / "report.json", job["tmp"] / "junit.xml"
    code, out, err = _verify(
        scratch_server, job, "--job", job["id"], "--report", str(report), "--junit", str(junit)
    )
    assert code == 0, err
    facts = json.loads(report.read_text())
    assert facts["result"] == "restored" and facts["job"] == job["id"] and facts["plan"] == f"job {job['id']}"
    assert [(t["table"], t["status"]) for t in facts["tables"]] == [
        (f"{DB}.a", "restored"),
        (f"{DB}.b", "restored"),
    ]
    suite = ElementTree.parse(junit).getroot()
    assert sorted(c.get("name") for c in suite.findall("testcase")) == [f"{DB}.a", f"{DB}.b"]
    assert suite.get("failures") == "0"
    assert VIEWER not in out + err + report.read_text()


def test_a_wrong_token_or_job_is_one_line_and_a_report(scratch_server, job):
    report = job["tmp"] / "refused.json"
    code, out, err = _verify(
        scratch_server, job, "--job", job["id"], "--report", str(report), token="wrong-token-0123456789"
    )
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"job {job['id']}: 401" in err
    assert json.loads(report.read_text())["exit_code"] == 2
    code, out, err = _verify(scratch_server, job, "--job", "no-such-job")
    assert code == 2 and "job no-such-job: 404" in err and err.count("\n") == 1
    code, out, err = _verify(scratch_server, job, "--job", job["id"], token=None)
    assert code == 2 and "--job needs an API token: set $MYSQL_ROLLBACK_TOKEN" in err
