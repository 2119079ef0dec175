"""What the plan and the change log cost beside the script (issue 14's "outputs on demand").

    .venv/bin/python bench/bench_outputs.py /var/tmp/bench1m/mixed.binlog --runs 2

Runs the local engine in a fresh process for each of: the script only, the change log only (the
`changes` mode: what a service job's first GET of its change log runs), the script and plan, and
the script, plan and change log; prints the CPU seconds of each run (the process and the workers it
forks: user + system, best of `--runs`), its wall time, the load average, the bytes written, and
each output's cost over the script alone. CPU seconds, because the machine is often shared.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

CASES = {
    "script only": ("flashback", False, False),
    "change log only (changes mode)": ("changes", False, True),
    "script + plan": ("flashback", True, False),
    "script + plan + change log": ("flashback", True, True),
}

CHILD = """
import json, sys
from pathlib import Path
from rollback import Filters, Options, RangeSpec, generate
mode, plan, changes, out = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1", Path(sys.argv[4])
generate(RangeSpec(sys.argv[5:]), Filters(), Options(mode=mode, engine="local"), out / "s.sql",
         out / "p.jsonl" if plan else None, out / "c.jsonl" if changes else None)
print(json.dumps({p.name: p.stat().st_size for p in out.iterdir()}))
"""


def run_once(files: list[str], mode: str, plan: bool, changes: bool) -> tuple[float, float, dict[str, int]]:
    """(CPU seconds, wall seconds, sizes of the files written)."""
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_OUT")) as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", CHILD, mode, str(int(plan)), str(int(changes)), tmp, *files],
            capture_output=True,
            text=True,
            check=True,
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("files", nargs="+")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--only", action="append", choices=list(CASES), help="run only these cases")
    args = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs", file=sys.stderr)
    best: dict[str, float] = {}
    print("| what the run writes | CPU s (best) | runs (CPU s / wall s) | over the script alone | bytes |")
    print("|---|---:|---|---:|---|")
    for name, (mode, plan, changes) in CASES.items():
        if args.only and name not in args.only:
            continue
        runs = [run_once(args.files, mode, plan, changes) for _ in range(args.runs)]
        cpu = min(r[0] for r in runs)
        best[name] = cpu
        script = best.get("script only")
        over = "-" if script is None or name == "script only" else f"+{(cpu - script) / script:.0%}"
        if name.startswith("change log only") and script is not None:
            over = f"{cpu / script:.2f}x"
        sizes = ", ".join(f"{k} {v / 1e6:.0f} MB" for k, v in sorted(runs[-1][2].items()))
        listed = ", ".join(f"{c:.2f} / {w:.2f}" for c, w, _ in runs)
        print(f"| {name} | {cpu:.2f} | {listed} | {over} | {sizes} |", flush=True)
    print(f"load {os.getloadavg()[0]:.1f} at the end", file=sys.stderr)


if __name__ == "__main__":
    main()
