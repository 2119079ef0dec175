"""MYSQL_ROLLBACK_LOG_FORMAT=json on a real `mysql-rollback serve`: every line it writes is one JSON
object, and a job's and an execution's lines carry their ids and the id of the request that started
them (the `X-Request-ID` the service answered with)."""

from __future__ import annotations

import json
from typing import Any

from tests.support.app import ADMIN, OPERATOR, servers_json
from tests.support.service import service_env


def _lines(path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise AssertionError(f"line {number} of the service's output is not JSON: {line!r}") from None
        assert isinstance(record, dict) and {"event", "level", "logger", "timestamp"} <= record.keys(), line
        records.append(record)
    return records


def test_json_log_lines_carry_request_job_and_execution_ids(service_process, scratch_server, tmp_path):
    scratch_server.run_sql(
        ["DROP DATABASE IF EXISTS logs", "CREATE DATABASE logs", "CREATE TABLE logs.t (id INT PRIMARY KEY)"]
    )
    done = scratch_server.run_sql(["INSERT INTO logs.t VALUES (1), (2)", "DELETE FROM logs.t WHERE id = 1"])
    env = service_env(
        tmp_path / "data",
        servers_json(scratch_server),
        MYSQL_ROLLBACK_LOG_FORMAT="json",
        MYSQL_ROLLBACK_ENGINE="local",
    )
    service = service_process(tmp_path / "data", env, tmp_path / "service.log").start()
    try:
        body = {
            "server": "scratch",
            "range": {
                "start_file": done.start_file,
                "start_position": done.start_position,
                "stop_file": done.stop_file,
                "stop_position": done.stop_position,
            },
        }
        created = service.request("POST", "/api/jobs", OPERATOR, json=body, headers={"X-Request-ID": "ci-42"})
        assert created.status_code == 202, created.text
        assert created.headers["x-request-id"] == "ci-42"
        job = service.wait(created.json()["id"])
        assert job["state"] == "succeeded", job["error"]
        queued = service.request(
            "POST", f"/api/jobs/{job['id']}/executions", ADMIN, json={"target": "scratch"}
        )
        execution_request = queued.headers["x-request-id"]
        assert len(execution_request) == 32  # none given: the service made one
        execution = service.wait_execution(queued.headers["location"])
        assert execution["state"] == "succeeded", execution
    finally:
        service.stop()
    records = _lines(tmp_path / "service.log")
    job_lines = [r for r in records if r.get("job_id") == job["id"] and "execution_id" not in r]
    assert any("started" in r["event"] for r in job_lines), records
    assert any("succeeded" in r["event"] for r in job_lines), records
    assert all(r.get("request_id") == "ci-42" for r in job_lines), job_lines
    access = [r for r in records if r["logger"] == "uvicorn.access" and "POST /api/jobs " in r["event"]]
    assert [r["request_id"] for r in access] == ["ci-42"], access
    execution_lines = [r for r in records if r.get("execution_id") == execution["id"]]
    assert execution_lines and all(r["job_id"] == job["id"] for r in execution_lines), execution_lines
    assert all(r["request_id"] == execution_request for r in execution_lines), execution_lines
    assert any(r["event"].endswith(": succeeded") for r in execution_lines), execution_lines
