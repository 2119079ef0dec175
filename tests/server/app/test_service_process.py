"""The service as users run it: `mysql-rollback serve` in its own process, against the scratch MariaDB.

Each workload is rolled back through the API (by position, by GTID, by time window, and over the
replication protocol) and applied with /executions; the tables' checksums must equal the snapshot
taken before the workload. Then: cancel of a long job, restart (jobs and scripts kept, an
interrupted job failed with its reason), and no password anywhere.
"""

from __future__ import annotations

import random
import signal
import time
from typing import Any

import pytest

from tests.support.app import ADMIN, FINAL, OPERATOR
from tests.support.jobs import bulk_job

DB = "svc"
TABLES = {
    "orders": "CREATE TABLE svc.orders (id INT PRIMARY KEY, customer VARCHAR(40), amount DECIMAL(10,2), "
    "placed DATETIME(3), note TEXT, flags SET('a','b','c'))",
    "stock": "CREATE TABLE svc.stock (sku CHAR(8) NOT NULL, qty INT, UNIQUE KEY (sku))",
    "log": "CREATE TABLE svc.log (a INT, b VARCHAR(10))",
}


@pytest.fixture(scope="module", autouse=True)
def svc_tables(scratch_server) -> None:
    """The tables of this module, filled before the module's service starts."""
    scratch_server.run_sql(
        [f"DROP DATABASE IF EXISTS {DB}", f"CREATE DATABASE {DB}", *TABLES.values()]
        + [
            f"INSERT INTO svc.orders VALUES ({i}, 'c{i}', {i}.5, NOW(3), REPEAT('n', {i}), 'a')"
            for i in range(1, 30)
        ]
        + [f"INSERT INTO svc.stock VALUES ('s{i}', {i})" for i in range(20)]
    )


def checksums(server) -> dict[str, Any]:
    return {t: server.query(f"CHECKSUM TABLE {DB}.{t} EXTENDED")[0][1] for t in TABLES}


def workload(seed: int) -> list[str]:
    rng = random.Random(seed)
    base = 1000 * seed
    out = ["BEGIN"]
    for i in range(15):
        out.append(
            f"INSERT INTO svc.orders VALUES ({base + i}, 'new {i} it''s', {rng.randint(1, 9999)}.99, "
            f"'2024-05-0{1 + i % 9} 10:00:00.250', {'NULL' if i % 3 else repr('x' * i)}, 'b,c')"
        )
    out.append("COMMIT")
    out += [
        f"UPDATE svc.orders SET amount = amount * 2, note = CONCAT(IFNULL(note, ''), '!') WHERE id < {5 + seed}",
        f"DELETE FROM svc.orders WHERE id BETWEEN {base} AND {base + 4}",
        f"UPDATE svc.stock SET qty = qty - {seed} WHERE sku IN ('s1', 's2', 's3')",
        f"DELETE FROM svc.stock WHERE sku = 's{10 + seed}'",
        f"INSERT INTO svc.log VALUES ({seed}, 'dup'), ({seed}, 'dup')",
        "UPDATE svc.log SET b = 'changed' LIMIT 1",
    ]
    return out


def _now(server) -> str:
    return str(server.query("SELECT NOW()")[0][0])


def _next_second(server) -> None:
    first = _now(server)
    while _now(server) == first:
        time.sleep(0.05)


@pytest.mark.parametrize("kind", ["position", "gtid", "time", "live"])
def test_rollback_through_the_service_restores_the_snapshot(service, scratch_server, kind):
    before = checksums(scratch_server)
    if kind == "time":
        _next_second(scratch_server)
        start = _now(scratch_server)
    seed = ["position", "gtid", "time", "live"].index(kind) + 1
    done = scratch_server.run_sql(workload(seed))
    assert checksums(scratch_server) != before
    server = "scratch"
    if kind in ("position", "live"):
        rng: dict[str, Any] = {
            "start_file": done.start_file,
            "start_position": done.start_position,
            "stop_file": done.stop_file,
            "stop_position": done.stop_position,
        }
        server = "scratch_live" if kind == "live" else "scratch"
    elif kind == "gtid":
        domain, server_id, first = done.gtid_before.split("-")
        last = done.gtid_after.split("-")[2]
        rng = {"gtid_set": f"{domain}-{server_id}-{int(first) + 1}..{domain}-{server_id}-{last}"}
    else:
        _next_second(scratch_server)
        rng = {"start_datetime": start, "stop_datetime": _now(scratch_server)}
    body = {"server": server, "range": rng, "filters": {"databases": [DB]}}
    created = service.request("POST", "/api/jobs", OPERATOR, json=body)
    assert created.status_code == 202, created.text
    job = service.wait(created.json()["id"])
    assert job["state"] == "succeeded", job["error"]
    assert job["statements"] > 20 and job["range_resolved"]["files"]
    script = service.request("GET", f"/api/jobs/{job['id']}/script")
    assert script.status_code == 200 and "DELETE FROM `svc`.`orders`" in script.text
    dry = service.execute(job["id"], OPERATOR, {"target": "scratch"})
    assert dry["state"] == "succeeded" and not dry["conflicts"], dry
    assert checksums(scratch_server) != before
    applied = service.execute(job["id"], ADMIN, {"target": "scratch", "dry_run": False})
    assert applied["committed"] and applied["rows_affected"] == job["statements"], applied
    assert checksums(scratch_server) == before


