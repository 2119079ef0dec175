"""A service job against `mariadb-binlog --flashback` on the same file (issue 14's service goal).

    .venv/bin/python bench/bench_service_job.py --rows 200000      # --rows 1000000 for the issue's size

Writes bench_pipeline's `mixed` workload (`--rows` row changes) into a binlog file on a scratch
MariaDB (`--reuse FILE` times an existing one instead), starts a real `mysql-rollback serve`
process with its defaults, uploads the file, waits until /health says Spark is warm, then times
POST /api/jobs -> succeeded (`--runs` times; the clock runs from the POST to the GET that first
sees `succeeded`; the CPU seconds of the service and every process under it, and the engine the job
ran on, beside it), and in the same run `mariadb-binlog --flashback` on the same file, writing to a
file, once before the service starts and once after every job (the machine is shared: the best of
each is compared). Prints both and the ratio. `--py-spy BIN` records the service during the last job
(collapsed stacks in ./service-job.collapsed, its Spark workers included).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from bench.bench_pipeline import timed_process, write_mixed  # noqa: E402
from tests.support.app import OPERATOR, auth  # noqa: E402
from tests.support.service import Service, service_env  # noqa: E402

FINAL = ("succeeded", "failed", "cancelled")
NAME = "mysql-bin.000001"


def binlog(rows: int, keep: Path | None, work: Path) -> Path:
    from tests.support.mariadb import ScratchServer, ServerOptions

    server = ScratchServer(options=ServerOptions(row_metadata="FULL")).start()
    try:
        started = time.perf_counter()
        path = write_mixed(server, rows)
        target = (keep or work) / "mixed.binlog"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        print(
            f"mixed workload ({rows} rows) written in {time.perf_counter() - started:.0f} s", file=sys.stderr
        )
        return target
    finally:
        server.stop()


def wait_warm(service: Service, timeout: float = 300) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        spark = httpx.get(f"{service.url}/health", timeout=10).json()["spark"]
        if spark.get("warm", "off") in ("ready", "off") or spark["warm"].startswith("failed"):
            return spark
        if time.monotonic() > deadline:
            return spark
        time.sleep(0.2)


def tree_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of a process and every process under it, by kind: the service itself, its
    Spark JVM, the Python processes under the JVM (Spark's workers)."""
    import psutil

    found = {"service": 0.0, "jvm": 0.0, "workers": 0.0}
    try:
        root = psutil.Process(pid)
        for proc in [root, *root.children(recursive=True)]:
            try:
                times = proc.cpu_times()
                kind = "service" if proc.pid == pid else "jvm" if "java" in proc.name() else "workers"
                found[kind] += times.user + times.system
            except psutil.Error:
                pass
    except psutil.Error:
        pass
    return found


def cpu_since(pid: int, before: dict[str, float]) -> tuple[float, str]:
    """The CPU seconds since `before`, in all and by kind."""
    now = tree_cpu(pid)
    spent = {kind: now[kind] - before.get(kind, 0.0) for kind in now}
    return sum(spent.values()), ", ".join(f"{kind} {seconds:.2f}" for kind, seconds in spent.items())


