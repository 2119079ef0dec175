"""Issue 26's acceptance, on `mysql-rollback serve` as users run it: a configured server that logs
in and then never answers (tests/support/fake_mysql.py), and one that answers with hostile
packets, beside the scratch MariaDB.

While the silent server is hammered by viewers, /health and GET /api/jobs keep answering (p95 under
200 ms); a job on it and an execution on it are cancelled within 5 s; the next execution on a
healthy target runs; a commit of a job is refused while another is running; uploads are refused
before their body, or cut where they cross the limit, with nothing written.
"""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.app import ADMIN, OPERATOR, VIEWER, auth, servers_json
from tests.support.service import Service, service_env

DB = "resil"


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict[str, Any]]:
    from tests.support.fake_mysql import FakeMySQL

    silent, hostile = FakeMySQL("silent"), FakeMySQL("hostile")
    try:
        yield {"silent": silent, "evil": hostile}
    finally:
        silent.stop()
        hostile.stop()


@pytest.fixture(scope="module")
def svc(scratch_server, fakes, service_process, tmp_path_factory) -> Iterator[Service]:
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v INT)",
        ]
    )
    base = tmp_path_factory.mktemp("resilience")
    servers = servers_json(scratch_server, silent=fakes["silent"].dsn, evil=fakes["evil"].dsn)
    env = service_env(
        base / "data",
        servers,
        MYSQL_ROLLBACK_CONNECT_TIMEOUT="2",
        MYSQL_ROLLBACK_READ_TIMEOUT="600",  # only a cancel ends a wait on the silent server here
        MYSQL_ROLLBACK_MAX_UPLOAD_BYTES="1M",
        MYSQL_ROLLBACK_ENGINE="local",
        MYSQL_ROLLBACK_HEADER_TIMEOUT="2",
        MYSQL_ROLLBACK_BODY_TIMEOUT="2",
    )
    service = service_process(base / "data", env, base / "service.log").start()
    try:
        yield service
    finally:
        service.stop()


def _job(svc: Service, scratch_server) -> dict[str, Any]:
    """A succeeded job over a few fresh rows of the scratch server."""
    first = scratch_server.query(f"SELECT IFNULL(MAX(id), 0) FROM {DB}.t")[0][0] + 1
    done = scratch_server.run_sql([f"INSERT INTO {DB}.t VALUES ({first + i}, {i})" for i in range(5)])
    body = {
        "server": "scratch",
        "range": {
            "start_file": done.start_file,
            "start_position": done.start_position,
            "stop_file": done.stop_file,
            "stop_position": done.stop_position,
        },
    }
    created = svc.request("POST", "/api/jobs", OPERATOR, json=body)
    assert created.status_code == 202, created.text
    job = svc.wait(created.json()["id"])
    assert job["state"] == "succeeded", job
    return job


def _asked(server: Any) -> int:
    return len([q for q in server.queries if not q.upper().startswith("SET")])


def _until_it_waits(server: Any, before: int) -> None:
    """Until a query after the first `before` has reached the silent server (which never answers it)."""
    deadline = time.monotonic() + 60
    while _asked(server) <= before:
        assert time.monotonic() < deadline, "nothing reached the silent server"
        time.sleep(0.05)
    time.sleep(0.5)


def _p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1]


def test_health_and_the_job_list_keep_answering_while_a_silent_server_is_hammered(svc):
    stop = threading.Event()
    errors: list[str] = []

    answered: list[float] = []

    def hammer() -> None:
        with httpx.Client(base_url=svc.url, headers=auth(VIEWER), timeout=30) as client:
            while not stop.is_set():
                answer = client.get("/api/servers/silent/time-zone")
                answered.append(time.monotonic())
                if answer.status_code != 200 or "not answering" not in (answer.json()["error"] or ""):
                    errors.append(answer.text)
                # 40 viewers, each asking again at once: about 400 requests a second; a tighter loop
                # measures the 2-core machine's CPU rather than whether anything blocks
                stop.wait(0.1)

    viewers = [threading.Thread(target=hammer) for _ in range(40)]
    for thread in viewers:
        thread.start()
    try:
        deadline = time.monotonic() + 60
        while len(answered) < 80:  # every viewer has had answers: the server is "not answering"
            assert time.monotonic() < deadline, f"{len(answered)} answers"
            time.sleep(0.1)
        first = len(answered)
        health, jobs = [], []
        with httpx.Client(base_url=svc.url, headers=auth(VIEWER), timeout=30) as client:
            # at least 60 of each, and for as long as the viewers take to send 200 more (a fast service
            # answers the 60 before they have)
            deadline = time.monotonic() + 60
            while len(health) < 60 or len(answered) - first <= 200:
                assert time.monotonic() < deadline, (
                    f"{len(answered) - first} viewer answers, {len(health)} samples"
                )
                started = time.monotonic()
                assert client.get("/health").status_code == 200
                health.append(time.monotonic() - started)
                started = time.monotonic()
                assert client.get("/api/jobs").status_code == 200
                jobs.append(time.monotonic() - started)
            servers = {s["name"]: s for s in client.get("/api/servers").json()}
            health_now = client.get("/health").json()
    finally:
        stop.set()
        for thread in viewers:
            thread.join(60)
    assert not errors, errors[:3]
    assert len(answered) - first > 200  # the viewers kept at it while the others were measured
    assert _p95(health) < 0.2, f"/health p95 {_p95(health) * 1000:.0f} ms"
    assert _p95(jobs) < 0.2, f"/api/jobs p95 {_p95(jobs) * 1000:.0f} ms"
    assert servers["silent"]["health"] == "not answering", servers
    assert health_now["servers"]["silent"] == "not answering", health_now


