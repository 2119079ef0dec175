"""Spark made warm ahead of the first job: the session, its executors and their Python workers.

A long-lived process (the service) calls `warm_spark` once at start-up, in the background. The
first job then pays neither the JVM's start nor the Python workers' fork and imports: a small
Spark job with one task per slot makes every worker import the partition code, and workers are
reused from then on (spark.python.worker.reuse, Spark's default).

`niceness` lowers the priority of the JVM (every one of its threads, so the Python workers it
starts inherit it) below the process that serves requests.
"""

from __future__ import annotations

import os
from typing import Any

from rollback.pipeline.session import get_spark


def _import_partition_code(_index: int) -> int:
    import rollback.pipeline.partition  # noqa: F401 - the import is the point

    return os.getpid()


def renice_tree(pid: int, niceness: int) -> None:
    """Lower the priority of every thread of `pid` (Linux keeps a nice value per thread)."""
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        tids = [pid]
    for tid in tids:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid), niceness))
        except OSError:
            pass  # a thread that ended meanwhile


def warm_spark(master: str | None = None, niceness: int = 0) -> dict[str, Any]:
    """Start the session (if it is not) and every executor slot's Python worker; returns the slots
    and the workers' process ids."""
    spark = get_spark(master)
    sc = spark.sparkContext
    gateway = getattr(getattr(sc, "_gateway", None), "proc", None)
    if niceness and gateway is not None:
        renice_tree(gateway.pid, niceness)
    slots = max(1, int(sc.defaultParallelism))
    pids = sc.parallelize(range(slots), slots).map(_import_partition_code).collect()
    return {"slots": slots, "workers": sorted(set(pids))}