def run_job(
    service: Service, upload: str, spy: list[str] | None, outputs: list[str] | None = None
) -> tuple[float, dict[str, Any]]:
    body: dict[str, Any] = {"upload": upload, "range": {"start_file": NAME, "start_position": 4}}
    if outputs:
        body["options"] = {"outputs": outputs}
    with httpx.Client(base_url=service.url, headers=auth(OPERATOR), timeout=120) as http:
        started = time.perf_counter()
        created = http.post("/api/jobs", json=body)
        assert created.status_code == 202, created.text
        job_id = created.json()["id"]
        recorder = (
            subprocess.Popen(spy, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) if spy else None
        )
        while True:
            job = http.get(f"/api/jobs/{job_id}").json()
            if job["state"] in FINAL:
                break
            time.sleep(0.02)
        seconds = time.perf_counter() - started
        if recorder is not None:
            recorder.send_signal(2)  # SIGINT: py-spy writes what it has
            recorder.wait(timeout=60)
    if job["state"] != "succeeded":
        raise RuntimeError(f"job {job_id} {job['state']}: {job.get('error')}")
    return seconds, job


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="row changes of the mixed workload")
    parser.add_argument("--reuse", type=Path, help="time this binlog file instead of writing one")
    parser.add_argument("--keep", type=Path, help="keep the written binlog in this directory")
    parser.add_argument("--runs", type=int, default=3, help="jobs in a row on the warm service")
    parser.add_argument(
        "--py-spy", metavar="BIN", help="record the service with this py-spy during the last job"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-service-job-"))
    service = None
    try:
        path = args.reuse or binlog(args.rows, args.keep, work)
        size = path.stat().st_size
        references = [timed_process(["mariadb-binlog", "--flashback", str(path)], work / "reference.sql")]
        env = service_env(work / "data", "{}")
        for name in ("MYSQL_ROLLBACK_WORKERS", "MYSQL_ROLLBACK_WARM_SPARK"):
            env.pop(name, None)  # the service's defaults
        started = time.perf_counter()
        service = Service(work / "data", env, work / "service.log").start()
        with open(path, "rb") as f:
            uploaded = service.request(
                "POST", "/api/uploads", OPERATOR, files=[("files", (NAME, f, "application/octet-stream"))]
            )
        assert uploaded.status_code in (200, 201), uploaded.text
        spark = wait_warm(service)
        print(
            f"service up and Spark {spark.get('warm')} {time.perf_counter() - started:.1f} s after start "
            f"(pid {service.process.pid if service.process else '?'}, {os.cpu_count()} CPUs, "
            f"load {os.getloadavg()[0]:.1f})",
            file=sys.stderr,
        )
        times = []
        pid = service.process.pid if service.process else 0
        for run in range(args.runs):
            spy = None
            if args.py_spy and run == args.runs - 1 and service.process is not None:
                out = Path.cwd() / "service-job.collapsed"
                spy = [args.py_spy, "record", "-p", str(service.process.pid), "-r", "50", "-s", "-f", "raw"]
                spy += ["-o", str(out)]
            before = tree_cpu(pid)
            seconds, job = run_job(service, uploaded.json()["id"], spy)
            cpu, kinds = cpu_since(pid, before)
            times.append(seconds)
            with httpx.Client(base_url=service.url, headers=auth(OPERATOR), timeout=60) as http:
                engine = http.get(f"/api/jobs/{job['id']}/summary").json().get("engine") or {}
            print(
                f"  job {run + 1}: {seconds:.2f} s (CPU {cpu:.2f} s: {kinds}; engine {engine.get('name')}, {engine.get('partitions')} partitions), "
                f"{job['statements']} statements, script {job['script_bytes'] / 2**20:.1f} MB, "
                f"load {os.getloadavg()[0]:.1f}",
                file=sys.stderr,
            )
            # the reference between the jobs, so that both see the same load
            references.append(
                timed_process(["mariadb-binlog", "--flashback", str(path)], work / "reference.sql")
            )
            print(
                f"  mariadb-binlog --flashback: {references[-1].seconds:.2f} s (CPU {references[-1].cpu or 0:.2f} s)",
                file=sys.stderr,
            )
        reference = min(references, key=lambda r: r.seconds)
        # What the plan and the change log cost: a job that asks for them at once, and the change log
        # produced on the first GET of a job that did not.
        before = tree_cpu(pid)
        eager, eager_job = run_job(service, uploaded.json()["id"], None, ["plan", "changes"])
        eager_cpu = cpu_since(pid, before)[0]
        files = {p.name: p.stat().st_size for p in (work / "data" / "jobs" / eager_job["id"]).iterdir()}
        with httpx.Client(base_url=service.url, headers=auth(OPERATOR), timeout=600) as http:
            before = tree_cpu(pid)
            started = time.perf_counter()
            first = http.get(f"/api/jobs/{job['id']}/changes", params={"offset": 0, "limit": 1})
            lazy = time.perf_counter() - started
            lazy_cpu = cpu_since(pid, before)[0]
            assert first.status_code == 200, first.text
        best = min(times)
        ours = f"service job, POST -> succeeded (best of {args.runs}: {', '.join(f'{t:.2f}' for t in times)})"
        print(
            f"\nmixed file: {size / 2**20:.0f} MB, {job['rows']} row changes, load {os.getloadavg()[0]:.1f}\n"
        )
        print("| tool | seconds | ÷ mariadb-binlog --flashback |")
        print("|---|---:|---:|")
        print(f"| {ours} | {best:.2f} | {best / reference.seconds:.2f} |")
        print(
            f"| mariadb-binlog --flashback (best of {len(references)}: "
            f"{', '.join(f'{r.seconds:.2f}' for r in references)}) | {reference.seconds:.2f} | 1.00 |"
        )
        print(
            f"\nservice job with options.outputs [plan, changes]: {eager:.2f} s, CPU {eager_cpu:.2f} s "
            f"({eager / best - 1:+.0%} over the script alone)"
        )
        print(
            f"first GET changes of a job without them (the change log produced then): {lazy:.2f} s, "
            f"CPU {lazy_cpu:.2f} s"
        )
        print("files: " + ", ".join(f"{name} {size / 2**20:.1f} MB" for name, size in sorted(files.items())))
    finally:
        if service is not None:
            service.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
