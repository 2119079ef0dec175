"""Latency of the service's reads under load (issue 12's benchmark).

    .venv/bin/python bench/bench_service_load.py [--clients 100] [--seconds 20] [--generator wrk|httpx]

Starts a scratch MariaDB and a real `mysql-rollback serve` process (uvicorn), prepares five
flashback jobs (one per database, STATEMENTS single-row transactions each), then measures
`GET /api/jobs` and `GET /api/jobs/{id}` with `--clients` concurrent connections in a closed loop
(each sends its next request when the last one answered): first idle, then busy while two large
jobs (ROWS row changes each) and five dry-run executions (each on its own target name, so none
waits for another; each job's plan produced by a first dry run before the phases) run during the
whole window: one that ends is replaced at once, and the number running is sampled every second.

The load generator is wrk (C; Debian's `wrk`, installed with apt when missing), two processes
of half the connections each, one per route, so that each route has its own percentiles; or
`--generator httpx`, async httpx clients in this Python process (about 1 ms of CPU per request,
on the same cores as the service). Prints per phase and route the requests, p50/p95/p99, and
the CPU that the generator, the service process and the whole machine (nice 0, niced, system)
used in the window.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402
import psutil  # noqa: E402

from tests.support.app import OPERATOR, VIEWER, auth  # noqa: E402
from tests.support.mariadb import ScratchServer  # noqa: E402
from tests.support.service import Service, service_env  # noqa: E402

STATEMENTS = 5000  # per execution plan
ROWS = 500_000  # per large job: ~20 s under the busy load; one that ends is replaced
TARGETS = [f"x{i}" for i in range(1, 6)]
LARGE_JOBS = 2
EXECUTION_FINAL = ("succeeded", "failed", "conflict", "cancelled", "interrupted", "refused")
JOB_FINAL = ("succeeded", "failed", "cancelled")
LIST, ONE = "GET /api/jobs", "GET /api/jobs/{id}"
BOTH = "GET /api/jobs and /api/jobs/{id} in turn"
LUA = Path(__file__).with_name("wrk_polled.lua")


@dataclass
class Figures:
    requests: int
    seconds: float
    errors: int
    p50: float  # milliseconds
    p95: float
    p99: float


@dataclass
class Window:
    routes: dict[str, Figures]
    generator_cpu: float  # seconds of CPU the load generator used
    service_cpu: float  # seconds of CPU of the service process
    mariadb_cpu: float  # seconds of CPU of the scratch MariaDB (the executions' dry runs)
    machine: dict[str, float]  # share of the machine's CPU time: nice0, niced, system, idle
    load: float  # 1-minute load average at the end
    samples: list[tuple[int, int]] | None = None  # busy: (jobs running, executions running) per second


def servers(server: ScratchServer) -> str:
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


def ensure_wrk() -> str | None:
    """wrk's path; Debian's package is installed with apt when it is missing (as the test set-up
    installs its packages: scripts/lib/bootstrap.sh). None when that is not possible."""
    found = shutil.which("wrk")
    if found or shutil.which("apt-get") is None:
        return found
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [*sudo, "apt-get", "install", "-y", "-qq", "--no-install-recommends", "wrk"]
    print("bench: installing wrk with apt-get", file=sys.stderr)
    if subprocess.run(install, env=env, capture_output=True).returncode != 0:
        subprocess.run([*sudo, "apt-get", "update", "-qq"], env=env, capture_output=True)
        subprocess.run(install, env=env, capture_output=True)
    return shutil.which("wrk")


class Machine:
    """CPU time of the whole machine between two readings of /proc/stat, by kind."""

    def __init__(self) -> None:
        self.start = self._read()

    @staticmethod
    def _read() -> list[int]:
        with open("/proc/stat") as stat:
            return [int(v) for v in stat.readline().split()[1:]]

    def shares(self) -> dict[str, float]:
        d = [b - a for a, b in zip(self.start, self._read(), strict=True)]
        total = sum(d[:8]) or 1  # user nice system idle iowait irq softirq steal (guest is in user)
        return {
            "nice0": d[0] / total,
            "niced": d[1] / total,
            "system": (d[2] + d[5] + d[6]) / total,
            "idle": (d[3] + d[4]) / total,
        }


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _paths(route: str, job_ids: list[str]) -> list[str]:
    if route == LIST:
        return ["/api/jobs"]
    if route == ONE:
        return [f"/api/jobs/{j}" for j in job_ids]
    return [p for j in job_ids for p in ("/api/jobs", f"/api/jobs/{j}")]


def measure_wrk(wrk: str, url: str, clients: int, seconds: float, job_ids: list[str]) -> tuple[dict, float]:
    """Two wrk processes (one per route, half the connections each), or one taking turns between
    the routes for a single connection. Returns the figures per route and wrk's CPU seconds."""
    routes = {BOTH: clients} if clients == 1 else {LIST: clients // 2, ONE: clients - clients // 2}
    running = []
    for route, connections in routes.items():
        env = {**os.environ, "WRK_PATHS": " ".join(_paths(route, job_ids)), "WRK_TOKEN": VIEWER}
        command = [
            wrk,
            "-t1",
            f"-c{connections}",
            f"-d{seconds:.0f}s",
            "--timeout",
            "10s",
            "-s",
            str(LUA),
            url,
        ]
        running.append((route, subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)))
    figures, cpu = {}, 0.0
    for route, process in running:
        assert process.stdout is not None
        out = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        cpu += usage.ru_utime + usage.ru_stime
        line = next((x for x in out.splitlines() if x.startswith("RESULT ")), None)
        assert process.returncode == 0 and line is not None, out
        v = dict(item.split("=") for item in line.split()[1:])
        figures[route] = Figures(
            int(v["requests"]),
            float(v["seconds"]),
            int(v["socket_errors"]) + int(v["non_2xx"]),
            int(v["p50_us"]) / 1000,
            int(v["p95_us"]) / 1000,
            int(v["p99_us"]) / 1000,
        )
    return figures, cpu


