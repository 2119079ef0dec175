"""Latency of the service's reads under load (issue 12's benchmark).

    .venv/bin/python bench/bench_service_load.py [--clients 100] [--seconds 20] [--engine spark]

Starts a scratch MariaDB and a real `mysql-rollback serve` process (uvicorn), prepares five
flashback jobs (one per database, STATEMENTS single-row transactions each), then measures
`GET /api/jobs` and `GET /api/jobs/{id}` with `--clients` concurrent httpx async clients: first
idle, then busy while two large jobs run (a range of ROWS row changes each) and five dry-run
executions run at once (each on its own target name, so none waits for another; an execution that
ends is started again until the measurement ends). Prints p50/p95/p99 per route and phase.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from tests.support.app import OPERATOR, VIEWER, auth  # noqa: E402
from tests.support.mariadb import ScratchServer  # noqa: E402
from tests.support.service import Service, service_env  # noqa: E402

STATEMENTS = 5000  # per execution plan
ROWS = 100_000  # per large job
TARGETS = [f"x{i}" for i in range(1, 6)]
FINAL = ("succeeded", "failed", "conflict", "cancelled", "interrupted", "refused")


def servers(server: ScratchServer) -> str:
    import json

    config: dict[str, Any] = {"scratch": {"dsn": server.dsn, "binlog_dir": str(server.binlog_dir)}}
    config.update({name: server.dsn for name in TARGETS})
    return json.dumps(config)


def rng(done: Any) -> dict[str, Any]:
    return {
        "start_file": done.start_file,
        "start_position": done.start_position,
        "stop_file": done.stop_file,
        "stop_position": done.stop_position,
    }


def prepare(server: ScratchServer) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Five small-transaction ranges (one database each) and one large range."""
    small = []
    for i, _ in enumerate(TARGETS, 1):
        server.run_sql(
            [
                f"DROP DATABASE IF EXISTS b{i}",
                f"CREATE DATABASE b{i}",
                f"CREATE TABLE b{i}.t (id INT PRIMARY KEY, v VARCHAR(20))",
            ]
        )
        done = server.run_sql(
            [f"INSERT INTO t VALUES ({n}, 'row {n}')" for n in range(1, STATEMENTS + 1)], database=f"b{i}"
        )
        small.append(rng(done))
    server.run_sql(
        [
            "DROP DATABASE IF EXISTS big",
            "CREATE DATABASE big",
            "CREATE TABLE big.t (id INT PRIMARY KEY, v TEXT)",
        ]
    )
    done = server.run_sql(f"INSERT INTO t SELECT seq, REPEAT('x', 200) FROM seq_1_to_{ROWS}", database="big")
    return small, rng(done)


def wait(service: Service, job_id: str, timeout: float = 600) -> dict[str, Any]:
    return service.wait(job_id, timeout=timeout)


async def measure(url: str, clients: int, seconds: float, job_ids: list[str]) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"GET /api/jobs": [], "GET /api/jobs/{id}": []}
    errors = 0
    deadline = time.monotonic() + 3600.0
    ready = asyncio.Event()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(n: int) -> None:
        nonlocal errors
        async with httpx.AsyncClient(base_url=url, headers=auth(VIEWER), timeout=60, limits=limits) as http:
            await http.get("/health")  # the connection is open before the clock starts
            await ready.wait()
            i = n
            routes = [("GET /api/jobs", None), ("GET /api/jobs/{id}", "")]
            if n % 2:
                routes.reverse()  # half the clients start with each route
            while time.monotonic() < deadline:
                for route, _ in routes:
                    path = (
                        "/api/jobs" if route == "GET /api/jobs" else f"/api/jobs/{job_ids[i % len(job_ids)]}"
                    )
                    started = time.perf_counter()
                    response = await http.get(path)
                    times[route].append(time.perf_counter() - started)
                    if response.status_code != 200:
                        errors += 1
                i += 1

    async def start() -> None:
        nonlocal deadline
        await asyncio.sleep(0.5 + clients / 100)  # every client connected
        deadline = time.monotonic() + seconds
        ready.set()

    await asyncio.gather(start(), *(client(n) for n in range(clients)))
    if errors:
        print(f"  {errors} non-200 answers")
    return times


def report(phase: str, times: dict[str, list[float]]) -> list[str]:
    lines = []
    for route, values in times.items():
        q = statistics.quantiles(values, n=100)
        lines.append(
            f"| {phase} | {route} | {len(values)} | {q[49] * 1000:.0f} | {q[94] * 1000:.0f} | {q[98] * 1000:.0f} |"
        )
    return lines


