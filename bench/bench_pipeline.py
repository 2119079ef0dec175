"""Flashback script generation, end to end, beside MariaDB's own tools on the same binlogs (issue 6).

    .venv/bin/python bench/bench_pipeline.py [--rows 1000000] [--keep DIR] [--reuse DIR] [--no-scaling]

Starts a scratch MariaDB (binlog_row_metadata=FULL, so the schema comes from the binlog) and writes
each workload into a binlog file of its own:

    seed    the steps of the seed document's benchmark (000): t1 (32,550 rows) updated, t3 filled
            and updated, except the ALTERs (a flashback range may not cross them)
    mixed   --rows row changes: 40% INSERT, 40% UPDATE, 20% DELETE in transactions of 1,000-row
            statements, over int, bigint unsigned, decimal, varchar utf8mb4, datetime(6), enum,
            blob and long JSON text
    delete  one `DELETE` of --rows rows: a single transaction
    repeat  (with --net only) a table of --rows / 10 rows updated in full ten times, 1,000 rows a
            transaction: every key changed in every tenth of the file, the case where --net's
            partitions cannot write their share alone and the driver folds

then times on each file, in the same run: our complete flashback script (Spark engine warm, Spark
engine cold from process start, local engine with the compiled core and with the pure-Python
fallback, MYSQL_ROLLBACK_PURE_PYTHON=1), `mariadb-binlog --flashback` and
`mariadb-binlog -v --base64-output=decode-rows`, each writing to a file. It prints rows/s, MB/s,
CPU seconds (user + system of the process and its children, or of every process of its tree as
last sampled when that is more: the Spark JVM is not a waited-for child; steadier than wall time
on a loaded machine), peak RSS (the driver process, and all its processes: JVM and Python workers), the
1-minute load average when the run ended, and our time divided by `mariadb-binlog --flashback`'s.
Decode only (rows decoded in this process, one core, no rendering) is timed for both hot paths.
With scaling on, bench_parallel.py then runs the mixed file with one slot and with two: Spark
local[1] and local[2] warm, the local engine with one process and with two forked workers, and prints
wall and CPU seconds of the whole process tree by kind, the partitions' timeline and the best
speed-up two cores allow.
`--instructions` also counts the instructions (valgrind's callgrind: independent of the load) of
the local engine on both paths and of `mariadb-binlog --flashback` on each file (slow: minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PYTHON = sys.executable
SCALING_RUNS = 3  # rounds of bench_parallel's one-slot / two-slot runs, the configurations taking turns


# ---- workloads ----------------------------------------------------------------------------------------

MIXED_DDL = """CREATE TABLE bench.mixed (
  id INT PRIMARY KEY, big BIGINT UNSIGNED, amount DECIMAL(12,2), name VARCHAR(64) CHARACTER SET utf8mb4,
  created DATETIME(6), state ENUM('new','paid','shipped','void'), payload BLOB, doc LONGTEXT)"""
SEED_T1 = 32_550


def _file_of(server: Any, statements: list[str], database: str) -> Path:
    rng = server.run_sql(statements, database=database, own_file=True)
    assert len(rng.files) == 1, rng
    return Path(rng.files[0])


def write_mixed(server: Any, rows: int) -> Path:
    """The `mixed` workload (`rows` row changes: 40% INSERT, 40% UPDATE, 20% DELETE over every column
    of MIXED_DDL, 2,500 a transaction) in a binlog file of its own."""
    server.run_sql(["CREATE DATABASE IF NOT EXISTS bench", "DROP TABLE IF EXISTS bench.mixed"])
    server.run_sql([MIXED_DDL], database="bench")
    batch = 1000
    statements = []
    next_id = changes = 0
    while changes < rows:  # per transaction: batch inserts, batch updates, batch / 2 deletes
        changes += batch * 5 // 2
        lo, hi = next_id + 1, next_id + batch
        statements += [
            "BEGIN",
            "INSERT INTO mixed SELECT seq, seq * 7919, seq / 100, CONCAT('naïve ☃ name ', seq), "
            "TIMESTAMPADD(MICROSECOND, seq * 1234567, '2024-01-01'), 1 + seq % 4, REPEAT(CHAR(seq % 256), 40), "
            f'CONCAT(\'{{"id": \', seq, \', "tags": ["a", "b"], "note": "\', REPEAT("x", seq % 50), \'"}}\') '
            f"FROM seq_{lo}_to_{hi}",
            f"UPDATE mixed SET amount = amount + 1, state = 'paid', name = CONCAT(name, '!') WHERE id BETWEEN {lo} AND {hi}",
            f"DELETE FROM mixed WHERE id BETWEEN {lo} AND {lo + batch // 2 - 1}",
        ]
        statements.append("COMMIT")
        next_id = hi
    return _file_of(server, statements, "bench")


def write_repeat(server: Any, rows: int) -> Path:
    """The `repeat` workload: `rows` / 10 rows (like MIXED_DDL's), each updated ten times, in passes over
    the table of 1,000-row transactions, in a binlog file of its own."""
    count = rows // 10
    server.run_sql(
        [
            "DROP TABLE IF EXISTS repeated",
            "CREATE TABLE repeated LIKE mixed",
            f"INSERT INTO repeated SELECT seq, seq * 3, seq / 7, CONCAT('row ', seq), "
            f"TIMESTAMPADD(SECOND, seq, '2024-01-01'), 1 + seq % 4, REPEAT('p', 20), NULL FROM seq_1_to_{count}",
        ],
        database="bench",
    )
    statements = []
    for turn in range(10):
        for lo in range(1, count + 1, 1000):
            statements += [
                "BEGIN",
                f"UPDATE repeated SET amount = amount + 1, name = CONCAT(name, '{turn}') "
                f"WHERE id BETWEEN {lo} AND {lo + 999}",
                "COMMIT",
            ]
    return _file_of(server, statements, "bench")


def generate(server: Any, rows: int, out: Path) -> dict[str, Path]:
    """The three workloads' binlog files, copied into `out`."""
    numbers = "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {count}) "
    server.run_sql(["CREATE DATABASE IF NOT EXISTS seed", "CREATE DATABASE IF NOT EXISTS bench"])
    server.run_sql(
        [
            "SET SESSION max_recursive_iterations = 100000",
            "CREATE TABLE t1 (id INTEGER, c1 CHAR(200), c2 CHAR(200), c3 CHAR(200), last_modified TIMESTAMP(6))",
            "ALTER TABLE t1 MODIFY COLUMN id INT AUTO_INCREMENT PRIMARY KEY",
            "INSERT INTO t1 (c1, c2, c3, last_modified) "
            + numbers.format(count=SEED_T1)
            + "SELECT CONCAT('a', i), 'b', 'c', TIMESTAMP'2024-01-01 00:00:00' + INTERVAL i SECOND FROM n",
            "CREATE TABLE t3 (id INTEGER AUTO_INCREMENT PRIMARY KEY, flag CHAR(1), "
            "c1 CHAR(200) DEFAULT 'a', c2 CHAR(200) DEFAULT 'b', c3 CHAR(200) DEFAULT 'c')",
        ],
        database="seed",
    )
    files = {
        "seed": _file_of(
            server,
            [
                "UPDATE t1 SET last_modified = last_modified + INTERVAL 1 SECOND",
                "INSERT INTO t3 (flag) SELECT 'x' FROM t1",
                "UPDATE t3 SET flag = 'y'",
                "UPDATE t3 SET c1 = 'c', c2 = 'b', c3 = 'a'",
                "UPDATE t3 SET flag = 'z'",
            ],
            "seed",
        )
    }
    files["mixed"] = write_mixed(server, rows)
    server.run_sql(
        [
            "CREATE TABLE orders LIKE mixed",
            f"INSERT INTO orders SELECT seq, seq * 31, seq / 7, CONCAT('order ', seq), "
            f"TIMESTAMPADD(SECOND, seq, '2024-01-01'), 1 + seq % 4, REPEAT('p', 20), NULL FROM seq_1_to_{rows}",
        ],
        database="bench",
    )
    files["delete"] = _file_of(server, ["DELETE FROM orders"], "bench")
    files["repeat"] = write_repeat(server, rows)
    out.mkdir(parents=True, exist_ok=True)
    kept = {}
    for name, path in files.items():
        target = out / f"{name}.binlog"
        shutil.copyfile(path, target)
        kept[name] = target
    return kept


# ---- measuring -------------------------------------------------------------------------------------------


def _rss_split(pid: int) -> tuple[int, int]:
    """(anonymous, file-backed) resident bytes of a process (/proc/PID/status RssAnon, RssFile):
    a mapped binlog counts in the second, the process's own allocations in the first."""
    split = {"RssAnon:": 0, "RssFile:": 0}
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            key, _, rest = line.partition("\t")
            if key in split:
                split[key] = int(rest.split()[0]) * 1024
    return split["RssAnon:"], split["RssFile:"]


class Sampler:
    """Peak RSS of a process and of its whole tree, sampled while it runs; the driver's anonymous
    and file-backed parts at its own peak; the CPU seconds each process of the tree was last seen
    to have used."""

    def __init__(self, pid: int, interval: float = 0.02):
        self.root = psutil.Process(pid)
        self.interval = interval
        self.driver = 0
        self.driver_anon = self.driver_file = 0  # at the driver's peak
        self.tree = 0
        self._cpu: dict[int, float] = {}
        self._kind: dict[int, str] = {}  # driver | jvm | workers
        self.jvm = 0  # peak RSS of the Java processes (the Spark JVM)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def tree_cpu(self) -> float:
        return sum(self._cpu.values())

    def cpu_by_kind(self) -> dict[str, float]:
        """CPU seconds of the driver, the JVM and the other processes (Python workers)."""
        split = {"driver": 0.0, "jvm": 0.0, "workers": 0.0}
        for pid, seconds in self._cpu.items():
            split[self._kind[pid]] += seconds
        return split

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                procs = [self.root, *self.root.children(recursive=True)]
                total = jvm = 0
                for proc in procs:
                    try:
                        with proc.oneshot():
                            rss = proc.memory_info().rss
                            times = proc.cpu_times()
                            name = proc.name()
                        split = _rss_split(proc.pid) if proc.pid == self.root.pid else (0, 0)
                    except (psutil.Error, OSError):
                        continue
                    self._cpu[proc.pid] = times.user + times.system
                    kind = "driver" if proc.pid == self.root.pid else "jvm" if name == "java" else "workers"
                    self._kind[proc.pid] = kind
                    jvm += rss if kind == "jvm" else 0
                    total += rss
                    if proc.pid == self.root.pid and rss > self.driver:
                        self.driver = rss
                        self.driver_anon, self.driver_file = split
                self.tree = max(self.tree, total)
                self.jvm = max(self.jvm, jvm)
            except psutil.Error:
                pass
            self._stop.wait(self.interval)


@dataclass
class Timing:
    seconds: float
    driver_mb: float
    tree_mb: float
    cpu: float | None = None  # user + system seconds of the process and its children
    load: float = 0.0  # the 1-minute load average when the run ended
    driver_anon_mb: float = 0.0  # the driver's anonymous and file-backed RSS at its peak
    driver_file_mb: float = 0.0
    stderr: str = ""
    jvm_mb: float = 0.0  # peak RSS of the Spark JVM
    cpu_split: dict[str, float] | None = None  # CPU seconds of the driver, the JVM, the workers


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_process(cmd: list[str], stdout: Path | None = None, env: dict[str, str] | None = None) -> Timing:
    if "-o" in cmd:
        # The output a previous run left is removed before the clock starts, as `stdout` is truncated
        # before it: replacing it would free its pages inside the timing (0.1-0.3 s for 250 MB here).
        Path(cmd[cmd.index("-o") + 1]).unlink(missing_ok=True)
    with open(stdout or os.devnull, "wb") as out:
        cpu = _children_cpu()
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, env=env)
        with Sampler(proc.pid) as sampler:
            _, err = proc.communicate()
        seconds = time.perf_counter() - start
        cpu = _children_cpu() - cpu
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {err.decode(errors='replace')[-2000:]}")
    # A process its parent does not wait for (the Spark JVM) is missing from the children's
    # rusage, not from the sampled tree; the sample misses a process's last 20 ms.
    return Timing(
        seconds,
        sampler.driver / 2**20,
        sampler.tree / 2**20,
        max(cpu, sampler.tree_cpu),
        os.getloadavg()[0],
        sampler.driver_anon / 2**20,
        sampler.driver_file / 2**20,
        err.decode(errors="replace"),
        sampler.jvm / 2**20,
        sampler.cpu_by_kind(),
    )


