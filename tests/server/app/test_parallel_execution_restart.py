"""A parallel execution (`"parallel": 2`, all or nothing through XA) of a real `mysql-rollback serve`,
killed (SIGKILL) between XA PREPARE and XA COMMIT: the prepared transactions outlive it on the target,
and the service's next start finishes them as the execution's record says (commit once every branch
was prepared and the commit decided, roll back before that) and says which in the record's error."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import pytest

from rollback.target.parallel import PAUSE_AT, XID_PREFIX, prepared_xids
from tests.support.app import ADMIN, OPERATOR, servers_json
from tests.support.service import Service, service_env

DB = "pxs"
ROWS = 3000


@pytest.fixture
def service(scratch_server, tmp_path) -> Iterator[Service]:
    env = service_env(tmp_path / "data", servers_json(scratch_server), MYSQL_ROLLBACK_ENGINE="local")
    svc = Service(tmp_path / "data", env, tmp_path / "service.log")
    try:
        yield svc
    finally:
        svc.stop()
        conn = scratch_server.connect(autocommit=True)  # what a failed test left prepared holds locks
        try:
            with conn.cursor() as cur:
                for gtrid, branches in _prepared(scratch_server).items():
                    for bqual in branches:
                        cur.execute(f"XA ROLLBACK '{gtrid}', '{bqual}'")
        finally:
            conn.close()


def _prepared(server: Any) -> dict[str, list[str]]:
    conn = server.connect()
    try:
        return {gtrid: b for gtrid, b in prepared_xids(conn).items() if gtrid.startswith(XID_PREFIX)}
    finally:
        conn.close()


def _xa_record(service: Service, execution_id: int) -> dict[str, Any] | None:
    conn = sqlite3.connect(service.data_dir / "jobs.sqlite3")
    try:
        (details,) = conn.execute("SELECT details FROM executions WHERE id = ?", (execution_id,)).fetchone()
    finally:
        conn.close()
    xa: dict[str, Any] | None = json.loads(details).get("xa") if details else None
    return xa


@pytest.mark.parametrize("point", ["prepared", "preparing"], ids=["decided", "not-decided"])
def test_serve_finishes_a_parallel_execution_killed_between_prepare_and_commit(
    service, scratch_server, point
):
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(20))",
            f"INSERT INTO {DB}.t SELECT seq, CONCAT('row ', seq) FROM {DB}.seq_1_to_{ROWS}",
        ]
    )
    done = scratch_server.run_sql([f"DELETE FROM {DB}.t"])
    service.env[PAUSE_AT] = point
    service.start()
    rng = {
        "start_file": done.start_file,
        "start_position": done.start_position,
        "stop_file": done.stop_file,
        "stop_position": done.stop_position,
    }
    created = service.request("POST", "/api/jobs", OPERATOR, json={"server": "scratch", "range": rng})
    job = service.wait(created.json()["id"], timeout=120)
    assert job["state"] == "succeeded", job
    posted = service.request(
        "POST",
        f"/api/jobs/{job['id']}/executions",
        ADMIN,
        json={"target": "scratch", "dry_run": False, "parallel": 2},
    )
    assert posted.status_code == 202, posted.text
    execution_id = posted.json()["id"]
    wanted = "commit" if point == "prepared" else "none"
    deadline = time.monotonic() + 120
    while True:
        record = _xa_record(service, execution_id)
        if (
            record
            and record["decision"] == wanted
            and len(_prepared(scratch_server).get(record["gtrid"], [])) == 2
        ):
            break
        assert time.monotonic() < deadline, (record, _prepared(scratch_server))
        time.sleep(0.1)
    # the record names what is prepared: the transaction, the target, the plan, every partition
    assert [p["bqual"] for p in record["partitions"]] == ["p0", "p1"] and len(record["plan"]) == 64
    assert sum(p["steps"] for p in record["partitions"]) == ROWS
    service.stop(signal.SIGKILL)
    # the execution's process died with the service; its branches stay prepared on the target
    assert _prepared(scratch_server) == {record["gtrid"]: ["p0", "p1"]}
    assert scratch_server.query(f"SELECT COUNT(*) FROM {DB}.t") == [(0,)]
    del service.env[PAUSE_AT]
    service.start()
    final = service.request("GET", f"/api/jobs/{job['id']}/executions/{execution_id}").json()
    assert final["state"] == "interrupted", final
    assert record["gtrid"] in final["error"], final["error"]
    assert final["parallel"] == 2 and final["xa"]["gtrid"] == record["gtrid"] and "target" not in final["xa"]
    assert final["xa"]["decision"] == wanted and [p["bqual"] for p in final["xa"]["partitions"]] == [
        "p0",
        "p1",
    ]
    assert _prepared(scratch_server) == {}
    (count,) = scratch_server.query(f"SELECT COUNT(*) FROM {DB}.t")[0]
    if point == "prepared":
        assert "committed 2 prepared branch(es) p0, p1 of 2" in final["error"] and final["committed"]
        assert count == ROWS
    else:
        assert "rolled back 2 prepared branch(es) p0, p1 of 2" in final["error"] and not final["committed"]
        assert count == 0