class Busy:
    """Keeps five dry runs going (one per target) while the large jobs run."""

    def __init__(self, service: Service, jobs: list[str]):
        self.service = service
        self.jobs = jobs
        self.locations: dict[int, str] = {}
        self.runs = 0

    def top_up(self) -> None:
        for i, (job_id, target) in enumerate(zip(self.jobs, TARGETS, strict=True)):
            location = self.locations.get(i)
            if location is not None:
                state = self.service.request("GET", location).json()["state"]
                if state not in FINAL:
                    continue
                assert state == "succeeded", self.service.request("GET", location).json()
            created = self.service.request(
                "POST", f"/api/jobs/{job_id}/executions", OPERATOR, json={"target": target}
            )
            assert created.status_code == 202, created.text
            self.locations[i] = created.headers["location"]
            self.runs += 1

    def running(self) -> int:
        return sum(
            self.service.request("GET", loc).json()["state"] == "running" for loc in self.locations.values()
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--engine", default="spark", choices=("spark", "local"))
    parser.add_argument("--idle-only", action="store_true", help="measure idle only (a quick comparison)")
    parser.add_argument(
        "--py-spy", metavar="BIN", help="record the service with this py-spy during the busy phase"
    )
    args = parser.parse_args()
    server = ScratchServer().start()
    base = Path(tempfile.mkdtemp(prefix="bench-service-"))
    service = None
    try:
        small, large = prepare(server)
        env = service_env(
            base / "data",
            servers(server),
            MYSQL_ROLLBACK_ENGINE=args.engine,
            MYSQL_ROLLBACK_EXECUTION_WORKERS="5",
            MYSQL_ROLLBACK_WORKERS="2",
        )
        env.pop("MYSQL_ROLLBACK_WARM_SPARK")  # the service's default: Spark warm from the start
        service = Service(base / "data", env, base / "service.log").start()
        jobs = []
        for r in small:
            created = service.request("POST", "/api/jobs", OPERATOR, json={"server": "scratch", "range": r})
            job = wait(service, created.json()["id"])
            assert job["state"] == "succeeded" and job["statements"] == STATEMENTS, job
            jobs.append(job["id"])
        print(
            f"service pid {service.process.pid if service.process else '?'}, engine {args.engine}, {os.cpu_count()} CPUs"
        )
        lines = []
        if args.idle_only and args.py_spy and service.process is not None:
            spy_idle = subprocess.Popen(
                [
                    args.py_spy,
                    "record",
                    "-p",
                    str(service.process.pid),
                    "-d",
                    str(int(args.seconds / 2)),
                    "-r",
                    "100",
                    "-f",
                    "raw",
                    "-o",
                    str(base / "idle.collapsed"),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            asyncio.run(measure(service.url, 10, args.seconds / 2, jobs))
            spy_idle.wait(60)
            print(f"  py-spy profile of 10 idle clients: {base / 'idle.collapsed'}")
        for clients in sorted({1, 10, args.clients}):
            idle = asyncio.run(measure(service.url, clients, args.seconds / 2, jobs))
            lines += report(f"idle, {clients} client(s)", idle)

        if args.idle_only:
            print("| phase | route | requests | p50 ms | p95 ms | p99 ms |\n|---|---|---:|---:|---:|---:|")
            print("\n".join(lines) + f"\nload {os.getloadavg()}")
            return
        large_jobs = [
            service.request("POST", "/api/jobs", OPERATOR, json={"server": "scratch", "range": large}).json()[
                "id"
            ]
            for _ in range(2)
        ]
        busy = Busy(service, jobs)
        busy.top_up()
        time.sleep(1.0)
        spy = None
        if args.py_spy and service.process is not None:
            profile = base / "busy.collapsed"
            spy = subprocess.Popen(
                [
                    args.py_spy,
                    "record",
                    "-p",
                    str(service.process.pid),
                    "-d",
                    str(int(args.seconds)),
                    "-r",
                    "50",
                    "-t",
                    "-f",
                    "raw",
                    "-o",
                    str(profile),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )

        async def busy_measure() -> dict[str, list[float]]:
            task = asyncio.create_task(measure(service.url, args.clients, args.seconds, jobs))
            samples = []
            while not task.done():
                await asyncio.to_thread(busy.top_up)
                states = [
                    (await asyncio.to_thread(service.request, "GET", f"/api/jobs/{j}")).json()["state"]
                    for j in large_jobs
                ]
                running = await asyncio.to_thread(busy.running)
                samples.append((states.count("running"), running))
                await asyncio.sleep(1.0)
            print(f"  while measuring, (jobs running, executions running) each second: {samples}")
            return await task

        lines += report(f"busy, {args.clients} clients", asyncio.run(busy_measure()))
        if spy is not None:
            spy.wait(60)
            print(f"  py-spy profile of the busy phase: {profile}")
        print(f"  {busy.runs} executions started in all")
        for job_id in large_jobs:
            state = wait(service, job_id)["state"]
            print(f"  large job {job_id[:8]}: {state}")
        print(
            f"\n{args.seconds:.0f} s busy, {args.seconds / 2:.0f} s idle per client count; load {os.getloadavg()}"
        )
        print("| phase | route | requests | p50 ms | p95 ms | p99 ms |")
        print("|---|---|---:|---:|---:|---:|")
        print("\n".join(lines))
    finally:
        if service is not None:
            service.stop()
        server.stop()


if __name__ == "__main__":
    main()