def test_a_job_on_a_silent_server_is_cancelled_within_5_s(svc, fakes):
    asked = _asked(fakes["silent"])
    body = {"server": "silent", "range": {"gtid_set": "0-1-1..0-1-5"}}
    created = svc.request("POST", "/api/jobs", OPERATOR, json=body)
    assert created.status_code == 202, created.text
    job_id = created.json()["id"]
    assert svc.wait(job_id, until=("running", "succeeded", "failed", "cancelled"))["state"] == "running"
    _until_it_waits(fakes["silent"], asked)
    started = time.monotonic()
    assert svc.request("POST", f"/api/jobs/{job_id}/cancel", OPERATOR).status_code == 202
    final = svc.wait(job_id, timeout=10)
    assert final["state"] == "cancelled", final
    assert time.monotonic() - started < 5


def test_an_execution_on_a_silent_target_is_cancelled_within_5_s_and_the_next_one_runs(
    svc, scratch_server, fakes
):
    job = _job(svc, scratch_server)
    asked = _asked(fakes["silent"])
    created = svc.request(
        "POST", f"/api/jobs/{job['id']}/executions", ADMIN, json={"target": "silent", "dry_run": False}
    )
    assert created.status_code == 202, created.text
    location = created.headers["location"]
    running = svc.wait_execution(location, until=("running", "succeeded", "failed", "refused", "cancelled"))
    assert running["state"] == "running", running
    # a second commit of the same job, sent while the first runs, is refused: one commit at a time
    again = svc.request(
        "POST", f"/api/jobs/{job['id']}/executions", ADMIN, json={"target": "scratch", "dry_run": False}
    )
    assert again.status_code == 409 and "already committing" in again.json()["detail"], again.text
    _until_it_waits(fakes["silent"], asked)
    started = time.monotonic()
    assert svc.request("POST", location + "/cancel", ADMIN).status_code == 202
    final = svc.wait_execution(location, timeout=10)
    assert final["state"] == "cancelled", final
    assert time.monotonic() - started < 5
    # the target's queue is free: the next execution, on the healthy server, runs
    applied = svc.execute(job["id"], ADMIN, {"target": "scratch", "dry_run": False}, timeout=60)
    assert applied["state"] == "succeeded" and applied["rows_affected"] == 5, applied
    assert scratch_server.query(f"SELECT COUNT(*) FROM {DB}.t")[0][0] == 0
    assert svc.request("GET", f"/api/jobs/{job['id']}").json()["applied"]["execution"] == applied["id"]


def test_cancel_stops_a_statement_waiting_for_a_row_lock_with_kill_query(svc, scratch_server):
    job = _job(svc, scratch_server)
    holder = scratch_server.connect(autocommit=False)
    try:
        with holder.cursor() as cur:
            cur.execute(f"SELECT * FROM {DB}.t FOR UPDATE")  # the rows the plan's checks lock
        created = svc.request(
            "POST",
            f"/api/jobs/{job['id']}/executions",
            ADMIN,
            json={"target": "scratch", "dry_run": True, "lock_wait_timeout": 600},
        )
        assert created.status_code == 202, created.text
        location = created.headers["location"]
        deadline = time.monotonic() + 60
        # InnoDB refreshes what INNODB_TRX shows only when nobody read it in the last 0.1 s
        # (trx0i_s.cc, CACHE_MIN_IDLE_TIME_US): polled more often, it never shows the wait
        while not scratch_server.query(
            "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'"
        )[0][0]:
            assert time.monotonic() < deadline, svc.request("GET", location).json()
            time.sleep(0.25)
        started = time.monotonic()
        assert svc.request("POST", location + "/cancel", ADMIN).status_code == 202
        final = svc.wait_execution(location, timeout=10)
        took = time.monotonic() - started
    finally:
        holder.rollback()
        holder.close()
    # the statement was stopped on the server (KILL QUERY from a second session), well before the
    # process would have been ended (CANCEL_GRACE_SECONDS), and the dry run rolled back
    assert final["state"] == "cancelled", (final["state"], final["error"])
    assert "interrupted" in final["error"] and "did not answer" not in final["error"], final
    assert took < 2.5, took
    assert scratch_server.query(f"SELECT COUNT(*) FROM {DB}.t")[0][0] >= 5