# The CLI runs as installed packages run: from compiled bytecode (pip writes it at install time; an
# editable install under PYTHONDONTWRITEBYTECODE=1 would compile every module in every run, about
# 0.15 s of CPU). The bytecode goes to a cache of this run (PYTHONPYCACHEPREFIX), warmed first.
CHILD_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
PURE_ENV = {**CHILD_ENV, "MYSQL_ROLLBACK_PURE_PYTHON": "1"}


def best(
    repeat: int, cmd: list[str], stdout: Path | None = None, env: dict[str, str] | None = None
) -> Timing:
    """The fastest of `repeat` runs of cmd (every tool of the table gets the same number of runs)."""
    return min((timed_process(cmd, stdout, env) for _ in range(repeat)), key=lambda t: t.seconds)


def warm_bytecode(cache: Path) -> None:
    CHILD_ENV["PYTHONPYCACHEPREFIX"] = PURE_ENV["PYTHONPYCACHEPREFIX"] = str(cache)
    subprocess.run(
        [PYTHON, "-m", "rollback.cli.commands", "--version"], env=CHILD_ENV, check=True, capture_output=True
    )


def instructions(cmd: list[str], env: dict[str, str] | None = None) -> int:
    """Instructions the command executes (callgrind's `Collected`), output thrown away."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        check=True,
    )
    for line in done.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1])
    raise RuntimeError(f"callgrind printed no count for {cmd}")


def decode_only(path: Path, compiled: bool) -> tuple[int, float, float]:
    """(row images decoded, seconds, CPU seconds) in this process, without rendering: the hot
    path's decode."""
    from rollback.base import hotpath
    from rollback.binlog.decode import StreamState, decode_stream, rows_batch
    from rollback.binlog.reader import BinlogFile
    from rollback.binlog.rows import RowsEvent

    saved = hotpath.CORE
    if compiled and saved is None:
        raise RuntimeError(f"the compiled core is not active: {hotpath.describe()}")
    hotpath.CORE = saved if compiled else None
    try:
        start = time.perf_counter()
        cpu = time.process_time()
        rows = 0
        with BinlogFile(path) as binlog:
            state = StreamState(binlog.facts, path=binlog.path)
            for decoded in decode_stream(binlog.buf, state, 4, binlog.size):
                if isinstance(decoded.event, RowsEvent):
                    rows += len(rows_batch(decoded, decoded.event, state).rows)
        return rows, time.perf_counter() - start, time.process_time() - cpu
    finally:
        hotpath.CORE = saved


