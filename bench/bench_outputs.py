"""What the plan and the change log cost beside the script (issue 14's "outputs on demand"), and the
floors of their bytes on this machine.

    .venv/bin/python bench/bench_outputs.py /var/tmp/bench1m/mixed.binlog --runs 2

Runs the local engine in a fresh process for each of: the script only, the change log only (the
`changes` mode: what a service job's first GET of its change log runs), the script and plan, and
the script, plan and change log; prints the CPU seconds of each run (the process and the workers it
forks: user + system, best of `--runs`), its wall time, the load average, the bytes written, the
peak RSS (the driver, and the largest forked worker), and each output's cost over the script alone.
CPU seconds, because the machine is often shared.

Then, in the same run, the render-only cost: the script + plan and change-log-only runs again with
the plan's and the change log's text rendered but dropped where a partition would write it (a
bench-side patch of the partition's two writes: the engine has no sink that keeps nothing), and the
floors of each output's bytes (those the runs wrote), in this process, best of `--floor-runs`:
writing them once into a new file of the same file system in 1 MiB writes, one kernel copy of them
(copy_file_range), and compressing them with the fastest setting of each compressor at hand
(zstandard level 1 and its fastest "--fast" level, zlib level 1, lz4 when installed: the `bench`
extra); the input binlog's bytes beside them (the row changes' own compact form). Each as a % of
the script alone: the goal is "under 20% of the script's cost".
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable

import zstandard

try:
    import lz4.frame as lz4_frame
except ImportError:  # the bench extra not installed: that row is left out, and said so
    lz4_frame = None

CASES = {
    "script only": ("flashback", False, False),
    "change log only (changes mode)": ("changes", False, True),
    "script + plan": ("flashback", True, False),
    "script + plan + change log": ("flashback", True, True),
}
# The same runs with the plan's and change log's text rendered but not written (see DROP_OUTPUTS).
RENDER_ONLY = {
    "script + plan, plan rendered and dropped": ("flashback", True, False),
    "change log rendered and dropped (changes mode)": ("changes", False, True),
}

CHILD = """
import json, resource, sys
from pathlib import Path
if sys.argv[5] == "1":
    exec(sys.argv[6])
from rollback import Filters, Options, RangeSpec, generate
mode, plan, changes, out = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1", Path(sys.argv[4])
generate(RangeSpec(sys.argv[7:]), Filters(), Options(mode=mode, engine="local"), out / "s.sql",
         out / "p.jsonl" if plan else None, out / "c.jsonl" if changes else None)
rss = {"driver": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
       "worker": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}
print(json.dumps({"sizes": {p.name: p.stat().st_size for p in out.iterdir()}, "rss_kib": rss}))
"""

# Bench-side only: the partition's plan text and change-log records are rendered as usual, then
# dropped where the partition would keep or write them (the parts stay empty, the merge copies
# nothing). What is left of the run is decoding, rendering and the script's writes.
DROP_OUTPUTS = """
import os
import rollback.pipeline.partition as partition
import rollback.pipeline.spill as spill
_add = spill.SpillBuffer.add_encoded
spill.SpillBuffer.add_encoded = lambda self, script, plan: _add(self, script, b"")
_open = open
def _dropping_open(path, mode="r", *args, **kwargs):
    if str(path).endswith(".changes.jsonl") and "w" in mode:
        _open(path, "wb").close()  # an empty part for the merge
        return _open(os.devnull, "wb")
    return _open(path, mode, *args, **kwargs)
