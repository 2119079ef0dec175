"""A server that stops answering, a hostile server, a hostile upload: the service answers each with
one line and keeps answering everything else (issue 26). The servers here are tests/support/
fake_mysql.py's; the service runs in-process (TestClient)."""

from __future__ import annotations

import json
import ssl
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pymysql
import pytest

from rollback import interrupt_thread
from rollback.base.dsn import open_connection
from rollback.base.errors import SourceError
from tests.support.app import OPERATOR, VIEWER, auth

MAGIC = b"\xfebin"


def _servers(**dsns: str) -> str:
    return json.dumps(dsns)


def test_a_silent_server_fails_its_request_with_one_line_and_blocks_nothing(make_client, silent_mysql):
    client = make_client(servers=_servers(silent=silent_mysql.dsn), connect_timeout=1.0, read_timeout=60.0)
    assert client.get("/api/servers", headers=auth(VIEWER)).json()[0]["health"] == "unknown"
    started = time.monotonic()
    answer = client.get("/api/servers/silent/time-zone", headers=auth(VIEWER)).json()
    assert time.monotonic() - started < 5
    assert answer["error"] == "server silent is not answering (no answer within 1 s)"
    # a few dozen more: refused at once while the first call still waits (no thread each)
    with ThreadPoolExecutor(40) as pool:
        started = time.monotonic()
        answers = list(
            pool.map(
                lambda _: client.get("/api/servers/silent/time-zone", headers=auth(VIEWER)).json(), range(40)
            )
        )
        assert time.monotonic() - started < 10
    assert all("is not answering" in a["error"] for a in answers)
    assert "secret-password" not in json.dumps(answers)
    listed = client.get("/api/servers", headers=auth(VIEWER)).json()
    assert [(s["name"], s["health"]) for s in listed] == [("silent", "not answering")]
    assert "not answering" in listed[0]["error"]
    started = time.monotonic()
    health = client.get("/health").json()
    assert time.monotonic() - started < 1
    assert health["servers"] == {"silent": "not answering"}
    # only one session ever reached the server: the later calls never queued behind the first
    assert len([q for q in silent_mysql.queries if not q.upper().startswith("SET")]) == 1


def test_a_job_request_naming_a_file_of_a_silent_server_gets_its_field_error(make_client, silent_mysql):
    client = make_client(servers=_servers(silent=silent_mysql.dsn), connect_timeout=1.0)
    body = {"server": "silent", "range": {"start_file": "mysql-bin.000001", "start_position": 4}}
    answer = client.post("/api/jobs", headers=auth(OPERATOR), json=body)
    assert answer.status_code == 422
    assert "cannot list the binary logs of silent: server silent is not answering" in answer.text


def test_a_hostile_servers_answer_is_one_line_not_a_500(make_client, hostile_mysql):
    client = make_client(servers=_servers(evil=hostile_mysql.dsn))
    answer = client.get("/api/servers/evil/time-zone", headers=auth(VIEWER))
    assert answer.status_code == 200
    error = answer.json()["error"]
    assert "LOAD_LOCAL" in error and "\n" not in error
    assert client.get("/api/servers", headers=auth(VIEWER)).json()[0]["health"] == "error"
    body = {"server": "evil", "range": {"start_file": "mysql-bin.000001", "start_position": 4}}
    job = client.post("/api/jobs", headers=auth(OPERATOR), json=body)
    assert job.status_code == 422, job.text
    assert "cannot list the binary logs of evil" in job.text


def test_interrupt_thread_ends_a_read_from_a_silent_server_at_once(silent_mysql, monkeypatch):
    monkeypatch.setenv("MYSQL_ROLLBACK_READ_TIMEOUT", "60")
    conn = open_connection(host="127.0.0.1", port=silent_mysql.port, user="x", password="y")
    import threading

    me = threading.get_ident()
    threading.Timer(0.5, interrupt_thread, args=(me,)).start()
    started = time.monotonic()
    with pytest.raises(pymysql.err.OperationalError), conn.cursor() as cur:
        cur.execute("SELECT 1")
    assert time.monotonic() - started < 5


