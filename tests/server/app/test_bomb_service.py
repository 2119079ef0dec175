"""A compression bomb uploaded to the service (issue 26): a 33 KB TRANSACTION_PAYLOAD declaring 1 GiB
fails its job with one line, and the service's memory stays within docs/safety.md's bound
(SERVICE_BOMB_MIB: the payload costs its largest inner event, never its declared size)."""

from __future__ import annotations

import threading
import time

import psutil

from tests.support.app import OPERATOR
from tests.support.hostile import COMPRESSED, COMPRESSED_PAYLOAD_AT, payload_body, with_body, zstd_of
from tests.support.service import service_env

MiB = 1 << 20
SERVICE_BOMB_MIB = 64  # growth of the service's process tree while the bomb's job runs (docs/safety.md)


def _tree_memory(pid: int) -> int:
    """The memory of the service's processes: their proportional set sizes, since a job's process
    shares the pages of the fork server it was forked from (RSS would count those twice)."""
    root = psutil.Process(pid)
    total = 0
    for proc in [root, *root.children(recursive=True)]:
        try:
            total += proc.memory_full_info().pss
        except psutil.Error:
            pass
    return total


def _started(pid: int) -> int:
    """The tree's memory once the service's start-up is over: `serve` starts the executions' fork server
    as it starts listening, and that loads the service's code (~55 MB) in the background. Settled: the
    same to 1 MiB over a second."""
    deadline = time.monotonic() + 30
    last = _tree_memory(pid)
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = _tree_memory(pid)
        if abs(now - last) < MiB:
            return now
        last = now
    return last


def test_a_bomb_fails_its_job_with_one_line_and_the_service_stays_small(
    service_process, corpus_dir, tmp_path, scratch_server
):
    bomb = zstd_of(b"\0" * MiB, repeat=1024)  # 1 GiB of zeros in ~32 KiB
    data = with_body(
        (corpus_dir / COMPRESSED).read_bytes(), COMPRESSED_PAYLOAD_AT, payload_body(bomb, 1 << 30)
    )
    env = service_env(
        tmp_path / "data", "{}", MYSQL_ROLLBACK_ENGINE="local", MYSQL_ROLLBACK_WARM_SPARK="false"
    )
    svc = service_process(tmp_path / "data", env, tmp_path / "service.log").start()
    try:
        uploaded = svc.request(
            "POST",
            "/api/uploads",
            OPERATOR,
            files=[("files", ("bomb.000001", data, "application/octet-stream"))],
        )
        assert uploaded.status_code in (200, 201), uploaded.text
        # A first job starts the fork server that jobs' processes come from (a cost paid once)
        intact = svc.request(
            "POST",
            "/api/uploads",
            OPERATOR,
            files=[
                (
                    "files",
                    ("intact.000001", (corpus_dir / COMPRESSED).read_bytes(), "application/octet-stream"),
                )
            ],
        )
        assert intact.status_code in (200, 201), intact.text
        first = {"upload": intact.json()["id"], "range": {"start_file": "intact.000001", "start_position": 4}}
        svc.wait(svc.request("POST", "/api/jobs", OPERATOR, json=first).json()["id"], timeout=60)
        baseline = _started(svc.process.pid)
        peak = [baseline]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], _tree_memory(svc.process.pid))
                time.sleep(0.01)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            body = {
                "upload": uploaded.json()["id"],
                "range": {"start_file": "bomb.000001", "start_position": 4},
            }
            created = svc.request("POST", "/api/jobs", OPERATOR, json=body)
            assert created.status_code == 202, created.text
            job = svc.wait(created.json()["id"], timeout=60)
        finally:
            done.set()
            sampler.join()
        assert job["state"] == "failed", job
        error = job["error"]
        assert "\n" not in error and "internal error" not in error and "Traceback" not in error
        assert f"bomb.000001 at offset {COMPRESSED_PAYLOAD_AT}" in error, error
        assert (peak[0] - baseline) < SERVICE_BOMB_MIB * MiB, (peak[0] - baseline) / MiB
        assert svc.request("GET", "/health").status_code == 200
    finally:
        svc.stop()
