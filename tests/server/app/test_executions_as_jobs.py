"""Executions run in the worker pool of a real `mysql-rollback serve` process, on the scratch MariaDB.

The POST answers 202 at once while the execution runs; progress shows; a cancel rolls back; the
service killed (SIGKILL) mid-execution marks it `interrupted` at its next start, saying what was
applied, checked against the target's rows; a committed job shows as applied and needs `reapply`.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from rollback.target.execute import BATCH_STEPS
from tests.support.app import ADMIN, OPERATOR, servers_json
from tests.support.service import Service, service_env

pytestmark = pytest.mark.server
DB = "exq"
ROWS = 2000  # single-row transactions: the reversal is one DELETE per original transaction
ALIASES = [f"x{i}" for i in range(1, 6)]


@pytest.fixture(scope="module")
def service(scratch_server, tmp_path_factory) -> Iterator[Service]:
    base = tmp_path_factory.mktemp("executions")
    aliases = {name: scratch_server.dsn for name in ALIASES}  # one lock each: executions run at once
    env = service_env(
        base / "data",
        servers_json(scratch_server, **aliases),
        MYSQL_ROLLBACK_ENGINE="local",
        MYSQL_ROLLBACK_EXECUTION_WORKERS="5",
    )
    svc = Service(base / "data", env, base / "service.log").start()
    try:
        yield svc
    finally:
        svc.stop()


@pytest.fixture(scope="module")
def incident(scratch_server) -> dict[str, Any]:
    """ROWS inserts, one transaction each; the GTID of each names the row it inserted."""
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {DB}", f"CREATE DATABASE {DB}"])
    scratch_server.run_sql(f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(20))")
    done = scratch_server.run_sql([f"INSERT INTO {DB}.t VALUES ({i}, 'row {i}')" for i in range(1, ROWS + 1)])
    domain, server_id, before = done.gtid_before.split("-")
    after = int(done.gtid_after.split("-")[2])
    assert after - int(before) == ROWS  # nothing else wrote in between: GTID n+i inserted row i
    gtid_of = {f"{domain}-{server_id}-{int(before) + i}": i for i in range(1, ROWS + 1)}
    rng = {
        "start_file": done.start_file,
        "start_position": done.start_position,
        "stop_file": done.stop_file,
        "stop_position": done.stop_position,
    }
    return {"range": rng, "gtid_of": gtid_of}


@pytest.fixture(scope="module")
def job(service, incident) -> dict[str, Any]:
    created = service.request(
        "POST", "/api/jobs", OPERATOR, json={"server": "scratch", "range": incident["range"]}
    )
    finished = service.wait(created.json()["id"], timeout=120)
    assert finished["state"] == "succeeded" and finished["statements"] == ROWS, finished
    return finished


def _hold_row_1(scratch_server) -> Any:
    """A session holding row 1 with a locking read until it rolls back."""
    conn = scratch_server.connect(autocommit=False)
    with conn.cursor() as cur:
        cur.execute("SET SESSION innodb_lock_wait_timeout = 120")
        cur.execute(f"SELECT id FROM {DB}.t WHERE id = 1 FOR UPDATE")
    return conn


def rows_left(scratch_server) -> set[int]:
    return {r[0] for r in scratch_server.query(f"SELECT id FROM {DB}.t")}


def post_execution(service: Service, job_id: str, token: str, body: dict[str, Any]) -> tuple[Any, float]:
    started = time.monotonic()
    created = service.request("POST", f"/api/jobs/{job_id}/executions", token, json=body)
    return created, time.monotonic() - started


def wait_for(service: Service, location: str, test: Any, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        record = service.request("GET", location).json()
        if test(record):
            return record
        assert time.monotonic() < deadline, record
        time.sleep(0.02)


def test_the_post_answers_at_once_progress_shows_and_a_cancel_rolls_back(service, job, scratch_server):
    created, seconds = post_execution(
        service, job["id"], ADMIN, {"target": "scratch", "dry_run": False, "per_transaction": True}
    )
    assert created.status_code == 202 and seconds < 1.0, (created.text, seconds)
    location = created.headers["location"]
    assert location == f"/api/jobs/{job['id']}/executions/{created.json()['id']}"
    assert created.json()["state"] in ("queued", "running")
    moving = wait_for(service, location, lambda r: r["progress"]["statements_done"] > 0)
    assert moving["state"] == "running" and moving["progress"]["statements_total"] == ROWS
    assert moving["progress"]["current_transaction"]["tx"] is not None
    # an operator may not stop a commit; an admin may
    assert service.request("POST", f"{location}/cancel", OPERATOR).status_code == 403
    cancel = service.request("POST", f"{location}/cancel", ADMIN)
    assert cancel.status_code == 202 and cancel.json()["cancel_requested"], cancel.text
    final = service.wait_execution(location, timeout=30)
    assert final["state"] == "cancelled" and final["exit_code"] == 130, final
    applied = {service_gtid(t) for t in final["transactions_applied"]}
    assert "cancelled" in final["error"]
    # what the record says was committed is exactly what is gone from the target
    assert len(rows_left(scratch_server)) == ROWS - len(applied)
    assert service.request("POST", f"{location}/cancel", ADMIN).status_code == 409
    restore(scratch_server)


def service_gtid(item: dict[str, Any]) -> str:
    return item["gtid"]


def restore(scratch_server) -> None:
    scratch_server.run_sql([f"INSERT IGNORE INTO {DB}.t VALUES ({i}, 'row {i}')" for i in range(1, ROWS + 1)])
    assert len(rows_left(scratch_server)) == ROWS


@pytest.mark.parametrize("per_transaction", [False, True], ids=["one-transaction", "per-transaction"])
def test_a_service_killed_mid_execution_marks_it_interrupted_with_what_was_applied(
    service, job, incident, scratch_server, per_transaction
):
    # The reversal runs newest first: its last statement deletes row 1. A session holding that row
    # stops each pass just before its end, however fast the machine. A one-transaction commit is its
    # own dry run: the first holder holds its apply there. Per transaction, the first holder lets the
    # dry run (phase "check") finish; the second, queued behind the dry run, then holds the apply there.
    first = _hold_row_1(scratch_server)
    created, _ = post_execution(
        service,
        job["id"],
        ADMIN,
        {"target": "scratch", "dry_run": False, "per_transaction": per_transaction, "lock_wait_timeout": 120},
    )
    location = created.headers["location"]
    held = wait_for(service, location, lambda r: r["progress"]["statements_done"] >= ROWS - 1)
    if held["progress"]["phase"] == "apply":
        assert not per_transaction, held
        service.stop(signal.SIGKILL)
        first.rollback()
        first.close()
        _assert_interrupted(service, location, scratch_server, incident, per_transaction)
        return
    second: list[Any] = []
    queued = threading.Thread(target=lambda: second.append(_hold_row_1(scratch_server)))
    queued.start()
    time.sleep(0.5)  # the second holder's request waits behind the dry run's
    first.rollback()
    first.close()
    queued.join(60)
    try:
        assert second, "the second session never got row 1"
        wait_for(service, location, lambda r: r["progress"]["phase"] == "apply")
        if per_transaction:
            wait_for(service, location, lambda r: len(r["transactions_applied"]) >= 3)
        service.stop(signal.SIGKILL)
    finally:
        for conn in second:
            conn.rollback()
            conn.close()
    _assert_interrupted(service, location, scratch_server, incident, per_transaction)


def _assert_interrupted(service, location, scratch_server, incident, per_transaction) -> None:
    """The service, started again after the SIGKILL, says exactly what the target holds."""
    service.start()
    final = service.request("GET", location).json()
    assert final["state"] == "interrupted" and final["exit_code"] == 130, final
    assert not final["committed"]
    gone = set(range(1, ROWS + 1)) - rows_left(scratch_server)
    if per_transaction:
        applied = {incident["gtid_of"][t["gtid"]] for t in final["transactions_applied"]}
        # Killed between a COMMIT and the record of it, one transaction is in doubt: the record,
        # written before that COMMIT was sent, names it. Every other row is exactly as recorded.
        in_doubt = gone - applied
        assert applied and applied <= gone and len(in_doubt) <= 1, (sorted(applied)[:5], sorted(gone)[:5])
        for row in in_doubt:
            gtid = next(g for g, r in incident["gtid_of"].items() if r == row)
            assert (
                f"(GTID {gtid}," in final["error"] and "whether it was applied is not known" in final["error"]
            )
        assert f"{len(applied)} transaction(s) were committed" in final["error"]
    else:
        assert gone == set() and final["transactions_applied"] == []
        assert "nothing was applied" in final["error"]
    restore(scratch_server)


def test_a_one_transaction_commit_runs_once_and_shows_rows_rate_and_time_left(
    service, incident, scratch_server
):
    """No dry run before a one-transaction commit (it is its own: a conflict rolls it back); while it
    runs, its record shows the rows applied so far, the rate and the time left."""
    # rows the incident does not touch: on a table not much bigger than a batch, the optimizer scans the
    # whole key for the batch's combined locking read (locking row 1 early), rather than read its keys
    scratch_server.run_sql(
        [
            f"DROP TABLE IF EXISTS {DB}.live",
            f"CREATE TABLE {DB}.live (id INT PRIMARY KEY)",
            f"INSERT INTO {DB}.live SELECT seq FROM {DB}.seq_100001_to_150000",
        ]
    )
    # one transaction a row, as the incident: the reversal runs newest first and ends with row 1, in the
    # last of three batches (the two before it applied while it waits)
    rows = 5 * BATCH_STEPS // 2
    done = scratch_server.run_sql([f"INSERT INTO live VALUES ({i})" for i in range(1, rows + 1)], database=DB)
    created = service.request(
        "POST", "/api/jobs", OPERATOR, json={"server": "scratch", "range": _range(done)}
    )
    job_id = created.json()["id"]
    assert service.wait(job_id, timeout=120)["state"] == "succeeded"
    holder = scratch_server.connect(autocommit=False)  # holds row 1, the reversal's last DELETE
    try:
        with holder.cursor() as cur:
            cur.execute(f"SELECT id FROM {DB}.live WHERE id = 1 FOR UPDATE")
        body = {"target": "scratch", "dry_run": False, "lock_wait_timeout": 120}
        started, _ = post_execution(service, job_id, ADMIN, body)
        location = started.headers["location"]
        held = wait_for(service, location, lambda r: r["progress"]["statements_done"] == rows)
        progress = held["progress"]
        assert held["state"] == "running" and progress["phase"] == "apply", held
        assert 0 < progress["rows_applied"] < rows and progress["rows_per_second"] > 0, progress
        assert progress["eta_seconds"] is not None, progress
    finally:
        holder.rollback()
        holder.close()
    final = service.wait_execution(location, timeout=60)
    assert final["state"] == "succeeded" and final["committed"], final
    assert final["progress"]["rows_applied"] == rows and final["progress"]["rows_per_second"] is None
    assert scratch_server.query(f"SELECT COUNT(*) FROM {DB}.live WHERE id <= {rows}")[0][0] == 0
    page = service.request("GET", f"/jobs/{job_id}").text
    assert 'data-field="rate"' in page
    scratch_server.query(f"DROP TABLE {DB}.live")


def test_a_committed_job_is_applied_and_needs_reapply_to_commit_again(service, job, scratch_server):
    url = f"/api/jobs/{job['id']}/executions"
    assert service.request("GET", f"/api/jobs/{job['id']}").json()["applied"] is None
    done = service.execute(job["id"], ADMIN, {"target": "scratch", "dry_run": False})
    assert done["state"] == "succeeded" and done["committed"], done
    assert rows_left(scratch_server) == set()
    read = service.request("GET", f"/api/jobs/{job['id']}").json()
    assert read["applied"]["execution"] == done["id"] and read["applied"]["by"] == "ada"
    listed = service.request("GET", "/api/jobs?limit=500").json()["items"]
    assert [j["applied"]["execution"] for j in listed if j["id"] == job["id"]] == [done["id"]]
    again = service.request("POST", url, ADMIN, json={"target": "scratch", "dry_run": False})
    assert again.status_code == 409 and "reapply: true" in again.json()["detail"] and "by ada" in again.text
    # reapplying still runs the conflict check: every row is already gone, so it stops there
    checked = service.execute(job["id"], ADMIN, {"target": "scratch", "dry_run": False, "reapply": True})
    assert checked["state"] == "conflict" and checked["reapply"] and len(checked["conflicts"]) == ROWS
    page = service.request("GET", f"/jobs/{job['id']}").text
    assert 'id="job-applied"' in page and "applied by ada" in page
    restore(scratch_server)


def test_get_jobs_answers_while_five_executions_and_two_jobs_run(service, scratch_server):
    """Five dry runs at once (each of its own job and table, on its own target name, so that none
    waits for another's lock) and two jobs, and GETs meanwhile."""
    plans = []
    for i in range(1, 6):
        scratch_server.run_sql(
            [f"DROP TABLE IF EXISTS {DB}.p{i}", f"CREATE TABLE {DB}.p{i} (id INT PRIMARY KEY)"]
        )
        done = scratch_server.run_sql([f"INSERT INTO p{i} VALUES ({n})" for n in range(1, 1501)], database=DB)
        created = service.request(
            "POST", "/api/jobs", OPERATOR, json={"server": "scratch", "range": _range(done)}
        )
        plans.append(created.json()["id"])
    for job_id in plans:
        assert service.wait(job_id, timeout=120)["state"] == "succeeded"
    scratch_server.run_sql(f"CREATE TABLE IF NOT EXISTS {DB}.bulk (id INT PRIMARY KEY, v TEXT)")
    big = scratch_server.run_sql(
        "INSERT INTO bulk SELECT seq, REPEAT('x', 300) FROM seq_1_to_30000", database=DB
    )
    body = {"server": "scratch", "range": _range(big)}
    jobs = [service.request("POST", "/api/jobs", OPERATOR, json=body).json()["id"] for _ in range(2)]
    executions = [
        service.request("POST", f"/api/jobs/{job_id}/executions", OPERATOR, json={"target": target})
        for job_id, target in zip(plans, ALIASES, strict=True)
    ]
    assert all(e.status_code == 202 for e in executions)
    times, running_at_once = [], 0
    while True:
        started = time.monotonic()
        answer = service.request("GET", "/api/jobs?limit=50")
        times.append(time.monotonic() - started)
        assert answer.status_code == 200
        states = [service.request("GET", e.headers["location"]).json()["state"] for e in executions]
        job_states = [service.request("GET", f"/api/jobs/{j}").json()["state"] for j in jobs]
        running_at_once = max(running_at_once, states.count("running"))
        if all(s not in ("queued", "running") for s in states + job_states):
            break
    assert all(s == "succeeded" for s in job_states + states), (job_states, states)
    assert running_at_once >= 2  # they ran side by side, not one after another
    times.sort()
    assert len(times) >= 3 and times[len(times) // 2] < 1.0 and times[-1] < 5.0, times
    scratch_server.query(f"DROP TABLE {DB}.bulk")


def _range(done: Any) -> dict[str, Any]:
    return {
        "start_file": done.start_file,
        "start_position": done.start_position,
        "stop_file": done.stop_file,
        "stop_position": done.stop_position,
    }
