"""The REST API through TestClient without a database server: auth, the first admin token, recovery at
start, metrics, the OpenAPI document."""

from __future__ import annotations

import io
import re
import sqlite3

from app.models import utcnow
from app.services.jobs import RESTART_REASON
from tests.support.app import VIEWER, auth, job_row


def test_requests_without_a_valid_token_get_401_with_a_json_body(make_client):
    client = make_client(auth_failures_per_minute=0)  # dozens of wrong tokens: throttling off
    for method, url in [
        ("GET", "/api/jobs"),
        ("POST", "/api/jobs"),
        ("GET", "/api/jobs/x"),
        ("POST", "/api/jobs/x/cancel"),
        ("GET", "/api/jobs/x/script"),
        ("GET", "/api/jobs/x/changes"),
        ("GET", "/api/jobs/x/summary"),
        ("GET", "/api/jobs/x/executions"),
        ("POST", "/api/jobs/x/executions"),
        ("POST", "/api/uploads"),
        ("GET", "/api/servers"),
        ("GET", "/metrics"),
    ]:
        for headers in ({}, auth("not-a-token-at-all"), {"Authorization": "Basic abc"}):
            response = client.request(method, url, headers=headers, json={})
            assert response.status_code == 401, (method, url, response.text)
            assert "token" in response.json()["detail"]
            assert response.headers["www-authenticate"] == "Bearer"
    assert client.get("/health").status_code == 200


def test_first_start_without_tokens_generates_an_admin_token_stores_its_hash_and_prints_it_once(tmp_path):
    from fastapi.testclient import TestClient

    from app.main import create_app
    from tests.support.app import make_settings

    out = io.StringIO()
    settings = make_settings(tmp_path / "data", api_tokens="")
    with TestClient(create_app(settings, token_out=out)) as client:
        token = re.search(
            r"admin token \(shown once; only its hash is stored\): (\S+)", out.getvalue()
        ).group(1)
        assert client.get("/api/jobs", headers=auth(token)).status_code == 200
    database = (tmp_path / "data" / "jobs.sqlite3").read_bytes()
    assert token.encode() not in database
    rows = sqlite3.connect(tmp_path / "data" / "jobs.sqlite3").execute(
        "SELECT name, role, token_hash FROM api_tokens"
    )
    assert [(name, role) for name, role, _ in rows] == [("admin", "admin")]
    again = io.StringIO()
    with TestClient(create_app(settings, token_out=again)) as client:
        assert again.getvalue() == ""
        assert client.get("/api/jobs", headers=auth(token)).status_code == 200


def test_a_job_left_running_by_a_dead_process_is_failed_with_the_reason_at_start(make_client, tmp_path):
    client = make_client()
    services = client.app.state.services
    with services.db.session() as session:
        session.add(
            job_row(
                id="f" * 32,
                started_at=utcnow(),
                state="running",
                progress_bytes=10,
                progress_total=100,
                progress_events=1,
                progress_events_total=9,
            )
        )
        session.commit()
    restarted = make_client()
    job = restarted.get(f"/api/jobs/{'f' * 32}", headers=auth(VIEWER)).json()
    assert job["state"] == "failed" and job["error"] == RESTART_REASON and job["finished_at"]


def test_metrics_expose_jobs_by_state_in_prometheus_format(make_client):
    client = make_client()
    text = client.get("/metrics", headers=auth(VIEWER)).text
    for state in ("queued", "running", "succeeded", "failed", "cancelled"):
        assert f'mysql_rollback_jobs{{state="{state}"}}' in text
    assert "mysql_rollback_bytes_decoded_total" in text and "mysql_rollback_rows_emitted_total" in text
    assert "mysql_rollback_job_duration_seconds" in text


def test_openapi_documents_every_api_route(make_client):
    client = make_client()
    spec = client.get("/openapi.json").json()
    for path in (
        "/api/jobs",
        "/api/jobs/{job_id}/script",
        "/api/jobs/{job_id}/executions",
        "/api/uploads",
        "/metrics",
    ):
        assert path in spec["paths"]
    assert client.get("/docs").status_code == 200
