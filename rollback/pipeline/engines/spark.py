"""The Spark engine: one Spark task per partition, on the process's shared SparkSession.

`sparkContext.parallelize(descriptors, len(descriptors)).mapPartitions(task)`: each Python worker
reads its byte range from the binlog's path (local, `file://`, or an fsspec URL when the files sit
on shared storage), runs the same partition function as the local engine, writes its part files
into the job's output directory, and sends back only its small Summary. While the job runs, the
workers note their progress in `part-NNNNNN.progress` files that the driver sums.
"""

from __future__ import annotations

import functools
import os
import threading
import time
import traceback
import uuid
from collections.abc import Iterator
from typing import Any

from rollback.pipeline.engines.base import JobProgress
from rollback.pipeline.partition import JobSpec, PartitionProgress, run_partition
from rollback.pipeline.parts import Summary, part_path
from rollback.pipeline.plan import Partition
from rollback.pipeline.session import get_spark

POLL_SECONDS = 0.25
NOTE_SECONDS = 0.25


def _file_progress(path: str, size: int) -> PartitionProgress:
    last = [0.0]

    def note(done: int, events: int) -> None:
        now = time.monotonic()
        if now - last[0] < NOTE_SECONDS and done < size:
            return
        last[0] = now
        tmp = f"{path}.tmp"
        with open(tmp, "w") as f:
            f.write(f"{done} {events}")
        os.replace(tmp, path)

    return note


def _task(job: JobSpec, notes: bool, descriptors: Iterator[Partition]) -> Iterator[Summary]:
    for part in descriptors:
        progress = (
            _file_progress(part_path(job.out_dir, part.index, "progress"), part.size) if notes else None
        )
        try:
            yield run_partition(job, part, progress)
        except Exception:  # a bug, not a user error: its traceback, not the JVM's
            error = {"type": "internal", "message": f"partition {part.index}: {traceback.format_exc()}"}
            yield Summary(part.index, bytes=part.size, events=part.events, error=error)


def _read_progress(job: JobSpec, partitions: list[Partition]) -> tuple[int, int]:
    done = events = 0
    for part in partitions:
        try:
            with open(part_path(job.out_dir, part.index, "progress")) as f:
                b, e = f.read().split()
        except (OSError, ValueError):
            continue
        done += int(b)
        events += int(e)
    return done, events


class SparkEngine:
    def __init__(self, master: str | None = None):
        self.master = master  # None: the process's setting

    def run(
        self, job: JobSpec, partitions: list[Partition], progress: JobProgress | None = None
    ) -> list[Summary]:
        return run_spark(job, partitions, progress, self.master)


def run_spark(
    job: JobSpec, partitions: list[Partition], progress: JobProgress | None = None, master: str | None = None
) -> list[Summary]:
    """Summaries of all partitions, in partition order."""
    sc = get_spark(master).sparkContext
    rdd = sc.parallelize(partitions, len(partitions))
    task = functools.partial(_task, job, progress is not None)
    group = f"mysql-rollback-{uuid.uuid4().hex}"
    outcome: dict[str, Any] = {}

    def collect() -> None:
        try:
            sc.setJobGroup(group, f"flashback: {len(partitions)} partitions", interruptOnCancel=True)
            outcome["summaries"] = rdd.mapPartitions(task).collect()
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=collect, name="mysql-rollback-spark-job", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(POLL_SECONDS)
            if progress is not None and worker.is_alive():
                progress(*_read_progress(job, partitions))
    except BaseException:
        sc.cancelJobGroup(group)
        raise
    if "error" in outcome:
        raise outcome["error"]
    summaries: list[Summary] = sorted(outcome["summaries"], key=lambda s: s.index)
    if progress is not None:
        progress(sum(p.size for p in partitions), sum(p.events for p in partitions))
    return summaries
