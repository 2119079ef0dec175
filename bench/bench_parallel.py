"""One slot against two on one binlog: where a job's time goes, and the best speed-up two cores allow
(issue 14).

    .venv/bin/python bench/bench_parallel.py FILE [FILE...] [--runs 5] [--warm-ups 1]
                                             [--engines spark local] [--masters 'local[1]' 'local[2]']

FILE is a binlog that names its columns (binlog_row_metadata=FULL), e.g. the `mixed.binlog` that
`bench/bench_pipeline.py --generate-only --keep DIR` writes. Each configuration runs in a process of
its own, kept warm (a Spark session per master, one local-engine process): Spark `local[1]` and
`local[2]`, and the local engine with one process (the partitions in order, in the driver) and with
two forked workers. After a warm-up job each, the configurations take turns, `--runs` rounds, so a
change in the machine's load falls on all of them alike. Every job writes the flashback script only
(as the CLI does without --plan). Per job:

* wall seconds, split into planning (the header walk, in the driver), the partitions (the engine's
  run: the parallel part), the merge (parts into the script) and the rest (schemas, checks, the
  header, removing the parts);
* CPU seconds (user + system) of the whole process tree, by kind: the driver, the JVM, Spark's
  Python workers, the local engine's forked workers (read from /proc before and after the job; a
  process that ended is counted through its parent's reaped-children times), and the machine's
  busy CPU seconds over the job (every process and the kernel's threads: the page cache's
  writeback is not in the tree; on a shared machine others' work too);
* the timeline of the partitions (every engine stamps when each started, on the machine's monotonic
  clock): the wait before the first partition starts (Spark: job submission, task serialisation;
  local: the forks), after the last one ends (result collection), the time one slot stood idle at
  the end while the other still worked, and the gaps between one slot's partitions (per-task
  overhead).

Then, for each engine, the speed-up from one slot to two (best run of each), and the bounds that
follow from the measures: two cores finish the two-slot run's CPU seconds in no less than half
of them (the CPU bound), the one-slot run already kept `CPU / wall` cores busy (the driver, the JVM
and the merge beside the one slot: 2 / that is the best two cores allow it), and Amdahl's law with
the one-slot run's serial seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

KINDS = ("driver", "JVM", "Python workers", "forked workers")
CONTENTION: dict[str, float] = {}  # contention()'s figures, when the local engine was measured


# ---- in the measured process -----------------------------------------------------------------------


def tree_cpu(root: int) -> dict[int, tuple[str, float, float]]:
    """pid -> (kind, own CPU seconds, CPU seconds of its children it reaped) for `root` and every
    process under it."""
    top = psutil.Process(root)
    found: dict[int, tuple[str, float, float]] = {}
    procs = [top]
    try:
        procs += top.children(recursive=True)
    except psutil.Error:
        pass
    for proc in procs:
        try:
            with proc.oneshot():
                times = proc.cpu_times()
                kind = _kind(proc, root)
        except psutil.Error:
            continue
        found[proc.pid] = (kind, times.user + times.system, times.children_user + times.children_system)
    return found


def _kind(proc: psutil.Process, root: int) -> str:
    if proc.pid == root:
        return "driver"
    if proc.name() == "java":
        return "JVM"
    for parent in proc.parents():
        if parent.pid == root:
            break
        if parent.name() == "java":
            return "Python workers"
    return "forked workers"


def cpu_by_kind(
    before: dict[int, tuple[str, float, float]], after: dict[int, tuple[str, float, float]]
) -> dict[str, float]:
    """CPU seconds spent between two `tree_cpu` readings, by kind. A process's reaped children count
    as its workers: the driver's are the local engine's forked workers, the JVM's and its Python
    daemon's are Spark's Python workers."""
    spent = dict.fromkeys(KINDS, 0.0)
    for pid, (kind, own, reaped) in after.items():
        _kind0, own0, reaped0 = before.get(pid, (kind, 0.0, 0.0))
        spent[kind] += own - own0
        children = "forked workers" if kind in ("driver", "forked workers") else "Python workers"
        spent[children] += reaped - reaped0
    return spent


def machine_busy() -> float:
    """CPU seconds the whole machine has been busy (every core, every process, the kernel)."""
    t = psutil.cpu_times()
    return float(sum(t) - t.idle - getattr(t, "iowait", 0.0))


def _timed(phases: dict[str, Any], name: str, fn: Any, keep: bool = False) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            result = fn(*args, **kwargs)
            if keep:
                phases[f"{name}_result"] = result
            return result
        finally:
            phases[name] = phases.get(name, 0.0) + time.monotonic() - started
            phases[f"{name}_span"] = (started, time.monotonic())

    return wrapper


def child(files: list[str], config: str) -> None:
    """One configuration (`spark:MASTER` or `local`), warm: a job per request line (JSON: for the
    local engine {"processes": N}), one JSON line of measures per job on stdout."""
    import rollback.job as job_module
    from rollback import Filters, Options, RangeSpec, generate
    from rollback.pipeline.engines.local import LocalEngine
    from rollback.pipeline.engines.spark import SparkEngine

    engine, _, master = config.partition(":")
    if engine == "spark":
        from rollback.pipeline.warm import warm_spark

        warm_spark(master)
    phases: dict[str, Any] = {}
    job_module.plan_range = _timed(phases, "plan", job_module.plan_range)  # type: ignore[assignment]
    for cls in (SparkEngine, LocalEngine):
        cls.run = _timed(phases, "partitions", cls.run, keep=True)  # type: ignore[method-assign]
    job_module.Job._merge = _timed(phases, "merge", job_module.Job._merge)  # type: ignore[method-assign]
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-parallel-{os.getpid()}.sql"
    me = os.getpid()
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("contention"):
            sys.stdout.write(json.dumps(contention(files)) + "\n")
            sys.stdout.flush()
            continue
        processes = int(request.get("processes", 1))
        job_module.usable_cpus = lambda n=processes: n  # type: ignore[attr-defined]
        options = Options(engine=engine, spark_master=master or None)
        phases.clear()
        cpu0, busy0 = tree_cpu(me), machine_busy()
        started = time.perf_counter()
        report = generate(RangeSpec(files), Filters(), options, out)
        wall = time.perf_counter() - started
        cpu = cpu_by_kind(cpu0, tree_cpu(me))
        busy = machine_busy() - busy0
        summaries = phases.get("partitions_result") or []
        reply = {
            "wall": wall,
            "plan": phases.get("plan", 0.0),
            "partitions": phases.get("partitions", 0.0),
            "merge": phases.get("merge", 0.0),
            "engine_span": phases.get("partitions_span"),
            "timeline": [(s.started, s.seconds, s.bytes) for s in summaries],
            "count": report.partitions,
            "cpu": cpu,
            "busy": busy,
            "load": os.getloadavg()[0],
            "script_bytes": out.stat().st_size,
        }
        out.unlink()
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def contention(files: list[str], rounds: int = 3) -> dict[str, float]:
    """CPU seconds of two partitions' work run one after the other in forked processes, and at once
    (best of `rounds` each): what the two cores lose to sharing caches and memory bandwidth."""
    import shutil
    import tempfile

    from rollback import Filters, Options, RangeSpec
    from rollback.job import Job
    from rollback.pipeline.partition import JobSpec, run_partition
    from rollback.pipeline.plan import partition_target, plan_range, range_bytes

    rng = RangeSpec(files)
    job = Job(rng, Filters(), Options(engine="local"))
    plan = plan_range(rng, partition_target(range_bytes(rng), 2))
    parts = plan.partitions[1:3]
    out = tempfile.mkdtemp(prefix="bench-contention-")
    spec = JobSpec(out_dir=out, filters=job.filters, schemas=job._schemas(plan), plan_lines=False)

    def start(index: int) -> int:
        pid = os.fork()
        if pid == 0:
            try:
                run_partition(spec, parts[index])
            finally:
                os._exit(0)
        return pid

    def cpu(pid: int) -> float:
        _pid, _status, usage = os.wait4(pid, 0)
        return float(usage.ru_utime + usage.ru_stime)

    alone, together = float("inf"), float("inf")
    try:
        for _ in range(rounds):
            alone = min(alone, sum(cpu(start(i)) for i in range(2)))
            together = min(together, sum(cpu(pid) for pid in [start(i) for i in range(2)]))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return {
        "alone": alone,
        "together": together,
        "bytes": sum(p.size for p in parts),
        "load": os.getloadavg()[0],
    }


# ---- in the parent ---------------------------------------------------------------------------------


class Config:
    """A warm process running one configuration's jobs."""

    def __init__(self, files: list[str], label: str, config: str, request: dict[str, Any], slots: int):
        self.label = label
        self.slots = slots
        self.request = request
        self.runs: list[dict[str, Any]] = []
        self.proc = subprocess.Popen(
            [sys.executable, __file__, *files, "--child", config],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def job(self) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(self.request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.label}: the measuring process ended ({self.proc.wait()})")
        return dict(json.loads(line))

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=120)


