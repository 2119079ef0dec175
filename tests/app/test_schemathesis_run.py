"""schemathesis as its users run it (`st run --checks all`, every phase, stateful included) against a
real `mysql-rollback serve`: no failure of any check.

The service has one server, `prod1` (the name the schema's examples use), whose binlog directory
holds a corpus file named as in the examples, so that generated jobs are accepted and the stateful
phase follows the links into the job routes. Its DSN points at a closed port: no generated request
can reach a database server. Checks and their few per-operation settings: tests/app/schemathesis.toml.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.app.conftest import ADMIN
from tests.app.serviceproc import Service, service_env

HERE = Path(__file__).resolve().parent
BINLOG = (
    HERE.parent
    / "corpus/rust-us__mysql-cdc-rs/tests/events/8.0/19_30_Table_map_event_Write_rows_log_event/binlog.000018"
)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    binlogs = tmp_path / "binlogs"
    binlogs.mkdir()
    shutil.copy(BINLOG, binlogs / "mysql-bin.000042")
    servers = json.dumps({"prod1": {"dsn": "mysql://nobody@127.0.0.1:1/", "binlog_dir": str(binlogs)}})
    env = service_env(
        tmp_path / "data",
        servers,
        MYSQL_ROLLBACK_ENGINE="local",
        MYSQL_ROLLBACK_AUTH_FAILURES_PER_MINUTE="0",  # schemathesis tries requests without the token
    )
    svc = Service(tmp_path / "data", env, tmp_path / "service.log").start()
    try:
        yield svc
    finally:
        svc.stop()


def test_schemathesis_with_every_check_and_the_stateful_phase_finds_nothing(service, tmp_path):
    st = Path(sys.executable).with_name("schemathesis")
    command = [
        str(st),
        "--config-file",
        str(HERE / "schemathesis.toml"),
        "--no-color",
        "run",
        f"{service.url}/openapi.json",
        "--checks",
        "all",
        "--phases",
        "examples,coverage,fuzzing,stateful",
        "--header",
        f"Authorization: Bearer {ADMIN}",
        "--seed",
        "20261124",
    ]
    # cwd: schemathesis keeps a cache in .schemathesis/ of its working directory
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    report = run.stdout + run.stderr
    assert run.returncode == 0, report[-8000:]
    for phase in ("Examples", "Coverage", "Fuzzing", "Stateful"):
        assert f"✅ {phase}" in report, report[-4000:]
    covered = int(re.search(r"API Links:\s+(\d+) covered", report).group(1))
    assert covered >= 5, report[-4000:]  # the stateful phase went from POST /api/jobs into the job routes
    assert re.search(r"(\d+) generated, \1 passed", report), report[-4000:]
