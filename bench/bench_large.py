"""A multi-gigabyte, multi-file range: our CLI against `mariadb-binlog --flashback` (issue 14).

    .venv/bin/python bench/bench_large.py [--gb 5] [--source FILE] [--dir DIR] [--runs 2] [--keep]

Makes the range with bench/large_range.py from a real server-written file (`--source`, else
bench_pipeline's 1,000,000-row `mixed` workload written by a scratch MariaDB: a few minutes):
`large-bin.000001`, ... of about 1 GiB each, `--gb` GB in all. It checks the range with our own
decoder (every CRC32 verified; row changes = copies x the source's), then times, `--runs` rounds
(the second in the reverse order, so each tool runs next to the others under the same load):
`mariadb-binlog --flashback` over the whole range, and our CLI (`mysql-rollback flashback`, a fresh
process each time: for Spark, JVM start included) with `--engine spark`, `--engine auto` and
`--engine local`, every tool writing its output to a file in DIR. It prints the best wall time of
each, CPU seconds (every process of the tree), MB/s, rows/s, peak RSS of the driver (anonymous +
file-backed, from /proc/PID/status at its peak) and of all processes, the load, and the ratios to
`mariadb-binlog --flashback`; every script of ours must be byte-identical (sha256), and is
deleted once hashed. The range is deleted at the end unless `--keep`.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_pipeline import CHILD_ENV, PYTHON, Timing, timed_process, warm_bytecode, write_mixed  # noqa: E402
from bench.large_range import row_changes, write_range  # noqa: E402

REFERENCE = "mariadb-binlog --flashback"
OURS = {
    "spark": "mysql-rollback --engine spark (cold)",
    "auto": "mysql-rollback --engine auto",
    "local": "mysql-rollback --engine local",
}


def make_source(rows: int, out: Path) -> Path:
    """bench_pipeline's `mixed` workload of `rows` row changes, written by a scratch MariaDB."""
    from tests.support.mariadb import ScratchServer, ServerOptions

    server = ScratchServer(options=ServerOptions(row_metadata="FULL")).start()
    try:
        path = write_mixed(server, rows)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out)
    finally:
        server.stop()
    return out


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(8 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def engine_line(stderr: str) -> str:
    """What the CLI said about its engine ("engine spark (auto: ...), 80 partition(s)")."""
    for line in stderr.splitlines():
        if "engine " in line and "partition" in line:
            return line.split("mysql-rollback: ", 1)[-1]
    return ""


def run_tool(tool: str, files: list[Path], out: Path) -> tuple[Timing, str, int]:
    """(timing, sha256 of our script or "" for the reference, output bytes); the output deleted."""
    if tool == REFERENCE:
        timing = timed_process(["mariadb-binlog", "--flashback", *map(str, files)], out)
        digest = ""
    else:
        engine = next(key for key, label in OURS.items() if label == tool)
        cmd = [
            PYTHON,
            "-m",
            "rollback.cli.commands",
            "flashback",
            *map(str, files),
            "--engine",
            engine,
            "-o",
            str(out),
        ]
        timing = timed_process(cmd, env=CHILD_ENV)
        digest = sha256(out)
    size = out.stat().st_size
    out.unlink()
    return timing, digest, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gb", type=float, default=5.0, help="size of the range in GB (10^9 bytes)")
    parser.add_argument("--source", type=Path, help="a server-written binlog (default: write one)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="row changes of the written source")
    parser.add_argument("--dir", type=Path, default=Path("/var/tmp/bench-large"), help="range and outputs")
    parser.add_argument("--file-mb", type=int, default=1024, help="largest file of the range (MiB)")
    parser.add_argument("--runs", type=int, default=2, help="rounds of every tool (best one reported)")
    parser.add_argument("--keep", action="store_true", help="keep the range (and a written source)")
    args = parser.parse_args()
    began = time.perf_counter()
    work = args.dir
    if work.exists() and any(work.glob("large-bin.*")):
        sys.exit(f"bench_large: {work} already holds a range; remove it or give another --dir")
    work.mkdir(parents=True, exist_ok=True)
    try:
        source = args.source
        if source is None:
            print(f"writing the source ({args.rows:,} row changes) on a scratch MariaDB ...", file=sys.stderr)
            source = make_source(args.rows, work / "source" / "mixed.binlog")
        started = time.perf_counter()
        files, copies = write_range(source, work, int(args.gb * 1e9), args.file_mb << 20)
        made = time.perf_counter() - started
        size = sum(path.stat().st_size for path in files)
        print(
            f"range: {len(files)} files, {size / 1e9:.2f} GB ({copies} copies of {source}) "
            f"written in {made:.1f} s ({size / 1e6 / made:,.0f} MB/s)",
            file=sys.stderr,
        )
        started = time.perf_counter()
        source_rows = row_changes([source])
        rows = row_changes(files)
        if rows != copies * source_rows:
            sys.exit(
                f"bench_large: the range decodes to {rows:,} row changes, not {copies} x {source_rows:,}"
            )
        print(
            f"checked: {rows:,} row changes, every CRC32 verified ({time.perf_counter() - started:.0f} s)",
            file=sys.stderr,
        )
        measure(files, work, size, rows, args.runs)
    finally:
        for path in work.glob("large-bin.*"):
            path.unlink()
        for path in work.glob("out.*"):
            path.unlink()
        if not args.keep:
            shutil.rmtree(work / "source", ignore_errors=True)
            shutil.rmtree(work / "pycache", ignore_errors=True)
            if not any(work.iterdir()):
                work.rmdir()
        print(f"whole bench: {time.perf_counter() - began:.0f} s", file=sys.stderr)


def measure(files: list[Path], work: Path, size: int, rows: int, runs: int) -> None:
    warm_bytecode(work / "pycache")
    order = [REFERENCE, *OURS.values()]
    results: dict[str, list[tuple[Timing, int]]] = {tool: [] for tool in order}
    digests: dict[str, set[str]] = {}
    engines: dict[str, str] = {}
    for round_ in range(runs):
        for tool in order if round_ % 2 == 0 else order[::-1]:
            timing, digest, out_size = run_tool(tool, files, work / "out.sql")
            results[tool].append((timing, out_size))
            if digest:
                digests.setdefault(digest, set()).add(tool)
                engines[tool] = engine_line(timing.stderr)
            split = ", ".join(f"{kind} {cpu:.1f}" for kind, cpu in (timing.cpu_split or {}).items() if cpu)
            print(
                f"  {tool}: {timing.seconds:.2f} s, CPU {timing.cpu:.2f} s ({split}), driver {timing.driver_mb:.0f} MB "
                f"(anon {timing.driver_anon_mb:.0f}, file {timing.driver_file_mb:.0f}), JVM {timing.jvm_mb:.0f} MB, "
                f"all {timing.tree_mb:.0f} MB, load {timing.load:.1f} {engines.get(tool, '')}",
                file=sys.stderr,
            )
    if len(digests) != 1:
        raise SystemExit(f"bench_large: the scripts differ between engines: {digests}")
    report(results, engines, size, rows, len(files))


def report(
    results: dict[str, list[tuple[Timing, int]]], engines: dict[str, str], size: int, rows: int, count: int
) -> None:
    best = {tool: min(runs, key=lambda run: run[0].seconds) for tool, runs in results.items()}
    reference = best[REFERENCE][0]
    print(
        f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, range of {count} files, "
        f"{size / 1e9:.2f} GB, {rows:,} row changes; every script of ours byte-identical (sha256)"
    )
    print(
        "\n| tool | seconds (best; all runs) | CPU s | MB/s | rows/s | peak RSS driver: anon + file (MB) "
        "| JVM (MB) | all processes (MB) | output (MB) | load | ÷ reference, wall | ÷ reference, CPU |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for tool, (t, out_size) in best.items():
        runs = ", ".join(f"{run.seconds:.1f}" for run, _ in results[tool])
        cpu = t.cpu or 0.0
        print(
            f"| {tool} | {t.seconds:.2f} ({runs}) | {cpu:.1f} | {size / 1e6 / t.seconds:.0f} | {rows / t.seconds:,.0f} "
            f"| {t.driver_mb:.0f}: {t.driver_anon_mb:.0f} + {t.driver_file_mb:.0f} | {t.jvm_mb:.0f} | {t.tree_mb:.0f} "
            f"| {out_size / 1e6:,.0f} | {t.load:.1f} | {t.seconds / reference.seconds:.2f} "
            f"| {cpu / (reference.cpu or 1):.2f} |"
        )
    for tool, line in engines.items():
        print(f"- {tool}: {line}")


if __name__ == "__main__":
    main()
