"""Where a Spark job's time goes: the serial part (planning, the merge) and the parallel part (the
partitions), and the speed-up from local[1] to local[2] (issue 14).

    .venv/bin/python bench/bench_parallel.py FILE [FILE...] [--masters 'local[1]' 'local[2]'] [--runs 2]

FILE is a binlog that names its columns (binlog_row_metadata=FULL), e.g. the `mixed.binlog` that
`bench/bench_pipeline.py --generate-only --keep DIR` writes. For each master a fresh process starts
the Spark session, runs one warm-up job, then times `--runs` flashback jobs (script only, as the CLI
writes it without --plan), each split into: planning (plan.plan_range: the header walk of the range,
in the driver), the partitions on Spark (the parallel part), the merge (parts into the script) and
the rest (schemas, checks). The serial fraction is everything but the partitions, over the total.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _timed(phases: dict[str, float], name: str, fn: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            phases[name] = phases.get(name, 0.0) + time.perf_counter() - started

    return wrapper


def child(files: list[str], master: str, runs: int) -> None:
    """One master: the phases of each run, as JSON lines on stdout."""
    import rollback.job as job_module
    from rollback import Filters, Options, RangeSpec, generate
    from rollback.pipeline.engines.spark import SparkEngine
    from rollback.pipeline.session import get_spark

    spark = get_spark(master)
    spark.sparkContext.parallelize(range(4), 4).map(lambda x: x).collect()  # Python workers started
    phases: dict[str, float] = {}
    job_module.plan_range = _timed(phases, "plan", job_module.plan_range)  # type: ignore[assignment]
    SparkEngine.run = _timed(phases, "partitions", SparkEngine.run)  # type: ignore[method-assign]
    job_module.Job._merge = _timed(phases, "merge", job_module.Job._merge)  # type: ignore[method-assign]
    rng = RangeSpec(files)
    with tempfile.TemporaryDirectory(prefix="bench-parallel-") as out:
        for run in range(runs + 1):  # the first one warms the session's Python workers up
            phases.clear()
            started = time.perf_counter()
            report = generate(
                rng, Filters(), Options(engine="spark", spark_master=master), Path(out) / "r.sql"
            )
            total = time.perf_counter() - started
            if run == 0:
                continue
            print(
                json.dumps(
                    {
                        "master": master,
                        "total": total,
                        **phases,
                        "partitions_count": report.partitions,
                        "bytes": report.bytes_total,
                        "script_bytes": os.path.getsize(Path(out) / "r.sql"),
                        "slots": spark.sparkContext.defaultParallelism,
                    }
                ),
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--masters", nargs="+", default=["local[1]", "local[2]"])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.files, args.child, args.runs)
        return
    results: dict[str, list[dict[str, Any]]] = {}
    for master in args.masters:
        done = subprocess.run(
            [sys.executable, __file__, *args.files, "--runs", str(args.runs), "--child", master],
            capture_output=True,
            text=True,
            check=True,
        )
        results[master] = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    load = os.getloadavg()[0]
    print(f"load average {load:.1f}; {os.cpu_count()} cores; best of {args.runs} runs per master")
    print(
        "| master | partitions | total s | planning s | partitions s | merge s | other s | serial fraction |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    best: dict[str, dict[str, Any]] = {}
    for master, runs in results.items():
        run = min(runs, key=lambda r: r["total"])
        best[master] = run
        other = run["total"] - run.get("plan", 0) - run.get("partitions", 0) - run.get("merge", 0)
        serial = (run["total"] - run.get("partitions", 0)) / run["total"]
        print(
            f"| {master} | {run['partitions_count']} | {run['total']:.2f} | {run.get('plan', 0):.2f} | "
            f"{run.get('partitions', 0):.2f} | {run.get('merge', 0):.2f} | {other:.2f} | {serial:.1%} |"
        )
    if {"local[1]", "local[2]"} <= best.keys():
        one, two = best["local[1]"], best["local[2]"]
        print(
            f"local[1] -> local[2]: job {one['total'] / two['total']:.2f}x, "
            f"partitions {one['partitions'] / two['partitions']:.2f}x"
        )


if __name__ == "__main__":
    main()
