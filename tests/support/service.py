"""A `mysql-rollback serve` process for the tests that need the service as users run it, and the
`service` fixture: one such process per test module, serving the scratch MariaDB."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import REPO
from tests.support.app import EXECUTION_FINAL, FINAL, TOKENS, VIEWER, auth, servers_json


def service_env(data_dir: Path, servers: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYSQL_ROLLBACK_")}
    env.update(
        MYSQL_ROLLBACK_DATA_DIR=str(data_dir),
        MYSQL_ROLLBACK_API_TOKENS=TOKENS,
        MYSQL_ROLLBACK_SERVERS=servers,
        MYSQL_ROLLBACK_WORKERS="2",
        MYSQL_ROLLBACK_WARM_SPARK="false",  # tests of the warm-up ask for it
    )
    env.update(extra)
    return env


class Service:
    """One `mysql-rollback serve` process; every response body it sends is kept for the password check."""

    def __init__(self, data_dir: Path, env: dict[str, str], log_path: Path, prefix: list[str] | None = None):
        self.prefix = prefix or []  # a command the service runs under (unshare, a shell that mounts first)
        self.data_dir = data_dir
        self.env = env
        self.log_path = log_path
        self.process: subprocess.Popen | None = None
        self.port = 0
        self.bodies: list[bytes] = []

    def start(self) -> Service:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [*self.prefix, sys.executable, "-m", "rollback.cli.commands", "serve", "--port", str(self.port)],
            cwd=REPO,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log_path.read_text()
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise AssertionError(f"the service did not answer /health:\n{self.log_path.read_text()}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def request(self, method: str, path: str, token: str = VIEWER, **kwargs: Any) -> httpx.Response:
        headers = {**auth(token), **kwargs.pop("headers", {})}
        response = httpx.request(method, self.url + path, headers=headers, timeout=120, **kwargs)
        self.bodies.append(response.content)
        return response

    def wait(self, job_id: str, timeout: float = 90.0, until: tuple[str, ...] = FINAL) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            job = self.request("GET", f"/api/jobs/{job_id}").json()
            if job["state"] in until:
                return job
            assert time.monotonic() < deadline, f"job still {job['state']}: {job}"
            time.sleep(0.1)

    def wait_warm(self, timeout: float = 240.0) -> str:
        """The Spark warm-up's end state in /health (`ready`, or what it ended as) once it stops starting."""
        deadline = time.monotonic() + timeout
        while (warm := self.request("GET", "/health").json()["spark"]["warm"]) == "starting":
            assert time.monotonic() < deadline, "Spark did not get warm"
            time.sleep(0.5)
        return str(warm)

    def execute(self, job_id: str, token: str, body: dict[str, Any], timeout: float = 90.0) -> dict[str, Any]:
        """POST an execution (202 with its Location) and wait until it ends."""
        created = self.request("POST", f"/api/jobs/{job_id}/executions", token, json=body)
        assert created.status_code == 202, created.text
        return self.wait_execution(created.headers["location"], timeout)

    def wait_execution(
        self, location: str, timeout: float = 90.0, until: tuple[str, ...] = EXECUTION_FINAL
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            record = self.request("GET", location).json()
            if record["state"] in until:
                return record
            assert time.monotonic() < deadline, f"execution still {record['state']}: {record}"
            time.sleep(0.05)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


@pytest.fixture(scope="session")
def service_process() -> type[Service]:
    """What a test that starts its own `mysql-rollback serve` asks for: a real service process is a
    server, so the test belongs to the server lane (tests/conftest.py marks it from this fixture)."""
    return Service


@pytest.fixture(scope="module")
def service(scratch_server, tmp_path_factory) -> Iterator[Service]:
    """A started service whose servers are the scratch MariaDB (`scratch`, `scratch_live`); stopped after
    the module, whatever happened. A module that needs tables first requests its own fixture before this."""
    base = tmp_path_factory.mktemp("service")
    svc = Service(
        base / "data", service_env(base / "data", servers_json(scratch_server)), base / "service.log"
    )
    svc.start()
    try:
        yield svc
    finally:
        svc.stop()
