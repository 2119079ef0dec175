"""The verified apply against `mariadb-binlog --flashback FILE | mariadb` on the same server (issue 24).

    .venv/bin/python bench/bench_apply.py                  # the issue's 100k-row incident
    .venv/bin/python bench/bench_apply.py --rows 1000000   # the 1M-row case

Starts one scratch MariaDB and gives every path its own identical database: a table
`t (id INT PRIMARY KEY, a INT, b VARCHAR(64), c DATETIME(3), d DECIMAL(12,2), KEY(a))` of `--rows`
rows, then the incident (`DELETE ... WHERE id % 2 = 0`, then `UPDATE ... SET a = a + 1, b = 'x'
WHERE id % 3 = 0`) in a binlog file of its own. `mysql-rollback flashback FILE -o script --plan plan`
writes each database's script and plan (not timed). Then, back to back, it times the reference
(`mariadb-binlog --flashback FILE | mariadb`), the server's own floor for these row changes (the same rows
checked and written by two set-based statements from copies made in the server before the clock starts:
`staged`), the floor of any apply that keeps the plan's checks (the
reverse UPDATEs' and DELETEs' checks as locking reads of 50 rows, then the reference's own row events:
`checks_then_events`), the apply's own queries through the `mariadb` client (`own_statements`) and from
Python (apply_child.py's `send`: built before the clock starts, sent by a fresh interpreter through
PyMySQL, each result read: what a verified apply from Python cannot go under, with no preflight and no
client work), the script through the `mariadb` client (one row a statement, and with
`--rows-per-statement 1000`), as many statements that do nothing (the server's and the client's own floor
for the one-row script), and the verified apply (`execute_plan` in a process of its own, as the CLI runs
it: apply_child.py's `apply`): the dry run, the commit in one transaction, the commit per original
transaction, and the commit over two connections (`--parallel 2`, all or nothing through XA:
`execute_parallel`), the strict and the merge apply (`--merge`: locking reads of the changed columns,
then the writes) of a `--net` plan; then the service execution: a `mysql-rollback serve` process (started
before, its job over the server's range run with the plan among its outputs, neither timed) and `POST
/api/jobs/{id}/executions` (a one-transaction commit), timed from the POST to the first GET that sees it
succeeded (one HTTP client, its connection kept open, polling every 20 ms); its client CPU is the service
process tree's (the API and the execution's process). Each restore is checked against the table's
checksum from before the incident. Peak RSS is that of the timed process tree (not measured for the
service).
"server CPU s" is the scratch MariaDB's own CPU during the path: the server's share of its time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))

from bench.bench_pipeline import CHILD_ENV, Timing, timed_process  # noqa: E402

# the databases: one for each path that changes the table
# (the dry run's too: run on the commit's, it left that table's pages in the buffer pool for the commit,
# which no other path had)
PATHS = (
    "reference",
    "staged",
    "checked",
    "own",
    "sent",
    "script",
    "joined",
    "dry",
    "one",
    "per",
    "par2",
    "net",
    "merge",
    "service",
)
NET = ("net", "merge")  # their plans are written with --net (one statement per row)
POLL_SECONDS = 0.02  # the service path's GETs of the execution's record
JOINED = "1000"  # --rows-per-statement of the `joined` script
# the incident: the rows it deletes, and those it then updates (the staged floor copies them before it)
DELETED = "id % 2 = 0"
UPDATED = "id % 3 = 0"
INCIDENT = [f"DELETE FROM t WHERE {DELETED}", f"UPDATE t SET a = a + 1, b = 'x' WHERE {UPDATED}"]
# the staged floor's timed statements (staged): the rows deleted put back, then the rows updated set back
# where each still holds what INCIDENT's UPDATE left (its checks: every column compared, as the apply's)
STAGED_WRITES = """USE staged;
START TRANSACTION;
INSERT INTO t SELECT * FROM put_back;
UPDATE set_back STRAIGHT_JOIN t FORCE INDEX (PRIMARY) ON t.id = set_back.id AND t.a <=> set_back.a + 1
  AND CAST(t.b AS BINARY) <=> 'x' AND t.c <=> set_back.c AND t.d <=> set_back.d
  SET t.a = set_back.a, t.b = set_back.b;
