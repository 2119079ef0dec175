"""The Spark engine: one Spark task per partition, on the process's shared SparkSession.

Each task reads its byte range from the partition's location, runs the same partition function as
the local engine and gives back its Summary. What a node can see decides the rest:

* a `local[...]` master: driver and workers share this machine, so the tasks read the binlogs where
  they are and write their part files into the job's output directory;
* any other master (a cluster): the executors may be other machines. Binlogs named by local paths
  are staged into the work dir first (staging.py). A task writes its parts into a temporary
  directory of its own node and sends them back through Spark in chunks: the results are kept on
  the executors' disks (DISK_ONLY) while every task runs in parallel (`count`), then read one
  partition at a time (`toLocalIterator`) and spilled into the output directory on the driver. No
  executor writes into a directory of the driver.

Progress comes through a Spark accumulator (bytes and events of the partitions done). A
RollbackError (a corrupt binlog, a schema that disagrees) comes back in the Summary, and the job
refuses with one line. Any other exception fails the task: Spark retries it, on another executor
when one is free (spark.task.maxFailures), and after the last try the job stops with SparkFailure,
the executor's own error on one line.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import os
import re
import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterator
from typing import IO, Any

from rollback.base.errors import SparkFailure
from rollback.pipeline.engines.base import JobProgress
from rollback.pipeline.partition import JobSpec, run_partition
from rollback.pipeline.parts import Summary
from rollback.pipeline.plan import Partition
from rollback.pipeline.session import get_spark, is_local_master, spark_slots
from rollback.pipeline.staging import Staged

POLL_SECONDS = 0.25
CHUNK = 4 << 20  # part bytes per record sent back from a cluster's executor

Record = tuple[Any, ...]  # ("summary", Summary) | ("part", file name, bytes)


def _pair_param() -> Any:
    from pyspark.accumulators import AccumulatorParam

    class PairParam(AccumulatorParam):
        def zero(self, value: tuple[int, int]) -> tuple[int, int]:
            return (0, 0)

        def addInPlace(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
            return (a[0] + b[0], a[1] + b[1])

    return PairParam()


def _out_of_gc_sight() -> None:
    """Freeze what this Python worker holds (gc.freeze) as a task starts.

    PySpark's daemon runs a full gc.collect() after every task of a reused worker. Over the modules,
    decoders and caches a worker holds (some 36,000 objects) that took about 10 ms of CPU a task
    (measured: bench/README.md), more in wall time on a busy machine; with them frozen it looks at
    what the task left only. What is frozen is alive (the last task's collection just ran): a frozen
    object is still freed when its last reference goes, only a cycle among frozen objects stays."""
    gc.freeze()


def _shared_task(job: JobSpec, done: Any, descriptors: Iterator[Partition]) -> Iterator[Summary]:
    """On a local master: the parts go straight into the job's output directory."""
    _out_of_gc_sight()
    for part in descriptors:
        summary = run_partition(job, part)
        done.add((part.size, part.events))
        yield summary


def _shipping_task(job: JobSpec, done: Any, descriptors: Iterator[Partition]) -> Iterator[Record]:
    """On a cluster: the parts are written on this node, then sent back as records."""
    _out_of_gc_sight()
    for part in descriptors:
        local = tempfile.mkdtemp(prefix="mysql-rollback-parts-")
        try:
            # its `started` is on the executor's clock: a timeline only on one machine
            summary = run_partition(dataclasses.replace(job, out_dir=local), part)
            yield ("summary", summary)
            for name in sorted(os.listdir(local)):
                with open(os.path.join(local, name), "rb") as f:
                    chunk = f.read(CHUNK)
                    yield ("part", name, chunk)  # an empty part too: the merge opens every one
                    while chunk := f.read(CHUNK):
                        yield ("part", name, chunk)
        finally:
            shutil.rmtree(local, ignore_errors=True)
        done.add((part.size, part.events))


class SparkEngine:
    def __init__(self, master: str | None = None, work_dir: str | None = None):
        self.master = master  # None: the process's setting
        self.work_dir = work_dir

    def run(
        self, job: JobSpec, partitions: list[Partition], progress: JobProgress | None = None
    ) -> list[Summary]:
        return run_spark(job, partitions, progress, self.master, self.work_dir)

    def slots(self) -> int:
        return spark_slots(self.master)


def run_spark(
    job: JobSpec,
    partitions: list[Partition],
    progress: JobProgress | None = None,
    master: str | None = None,
    work_dir: str | None = None,
) -> list[Summary]:
    """Summaries of all partitions, in partition order."""
    sc = get_spark(master).sparkContext
    done = sc.accumulator((0, 0), _pair_param())
    if is_local_master(sc.master):
        rdd = sc.parallelize(partitions, len(partitions))
        summaries = _watch(
            sc,
            lambda: rdd.mapPartitions(functools.partial(_shared_task, job, done)).collect(),
            done,
            progress,
            len(partitions),
        )
    else:
        staged = Staged(partitions, work_dir, sc.master)
        try:
            summaries = _watch(
                sc, lambda: _ship(sc, job, done, staged.partitions), done, progress, len(partitions)
            )
        finally:
            staged.remove()
    summaries = sorted(summaries, key=lambda s: s.index)
    if progress is not None:
        progress(sum(p.size for p in partitions), sum(p.events for p in partitions))
    return summaries


def _ship(sc: Any, job: JobSpec, done: Any, partitions: list[Partition]) -> list[Summary]:
    """Run every partition on the cluster, then bring its parts into `job.out_dir`."""
    from pyspark import StorageLevel

    rdd = sc.parallelize(partitions, len(partitions)).mapPartitions(
        functools.partial(_shipping_task, job, done)
    )
    rdd.persist(StorageLevel.DISK_ONLY)
    try:
        rdd.count()  # every task, in parallel; their records stay on the executors' disks
        summaries: list[Summary] = []
        out: IO[bytes] | None = None
        name = ""
        try:
            for record in rdd.toLocalIterator():
                if record[0] == "summary":
                    summaries.append(record[1])
                    continue
                if record[1] != name:
                    if out is not None:
                        out.close()
                    name = record[1]
                    out = open(os.path.join(job.out_dir, name), "wb")
                assert out is not None
                out.write(record[2])
        finally:
            if out is not None:
                out.close()
        return summaries
    finally:
        rdd.unpersist()


def _watch(sc: Any, action: Any, done: Any, progress: JobProgress | None, tasks: int) -> list[Summary]:
    """Run the Spark action in a thread of its own, reporting progress meanwhile; a progress
    callback that raises cancels the Spark job."""
    group = f"mysql-rollback-{uuid.uuid4().hex}"
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            sc.setJobGroup(group, f"flashback: {tasks} partitions", interruptOnCancel=True)
            outcome["summaries"] = action()
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="mysql-rollback-spark-job", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(POLL_SECONDS)
            if progress is not None and worker.is_alive():
                progress(*done.value)
    except BaseException:
        sc.cancelJobGroup(group)
        worker.join(30)  # the cancelled job ends soon; a stuck one is left to its daemon thread
        raise
    if "error" in outcome:
        raise spark_failure(outcome["error"], _tries(sc)) from None
    summaries: list[Summary] = outcome["summaries"]
    return summaries


_PYTHON_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b.*)$", re.M)


