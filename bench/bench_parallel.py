"""One slot against two on one binlog: where a job's time goes, and the best speed-up two cores allow
(issue 14).

    .venv/bin/python bench/bench_parallel.py FILE [FILE...] [--runs 5] [--warm-ups 3]
                                             [--engines spark local] [--masters 'local[1]' 'local[2]']

FILE is a binlog that names its columns (binlog_row_metadata=FULL), e.g. the `mixed.binlog` that
`bench/bench_pipeline.py --generate-only --keep DIR` writes. Each configuration runs in a process of
its own, kept warm (a Spark session per master, one local-engine process): Spark `local[1]` and
`local[2]`, and the local engine with one process (the partitions in order, in the driver) and with
two forked workers. After `--warm-ups` jobs each (the JVM's JIT compiler works through the first
jobs: its CPU seconds are printed per run), the configurations take turns, `--runs` rounds, so a
change in the machine's load falls on all of them alike. Every job writes the flashback script only
(as the CLI does without --plan). Per job:

* wall seconds, split into planning (the header walk, in the driver), the partitions (the engine's
  run: the parallel part), the merge (parts into the script) and the rest (schemas, checks, the
  header, removing the parts);
* CPU seconds (user + system) of the whole process tree, by kind: the driver, the JVM, Spark's
  Python workers, the local engine's forked workers (read from /proc before and after the job; a
  process that ended is counted through its parent's reaped-children times), and what the rest of
  the machine was busy with meanwhile (its busy CPU seconds less the tree's: other processes, and
  the kernel's threads such as the page cache's writeback);
* the timeline of the partitions (every engine stamps when each started, on the machine's monotonic
  clock): the wait before the first partition starts (Spark: job submission, task serialisation;
  local: the forks), after the last one ends (result collection), the time one slot stood idle at
  the end while the other still worked, the gaps between one slot's partitions (per-task
  overhead), and each partition's CPU seconds;
* for Spark, after each job, its empty twin on the same warm session: the same JobSpec and
  partition descriptors through the engine's own `run_spark`, each task freezing the worker's heap
  and returning a Summary padded to the real one's pickled size, but doing no partition work. Its
  table ("Spark's empty job") gives its wall time (best run, median), the wait before its first
  task, after its last, the gaps between one slot's tasks, the CPU seconds of the driver, the JVM
  and the Python workers, and the bytes of the results: what Spark's scheduling costs a job by
  itself (submission, task launch, the gaps, result collection, the JVM's CPU);
* once, two partitions run one after the other and at once in forked processes: the CPU seconds the
  two cores lose to sharing caches and memory bandwidth; and the serial part's floor: the planner's
  CPU seconds, framing every event of the file in the compiled core (little but mapping the file's
  pages) and in Python, the merge's copy with one thread and with two.

Then, for each engine, the speed-up from one slot to two (best run of each), and the bounds that
follow from the measures: two cores finish the two-slot run's CPU seconds in no less than half
of them (the CPU bound), the one-slot run already kept `CPU / wall` cores busy (the driver, the JVM
and the merge beside the one slot: 2 / that is the best two cores allow it), Amdahl's law with
the one-slot run's serial seconds (and with the cores' sharing), for Spark Amdahl with the serial
part plus Spark's empty-job cost (serial + the two-slot empty job + (the one-slot partitions less
its empty job) x sharing / 2: how far Spark's scheduling alone keeps the speed-up from the goal),
and the speed-up the CPU seconds alone predict (the driver's, the partitions' on the busiest slot,
half the JVM's): on a machine others load, wall times say little and that estimate is the figure to
compare. A task that does no work shows every wait of Spark's task protocol; a real task hides the
ones that overlap its work, so the empty job bounds Spark's scheduling cost from above.
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
    import rollback.job.run as job_module
    from rollback import Filters, Options, RangeSpec, generate
    from rollback.pipeline.engines.local import LocalEngine
    from rollback.pipeline.engines.spark import SparkEngine

    engine, _, master = config.partition(":")
    if engine == "spark":
        from rollback.pipeline.warm import warm_spark

        warm_spark(master)
    phases: dict[str, Any] = {}
    ran: dict[str, Any] = {}  # the last Spark job's JobSpec and partitions, for its empty twin
    spark_run = SparkEngine.run

    def keep_args(self: Any, job: Any, partitions: Any, progress: Any = None) -> Any:
        ran["args"] = (job, partitions)
        return spark_run(self, job, partitions, progress)

    SparkEngine.run = keep_args  # type: ignore[method-assign]
    job_module.plan_range = _timed(phases, "plan", job_module.plan_range)  # type: ignore[assignment]
    for cls in (SparkEngine, LocalEngine):
        cls.run = _timed(phases, "partitions", cls.run, keep=True)  # type: ignore[method-assign]
    job_module.Job._merge = _timed(phases, "merge", job_module.Job._merge)  # type: ignore[method-assign]
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-parallel-{os.getpid()}.sql"
    me = os.getpid()
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("contention"):
            sys.stdout.write(json.dumps({**contention(files), **serial_floor(files)}) + "\n")
            sys.stdout.flush()
            continue
        processes = int(request.get("processes", 1))
        job_module.usable_cpus = lambda n=processes: n  # type: ignore[attr-defined,misc]
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
            "timeline": [(s.started, s.seconds, s.bytes, s.cpu) for s in summaries],
            # the partitions ran in this process: the local engine's serial run (a Spark job of one
            # partition runs so too)
            "in_driver": report.engine == "local" and (processes <= 1 or report.partitions <= 1),
            # the order the engine hands partitions out: the local engine's workers largest first
            "dispatch": "size" if engine == "local" else "index",
            "count": report.partitions,
            "cpu": cpu,
            "busy": busy,
            "load": os.getloadavg()[0],
            "script_bytes": out.stat().st_size,
        }
        out.unlink()
        if engine == "spark" and "args" in ran:
            job, partitions = ran.pop("args")
            reply["empty"] = empty_job(job, partitions, summaries, master, me)
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def empty_job(job: Any, partitions: list[Any], summaries: list[Any], master: str, me: int) -> dict[str, Any]:
    """The Spark job just measured again on the same warm session, its tasks doing no work: the
    engine's own path (run_spark: the accumulator, the job's JobSpec and partition descriptors
    serialised into the tasks, the action in a thread, the results collected and sorted) with each
    task freezing the worker's heap as the real one does and returning a Summary padded to the real
    one's pickled size. Its wall time is what Spark's scheduling costs the job without any partition
    work: submission, task launch, the gaps between one slot's tasks, result collection."""
    import pickle

    from rollback.pipeline.engines import spark as spark_engine

    sizes = {s.index: len(pickle.dumps(s)) for s in summaries}
    task = _empty_task(sizes)
    saved = spark_engine._shared_task
    spark_engine._shared_task = task  # type: ignore[assignment]
    try:
        cpu0 = tree_cpu(me)
        started = time.monotonic()
        results = spark_engine.run_spark(job, partitions, None, master)
        ended = time.monotonic()
        cpu = cpu_by_kind(cpu0, tree_cpu(me))
    finally:
        spark_engine._shared_task = saved  # type: ignore[assignment]
    return {
        "wall": ended - started,
        "engine_span": (started, ended),
        "timeline": [(r.started, r.seconds, r.bytes, r.cpu) for r in results],
        "count": len(results),
        "result_bytes": sum(len(pickle.dumps(r)) for r in results),
        "cpu": cpu,
    }