async def _httpx(url: str, clients: int, seconds: float, job_ids: list[str]) -> dict[str, Figures]:
    times: dict[str, list[float]] = {LIST: [], ONE: []}
    errors = {LIST: 0, ONE: 0}
    deadline = time.monotonic() + 3600.0
    ready = asyncio.Event()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(n: int) -> None:
        async with httpx.AsyncClient(base_url=url, headers=auth(VIEWER), timeout=60, limits=limits) as http:
            await http.get("/health")  # the connection is open before the clock starts
            await ready.wait()
            i = n
            routes = [LIST, ONE] if n % 2 else [ONE, LIST]  # half the clients start with each route
            while time.monotonic() < deadline:
                for route in routes:
                    path = "/api/jobs" if route == LIST else f"/api/jobs/{job_ids[i % len(job_ids)]}"
                    started = time.perf_counter()
                    response = await http.get(path)
                    times[route].append(time.perf_counter() - started)
                    errors[route] += response.status_code != 200
                i += 1

    async def start() -> None:
        nonlocal deadline
        await asyncio.sleep(0.5 + clients / 100)  # every client connected
        deadline = time.monotonic() + seconds
        ready.set()

    await asyncio.gather(start(), *(client(n) for n in range(clients)))
    figures = {}
    for route, values in times.items():
        q = statistics.quantiles(values, n=100) if len(values) > 1 else [values[0] if values else 0.0] * 99
        figures[route] = Figures(
            len(values), seconds, errors[route], q[49] * 1000, q[94] * 1000, q[98] * 1000
        )
    return figures


def measure_httpx(url: str, clients: int, seconds: float, job_ids: list[str]) -> tuple[dict, float]:
    """httpx async clients in this process; its CPU (the busy phase's keeper thread included)."""
    before = time.process_time()
    figures = asyncio.run(_httpx(url, clients, seconds, job_ids))
    return figures, time.process_time() - before


