"""The first start of `mysql-rollback serve` on a fresh machine (no token, no server configured) ends
with a block that says where the service is, the admin token and how to add a server; a lost token is
replaced with `mysql-rollback token create NAME ROLE`."""

from __future__ import annotations

import re
import subprocess
import sys
import time

from app.core.security import RELOAD_SECONDS
from tests.support import REPO
from tests.support.service import service_env

RULE = "mysql-rollback: " + "-" * 60


def _block(log_path) -> str:
    """The start's closing block, once written (the service answers /health just before)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = log_path.read_text()
        if text.count(RULE) == 2:
            start, end = text.index(RULE), text.rindex(RULE) + len(RULE)
            assert "startup complete" in text[:start] and "startup" not in text[end:], (
                text
            )  # it ends the start
            return text[start:end]
        time.sleep(0.1)
    raise AssertionError(log_path.read_text())


def _token_create(env, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rollback.cli.commands", "token", "create", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_fresh_start_ends_with_url_token_and_how_to_add_a_server(service_process, tmp_path):
    env = service_env(tmp_path / "data", "{}", MYSQL_ROLLBACK_API_TOKENS="")
    first = service_process(tmp_path / "data", env, tmp_path / "first.log").start()
    try:
        block = _block(tmp_path / "first.log")
        assert f"service:  http://127.0.0.1:{first.port}/" in block, block
        token = re.search(r"admin token \(shown once; only its hash is stored\): (\S+)", block).group(1)
        assert "servers:  none yet" in block and "MYSQL_ROLLBACK_SERVERS=" in block, block
        assert "mysql-rollback token create NAME" in block, block
        assert first.request("GET", "/api/jobs", token).status_code == 200
        # the admin token is lost: a new one, taken by the running service, and the old one refused
        created = _token_create(env, "admin", "admin")
        assert created.returncode == 0, created.stderr
        new = created.stdout.strip()
        assert re.fullmatch(r"[A-Za-z0-9_-]{40,}", new) and new != token, created.stdout
        assert "shown once" in created.stderr and "at once" in created.stderr
        assert new not in (tmp_path / "data" / "jobs.sqlite3").read_bytes().decode("latin-1")
        time.sleep(RELOAD_SECONDS)
        assert first.request("GET", "/api/jobs", token).status_code == 401
        assert first.request("GET", "/api/jobs", new).status_code == 200
    finally:
        first.stop()
    second = service_process(tmp_path / "data", env, tmp_path / "second.log").start()
    try:
        block = _block(tmp_path / "second.log")
        assert "shown once" not in block and new not in block and "tokens:   generated" in block, block
        assert second.request("GET", "/api/jobs", new).status_code == 200
    finally:
        second.stop()
    refused = _token_create(env, "ops", "superuser")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "superuser" in refused.stderr