def _empty_task(sizes: dict[int, int]) -> Any:
    """A Spark task like engines/spark.py's `_shared_task` that does no partition work: its Summary,
    padded to `sizes[index]` pickled bytes, is all it returns (defined in a closure: pickled by
    value, the workers need not import this file)."""

    def task(job: Any, done: Any, descriptors: Any) -> Any:
        import pickle
        import time

        from rollback.pipeline.engines.spark import _out_of_gc_sight
        from rollback.pipeline.parts import Summary

        _out_of_gc_sight()
        for part in descriptors:
            started = time.monotonic()
            summary = Summary(part.index, part.size, part.events, started=started)
            padding = sizes.get(part.index, 0) - len(pickle.dumps(summary)) - 8
            summary.warnings = ["." * max(0, padding)]
            done.add((part.size, part.events))
            yield summary

    return task


def contention(files: list[str], rounds: int = 3) -> dict[str, float]:
    """CPU seconds of two partitions' work run one after the other in forked processes, and at once
    (best of `rounds` each): what the two cores lose to sharing caches and memory bandwidth."""
    import shutil
    import tempfile

    from rollback import Filters, Options, RangeSpec
    from rollback.job.run import Job
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


def serial_floor(files: list[str], rounds: int = 3) -> dict[str, float]:
    """What the serial part is made of, each best of `rounds`: the planner's walk (CPU seconds), and
    framing every event of the files in the compiled core (the mapping of the pages) and in Python;
    the merge's copy of a script-sized file into one file with one thread and with two (halves at
    explicit offsets: does a second core help?)."""
    import tempfile
    import threading

    from rollback import RangeSpec
    from rollback.base import hotpath
    from rollback.binlog.reader import BinlogFile, iter_events, skip_run
    from rollback.pipeline.plan import partition_target, plan_range, range_bytes

    rng = RangeSpec(files)
    target = partition_target(range_bytes(rng), 2)
    found: dict[str, float] = {"plan": float("inf"), "framing": float("inf"), "framing_c": float("inf")}
    every_type = b"\x01" * 256
    skip = skip_run if hotpath.CORE is None else hotpath.CORE.skip_run
    for _ in range(rounds):
        cpu = time.process_time()
        plan_range(rng, target)
        found["plan"] = min(found["plan"], time.process_time() - cpu)
        cpu = time.process_time()
        for path in files:
            with BinlogFile(path) as binlog:
                for _event in iter_events(binlog.buf, binlog.facts, 4, binlog.size, verify=False):
                    pass
        found["framing"] = min(found["framing"], time.process_time() - cpu)
        cpu = time.process_time()
        for path in files:  # every event framed in one call: little but the mapping of the file's pages
            with BinlogFile(path) as binlog:
                facts = binlog.facts
                skip(
                    binlog.buf, 4, binlog.size, binlog.size, facts.header_len, facts.checksum_len, every_type
                )
        found["framing_c"] = min(found["framing_c"], time.process_time() - cpu)
    size = int(range_bytes(rng) * 0.57)  # the mixed file's script is 57% of its bytes
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        source = os.path.join(tmp, "part")
        with open(source, "wb") as f:
            block = os.urandom(1 << 20)
            for _ in range(size >> 20):
                f.write(block)
        size = os.path.getsize(source)
        for threads in (1, 2):
            best = float("inf")
            for _ in range(rounds):
                target_path = os.path.join(tmp, "script")
                src, dst = os.open(source, os.O_RDONLY), os.open(target_path, os.O_WRONLY | os.O_CREAT, 0o600)
                started = time.perf_counter()
                workers = [
                    threading.Thread(target=_copy_share, args=(src, dst, size, threads, k))
                    for k in range(threads)
                ]
                for worker in workers:
                    worker.start()
                for worker in workers:
                    worker.join()
                best = min(best, time.perf_counter() - started)
                os.close(src)
                os.close(dst)
                os.unlink(target_path)
            found[f"copy{threads}"] = best
        found["copy_bytes"] = size
    return found