def _long_range(scratch_server, rows: int = 40_000) -> dict[str, Any]:
    """A range of about 12 MB (the engine reports progress, where a cancel is noticed, every MB)."""
    return bulk_job(scratch_server, "bulk", rows)


def test_a_long_job_can_be_cancelled_while_it_runs(service, scratch_server):
    # A cancel is seen at the job's next progress step. A job that ends first (a 409, or "succeeded" after
    # the 202) raced it on a fast machine: the same again with a range four times larger.
    final: dict[str, Any] = {}
    for rows in (40_000, 160_000, 640_000):
        job = service.request("POST", "/api/jobs", OPERATOR, json=_long_range(scratch_server, rows)).json()
        running = service.wait(job["id"], until=("running", *FINAL))
        assert running["state"] in ("running", "succeeded"), running
        cancelled = service.request("POST", f"/api/jobs/{job['id']}/cancel", OPERATOR)
        if cancelled.status_code == 409:
            continue
        assert cancelled.status_code == 202 and cancelled.json()["cancel_requested"]
        # Spark may still be starting on a loaded machine
        final = service.wait(job["id"], timeout=120)
        if final["state"] != "succeeded":
            break
    assert final.get("state") == "cancelled", final
    assert service.request("GET", f"/api/jobs/{job['id']}/script").status_code == 409
    assert not (service.data_dir / "jobs" / job["id"]).exists()


def test_restart_keeps_jobs_and_scripts_and_fails_the_interrupted_job(service, scratch_server):
    jobs_before = service.request("GET", "/api/jobs?limit=500").json()["items"]
    done = [j for j in jobs_before if j["state"] == "succeeded"]
    scripts = {j["id"]: service.request("GET", f"/api/jobs/{j['id']}/script").content for j in done}
    assert len(scripts) >= 4
    long_job = service.request("POST", "/api/jobs", OPERATOR, json=_long_range(scratch_server)).json()
    assert service.wait(long_job["id"], until=("running", *FINAL))["state"] == "running"
    service.stop(signal.SIGKILL)
    service.start()
    jobs_after = {j["id"]: j for j in service.request("GET", "/api/jobs?limit=500").json()["items"]}
    for job in jobs_before:
        assert jobs_after[job["id"]]["state"] == job["state"]
    for job_id, content in scripts.items():
        assert service.request("GET", f"/api/jobs/{job_id}/script").content == content
    interrupted = jobs_after[long_job["id"]]
    assert interrupted["state"] == "failed" and "restarted while this job was running" in interrupted["error"]
    # The graceful way: SIGTERM lets the service stop its workers and exit.
    service.stop(signal.SIGTERM)
    service.start()
    assert service.request("GET", "/health").json()["status"] == "ok"


def test_no_password_in_any_response_log_line_or_the_job_database(service, scratch_server):
    password = scratch_server.password.encode()
    assert len(password) >= 12
    service.request("GET", "/api/servers")
    service.request("GET", "/api/servers/scratch/time-zone")
    service.request("GET", "/metrics")
    service.request("GET", "/openapi.json")
    for body in service.bodies:
        assert password not in body
    assert password not in service.log_path.read_bytes()
    files = [p for p in service.data_dir.rglob("*") if p.is_file()]  # job database, scripts, spool
    assert any("jobs.sqlite3" in p.name for p in files) and any(
        p.name == "rollback.render.sql" for p in files
    )
    for path in files:
        assert password not in path.read_bytes(), path
