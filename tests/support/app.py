"""Fixtures of the service tests: settings in a temporary data dir, tokens of each role, a client."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.main import create_app

VIEWER = "viewer-token-0123456789"
OPERATOR = "operator-token-0123456789"
ADMIN = "admin-token-0123456789abc"
TOKENS = f"vera:viewer:{VIEWER},otto:operator:{OPERATOR},ada:admin:{ADMIN}"
FINAL = ("succeeded", "failed", "cancelled")


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