class Runner:
    """A long-lived Python process running jobs on request: the warm Spark engine."""

    def __init__(self, master: str | None = None):
        env = dict(os.environ)
        if master:
            env["MYSQL_ROLLBACK_SPARK_MASTER"] = master
        self.proc = subprocess.Popen(
            [PYTHON, __file__, "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )

    def job(self, **request: Any) -> tuple[dict[str, Any], Timing]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with Sampler(self.proc.pid) as sampler:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            reply = json.loads(self.proc.stdout.readline())
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply, Timing(
            reply["seconds"], sampler.driver / 2**20, sampler.tree / 2**20, load=os.getloadavg()[0]
        )

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


def serve() -> None:
    """--serve: read job requests (JSON lines) from stdin, reply with the report and the seconds taken."""
    from rollback import Filters, Options, RangeSpec, generate

    for line in sys.stdin:
        request = json.loads(line)
        try:
            start = time.perf_counter()
            report = generate(
                RangeSpec([request["file"]]),
                Filters(),
                Options(engine=request["engine"], partition_bytes=request.get("partition_bytes")),
                request["out"],
            )
            seconds = time.perf_counter() - start
            reply = {
                "seconds": seconds,
                "statements": report.statements,
                "partitions": report.partitions,
                "engine": report.engine,
            }
        except Exception as exc:  # reported to the parent
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def cli(file: Path, out: Path, engine: str) -> list[str]:
    return [PYTHON, "-m", "rollback.cli.commands", "flashback", str(file), "--engine", engine, "-o", str(out)]


def row_changes(path: Path) -> int:
    from rollback import Filters, Options, RangeSpec, generate

    with tempfile.TemporaryDirectory() as tmp:
        report = generate(
            RangeSpec([str(path)]), Filters(), Options(mode="changes", engine="local"), Path(tmp) / "h.sql"
        )
    return sum(report.counts.values())


# ---- the run ---------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rows", type=int, default=1_000_000, help="row changes of the mixed and delete workloads"
    )
    parser.add_argument("--keep", type=Path, help="keep the generated binlogs in this directory")
    parser.add_argument("--reuse", type=Path, help="time the binlogs a previous --keep left here")
    parser.add_argument("--no-scaling", action="store_true", help="skip the local[1] / local[2] runs")
    parser.add_argument(
        "--repeat", type=int, default=2, help="runs of every tool on every file; the table has the fastest"
    )
    parser.add_argument("--generate-only", action="store_true", help="write the binlogs (--keep) and stop")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count instructions with valgrind (local engine, both hot paths, mariadb-binlog --flashback)",
    )
    parser.add_argument(
        "--net",
        action="store_true",
        help="only the local engine's plain script against its --net script (issue 28), on each file",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    work = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    try:
        if args.reuse:
            names = ("seed", "mixed", "delete", "repeat") if args.net else ("seed", "mixed", "delete")
            files = {name: args.reuse / f"{name}.binlog" for name in names}
        else:
            from tests.support.mariadb import ScratchServer, ServerOptions

            server = ScratchServer(options=ServerOptions(row_metadata="FULL")).start()
            try:
                started = time.perf_counter()
                files = generate(server, args.rows, args.keep or work / "binlogs")
                print(f"workloads generated in {time.perf_counter() - started:.0f} s", file=sys.stderr)
            finally:
                server.stop()
            if args.generate_only:
                return
        if args.net:
            measure_net(files, work, args.repeat)
            return
        files.pop("repeat", None)  # --net's workload alone
        measure(files, work, scaling=not args.no_scaling, counting=args.instructions, repeat=args.repeat)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(
    files: dict[str, Path], work: Path, scaling: bool, counting: bool = False, repeat: int = 2
) -> None:
    from rollback import hot_path

    print(f"hot path: {hot_path()}; load average at the start: {os.getloadavg()[0]:.1f}", file=sys.stderr)
    warm_bytecode(work / "pycache")
    runner = Runner()
    results: list[tuple[str, str, int, int, Timing]] = []
    decodes: list[tuple[str, int, bool, int, float, float, float]] = []
    counts: list[tuple[str, int, int, int]] = []
    try:
        runner.job(
            file=str(files["seed"]), out=str(work / "warmup.sql"), engine="spark", partition_bytes=1 << 20
        )
        for name, path in files.items():
            size = path.stat().st_size
            rows = row_changes(path)
            print(f"{name}: {size / 1e6:.1f} MB, {rows:,} row changes", file=sys.stderr)
            warm_runs = [
                runner.job(file=str(path), out=str(work / f"{name}.warm.sql"), engine="spark")
                for _ in range(repeat)
            ]
            reply = warm_runs[0][0]
            assert reply["statements"] <= rows
            runs = [
                (
                    f"mysql-rollback, Spark warm ({reply['partitions']} partitions)",
                    min((timing for _reply, timing in warm_runs), key=lambda t: t.seconds),
                ),
                (
                    "mysql-rollback, Spark cold",
                    best(repeat, cli(path, work / f"{name}.cold.sql", "spark"), env=CHILD_ENV),
                ),
                (
                    "mysql-rollback, local engine",
                    best(repeat, cli(path, work / f"{name}.local.sql", "local"), env=CHILD_ENV),
                ),
                (
                    "mysql-rollback, local engine, pure Python",
                    best(repeat, cli(path, work / f"{name}.pure.sql", "local"), env=PURE_ENV),
                ),
                (
                    "mariadb-binlog --flashback",
                    best(repeat, ["mariadb-binlog", "--flashback", str(path)], work / f"{name}.mfb"),
                ),
                (
                    "mariadb-binlog -v --base64-output=decode-rows",
                    best(
                        repeat,
                        ["mariadb-binlog", "-v", "--base64-output=decode-rows", str(path)],
                        work / f"{name}.mdr",
                    ),
                ),
            ]
            same = (work / f"{name}.warm.sql").read_bytes() == (work / f"{name}.local.sql").read_bytes()
            assert same, f"{name}: the Spark and local scripts differ"
            same = (work / f"{name}.pure.sql").read_bytes() == (work / f"{name}.local.sql").read_bytes()
            assert same, f"{name}: the compiled and pure-Python scripts differ"
            for compiled in (True, False):
                decoded, seconds, cpu = decode_only(path, compiled)
                decodes.append((name, size, compiled, decoded, seconds, cpu, os.getloadavg()[0]))
            if counting:
                local = cli(path, work / f"{name}.count.sql", "local")
                counts.append(
                    (
                        name,
                        instructions(local, CHILD_ENV),
                        instructions(local, PURE_ENV),
                        instructions(["mariadb-binlog", "--flashback", str(path)]),
                    )
                )
            for label, timing in runs:
                results.append((name, label, size, rows, timing))
    finally:
        runner.close()
    report(results, decodes, counts)
    if scaling:
        # one slot against two, both engines, on the mixed file: bench_parallel.py's measures and bounds
        import bench_parallel

        print("\n### One slot against two on the mixed file (bench_parallel.py)\n")
        configs = bench_parallel.measure(
            [str(files["mixed"])], SCALING_RUNS, ["spark", "local"], ["local[1]", "local[2]"]
        )
        print("\n".join(bench_parallel.report(configs, SCALING_RUNS)))


def measure_net(files: dict[str, Path], work: Path, repeat: int) -> None:
    """The local engine's plain script against its --net script (one statement per row, folded in
    the driver), on each file: wall and CPU seconds, peak RSS of the process tree, statements."""
    warm_bytecode(work / "pycache")
    print(f"load average at the start: {os.getloadavg()[0]:.1f}", file=sys.stderr)
    print(
        "| workload | row changes | plain s (CPU s) | --net s (CPU s) | --net over plain | plain / --net MB | --net statements |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, path in files.items():
        rows = row_changes(path)
        plain = best(repeat, cli(path, work / f"{name}.plain.sql", "local"), env=CHILD_ENV)
        net_script = work / f"{name}.net.sql"
        net = best(repeat, [*cli(path, net_script, "local"), "--net"], env=CHILD_ENV)
        with open(net_script, encoding="utf-8") as f:
            statements = sum(1 for line in f if line[:1] not in ("-", "S", "B", "C", "\n"))
        print(
            f"| {name} | {rows:,} | {plain.seconds:.1f} ({plain.cpu or 0:.1f}) | {net.seconds:.1f} ({net.cpu or 0:.1f}) "
            f"| {(net.seconds / plain.seconds - 1) * 100:+.0f}% | {plain.tree_mb:.0f} / {net.tree_mb:.0f} "
            f"| {statements:,} |"
        )


def report(
    results: list[tuple[str, str, int, int, Timing]],
    decodes: list[tuple[str, int, bool, int, float, float, float]],
    counts: list[tuple[str, int, int, int]],
) -> None:
    cpu = platform.processor() or platform.machine()
    print(
        f"\n{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores ({cpu}), "
        f"{psutil.virtual_memory().total / 2**30:.0f} GB RAM, Python {platform.python_version()}"
    )
    print(
        "\n| workload | tool | seconds | rows/s | MB/s | CPU s | peak RSS driver / all (MB) | load | "
        "÷ mariadb-binlog --flashback |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    reference = {
        name: t.seconds for name, label, _s, _r, t in results if label == "mariadb-binlog --flashback"
    }
    for name, label, size, rows, t in results:
        print(
            f"| {name} ({size / 1e6:.0f} MB, {rows:,} rows) | {label} | {t.seconds:.2f} | {rows / t.seconds:,.0f} "
            f"| {size / 1e6 / t.seconds:.1f} | {'-' if t.cpu is None else f'{t.cpu:.2f}'} "
            f"| {t.driver_mb:.0f} / {t.tree_mb:.0f} | {t.load:.1f} | {t.seconds / reference[name]:.2f} |"
        )
    cpu_reference = {
        name: t.cpu for name, label, _s, _r, t in results if label == "mariadb-binlog --flashback" and t.cpu
    }
    print("\nCPU seconds ÷ mariadb-binlog --flashback's (the same ratio, steadier under load):")
    for name, label, _size, _rows, t in results:
        if t.cpu is not None and name in cpu_reference and label.startswith("mysql-rollback, local"):
            print(f"- {name}, {label}: {t.cpu / cpu_reference[name]:.2f}")
    print(
        "\n| workload | decode only (one core, no rendering) | row images | seconds | rows/s "
        "| rows per CPU second | MB/s | load |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, size, compiled, decoded, seconds, cpu_seconds, load in decodes:
        path = "compiled core" if compiled else "pure Python"
        print(
            f"| {name} | {path} | {decoded:,} | {seconds:.2f} | {decoded / seconds:,.0f} "
            f"| {decoded / cpu_seconds:,.0f} | {size / 1e6 / seconds:.1f} | {load:.1f} |"
        )
    if counts:
        print(
            "\n| workload | instructions (callgrind), G | local engine, compiled | local engine, pure Python "
            "| mariadb-binlog --flashback | compiled ÷ mariadb-binlog |"
        )
        print("|---|---|---:|---:|---:|---:|")
        for name, compiled_count, pure_count, reference_count in counts:
            print(
                f"| {name} | | {compiled_count / 1e9:.2f} | {pure_count / 1e9:.2f} | {reference_count / 1e9:.2f} "
                f"| {compiled_count / reference_count:.2f} |"
            )


if __name__ == "__main__":
    main()