class Busy:
    """Keeps LARGE_JOBS large jobs and one dry run per target going, in a thread: one more job
    waits in the queue, so a worker takes it the moment a job ends; an execution that ends is
    replaced within a quarter of a second (plus the time the keeper's requests take); `samples`
    holds (jobs running, executions running) about once a second."""

    def __init__(self, service: Service, jobs: list[str], large: dict[str, Any]):
        self.service = service
        self.jobs = jobs
        self.large = large
        self.executions: dict[str, str] = {}  # target -> location
        self.large_jobs: list[str] = []
        self.started_jobs = 0
        self.started_executions = 0
        self.samples: list[tuple[int, int]] = []
        self.sampling = False
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._keep, name="busy", daemon=True)
        self.error: BaseException | None = None

    def _state(self, path: str) -> str:
        return str(self.service.request("GET", path).json()["state"])

    def top_up(self) -> tuple[int, int]:
        jobs_running = 0
        for job_id in list(self.large_jobs):
            state = self._state(f"/api/jobs/{job_id}")
            if state in JOB_FINAL:
                assert state == "succeeded", self.service.request("GET", f"/api/jobs/{job_id}").json()
                self.large_jobs.remove(job_id)
            jobs_running += state == "running"
        while len(self.large_jobs) < LARGE_JOBS + 1:  # one waits in the queue: no gap when one ends
            created = self.service.request(
                "POST", "/api/jobs", OPERATOR, json={"server": "scratch", "range": self.large}
            )
            assert created.status_code == 202, created.text
            self.large_jobs.append(created.json()["id"])
            self.started_jobs += 1
        executions_running = 0
        for job_id, target in zip(self.jobs, TARGETS, strict=True):
            location = self.executions.get(target)
            if location is not None:
                state = self._state(location)
                if state not in EXECUTION_FINAL:
                    executions_running += state == "running"
                    continue
                assert state == "succeeded", self.service.request("GET", location).json()
            created = self.service.request(
                "POST", f"/api/jobs/{job_id}/executions", OPERATOR, json={"target": target}
            )
            assert created.status_code == 202, created.text
            self.executions[target] = created.headers["location"]
            self.started_executions += 1
        return jobs_running, executions_running

    def _keep(self) -> None:
        try:
            last = 0.0
            while not self.stop.is_set():
                counts = self.top_up()
                if self.sampling and time.monotonic() - last >= 1.0:
                    self.samples.append(counts)
                    last = time.monotonic()
                self.stop.wait(0.25)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            self.error = exc

    def start_and_settle(self, timeout: float = 120.0) -> None:
        """Return once every job and execution runs, the keeper thread started."""
        deadline = time.monotonic() + timeout
        while self.top_up() != (LARGE_JOBS, len(TARGETS)):
            assert time.monotonic() < deadline, "the busy work did not start"
            time.sleep(0.25)
        self.thread.start()

    def end(self) -> None:
        self.stop.set()
        self.thread.join(60)
        for job_id in self.large_jobs:
            self.service.request("POST", f"/api/jobs/{job_id}/cancel", OPERATOR)  # a queued one too
        if self.error is not None:
            raise self.error


def window(
    measure: Any,
    service: Service,
    mariadb: psutil.Process,
    clients: int,
    seconds: float,
    jobs: list[str],
    busy: Busy | None = None,
) -> Window:
    assert service.process is not None
    process = psutil.Process(service.process.pid)
    machine, service_before, mariadb_before = Machine(), _cpu(process), _cpu(mariadb)
    if busy is not None:
        busy.sampling = True
    routes, generator_cpu = measure(service.url, clients, seconds, jobs)
    if busy is not None:
        busy.sampling = False
    return Window(
        routes,
        generator_cpu,
        _cpu(process) - service_before,
        _cpu(mariadb) - mariadb_before,
        machine.shares(),
        os.getloadavg()[0],
        list(busy.samples) if busy is not None else None,
    )


def rows(phase: str, w: Window) -> list[str]:
    return [
        f"| {phase} | {route} | {f.requests} | {f.requests / f.seconds:.0f} | {f.p50:.1f} | {f.p95:.1f} | {f.p99:.1f} |"
        + (f" {f.errors} errors |" if f.errors else "")
        for route, f in w.routes.items()
    ]


def cpu_line(phase: str, w: Window, seconds: float) -> str:
    m = w.machine
    return (
        f"{phase}: CPU (one core = 100%) of the generator {w.generator_cpu / seconds:.0%}, the service "
        f"process {w.service_cpu / seconds:.0%}, MariaDB {w.mariadb_cpu / seconds:.0%}; "
        f"machine (2 cores = 100%): nice 0 {m['nice0']:.0%}, niced {m['niced']:.0%}, "
        f"system {m['system']:.0%}, idle {m['idle']:.0%}; load {w.load:.1f}"
    )