def configs(files: list[str], engines: list[str], masters: list[str]) -> list[Config]:
    made: list[Config] = []
    if "spark" in engines:
        for master in masters:
            slots = 2 if master == "local[2]" else 1 if master == "local[1]" else 0
            made.append(Config(files, f"Spark {master}", f"spark:{master}", {}, slots))
    if "local" in engines:
        made.append(Config(files, "local engine, 1 process", "local", {"processes": 1}, 1))
        # the same process serves both: `processes` is read per job
        two = Config.__new__(Config)
        two.label, two.slots, two.request, two.runs, two.proc = (
            "local engine, 2 processes",
            2,
            {"processes": 2},
            [],
            made[-1].proc,
        )
        made.append(two)
    return made


def measure(
    files: list[str], runs: int, engines: list[str], masters: list[str], warm_ups: int = 1
) -> list[Config]:
    """Every configuration warmed up (`warm_ups` jobs), then `runs` rounds of one job each, taking turns."""
    made = configs(files, engines, masters)
    try:
        for config in made:
            for _ in range(warm_ups):
                config.job()  # Python workers, bytecode, page cache, the JVM's JIT
        for _round in range(runs):
            for config in made:
                config.runs.append(config.job())
        local = next((c for c in made if c.request.get("processes")), None)
        if local is not None:
            request, local.request = local.request, {"contention": True}
            CONTENTION.update(local.job())
            local.request = request
    finally:
        for proc in {id(c.proc): c.proc for c in made}.values():
            if proc.stdin is not None and not proc.stdin.closed:
                proc.stdin.close()
            proc.wait(timeout=120)
    return made