def test_the_read_timeout_ends_a_silent_read(silent_mysql, monkeypatch):
    monkeypatch.setenv("MYSQL_ROLLBACK_READ_TIMEOUT", "1")
    conn = open_connection(host="127.0.0.1", port=silent_mysql.port, user="x", password="y")
    started = time.monotonic()
    with pytest.raises(pymysql.err.OperationalError), conn.cursor() as cur:
        cur.execute("SELECT 1")
    assert 0.9 < time.monotonic() - started < 5


def test_a_timeout_setting_that_is_not_seconds_is_one_line(monkeypatch):
    monkeypatch.setenv("MYSQL_ROLLBACK_CONNECT_TIMEOUT", "soon")
    with pytest.raises(
        SourceError, match="MYSQL_ROLLBACK_CONNECT_TIMEOUT must be a number of seconds above 0"
    ):
        open_connection(host="127.0.0.1", port=1)


def test_sessions_without_tls_options_share_one_tls_context_and_others_keep_their_own():
    # PyMySQL asks for TLS when the server offers it ("preferred", no certificate check) and built a
    # new context, the CA bundle loaded, for every session: the service's job threads did that five
    # times a job, holding the GIL beside the event loop
    first = open_connection(host="127.0.0.1", port=1, defer_connect=True)
    second = open_connection(host="127.0.0.1", port=1, defer_connect=True)
    assert first.ctx is not None and first.ctx is second.ctx
    assert first.ctx.verify_mode == ssl.CERT_NONE and not first.ctx.check_hostname
    assert not first._ssl_required  # still preferred: a server without TLS is still reached
    own = open_connection(host="127.0.0.1", port=1, ssl={"verify_mode": "required"}, defer_connect=True)
    assert own.ctx is not first.ctx and own.ctx.verify_mode == ssl.CERT_REQUIRED and own._ssl_required


# ---- uploads: checked before the body


def _uploads_dir_entries(tmp_path) -> list:
    uploads = tmp_path / "data" / "uploads"
    return list(uploads.iterdir()) if uploads.exists() else []


class _Endless:
    """A request body that counts what was read of it."""

    def __init__(self, total: int):
        self.total = total
        self.read = 0

    def __iter__(self):
        chunk = b"x" * (1 << 16)
        while self.read < self.total:
            self.read += len(chunk)
            yield chunk


def test_an_upload_without_a_token_is_refused_before_its_body(make_client, tmp_path):
    client = make_client()
    body = _Endless(300 << 20)
    headers = {"content-type": "multipart/form-data; boundary=b", "content-length": str(300 << 20)}
    answer = client.post("/api/uploads", content=body, headers=headers)
    assert answer.status_code == 401
    assert body.read <= 1 << 16  # TestClient reads the first chunk to start the request, no more
    assert _uploads_dir_entries(tmp_path) == []
    viewer = client.post("/api/uploads", content=b"x", headers={**auth(VIEWER), **headers})
    assert viewer.status_code == 403


def test_an_upload_that_declares_more_than_the_limit_is_refused_before_its_body(make_client, tmp_path):
    client = make_client(max_upload_bytes=1 << 20)
    body = _Endless(10 << 20)
    headers = {
        **auth(OPERATOR),
        "content-type": "multipart/form-data; boundary=b",
        "content-length": str(10 << 20),
    }
    answer = client.post("/api/uploads", content=body, headers=headers)
    assert answer.status_code == 413
    assert "limit of 1048576 bytes" in answer.json()["detail"]
    assert body.read <= 1 << 16


def test_an_upload_that_sends_more_than_it_may_is_cut_when_it_crosses_the_limit(make_client, tmp_path):
    client = make_client(max_upload_bytes=1 << 20)
    body = _Endless(64 << 20)

    def stream():
        yield (
            b'--b\r\nContent-Disposition: form-data; name="files"; filename="mysql-bin.000001"\r\n\r\n'
            + MAGIC
        )
        yield from body

    headers = {**auth(OPERATOR), "content-type": "multipart/form-data; boundary=b"}  # chunked: no length
    answer = client.post("/api/uploads", content=stream(), headers=headers)
    assert answer.status_code == 413, answer.text
    assert "limit of 1048576 bytes" in answer.json()["detail"]
    assert _uploads_dir_entries(tmp_path) == []