COMMIT;
"""
BENCH_SERVER = ("--max-allowed-packet=1G", "--innodb-buffer-pool-size=4G")  # the scratch server's arguments
CHILD = Path(__file__).resolve().parent / "apply_child.py"  # the timed applies' own interpreter
TABLE = "CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(64), c DATETIME(3), d DECIMAL(12,2), KEY(a))"


def fill(rows: int) -> str:
    """The statement that gives TABLE its `rows` rows (ids 1 to rows)."""
    return (
        "INSERT INTO t SELECT seq, seq * 7, CONCAT('name ', seq), "
        f"TIMESTAMPADD(MICROSECOND, seq * 1234000, '2024-01-01'), seq / 100 FROM seq_1_to_{rows}"
    )


def mariadb_client(server: object, *flags: str) -> str:
    """The `mariadb` client's command line for the scratch server (a shell's, `< script` after it)."""
    where = f"-h {server.host} -P {server.port} -u {server.user} -p{server.password}"  # type: ignore[attr-defined]
    return " ".join(["mariadb --no-defaults", *flags, where])


def cpu_clock(server: object) -> Callable[[], float]:
    """The scratch server's CPU seconds so far (user and system), read from /proc at each call."""
    import psutil

    assert server.pid is not None  # type: ignore[attr-defined]
    mariadbd = psutil.Process(server.pid)  # type: ignore[attr-defined]

    def seconds() -> float:
        times = mariadbd.cpu_times()
        return float(times.user + times.system)

    return seconds


def checks_then_events(plan: Path, events: Path, database: str) -> str:
    """The floor of any apply that keeps the plan's checks: each row the reverse UPDATEs and DELETEs
    change read under lock and compared with the image the binlog left, 50 rows a read through the
    primary key (the verified apply's combined form), then the reference's own row events for the writes
    (a re-insert needs no read there: its row event fails on a key that is taken)."""
    import orjson

    reads: list[str] = []
    table = ""
    conditions: list[str] = []

    def flush() -> None:
        if conditions:
            reads.append(
                f"SELECT COUNT(*) FROM {table} FORCE INDEX (PRIMARY) WHERE ({') OR ('.join(conditions)}) FOR UPDATE;"
            )
            conditions.clear()

    with open(plan, "rb") as lines:
        for line in lines:
            step = orjson.loads(line)
            if step["type"] == "insert":
                continue
            head, condition = str(step["check"]).split(" WHERE ", 1)
            if head != f"SELECT COUNT(*) FROM {table}" or len(conditions) == 50:
                flush()
                table = head.removeprefix("SELECT COUNT(*) FROM ")
            conditions.append(condition)
    flush()
    return f"USE {database};\nSTART TRANSACTION;\n" + "\n".join(reads) + "\nCOMMIT;\n" + events.read_text()


def own_queries(plan: Path, database: str) -> list[str]:
    """The verified apply's own queries for the plan: its batches, as execute_plan cuts and builds them,
    savepoints and checks in the writes included."""
    from rollback.target import execute

    survey = execute._survey(execute.read_plan(plan))
    keyed = {f"{database}.t": "`id`"}
    limit = min(execute.BATCH_BYTES, (1 << 30) - execute.BATCH_STEP_ROOM)  # the bench server's 1G packet
    one = execute._Pass(
        survey.plan,
        "abort",
        execute.ExecutionResult(dry_run=False),
        False,
        execute.DEFAULT_LOCK_WAIT_TIMEOUT,
        set(),
        set(),
        batch_bytes=limit,
        keyed=keyed,
        sizes=survey.sizes,
    )
    units = one._units(execute._Batch(limit))
    assert all(kind != "one" for kind, _ in units)  # every step in a batch, as the apply sends them
    return [execute._Built.of(steps, keyed, set(), 0, True).sql for kind, steps in units if kind == "batch"]