def spark_failure(exc: BaseException, tries: int) -> BaseException:
    """The error to raise for a failed Spark job: SparkFailure with the executor's own error on one
    line; an exception that is not Spark's unchanged."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if not names & {"Py4JJavaError", "CapturedException", "PySparkException"}:
        return exc
    text = str(exc)
    cause = _python_error(text) or _first_java_line(text)
    message = f"Spark gave up on a partition's task after {tries} tries (spark.task.maxFailures): {cause}"
    if "No module named 'rollback'" in cause:
        message += (
            "; the executors' Python lacks mysql-rollback: install it on every node and name that "
            "interpreter with spark.pyspark.python (MYSQL_ROLLBACK_SPARK_CONF_spark__pyspark__python)"
        )
    return SparkFailure(message)


def _tries(sc: Any) -> int:
    """How often Spark runs a task before it gives up: once in local mode (local[N]), local[N,F]: F."""
    master = str(sc.master)
    if master.startswith("local"):
        found = re.fullmatch(r"local\[[^,\]]+,\s*(\d+)\]", master)
        return int(found.group(1)) if found else 1
    return int(sc.getConf().get("spark.task.maxFailures", "4"))


def _python_error(text: str) -> str | None:
    """The last line of the executor's Python traceback: its exception and message."""
    at = text.find("Traceback (most recent call last):")
    if at < 0:
        return None
    block = re.split(r"\n\s*\n|\n\tat ", text[at:], maxsplit=1)[0]
    found = _PYTHON_ERROR.findall(block)
    return found[-1].strip() if found else None


def _first_java_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip().lstrip(": ").strip()
        if line and not line.startswith("An error occurred while calling"):
            return line
    return text.strip()