def test_a_hostile_servers_answers_are_one_line(svc):
    answer = svc.request("GET", "/api/servers/evil/time-zone")
    assert answer.status_code == 200 and "LOAD_LOCAL" in answer.json()["error"]
    created = svc.request(
        "POST", "/api/jobs", OPERATOR, json={"server": "evil", "range": {"gtid_set": "0-1-1"}}
    )
    job = svc.wait(created.json()["id"], timeout=30)
    assert job["state"] == "failed" and "unexpected answer" in job["error"], job
    assert "internal error" not in job["error"] and "\n" not in job["error"]


def _rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _send_until_answered(port: int, head: bytes, total: int, chunked: bool = False) -> tuple[bytes, int]:
    """Send `head`, then up to `total` bytes of body; the answer and how much of the body went out."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(0.001)
    sock.sendall(head)
    chunk = b"\x00" * (1 << 16)
    if chunked:
        chunk = b"10000\r\n" + chunk + b"\r\n"
    sent = 0
    answer = b""
    try:
        while sent < total:
            try:
                answer += sock.recv(65536)
                if answer:
                    break
            except (TimeoutError, BlockingIOError):
                pass
            sock.settimeout(5)
            try:
                sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
            sock.settimeout(0.001)
            sent += len(chunk)
        sock.settimeout(10)
        while b"\r\n\r\n" not in answer:
            more = sock.recv(65536)
            if not more:
                break
            answer += more
    except (ConnectionResetError, TimeoutError):
        pass
    finally:
        sock.close()
    return answer, sent


def test_uploads_are_refused_before_their_body_or_cut_at_the_limit(svc):
    uploads = svc.data_dir / "uploads"
    before = _rss_kib(svc.process.pid)
    head = (
        f"POST /api/uploads HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
        f"Content-Length: {300 << 20}\r\n\r\n"
    ).encode()
    answer, sent = _send_until_answered(svc.port, head, 300 << 20)
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
    assert sent < 300 << 20
    assert not uploads.exists() or not any(uploads.iterdir())
    assert _rss_kib(svc.process.pid) - before < 20 * 1024  # flat: the body was never held
    chunked = (
        f"POST /api/uploads HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {OPERATOR}\r\n"
        "Content-Type: multipart/form-data; boundary=b\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    part = b'--b\r\nContent-Disposition: form-data; name="files"; filename="mysql-bin.000001"\r\n\r\n\xfebin'
    body = f"{len(part):x}\r\n".encode() + part + b"\r\n"
    answer, sent = _send_until_answered(svc.port, chunked + body, 64 << 20, chunked=True)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 8 << 20, f"{sent} bytes went out before the 413"
    assert not uploads.exists() or not any(uploads.iterdir())


def test_200_slow_connections_are_cut_after_the_configured_timeouts_and_the_service_keeps_serving(svc):
    slow = []
    for i in range(200):
        sock = socket.create_connection(("127.0.0.1", svc.port))
        if i % 2:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # headers that never end
        else:
            head = f"POST /api/uploads HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {OPERATOR}\r\n"
            head += "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n--b"
            sock.sendall(head.encode())  # an upload whose body stops
        sock.settimeout(15)
        slow.append(sock)
    started = time.monotonic()
    try:
        assert svc.request("GET", "/health").status_code == 200  # answered while they stall
        assert svc.request("GET", "/api/jobs").status_code == 200
        answers = []
        for sock in slow:
            try:
                answers.append(sock.recv(1000))
            except ConnectionResetError:
                answers.append(b"")
        waited = time.monotonic() - started
        # the stalled headers, and the two uploads this address may send at once, are closed without an
        # answer; the other 98 uploads were refused at once, before their body, by the per-client limit
        assert all(a == b"" for a in answers[1::2]), [a[:40] for a in answers[1::2] if a]
        uploads = answers[::2]
        assert uploads.count(b"") == 2, [a[:40] for a in uploads]
        assert all(a.startswith(b"HTTP/1.1 429") for a in uploads if a)
        assert 1.5 < waited < 8, f"the slow connections were closed after {waited:.1f} s"
    finally:
        for sock in slow:
            sock.close()
    assert svc.request("GET", "/health").status_code == 200
