"""The merge apply against the strict apply of the same `--net` plan: time, CPU and peak RSS (issue 28).

    .venv/bin/python bench/bench_merge_apply.py                        # the 100k-row incident
    .venv/bin/python bench/bench_merge_apply.py --rows 1000000         # the 1M-row incident
    .venv/bin/python bench/bench_merge_apply.py --before /tmp/old      # and another tree's code, A B A B

Starts one scratch MariaDB, one database of bench_apply.py's table and incident (`--rows` rows), and writes
the incident's `--net` plan once. Each run puts the table back as the incident left it (a copy taken
then, not timed) and times one `execute_plan` in a process of its own, as the CLI runs it: the strict
apply of the plan and the merge apply (`merge=True`), one-transaction commits without the dry run first.
`--before DIR` runs the same two again with the `rollback` package of DIR (a checkout of another
commit with its compiled core, e.g. `git archive COMMIT rollback | tar -x -C DIR` and the .so copied),
alternating with this tree's. Peak RSS and the client's CPU are the apply process's own
(getrusage); server CPU is the scratch MariaDB's during the run. Every run is checked restored exactly.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

MODES = ("net", "merge")
LABELS = {"net": "strict apply of the --net plan", "merge": "merge apply of the --net plan"}


def apply_main(plan: str, dsn: str, mode: str) -> None:
    """The timed child: one execute_plan; its CPU and peak RSS as one JSON line on stderr."""
    from rollback import execute_plan

    result = execute_plan(plan, dsn, commit=True, check_first=False, merge=mode == "merge")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "statements": result.statements,
                "cpu": usage.ru_utime + usage.ru_stime,
                "rss_mb": usage.ru_maxrss / 1024,
                "from": str(Path(sys.modules["rollback"].__file__ or "").parent),
            }
        ),
        file=sys.stderr,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--before", type=Path, help="a tree whose rollback package to run beside this one")
    parser.add_argument("--apply", nargs=3, metavar=("PLAN", "DSN", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.apply:
        apply_main(*args.apply)
        return

    sys.path.append(str(Path(__file__).resolve().parents[1]))
    from bench.bench_apply import TABLE, cpu_clock, fill
    from bench.bench_pipeline import CHILD_ENV, REPO, timed_process
    from tests.support.mariadb import ScratchServer, ServerOptions

    server = ScratchServer(options=ServerOptions(row_metadata="FULL")).start()
    work = Path(tempfile.mkdtemp(prefix="bench-merge-apply-"))
    try:
        started = time.perf_counter()
        server.run_sql(["DROP DATABASE IF EXISTS m", "CREATE DATABASE m"])
        server.run_sql([TABLE, fill(args.rows)], database="m")
        before = str(server.query("CHECKSUM TABLE t", database="m")[0][1])
        span = server.run_sql(
            ["DELETE FROM t WHERE id % 2 = 0", "UPDATE t SET a = a + 1, b = 'x' WHERE id % 3 = 0"],
            database="m",
            own_file=True,
        )
        server.run_sql(["CREATE TABLE t_after LIKE t", "INSERT INTO t_after SELECT * FROM t"], database="m")
        plan = work / "net.plan"
        cli = str(Path(sys.executable).parent / "mysql-rollback")
        timed_process(
            [cli, "flashback", str(span.files[0]), "-o", str(work / "net.sql"), "--plan", str(plan), "--net"],
            env=CHILD_ENV,
        )
        changes = sum(1 for _ in open(plan, "rb"))
        print(
            f"{args.rows:,} rows, {changes:,} changes, plan {plan.stat().st_size / 2**20:.0f} MB, set up in "
            f"{time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
        server_cpu = cpu_clock(server)

        trees = [("after", REPO)] + ([("before", args.before.resolve())] if args.before else [])
        print(
            "| run | code | path | seconds | client CPU s | server CPU s | peak RSS (MB) | load | restored |"
        )
        print("|---:|---|---|---:|---:|---:|---:|---:|---|")
        for n in range(1, args.repeat + 1):
            for name, tree in trees if n % 2 else trees[::-1]:
                for mode in MODES:
                    server.run_sql(["TRUNCATE TABLE t", "INSERT INTO t SELECT * FROM t_after"], database="m")
                    env = {**CHILD_ENV, "PYTHONPATH": str(tree)}
                    cmd = [sys.executable, str(REPO / "bench" / "bench_merge_apply.py"), "--apply", str(plan)]
                    on_server = server_cpu()
                    timing = timed_process([*cmd, server.dsn, mode], env=env)
                    on_server = server_cpu() - on_server
                    child = json.loads(timing.stderr.strip().splitlines()[-1])
                    assert Path(child["from"]).parent == tree, (child["from"], tree)
                    now = str(server.query("CHECKSUM TABLE t", database="m")[0][1])
                    print(
                        f"| {n} | {name} | {LABELS[mode]} | {timing.seconds:.2f} | {child['cpu']:.2f} | "
                        f"{on_server:.2f} | {child['rss_mb']:.0f} | {os.getloadavg()[0]:.1f} | "
                        f"{'yes' if now == before else 'NO'} |",
                        flush=True,
                    )
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)  # a 1M-row run leaves gigabytes of plans and scripts


if __name__ == "__main__":
    main()