partition.open = _dropping_open
"""


def run_once(
    files: list[str], mode: str, plan: bool, changes: bool, drop: bool, keep: str | None = None
) -> tuple[float, float, dict[str, int], dict[str, int]]:
    """(CPU seconds, wall seconds, sizes of the files written, peak RSS in KiB); `keep`: a directory
    to move the outputs into."""
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_OUT")) as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", CHILD, mode, str(int(plan)), str(int(changes)), tmp, str(int(drop))]
            + [DROP_OUTPUTS, *files],
            capture_output=True,
            text=True,
            check=True,
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if keep is not None:
            for name in os.listdir(tmp):
                shutil.move(os.path.join(tmp, name), os.path.join(keep, name))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    return cpu, wall, facts["sizes"], facts["rss_kib"]


def cpu_now() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(action: Callable[[], object]) -> tuple[float, object]:
    began = cpu_now()
    result = action()
    return cpu_now() - began, result


def write_once(data: bytes, directory: str) -> float:
    """CPU seconds of writing `data` into a new file in 1 MiB writes (into the page cache)."""
    path = os.path.join(directory, "floor-write")
    view = memoryview(data)
    began = cpu_now()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for start in range(0, len(data), 1 << 20):
            os.write(fd, view[start : start + (1 << 20)])
    finally:
        os.close(fd)
    spent = cpu_now() - began
    os.unlink(path)
    return spent


def kernel_copy(source: str, directory: str) -> float:
    """CPU seconds of one copy_file_range of the file into a new file beside it."""
    path = os.path.join(directory, "floor-copy")
    began = cpu_now()
    with open(source, "rb") as src, open(path, "wb") as dst:
        left = os.fstat(src.fileno()).st_size
        while left > 0:
            done = os.copy_file_range(src.fileno(), dst.fileno(), left)
            if not done:
                break
            left -= done
    spent = cpu_now() - began
    os.unlink(path)
    return spent


def compressors() -> dict[str, Callable[[bytes], bytes]]:
    found: dict[str, Callable[[bytes], bytes]] = {
        "zstd level 1": zstandard.ZstdCompressor(level=1).compress,
        "zstd --fast=5 (level -5)": zstandard.ZstdCompressor(level=-5).compress,
        "zlib level 1 (gzip -1)": lambda data: zlib.compress(data, 1),
    }
    if lz4_frame is not None:
        found["lz4 (frame, fastest)"] = lambda data: lz4_frame.compress(data, compression_level=0)
    return found


def floors(outputs: dict[str, str], script_cpu: float, runs: int, directory: str) -> None:
    """The floors table: each output's bytes written once, copied once, compressed."""
    print()
    print(
        f"Floors of each output's bytes on this machine (CPU s, best of {runs}; % of the script alone, {script_cpu:.2f} s):"
    )
    print()
    names = list(outputs)
    print("| what is done to the bytes | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    contents = {name: open(path, "rb").read() for name, path in outputs.items()}
    rows: list[tuple[str, Callable[[str], str]]] = []

    def percent(seconds: float) -> str:
        return f"{seconds:.2f} ({seconds / script_cpu:.0%})"

    def best(action: Callable[[], float]) -> float:
        return min(action() for _ in range(runs))

    rows.append(("size", lambda n: f"{len(contents[n]) / 1e6:.0f} MB"))
    rows.append(
        ("written once, 1 MiB writes", lambda n: percent(best(lambda: write_once(contents[n], directory))))
    )
    rows.append(
        (
            "one kernel copy (copy_file_range)",
            lambda n: percent(best(lambda: kernel_copy(outputs[n], directory))),
        )
    )
    for label, compress in compressors().items():

        def cell(name: str, compress: Callable[[bytes], bytes] = compress) -> str:
            spent = []
            packed = b""
            for _ in range(runs):
                seconds, packed = timed(lambda: compress(contents[name]))  # type: ignore[assignment]
                spent.append(seconds)
            ratio = len(contents[name]) / max(1, len(packed))
            return f"{percent(min(spent))}, {ratio:.1f}x to {len(packed) / 1e6:.0f} MB"

        rows.append((f"compressed, {label}", cell))
    for label, make in rows:
        print(f"| {label} | " + " | ".join(make(name) for name in names) + " |", flush=True)
    if lz4_frame is None:
        print("\n(lz4 is not installed: `pip install -e .[bench]` adds it)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("files", nargs="+")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--floor-runs", type=int, default=3)
    parser.add_argument("--only", action="append", choices=list(CASES), help="run only these cases")
    parser.add_argument("--no-floors", action="store_true", help="skip the render-only runs and the floors")
    args = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs", file=sys.stderr)
    best: dict[str, float] = {}
    kept = tempfile.mkdtemp(prefix="bench-outputs-", dir=os.environ.get("BENCH_OUT"))
    try:
        print(
            "| what the run writes | CPU s (best) | runs (CPU s / wall s) | over the script alone | bytes | peak RSS driver / worker |"
        )
        print("|---|---:|---|---:|---|---:|")
        cases = {name: (*case, False) for name, case in CASES.items() if not args.only or name in args.only}
        if not args.no_floors:
            cases.update({name: (*case, True) for name, case in RENDER_ONLY.items()})
        for name, (mode, plan, changes, drop) in cases.items():
            runs = [run_once(args.files, mode, plan, changes, drop) for _ in range(args.runs - 1)]
            runs.append(run_once(args.files, mode, plan, changes, drop, keep=None if drop else kept))
            cpu = min(r[0] for r in runs)
            best[name] = cpu
            script = best.get("script only")
            over = "-" if script is None or name == "script only" else f"+{(cpu - script) / script:.0%}"
            if "changes mode" in name and script is not None:
                over = f"{cpu / script:.2f}x"
            sizes = ", ".join(f"{k} {v / 1e6:.0f} MB" for k, v in sorted(runs[-1][2].items()))
            listed = ", ".join(f"{c:.2f} / {w:.2f}" for c, w, _, _ in runs)
            rss = max(r[3]["driver"] for r in runs) >> 10, max(r[3]["worker"] for r in runs) >> 10
            print(
                f"| {name} | {cpu:.2f} | {listed} | {over} | {sizes} | {rss[0]} / {rss[1]} MB |", flush=True
            )
        script = best.get("script only")
        if args.no_floors or script is None:
            return
        print(f"load {os.getloadavg()[0]:.1f} before the floors", file=sys.stderr)
        outputs = {
            title: os.path.join(kept, name)
            for title, name in (("script", "s.sql"), ("plan", "p.jsonl"), ("change log", "c.jsonl"))
            if os.path.exists(os.path.join(kept, name))
            and os.path.getsize(os.path.join(kept, name)) > 1 << 20
        }
        if len(args.files) == 1:  # the row changes' own compact form, for comparison
            outputs["the binlog (input)"] = args.files[0]
        floors(outputs, script, args.floor_runs, kept)
        print()
        _dropped_line(
            best, "the plan", "script + plan, plan rendered and dropped", "script + plan", script, True
        )
        _dropped_line(
            best,
            "the change log (changes mode)",
            "change log rendered and dropped (changes mode)",
            "change log only (changes mode)",
            script,
            False,
        )
    finally:
        shutil.rmtree(kept, ignore_errors=True)
        print(f"load {os.getloadavg()[0]:.1f} at the end", file=sys.stderr)


def _dropped_line(
    best: dict[str, float], what: str, dropped: str, written: str, script: float, over: bool
) -> None:
    """What `what` costs rendered and dropped, against the same output written as the job writes
    it: over the script alone (`over`: as +%), or as a multiple of it."""
    if dropped not in best:
        return

    def said(cpu: float) -> str:
        return f"+{(cpu - script) / script:.0%}" if over else f"{cpu / script:.2f}x"

    of = " of" if over else ""
    line = f"{what} rendered and dropped: {said(best[dropped])}{of} the script alone"
    if written in best:
        line += f" (written as the job writes it: {said(best[written])})"
    print(line)


if __name__ == "__main__":
    main()
