"""Fixtures and helpers of the service tests: settings in a temporary data dir, tokens of each role,
a client. The service is imported when a test asks for it, not when pytest starts: this module is a
plugin of every run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from fastapi.testclient import TestClient

    from app.core.config import Settings
    from app.models import Job

VIEWER = "viewer-token-0123456789"
OPERATOR = "operator-token-0123456789"
ADMIN = "admin-token-0123456789abc"
TOKENS = f"vera:viewer:{VIEWER},otto:operator:{OPERATOR},ada:admin:{ADMIN}"
FINAL = ("succeeded", "failed", "cancelled")


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def job_row(**values: Any) -> Job:
    """A job record as the database holds one (a queued flashback job of server "gone" unless
    `values` say otherwise), for tests that put a job in some state without running it."""
    from app.models import Job, utcnow

    base: dict[str, Any] = {
        "id": "a" * 32,
        "created_by": "otto",
        "created_at": utcnow(),
        "state": "queued",
        "mode": "flashback",
        "source": "server",
        "server": "gone",
        "range_requested": {"gtid_set": "0-1-1"},
        "filters": {},
        "options": {},
        "progress_bytes": 0,
        "progress_total": 0,
        "progress_events": 0,
        "progress_events_total": 0,
        "rows_emitted": 0,
        "transactions": 0,
        "statements": 0,
        "script_bytes": 0,
        "cancel_requested": False,
    }
    return Job(**(base | values))


def servers_json(scratch_server: Any, **extra: Any) -> str:
    """The scratch server as `scratch` (binlog files on this machine) and `scratch_live` (protocol only)."""
    servers: dict[str, Any] = {
        "scratch": {"dsn": scratch_server.dsn, "binlog_dir": str(scratch_server.binlog_dir)},
        "scratch_live": scratch_server.dsn,
    }
    servers.update(extra)
    return json.dumps(servers)


def make_settings(data_dir: Path, **overrides: Any) -> Settings:
    from app.core.config import Settings

    # no Spark started with the app: most tests never need it (tests of the warm-up ask for it)
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "api_tokens": TOKENS,
        "workers": 2,
        "servers": "{}",
        "warm_spark": False,
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Callable[..., TestClient]]:
    """make_client(**settings) -> a TestClient whose app has started (migrations, workers)."""
    from fastapi.testclient import TestClient

    from app.main import create_app

    clients: list[TestClient] = []

    def make(**overrides: Any) -> TestClient:
        overrides.setdefault("data_dir", tmp_path / "data")
        client = TestClient(create_app(make_settings(**overrides)))
        client.__enter__()
        clients.append(client)
        return client

    try:
        yield make
    finally:
        for client in reversed(clients):
            client.__exit__(None, None, None)


def wait_for_job(client: Any, job_id: str, timeout: float = 60.0, token: str = VIEWER) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/api/jobs/{job_id}", headers=auth(token)).json()
        if job["state"] in FINAL:
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still {job['state']} after {timeout}s: {job}")
        time.sleep(0.1)


EXECUTION_FINAL = ("succeeded", "failed", "conflict", "cancelled", "interrupted", "refused")


def wait_for_execution(client: Any, created: Any, timeout: float = 60.0) -> dict[str, Any]:
    """The execution a POST (202, Location) queued, once it has ended."""
    assert created.status_code == 202, created.text
    location = created.headers["location"]
    deadline = time.monotonic() + timeout
    while True:
        record = client.get(location, headers=auth(VIEWER)).json()
        if record["state"] in EXECUTION_FINAL:
            return record
        if time.monotonic() > deadline:
            raise AssertionError(f"execution still {record['state']} after {timeout}s: {record}")
        time.sleep(0.05)


def run_db_command(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """`mysql-rollback db ARGS` in a fresh interpreter, with no MYSQL_ROLLBACK_* variable but `env`."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MYSQL_ROLLBACK_")}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-m", "rollback.cli.commands", "db", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
    )
