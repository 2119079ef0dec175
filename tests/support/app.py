"""Fixtures and helpers of the service tests: settings in a temporary data dir, tokens of each role,
a client, the head revision of the migrations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, inspect

from app import db
from app.core.config import Settings
from app.main import create_app
from app.models import Base

VIEWER = "viewer-token-0123456789"
OPERATOR = "operator-token-0123456789"
ADMIN = "admin-token-0123456789abc"
TOKENS = f"vera:viewer:{VIEWER},otto:operator:{OPERATOR},ada:admin:{ADMIN}"
FINAL = ("succeeded", "failed", "cancelled")
JOB_TABLES = {"jobs", "executions", "uploads", "api_tokens"}
MIGRATIONS_HEAD = ScriptDirectory(str(db.migrations_dir())).get_current_head()


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def servers_json(scratch_server: Any, **extra: Any) -> str:
    """The scratch server as `scratch` (binlog files on this machine) and `scratch_live` (protocol only)."""
    servers: dict[str, Any] = {
        "scratch": {"dsn": scratch_server.dsn, "binlog_dir": str(scratch_server.binlog_dir)},
        "scratch_live": scratch_server.dsn,
    }
    servers.update(extra)
    return json.dumps(servers)


def make_settings(data_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"data_dir": data_dir, "api_tokens": TOKENS, "workers": 2, "servers": "{}"}
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Callable[..., TestClient]]:
    """make_client(**settings) -> a TestClient whose app has started (migrations, workers)."""
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


def check_migrations_round_trip(url: str) -> None:
    """Upgrade to head (the models match), down to base, up again: on any database URL."""
    db.upgrade(url)
    engine = create_engine(url)
    try:
        assert JOB_TABLES <= set(inspect(engine).get_table_names())
        with engine.connect() as conn:
            diff = compare_metadata(
                MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata
            )
        assert diff == []
        assert db.current_revision(url) == MIGRATIONS_HEAD
        db.downgrade(url, "base")
        assert set(inspect(engine).get_table_names()) & JOB_TABLES == set()
        assert db.current_revision(url) is None
        db.upgrade(url)  # and up again from base
        assert JOB_TABLES <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def run_db_command(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """`mysql-rollback db ARGS` in a fresh interpreter, with no MYSQL_ROLLBACK_* variable but `env`."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MYSQL_ROLLBACK_")}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-m", "rollback.cli", "db", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
    )
