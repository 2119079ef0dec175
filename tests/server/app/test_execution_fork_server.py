"""`mysql-rollback serve` starts the fork server its executions come from as it starts, not at the
first execution (that one paid for loading the service's code into it: 1-3 s, bench/bench_apply.py)."""

from __future__ import annotations

import time

import psutil

from tests.support.app import servers_json
from tests.support.service import service_env


def test_the_fork_server_runs_before_the_first_execution(service_process, scratch_server, tmp_path):
    env = service_env(tmp_path / "data", servers_json(scratch_server))
    service = service_process(tmp_path / "data", env, tmp_path / "service.log").start()
    try:
        assert service.process is not None
        process = psutil.Process(service.process.pid)
        deadline = time.monotonic() + 20
        while not any("multiprocessing.forkserver" in line for line in _children(process)):
            assert time.monotonic() < deadline, _children(process)
            time.sleep(0.1)
        assert service.request("GET", "/health").status_code == 200
    finally:
        service.stop()


def _children(process: psutil.Process) -> list[str]:
    lines = []
    for child in process.children(recursive=True):
        try:
            lines.append(" ".join(child.cmdline()))
        except psutil.Error:
            pass  # it ended meanwhile
    return lines
