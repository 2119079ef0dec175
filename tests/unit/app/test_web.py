"""The web form's guards, without a browser: sign-in, roles, the anti-forgery value, cookie for reads only."""

from __future__ import annotations

import re

from app.core.security import csrf_token
from app.web.routes.jobs import job_request_from_form
from tests.support.app import ADMIN, OPERATOR, VIEWER, job_row


def _sign_in(client, token):
    response = client.post("/login", data={"token": token, "next": "/jobs"}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/jobs"
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    return client


def test_pages_send_a_signed_out_user_to_sign_in_and_refuse_a_bad_token(make_client):
    client = make_client()
    response = client.get("/jobs/new", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/login?next=%2Fjobs%2Fnew"
    bad = client.post("/login", data={"token": "nope", "next": "/jobs"})
    assert bad.status_code == 401 and "not valid" in bad.text
    outside = client.post("/login", data={"token": VIEWER, "next": "//evil.example/"}, follow_redirects=False)
    assert outside.headers["location"] == "/jobs"


def test_a_viewer_sees_jobs_but_cannot_open_the_form(make_client):
    client = _sign_in(make_client(), VIEWER)
    assert client.get("/jobs").status_code == 200
    denied = client.get("/jobs/new")
    assert denied.status_code == 403 and "operator" in denied.text


def test_forms_need_the_anti_forgery_value_and_execute_needs_admin(make_client):
    client = _sign_in(make_client(), OPERATOR)
    form = client.get("/jobs/new").text
    value = re.search(r'name="csrf" value="([0-9a-f]+)"', form).group(1)
    assert value != csrf_token(OPERATOR)  # derived from the session, not the token
    other = _sign_in(make_client(data_dir=client.app.state.services.settings.data_dir), OPERATOR)
    stolen = other.post("/jobs/new", data={"csrf": value, "range_kind": "gtid", "gtid_set": "0-1-1"})
    assert stolen.status_code == 403  # another session's value does not pass
    forged = client.post("/jobs/new", data={"range_kind": "gtid", "gtid_set": "0-1-1"})
    assert forged.status_code == 403
    invalid = client.post("/jobs/new", data={"csrf": value, "range_kind": "gtid", "gtid_set": "0-1-1"})
    assert invalid.status_code == 422 and "give either a configured server" in invalid.text
    execute = client.post("/jobs/x/execute", data={"csrf": value, "target": "t", "confirm": "yes"})
    assert execute.status_code == 403 and "admin" in execute.text
    check = client.post("/jobs/x/execute/check", data={"csrf": value, "target": "t"})
    assert check.status_code == 403


def test_the_session_cookie_reads_the_api_but_never_changes_anything(make_client):
    client = _sign_in(make_client(), ADMIN)
    assert client.get("/api/jobs").status_code == 200
    assert client.post("/api/jobs", json={"server": "x", "range": {"gtid_set": "0-1-1"}}).status_code == 401
    assert client.post("/api/jobs/x/executions", json={"target": "x", "dry_run": False}).status_code == 401


def test_the_form_becomes_the_api_body_and_reports_non_numbers_at_their_field():
    body, errors = job_request_from_form(
        {
            "server": "prod1",
            "range_kind": "time",
            "start_datetime": "2024-05-01T10:00",
            "stop_datetime": "2024-05-01T10:05",
            "time_zone": "utc",
            "databases": "shop, crm",
            "tables": "shop.orders",
            "types": ["delete"],
            "thread_id": "x1",
        }
    )
    assert body["range"] == {
        "start_datetime": "2024-05-01 10:00:00+00:00",
        "stop_datetime": "2024-05-01 10:05:00+00:00",
    }
    assert body["filters"]["databases"] == ["shop", "crm"] and body["filters"]["types"] == ["delete"]
    assert errors == {"thread_id": "a connection id: digits only"}
    body, errors = job_request_from_form({"range_kind": "position", "start_position": "4"})
    assert "start_file" in errors
    assert body["options"]["trust_schema"] is False
    body, _errors = job_request_from_form({"range_kind": "gtid", "gtid_set": "0-1-1", "trust_schema": "on"})
    assert body["options"]["trust_schema"] is True


def test_the_form_offers_to_trust_the_schema_source(make_client):
    client = _sign_in(make_client(), OPERATOR)
    assert 'name="trust_schema"' in client.get("/jobs/new").text


def _stored_job(services, job_id, **values):
    with services.db.session() as session:
        session.add(job_row(**({"id": job_id, "state": "running", "server": "prod1"} | values)))
        session.commit()


def test_a_running_job_shows_its_phase_and_an_eta_before_its_first_progress(make_client):
    from datetime import timedelta

    from app.models import utcnow

    client = make_client()
    services = client.app.state.services
    now = utcnow()
    # a finished job read 1000 bytes in 10 s: 100 bytes/s
    _stored_job(
        services,
        "a" * 32,
        state="succeeded",
        started_at=now - timedelta(seconds=20),
        finished_at=now - timedelta(seconds=10),
        progress_bytes=1000,
        progress_total=1000,
    )
    _stored_job(services, "b" * 32, started_at=now)  # resolving its range: no size yet
    _stored_job(services, "c" * 32, started_at=now, range_resolved={"files": []}, progress_total=6000)
    _sign_in(client, VIEWER)
    resolving = client.get(f"/jobs/{'b' * 32}").text
    assert "resolving the range" in resolving and "of 0 bytes" not in resolving
    assert "estimated once the range is read" in resolving
    planning = client.get(f"/jobs/{'c' * 32}").text
    assert "planning" in planning and re.search(r"about (1\.0 min|[56]\d s) left", planning)
    api = client.get(f"/api/jobs/{'c' * 32}", headers={"Authorization": f"Bearer {VIEWER}"}).json()
    assert api["progress"]["phase"] == "planning" and 50 <= api["progress"]["eta_seconds"] <= 60


def test_the_form_offers_the_ddl_modes_and_sends_the_choice(make_client):
    client = _sign_in(make_client(), OPERATOR)
    page = client.get("/jobs/new").text
    assert '<select name="ddl" id="ddl">' in page
    assert all(f'<option value="{mode}"' in page for mode in ("refuse", "keep", "reverse"))
    body, _errors = job_request_from_form({"range_kind": "gtid", "gtid_set": "0-1-1"})
    assert body["options"]["ddl"] == "refuse"
    body, _errors = job_request_from_form({"range_kind": "gtid", "gtid_set": "0-1-1", "ddl": "keep"})
    assert body["options"]["ddl"] == "keep"