def test_an_upload_name_with_a_trailing_newline_is_refused(make_client, tmp_path):
    client = make_client()
    files = [("files", ("mysql-bin.000001\n", MAGIC + b"\x00" * 100))]
    answer = client.post("/api/uploads", headers=auth(OPERATOR), files=files)
    assert answer.status_code == 422
    assert "is not a binlog file name" in answer.text
    assert _uploads_dir_entries(tmp_path) == []


def test_uploads_per_client_are_limited_before_their_body(make_client):
    from app.api.upload_gate import UploadGate

    client = make_client(uploads_per_client=1)
    gate = client.app.middleware_stack.app.app  # SecurityHeaders(RequestId(UploadGate(...)))
    assert isinstance(gate, UploadGate)
    gate._running["testclient"] = 1  # one upload of this address is still being received
    answer = client.post(
        "/api/uploads", headers=auth(OPERATOR), files=[("files", ("mysql-bin.000001", MAGIC))]
    )
    assert answer.status_code == 429
    assert answer.headers["retry-after"] == "5"
    gate._running.clear()
    answer = client.post(
        "/api/uploads", headers=auth(OPERATOR), files=[("files", ("mysql-bin.000001", MAGIC))]
    )
    assert answer.status_code == 201, answer.text


def test_the_service_answers_health_while_the_upload_gate_refuses(make_client):
    client = make_client()
    assert client.get("/health").status_code == 200
    assert httpx.codes.UNAUTHORIZED == client.post("/api/uploads").status_code


# ---- pages: invisible characters made visible


def test_every_page_shows_control_and_bidi_characters_escaped(make_client):
    from markupsafe import Markup

    from app.web.page import templates

    render = templates.env.from_string("{{ a }}|{{ b }}|{{ c }}")
    shown = render.render(
        a="evil\u202etxt.sql\x00\x1b[31m", b=Markup("<i>\u2066x\u2069</i>"), c="Ölkanne\ttab\nline"
    )
    assert shown == "evil\\u202etxt.sql\\x00\\x1b[31m|<i>\\u2066x\\u2069</i>|Ölkanne\ttab\nline"
    client = make_client()
    signed_in = client.post("/login", data={"token": VIEWER, "next": "/jobs"}, follow_redirects=False)
    assert signed_in.status_code == 303
    page = client.get("/jobs/ab%E2%80%AEcd%00ef")
    assert page.status_code == 404
    assert "There is no job ab\\u202ecd\\x00ef." in page.text
    assert "\u202e" not in page.text and "\x00" not in page.text


def test_the_change_view_shows_a_hostile_table_name_and_value_escaped(make_client, tmp_path):
    from rollback import record_json
    from tests.support.app import job_row

    client = make_client()
    services = client.app.state.services
    job_id = "c" * 32
    out = services.settings.jobs_dir / job_id
    out.mkdir(parents=True)
    (out / "rollback.render.sql").write_text("-- nothing\n")
    record = {
        "file": "mysql-bin.000001",
        "pos": 1000,
        "end_pos": 1100,
        "gtid": None,
        "timestamp": "2026-11-25T00:00:00Z",
        "server_id": 1,
        "thread_id": 7,
        "database": "shop",
        "table": "orders\u202elqs.",
        "type": "insert",
        "row": 0,
        "after": {"id": 1, "note": "nul\x00here \u2066isolate\u2069"},
    }
    (out / "changes.jsonl").write_text(record_json(record) + "\n", encoding="utf-8")
    with services.db.session() as session:
        session.add(
            job_row(
                id=job_id,
                state="succeeded",
                script_path=str(out / "rollback.render.sql"),
                changes_path=str(out / "changes.jsonl"),
                counts=[{"table": "shop.orders\u202elqs.", "type": "insert", "rows": 1}],
            )
        )
        session.commit()
    signed_in = client.post("/login", data={"token": VIEWER, "next": "/jobs"}, follow_redirects=False)
    assert signed_in.status_code == 303
    page = client.get(f"/jobs/{job_id}")
    assert page.status_code == 200, page.text
    assert "orders\\u202elqs." in page.text and "nul\\x00here \\u2066isolate\\u2069" in page.text
    for raw in ("\u202e", "\x00", "\u2066", "\u2069"):
        assert raw not in page.text
