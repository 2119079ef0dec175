"""A job writes only its script; the plan and the change log appear when first needed, or at once
when the job asks for them (options.outputs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.app import OPERATOR, VIEWER, auth, servers_json, wait_for_execution, wait_for_job


@pytest.fixture(scope="module")
def small_range(scratch_server):
    scratch_server.run_sql(
        [
            "CREATE DATABASE IF NOT EXISTS lazy",
            "CREATE TABLE IF NOT EXISTS lazy.t (id INT PRIMARY KEY, v VARCHAR(30), b BLOB, j JSON)",
        ]
    )
    statements = [
        f"INSERT INTO lazy.t VALUES ({i}, 'café {i}', x'00ff{i:02x}', '{{\"k\": {i}}}')" for i in range(20)
    ]
    statements += ["UPDATE lazy.t SET v = CONCAT(v, '!') WHERE id < 5", "DELETE FROM lazy.t WHERE id >= 15"]
    done = scratch_server.run_sql(statements, own_file=True)
    return {
        "start_file": done.start_file,
        "start_position": done.start_position,
        "stop_file": done.stop_file,
        "stop_position": done.stop_position,
    }


def _job(client, data: Path, body: dict) -> tuple[dict, Path]:
    job = wait_for_job(client, client.post("/api/jobs", json=body, headers=auth(OPERATOR)).json()["id"])
    assert job["state"] == "succeeded", job
    return job, data / "jobs" / job["id"]


def test_a_job_writes_the_script_only_and_the_rest_on_first_need(
    make_client, scratch_server, small_range, tmp_path
):
    data = tmp_path / "lazy-data"
    client = make_client(servers=servers_json(scratch_server), data_dir=data)
    job, out = _job(client, data, {"server": "scratch", "range": small_range})
    assert sorted(p.name for p in out.iterdir()) == ["rollback.render.sql"]  # its line index on first page
    summary = client.get(f"/api/jobs/{job['id']}/summary", headers=auth(VIEWER)).json()
    # the largest transactions come from the engine's report, not from a plan
    assert [t["statements"] for t in summary["largest_transactions"]] == [5, 5] + [1] * 8
    assert summary["largest_transactions"][0]["tables"] == ["lazy.t"]
    assert not (out / "plan.jsonl").exists()

    changes = client.get(f"/api/jobs/{job['id']}/changes?offset=0&limit=100", headers=auth(VIEWER))
    assert changes.status_code == 200 and changes.headers["x-total-lines"] == "30"
    records = [json.loads(line) for line in changes.text.splitlines()]
    assert [r["type"] for r in records] == ["insert"] * 20 + ["update"] * 5 + ["delete"] * 5
    assert records[0]["after"] == {
        "id": 0,
        "v": "café 0",
        "b": {"hex": "00ff00"},
        "j": '{"k": 0}',
    }  # MariaDB: JSON is LONGTEXT
    assert (out / "changes.jsonl").exists() and not (out / "plan.jsonl").exists()

    dry = wait_for_execution(
        client,
        client.post(f"/api/jobs/{job['id']}/executions", json={"target": "scratch"}, headers=auth(OPERATOR)),
    )
    assert dry["state"] == "succeeded" and dry["statements"] == job["statements"] == 30
    assert (out / "plan.jsonl").exists() and not (out / "rerun.sql").exists()
    listed = client.get(f"/api/jobs/{job['id']}", headers=auth(VIEWER)).json()
    assert listed["disk_bytes"] == sum(p.stat().st_size for p in out.iterdir())


def test_a_job_that_asks_for_the_plan_and_changes_writes_them_at_once(
    make_client, scratch_server, small_range, tmp_path
):
    data = tmp_path / "eager-data"
    client = make_client(servers=servers_json(scratch_server), data_dir=data)
    body = {"server": "scratch", "range": small_range, "options": {"outputs": ["plan", "changes"]}}
    job, out = _job(client, data, body)
    assert {"rollback.render.sql", "plan.jsonl", "changes.jsonl"} <= {p.name for p in out.iterdir()}
    plan = (out / "plan.jsonl").read_text().splitlines()
    assert len(plan) == 30 and all(json.loads(line)["check"] for line in plan)
    bad = client.post("/api/jobs", json={**body, "options": {"outputs": ["script"]}}, headers=auth(OPERATOR))
    assert bad.status_code == 422


def test_the_plan_and_change_log_on_first_need_are_produced_outside_the_service_process(
    make_client, scratch_server, small_range, tmp_path, monkeypatch
):
    # in a service thread that run took turns on the GIL with the event loop (bench_service_load)
    from app.services import engine

    data = tmp_path / "apart-data"
    client = make_client(servers=servers_json(scratch_server), data_dir=data)
    job, out = _job(client, data, {"server": "scratch", "range": small_range})

    def not_here(*_args, **_kwargs):
        raise AssertionError("the engine ran in the service's own thread")

    monkeypatch.setattr(engine, "run", not_here)  # in this process only: the child is another one
    changes = client.get(f"/api/jobs/{job['id']}/changes?offset=0&limit=100", headers=auth(VIEWER))
    assert changes.status_code == 200 and changes.headers["x-total-lines"] == "30", changes.text
    dry = wait_for_execution(
        client,
        client.post(f"/api/jobs/{job['id']}/executions", json={"target": "scratch"}, headers=auth(OPERATOR)),
    )
    assert dry["state"] == "succeeded" and dry["statements"] == 30, dry
    assert (out / "plan.jsonl").exists()