def timeline(run: dict[str, Any], slots: int) -> dict[str, float]:
    """The partitions of a run laid on `slots` slots (each partition on the slot that was free
    first): the waits before the first and after the last, one slot idle at the end, the gaps
    between partitions of one slot, the mean and slowest partition."""
    spans = sorted((start, start + seconds) for start, seconds, _bytes in run["timeline"])
    if not spans or not run.get("engine_span"):
        return {}
    begin, end = run["engine_span"]
    free = [begin] * max(1, slots)
    busy = [0.0] * len(free)
    last = [begin] * len(free)
    gaps = 0.0
    for start, stop in spans:
        slot = min(range(len(free)), key=lambda i: free[i])
        if last[slot] > begin:
            gaps += max(0.0, start - last[slot])
        busy[slot] += stop - start
        free[slot] = last[slot] = max(free[slot], stop)
    seconds = [stop - start for start, stop in spans]
    return {
        "first_start": spans[0][0] - begin,
        "after_last": end - max(stop for _s, stop in spans),
        "idle_end": max(last) - min(last) if len(last) > 1 else 0.0,
        "gaps": gaps,
        "mean": statistics.fmean(seconds),
        "slowest": max(seconds),
        "busy": sum(busy),
    }


def _best(config: Config) -> dict[str, Any]:
    return min(config.runs, key=lambda r: r["wall"])