def own_statements(plan: Path, database: str) -> str:
    """The verified apply's own queries (own_queries) as one transaction for the `mariadb` client: the
    server's cost of exactly the SQL the apply sends, without the apply's client (which also reads every
    result and refuses on a count that is not what it must be; the client here reads nothing)."""
    queries = "\n".join(own_queries(plan, database))
    return ";\n".join(_opening(database)) + f";\n{queries}\nCOMMIT;\n"


def _opening(database: str) -> list[str]:
    """The statements that open the transaction of the apply's own queries on `database`."""
    from rollback.target import execute

    return [f"USE {database}", *execute.PRELUDE, "START TRANSACTION"]


# The server's own floor for the incident's rollback (the `staged` database), made before the incident:
# the rows it deletes and the rows it only updates, copied from the table as they are before it into two
# tables of the server; then, timed (STAGED_WRITES), one INSERT ... SELECT and one UPDATE ... JOIN check
# and write the same rows the apply does, with its checks, and no SQL text for any row to parse.
STAGED = [
    "CREATE TABLE put_back LIKE t",
    f"INSERT INTO put_back SELECT * FROM t WHERE {DELETED}",
    "CREATE TABLE set_back LIKE t",
    f"INSERT INTO set_back SELECT * FROM t WHERE {UPDATED} AND NOT ({DELETED})",
]


def incident(server: object, rows: int) -> tuple[dict[str, Path], dict[str, int | str], str]:
    """Every database's table and its incident's binlog file; the service's incident as a job's range;
    the table's checksum before it."""
    checksum = ""
    files: dict[str, Path] = {}
    ranges: dict[str, dict[str, int | str]] = {}
    for name in PATHS:
        server.run_sql([f"DROP DATABASE IF EXISTS {name}", f"CREATE DATABASE {name}"])  # type: ignore[attr-defined]
        server.run_sql(  # type: ignore[attr-defined]
            [TABLE, fill(rows)],
            database=name,
        )
        if name == "staged":
            server.run_sql(STAGED, database=name)  # type: ignore[attr-defined]
        checksum = str(server.query("CHECKSUM TABLE t", database=name)[0][1])  # type: ignore[attr-defined]
        span = server.run_sql(INCIDENT, database=name, own_file=True)  # type: ignore[attr-defined]
        assert len(span.files) == 1, span
        files[name] = Path(span.files[0])
        ranges[name] = {
            "start_file": span.start_file,
            "start_position": span.start_position,
            "stop_file": span.stop_file,
            "stop_position": span.stop_position,
        }
    return files, ranges["service"], checksum