def spy(binary: str, pid: int, seconds: float, out: Path) -> subprocess.Popen:
    command = [binary, "record", "-p", str(pid), "-d", str(int(seconds)), "-r", "50", "--nonblocking", "-t"]
    return subprocess.Popen(
        [*command, "-f", "raw", "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--engine", default="spark", choices=("spark", "local"))
    parser.add_argument("--generator", default="wrk", choices=("wrk", "httpx"))
    parser.add_argument(
        "--access-log",
        action="store_true",
        help="keep the service's access log on (off: MYSQL_ROLLBACK_ACCESS_LOG)",
    )
    parser.add_argument("--idle-only", action="store_true", help="measure idle only (a quick comparison)")
    parser.add_argument(
        "--py-spy", metavar="BIN", help="record the service with this py-spy during the busy phase"
    )
    args = parser.parse_args()
    measure: Any = measure_httpx
    generator = "httpx async clients in the bench's Python process"
    if args.generator == "wrk":
        wrk = ensure_wrk()
        if wrk is None:
            print("bench: no wrk (apt-get could not install it): the httpx generator measures instead")
        else:
            generator = (
                f"wrk ({subprocess.run([wrk, '-v'], capture_output=True, text=True).stdout.split()[1]})"
            )

            def measure(url: str, clients: int, seconds: float, jobs: list[str]) -> tuple[dict, float]:
                return measure_wrk(wrk, url, clients, seconds, jobs)

    server = ScratchServer().start()
    base = Path(tempfile.mkdtemp(prefix="bench-service-"))
    service = None
    busy = None
    try:
        small, large = prepare(server)
        env = service_env(
            base / "data",
            servers(server),
            MYSQL_ROLLBACK_ENGINE=args.engine,
            MYSQL_ROLLBACK_EXECUTION_WORKERS=str(len(TARGETS)),
            MYSQL_ROLLBACK_WORKERS=str(LARGE_JOBS),
            MYSQL_ROLLBACK_ACCESS_LOG="true" if args.access_log else "false",
        )
        env.pop("MYSQL_ROLLBACK_WARM_SPARK")  # the service's default: Spark warm from the start
        service = Service(base / "data", env, base / "service.log").start()
        assert service.process is not None and server.pid is not None
        mariadb = psutil.Process(server.pid)
        jobs = []
        for r in small:
            created = service.request("POST", "/api/jobs", OPERATOR, json={"server": "scratch", "range": r})
            job = service.wait(created.json()["id"], timeout=600)
            assert job["state"] == "succeeded" and job["statements"] == STATEMENTS, job
            jobs.append(job["id"])
        # Each job's plan is produced on first need: one dry run each before the phases, so that the
        # busy window holds the executions' statements rather than that one-off production.
        for job_id, target in zip(jobs, TARGETS, strict=True):
            dry = service.execute(job_id, OPERATOR, {"target": target}, timeout=600)
            assert dry["state"] == "succeeded", dry
        print(
            f"service pid {service.process.pid}, engine {args.engine}, {os.cpu_count()} CPUs, "
            f"generator: {generator}, access log {'on' if args.access_log else 'off'}"
        )
        lines, cpu = [], []
        for clients in sorted({1, 10, args.clients}):
            w = window(measure, service, mariadb, clients, args.seconds / 2, jobs)
            lines += rows(f"idle, {clients} client(s)", w)
            cpu.append(cpu_line(f"idle, {clients} client(s)", w, args.seconds / 2))

        if not args.idle_only:
            busy = Busy(service, jobs, large)
            busy.start_and_settle()
            profile = base / "busy.collapsed"
            spying = spy(args.py_spy, service.process.pid, args.seconds, profile) if args.py_spy else None
            w = window(measure, service, mariadb, args.clients, args.seconds, jobs, busy)
            busy.end()
            phase = f"busy ({LARGE_JOBS} jobs, {len(TARGETS)} executions), {args.clients} clients"
            lines += rows(phase, w)
            cpu.append(cpu_line(phase, w, args.seconds))
            assert w.samples is not None
            print(f"  (jobs running, executions running) about every second of the busy window: {w.samples}")
            print(
                f"  fewest running at a sample: {min(s[0] for s in w.samples)} jobs, "
                f"{min(s[1] for s in w.samples)} executions; started in all: {busy.started_jobs} jobs, "
                f"{busy.started_executions} executions"
            )
            if spying is not None:
                spying.wait(60)
                print(f"  py-spy profile of the busy phase: {profile}")
        print(f"\n{args.seconds:.0f} s busy, {args.seconds / 2:.0f} s idle per client count")
        print("| phase | route | requests | per second | p50 ms | p95 ms | p99 ms |")
        print("|---|---|---:|---:|---:|---:|---:|")
        print("\n".join(lines))
        print("\n".join(cpu))
    finally:
        if service is not None:
            service.stop()
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