def report(made: list[Config], runs: int) -> list[str]:
    """The tables and the bounds, as Markdown lines."""
    lines = [
        f"{os.cpu_count()} cores; {runs} rounds, configurations taking turns; best run (least wall "
        "time) of each; load = 1-minute load average when that run ended",
        "",
        "| configuration | partitions | wall s (median) | planning s | partitions s | merge s | other s "
        "| serial s | CPU s: driver / JVM / Python workers / forked workers | tree CPU s | cores busy "
        "| machine busy CPU s | load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for config in made:
        run = _best(config)
        other = run["wall"] - run["plan"] - run["partitions"] - run["merge"]
        cpu = run["cpu"]
        tree = sum(cpu.values())
        median = statistics.median(r["wall"] for r in config.runs)
        lines.append(
            f"| {config.label} | {run['count']} | {run['wall']:.2f} ({median:.2f}) | {run['plan']:.2f} "
            f"| {run['partitions']:.2f} | {run['merge']:.2f} | {other:.2f} | {run['wall'] - run['partitions']:.2f} "
            f"| {' / '.join(f'{cpu[k]:.2f}' for k in KINDS)} | {tree:.2f} | {tree / run['wall']:.2f} "
            f"| {run['busy']:.2f} | {run['load']:.1f} |"
        )
    lines += [
        "",
        "| configuration | before the first partition s | after the last s | one slot idle at the end s "
        "| gaps between a slot's partitions s | partition mean / slowest s | partitions' busy s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for config in made:
        t = timeline(_best(config), config.slots)
        if t:
            lines.append(
                f"| {config.label} | {t['first_start']:.3f} | {t['after_last']:.3f} | {t['idle_end']:.3f} "
                f"| {t['gaps']:.3f} | {t['mean']:.3f} / {t['slowest']:.3f} | {t['busy']:.2f} |"
            )
    lines.append("")
    lines.append(
        "JVM CPU s per run, in order (the JIT compiler's work falls over the first jobs): "
        + "; ".join(
            f"{c.label}: {', '.join(format(r['cpu']['JVM'], '.2f') for r in c.runs)}"
            for c in made
            if c.label.startswith("Spark")
        )
    )
    share = 0.0
    if CONTENTION:
        share = CONTENTION["together"] / CONTENTION["alone"] - 1
        lines.append(
            f"Two partitions ({CONTENTION['bytes'] / 2**20:.0f} MiB) in two forked processes: {CONTENTION['alone']:.2f} CPU s "
            f"one after the other, {CONTENTION['together']:.2f} at once ({share:+.1%}: the two cores share caches and "
            f"memory bandwidth; load {CONTENTION['load']:.1f})"
        )
    lines.append("")
    by_slots = {(c.label.split(",")[0].split(" local[")[0], c.slots): c for c in made}
    for engine in ("Spark", "local engine"):
        one, two = by_slots.get((engine, 1)), by_slots.get((engine, 2))
        if one is not None and two is not None:
            lines += bounds(engine, _best(one), _best(two), share)
    return lines


def bounds(engine: str, one: dict[str, Any], two: dict[str, Any], share: float = 0.0) -> list[str]:
    """The measured speed-up from one slot to two, and what the measures allow at best."""
    w1, w2 = one["wall"], two["wall"]
    c1, c2 = sum(one["cpu"].values()), sum(two["cpu"].values())
    serial = w1 - one["partitions"]
    amdahl = w1 / (serial + (w1 - serial) / 2)
    floor = serial + one["partitions"] * (1 + share) / 2
    return [
        f"{engine}, one slot -> two: measured {w1 / w2:.2f}x ({w1:.2f} s -> {w2:.2f} s)",
        f"- the one-slot run kept {c1 / w1:.2f} cores busy ({c1:.2f} CPU s in {w1:.2f} s): "
        f"two cores allow at most 2 / {c1 / w1:.2f} = {2 * w1 / c1:.2f}x",
        f"- the two-slot run needed {c2:.2f} CPU s ({c2 - c1:+.2f} s): two cores take at least "
        f"{c2 / 2:.2f} s for them, at most {2 * w1 / c2:.2f}x",
        f"- Amdahl, with the one-slot run's {serial:.2f} serial s of {w1:.2f} s ({serial / w1:.0%}): "
        f"at most {amdahl:.2f}x",
        f"- Amdahl with the cores' sharing ({share:+.1%} CPU for work done at once): {serial:.2f} s + "
        f"{one['partitions']:.2f} s x {1 + share:.3f} / 2 = {floor:.2f} s, at most {w1 / floor:.2f}x; "
        f"the rest of the two-slot run ({w2 - floor:+.2f} s) is scheduling, imbalance and the JVM",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--masters", nargs="+", default=["local[1]", "local[2]"])
    parser.add_argument("--engines", nargs="+", default=["spark", "local"], choices=["spark", "local"])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--warm-ups", type=int, default=1, help="jobs per configuration before the timed rounds"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.files, args.child)
        return
    started = time.perf_counter()
    load = os.getloadavg()[0]
    made = measure(args.files, args.runs, args.engines, args.masters, args.warm_ups)
    print(f"load average at the start {load:.1f}, at the end {os.getloadavg()[0]:.1f}")
    print("\n".join(report(made, args.runs)))
    print(f"\n(the bench took {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