def service_execution(
    server: object, work: Path, span: dict[str, int | str], server_cpu: Callable[[], float]
) -> tuple[Timing, float]:
    """The service's one-transaction commit of the incident's job, from the POST to the GET that sees
    it succeeded, as an ops tool would ask: one HTTP client (a connection kept open) polling every
    POLL_SECONDS (a new httpx client for each request spent 22 ms of this process building its TLS
    context, before it sent anything); CPU of the service process and its children (the execution's
    process)."""
    import httpx
    import psutil

    from tests.support.app import ADMIN, OPERATOR, auth, servers_json
    from tests.support.service import Service, service_env

    env = service_env(work / "data", servers_json(server), MYSQL_ROLLBACK_ENGINE="local")
    service = Service(work / "data", env, work / "service.log").start()
    try:
        body = {"server": "scratch", "range": span, "options": {"outputs": ["plan"]}}
        job = service.request("POST", "/api/jobs", OPERATOR, json=body).json()["id"]
        assert service.wait(job, timeout=600)["state"] == "succeeded"
        assert service.process is not None
        process = psutil.Process(service.process.pid)

        def cpu() -> float:
            """The tree's CPU: the execution runs in a child of the forkserver, which reaps it."""
            total = 0.0
            for each in [process, *process.children(recursive=True)]:
                try:
                    total += sum(each.cpu_times()[:4])  # user, system, and the reaped children's
                except psutil.NoSuchProcess:
                    pass
            return total

        client = httpx.Client(base_url=service.url, headers=auth(ADMIN), timeout=120)
        client.get("/health")  # the connection open before the clock starts
        before, before_server = cpu(), server_cpu()
        started = time.perf_counter()
        created = client.post(f"/api/jobs/{job}/executions", json={"target": "scratch", "dry_run": False})
        assert created.status_code == 202, created.text
        location = created.headers["location"]
        while True:
            record = client.get(location).json()
            if record["state"] not in ("queued", "running"):
                break
            time.sleep(POLL_SECONDS)
        seconds = time.perf_counter() - started
        client.close()
        used, on_server = cpu() - before, server_cpu() - before_server
        assert record["state"] == "succeeded", record
        return Timing(seconds=seconds, driver_mb=0.0, tree_mb=0.0, cpu=used), on_server
    finally:
        service.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()

    from tests.support.mariadb import ScratchServer, ServerOptions

    cli = str(Path(sys.executable).parent / "mysql-rollback")
    # the reference replays each rows event as one BINLOG statement: the 1M-row incident's are ~100 MB.
    # The buffer pool holds every database's table, as a production server's holds the table of an
    # incident minutes old: with the default 128 MB, each path read its table's pages back from the
    # OS's cache, the paths that read more tables the most (bench/README.md, apply_forms.py)
    server = ScratchServer(options=ServerOptions(row_metadata="FULL", extra_args=BENCH_SERVER)).start()
    work = Path(tempfile.mkdtemp(prefix="bench-apply-"))
    try:
        started = time.perf_counter()
        files, span, before = incident(server, args.rows)
        print(
            f"{len(PATHS)} databases of {args.rows} rows in {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
        for name, path in files.items():
            if name in ("service", "staged"):
                continue  # the service's job writes its own; the staged floor runs no plan
            timed_process(
                [
                    cli,
                    "flashback",
                    str(path),
                    "-o",
                    str(work / f"{name}.sql"),
                    "--plan",
                    str(work / f"{name}.plan"),
                    *(["--rows-per-statement", JOINED] if name == "joined" else []),
                    *(["--net"] if name in NET else []),
                ],
                env=CHILD_ENV,
            )
        changes = sum(1 for _ in open(work / "one.plan", encoding="utf-8"))
        events = work / "checked.events.sql"
        with open(events, "wb") as out:
            subprocess.run(["mariadb-binlog", "--flashback", str(files["checked"])], stdout=out, check=True)
        (work / "checked.floor.sql").write_text(checks_then_events(work / "checked.plan", events, "checked"))
        (work / "own.floor.sql").write_text(own_statements(work / "own.plan", "own"))
        (work / "staged.floor.sql").write_text(STAGED_WRITES)
        sent = [";\n".join(_opening("sent")), *own_queries(work / "sent.plan", "sent")]
        (work / "sent.queries").write_bytes("\0".join(sent).encode("utf-8"))
        # the server's own floor for the one-row script: as many statements that do nothing
        (work / "floor.sql").write_text("DO 0;\n" * changes)
        client = mariadb_client(server)
        dsn = server.dsn
        server_cpu = cpu_clock(server)

        def apply(name: str, mode: str) -> Timing:
            cmd = [
                sys.executable,
                str(CHILD),
                "apply",
                str(work / f"{name}.plan"),
                dsn,
                mode,
            ]
            return timed_process(cmd, env=CHILD_ENV)

        def measured(run: Callable[[], Timing]) -> tuple[Timing, float]:
            """The run's timing, and the server's CPU seconds in it (its share of the wall time, which
            the load of a shared machine does not inflate as much)."""
            before = server_cpu()
            timing = run()
            return timing, server_cpu() - before

        runs: list[tuple[str, str | None, tuple[Timing, float]]] = [
            (
                "mariadb-binlog --flashback FILE | mariadb (reference)",
                "reference",
                measured(
                    lambda: timed_process(
                        ["sh", "-c", f"mariadb-binlog --flashback {files['reference']} | {client}"]
                    )
                ),
            ),
            (
                "floor of the server: the same rows checked and written from copies in the server (INSERT ... "
                "SELECT, UPDATE ... JOIN), no SQL text per row",
                "staged",
                measured(lambda: timed_process(["sh", "-c", f"{client} < {work / 'staged.floor.sql'}"])),
            ),
            (
                "floor of a checked apply: the plan's checks as locking reads, then the reference's row events",
                "checked",
                measured(lambda: timed_process(["sh", "-c", f"{client} < {work / 'checked.floor.sql'}"])),
            ),
            (
                "floor of this apply: its own queries (savepoints, checks, batched writes) | mariadb",
                "own",
                measured(lambda: timed_process(["sh", "-c", f"{client} < {work / 'own.floor.sql'}"])),
            ),
            (
                "floor of this apply from Python: its own queries, built before, sent by a fresh interpreter "
                "through PyMySQL",
                "sent",
                measured(
                    lambda: timed_process(
                        [
                            sys.executable,
                            str(CHILD),
                            "send",
                            str(work / "sent.queries"),
                            dsn,
                        ],
                        env=CHILD_ENV,
                    )
                ),
            ),
            (
                "mysql-rollback script | mariadb",
                "script",
                measured(lambda: timed_process(["sh", "-c", f"{client} < {work / 'script.sql'}"])),
            ),
            (
                f"mysql-rollback --rows-per-statement {JOINED} script | mariadb",
                "joined",
                measured(lambda: timed_process(["sh", "-c", f"{client} < {work / 'joined.sql'}"])),
            ),
            (
                f"floor: {changes:,} statements that do nothing (DO 0) | mariadb",
                None,
                measured(lambda: timed_process(["sh", "-c", f"{client} < {work / 'floor.sql'}"])),
            ),
            ("verified apply, dry run", None, measured(lambda: apply("dry", "dry"))),
            ("verified apply, commit one transaction", "one", measured(lambda: apply("one", "one"))),
            ("verified apply, commit per transaction", "per", measured(lambda: apply("per", "per"))),
            ("verified apply, commit --parallel 2 (XA)", "par2", measured(lambda: apply("par2", "par2"))),
            (
                "verified apply of the --net plan, commit one transaction",
                "net",
                measured(lambda: apply("net", "one")),
            ),
            (
                "merge apply (--merge) of the --net plan, commit one transaction",
                "merge",
                measured(lambda: apply("merge", "merge")),
            ),
            (
                "service execution (POST -> succeeded), commit one transaction",
                "service",
                service_execution(server, work, span, server_cpu),
            ),
        ]
        reference, reference_server = runs[0][2][0].seconds, runs[0][2][1]
        print(f"\n{changes:,} row changes ({args.rows:,}-row table), load {os.getloadavg()[0]:.1f}\n")
        print(
            "| path | seconds | rows/s | client CPU s | server CPU s | peak RSS (MB) | ÷ reference "
            "| server CPU ÷ reference's | restored exactly |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for label, database, (timing, on_server) in runs:
            if database is None:
                exact = "(nothing changed)"
            else:
                now = str(server.query("CHECKSUM TABLE t", database=database)[0][1])
                exact = "yes" if now == before else f"NO ({now} != {before})"
            print(
                f"| {label} | {timing.seconds:.2f} | {changes / timing.seconds:,.0f} | {timing.cpu or 0:.2f} | "
                f"{on_server:.2f} | {timing.tree_mb:.0f} | {timing.seconds / reference:.2f} | "
                f"{on_server / reference_server:.2f} | {exact} |"
            )
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)  # a 1M-row run leaves gigabytes of plans and scripts


if __name__ == "__main__":
    main()