HEADER_BYTES = 1234  # the script's header: the merge copies parts to offsets no page boundary aligns


def _copy_share(src: int, dst: int, size: int, shares: int, k: int) -> None:
    """Copy the k-th of `shares` equal byte ranges of `src` to `dst`, after HEADER_BYTES."""
    offset = k * (size // shares)
    left = (size // shares) if k < shares - 1 else size - offset
    while left > 0:
        done = os.copy_file_range(src, dst, left, offset, offset + HEADER_BYTES)
        offset, left = offset + done, left - done


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
    files: list[str], runs: int, engines: list[str], masters: list[str], warm_ups: int = 3
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
    spans = sorted((start, start + seconds, cpu) for start, seconds, _bytes, cpu in run["timeline"])
    if not spans or not run.get("engine_span"):
        return {}
    begin, end = run["engine_span"]
    free = [begin] * max(1, slots)
    busy = [0.0] * len(free)
    cpu = [0.0] * len(free)
    last = [begin] * len(free)
    gaps = 0.0
    for start, stop, used in spans:
        slot = min(range(len(free)), key=lambda i: free[i])
        if last[slot] > begin:
            gaps += max(0.0, start - last[slot])
        busy[slot] += stop - start
        cpu[slot] += used
        free[slot] = last[slot] = max(free[slot], stop)
    seconds = [stop - start for start, stop, _cpu in spans]
    return {
        "first_start": spans[0][0] - begin,
        "after_last": end - max(stop for _s, stop, _cpu in spans),
        "idle_end": max(last) - min(last) if len(last) > 1 else 0.0,
        "gaps": gaps,
        "mean": statistics.fmean(seconds),
        "slowest": max(seconds),
        "busy": sum(busy),
        "cpu": sum(cpu),
        "slot_cpu": max(cpu),  # the busiest slot's partitions, in CPU seconds
    }


def _best(config: Config) -> dict[str, Any]:
    return min(config.runs, key=lambda r: r["wall"])


def _best_empty(config: Config) -> dict[str, Any] | None:
    """The empty Spark job (no partition work) of least wall time among the configuration's runs."""
    empties = [r["empty"] for r in config.runs if r.get("empty")]
    return min(empties, key=lambda e: e["wall"]) if empties else None


def report(made: list[Config], runs: int) -> list[str]:
    """The tables and the bounds, as Markdown lines."""
    lines = [
        f"{os.cpu_count()} cores; {runs} rounds, configurations taking turns; best run (least wall "
        "time) of each; load = 1-minute load average when that run ended",
        "",
        "| configuration | partitions | wall s (median) | planning s | partitions s | merge s | other s "
        "| serial s | CPU s: driver / JVM / Python workers / forked workers | tree CPU s | cores busy "
        "| others' CPU s | load |",
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
            f"| {run['busy'] - tree:.2f} | {run['load']:.1f} |"
        )
    lines += [
        "",
        "| configuration | before the first partition s | after the last s | one slot idle at the end s "
        "| gaps between a slot's partitions s | partition mean / slowest s | partitions' busy s "
        "| partitions' CPU s (busiest slot) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for config in made:
        t = timeline(_best(config), config.slots)
        if t:
            lines.append(
                f"| {config.label} | {t['first_start']:.3f} | {t['after_last']:.3f} | {t['idle_end']:.3f} "
                f"| {t['gaps']:.3f} | {t['mean']:.3f} / {t['slowest']:.3f} | {t['busy']:.2f} "
                f"| {t['cpu']:.2f} ({t['slot_cpu']:.2f}) |"
            )
    empties = [(c, _best_empty(c)) for c in made]
    if any(e for _c, e in empties):
        lines += [
            "",
            "| Spark's empty job (the same tasks on the same warm session, no partition work) | tasks "
            "| wall s (median) | before the first task s | after the last s | gaps between a slot's tasks s "
            "| CPU s: driver / JVM / Python workers | results' bytes |",
            "|---|---:|---:|---:|---:|---:|---|---:|",
        ]
        for config, empty in empties:
            if empty is None:
                continue
            t = timeline(empty, config.slots)
            median = statistics.median(r["empty"]["wall"] for r in config.runs if r.get("empty"))
            cpu = " / ".join(f"{empty['cpu'][k]:.2f}" for k in KINDS[:3])
            lines.append(
                f"| {config.label} | {empty['count']} | {empty['wall']:.3f} ({median:.3f}) "
                f"| {t.get('first_start', 0.0):.3f} | {t.get('after_last', 0.0):.3f} | {t.get('gaps', 0.0):.3f} "
                f"| {cpu} | {empty['result_bytes']} |"
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
    if "plan" in CONTENTION:
        c = CONTENTION
        lines.append(
            f"The serial part's floor: planning {c['plan']:.3f} CPU s (framing every event with the compiled "
            f"core's skip_run: {c.get('framing_c', float('nan')):.3f}, little but mapping the file's pages; with "
            f"iter_events, one Python object per event: {c['framing']:.3f}); the merge's copy of "
            f"{c['copy_bytes'] / 2**20:.0f} MiB "
            f"into one file {c['copy1']:.3f} s with one thread, {c['copy2']:.3f} s with two"
        )
    lines.append("")
    by_slots = {(c.label.split(",")[0].split(" local[")[0], c.slots): c for c in made}
    for engine in ("Spark", "local engine"):
        one, two = by_slots.get((engine, 1)), by_slots.get((engine, 2))
        if one is not None and two is not None:
            best_empties = (_best_empty(one), _best_empty(two))
            lines += bounds(
                engine, _best(one), _best(two), share, None if None in best_empties else best_empties
            )
            lines += cpu_path(engine, _best(one), _best(two))
    return lines


def cpu_path(engine: str, one: dict[str, Any], two: dict[str, Any]) -> list[str]:
    """The speed-up CPU seconds alone predict, whatever else the machine ran: the driver's own work
    (serial) plus the partitions' CPU on one slot, against the driver's work plus the busiest
    slot's partitions and half the JVM's CPU (it shares the two cores with them; beside one slot
    it has the other core to itself)."""

    def serial(run: dict[str, Any], t: dict[str, float]) -> float:
        return float(run["cpu"]["driver"] - (t["cpu"] if run["in_driver"] else 0.0))

    t1, t2 = timeline(one, 1), timeline(two, 2)
    if not t1 or not t2:
        return []
    busiest = scheduled(two, 2)
    e1 = serial(one, t1) + t1["cpu"]
    e2 = serial(two, t2) + busiest + two["cpu"]["JVM"] / 2
    return [
        f"- in CPU seconds (what an idle machine would give, scheduling and waits left out): one slot "
        f"{serial(one, t1):.2f} serial + {t1['cpu']:.2f} partitions = {e1:.2f} s; two slots "
        f"{serial(two, t2):.2f} + {busiest:.2f} (the busier slot, the partitions' CPU seconds handed out "
        f"in the engine's order) + {two['cpu']['JVM']:.2f} / 2 (JVM) = {e2:.2f} s: {e1 / e2:.2f}x",
    ]


def scheduled(run: dict[str, Any], slots: int) -> float:
    """The busier slot's CPU seconds when the run's partitions, each taking its CPU seconds, are
    handed out in the engine's order to the slot that is free first (as on an idle machine)."""
    entries = run["timeline"]
    if run.get("dispatch") == "size":
        entries = sorted(entries, key=lambda e: -e[2])
    free = [0.0] * slots
    for _start, _seconds, _bytes, cpu in entries:
        free[free.index(min(free))] += cpu
    return max(free)


def bounds(
    engine: str,
    one: dict[str, Any],
    two: dict[str, Any],
    share: float = 0.0,
    empty: tuple[Any, Any] | None = None,
) -> list[str]:
    """The measured speed-up from one slot to two, and what the measures allow at best (`empty`:
    Spark's empty jobs on one slot and on two, for the bound with Spark's own scheduling)."""
    w1, w2 = one["wall"], two["wall"]
    c1, c2 = sum(one["cpu"].values()), sum(two["cpu"].values())
    serial = w1 - one["partitions"]
    amdahl = w1 / (serial + (w1 - serial) / 2)
    floor = serial + one["partitions"] * (1 + share) / 2
    others = max(one["busy"] - c1, two["busy"] - c2)
    loaded = []
    if others > 0.2 * min(w1, w2):
        loaded = [
            f"- other processes took up to {others:.2f} CPU s during these runs: the wall times and the "
            "bounds read from them do not hold here; the CPU-seconds estimate below does"
        ]
    scheduling = []
    if empty is not None:
        e1, e2 = empty[0]["wall"], empty[1]["wall"]
        work = one["partitions"] - e1
        spark_floor = serial + e2 + work * (1 + share) / 2
        scheduling = [
            f"- Amdahl with the serial part plus Spark's empty-job cost (the same tasks doing no work: "
            f"{e1:.2f} s on one slot, {e2:.2f} s on two): {serial:.2f} s + {e2:.2f} s + "
            f"({one['partitions']:.2f} - {e1:.2f}) s x {1 + share:.3f} / 2 = {spark_floor:.2f} s, at most "
            f"{w1 / spark_floor:.2f}x; from {w1 / floor:.2f}x (Amdahl with the cores' sharing) Spark's "
            f"scheduling itself takes {w1 / floor - w1 / spark_floor:.2f}, the rest of the way to the "
            f"measured {w1 / w2:.2f}x ({w1 / spark_floor - w1 / w2:+.2f}) is the JVM's CPU, imbalance "
            "and the load"
        ]
    return [
        f"{engine}, one slot -> two: measured {w1 / w2:.2f}x ({w1:.2f} s -> {w2:.2f} s)",
        *loaded,
        f"- the one-slot run kept {c1 / w1:.2f} cores busy ({c1:.2f} CPU s in {w1:.2f} s): "
        f"two cores allow at most 2 / {c1 / w1:.2f} = {2 * w1 / c1:.2f}x",
        f"- the two-slot run needed {c2:.2f} CPU s ({c2 - c1:+.2f} s): two cores take at least "
        f"{c2 / 2:.2f} s for them, at most {2 * w1 / c2:.2f}x",
        f"- Amdahl, with the one-slot run's {serial:.2f} serial s of {w1:.2f} s ({serial / w1:.0%}): "
        f"at most {amdahl:.2f}x",
        f"- Amdahl with the cores' sharing ({share:+.1%} CPU for work done at once): {serial:.2f} s + "
        f"{one['partitions']:.2f} s x {1 + share:.3f} / 2 = {floor:.2f} s, at most {w1 / floor:.2f}x; "
        f"the rest of the two-slot run ({w2 - floor:+.2f} s) is scheduling, imbalance and the JVM",
        *scheduling,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--masters", nargs="+", default=["local[1]", "local[2]"])
    parser.add_argument("--engines", nargs="+", default=["spark", "local"], choices=["spark", "local"])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--warm-ups", type=int, default=3, help="jobs per configuration before the timed rounds"
    )
    parser.add_argument("--json", type=Path, help="also write every run's measures to this file")
    parser.add_argument("--from-json", type=Path, help="print the tables of a --json file again")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.files, args.child)
        return
    started = time.perf_counter()
    load = os.getloadavg()[0]
    if args.from_json:
        made = []
        for saved in json.loads(args.from_json.read_text()):
            config = Config.__new__(Config)
            config.label, config.slots, config.runs = saved["label"], saved["slots"], saved["runs"]
            made.append(config)
        CONTENTION.update(made and saved.get("contention") or {})
    else:
        made = measure(args.files, args.runs, args.engines, args.masters, args.warm_ups)
    if args.json:
        args.json.write_text(
            json.dumps(
                [{"label": c.label, "slots": c.slots, "runs": c.runs, "contention": CONTENTION} for c in made]
            )
        )
    print(f"load average at the start {load:.1f}, at the end {os.getloadavg()[0]:.1f}")
    print("\n".join(report(made, len(made[0].runs) if made else args.runs)))
    print(f"\n(the bench took {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
