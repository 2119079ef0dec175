"""The engines a job's partitions run on: one `Engine` protocol, one module each, and the choice.

Both run the same partition function (rollback/pipeline/partition.py) and give the same
summaries; the tests hold them to the same bytes.
"""

from __future__ import annotations

from rollback.pipeline.engines.base import Engine
from rollback.pipeline.session import is_local_master
from rollback.request.spec import EngineKind


def engine_for(
    kind: EngineKind, spark_master: str | None = None, work_dir: str | None = None, processes: int = 1
) -> Engine:
    """The engine of that kind; Spark on `spark_master` (None: the process's setting); the local
    engine with up to `processes` forked workers."""
    if kind == EngineKind.SPARK:
        from rollback.pipeline.engines.spark import SparkEngine  # pyspark only when asked for

        return SparkEngine(spark_master, work_dir)
    from rollback.pipeline.engines.local import LocalEngine

    return LocalEngine(processes)


def _mb(size: int) -> str:
    return f"{size / (1 << 20):,.1f} MiB"


def choose_engine(
    asked: EngineKind,
    range_bytes: int,
    auto_spark_bytes: int,
    spark_master: str | None = None,
    spark_warm: bool = True,
) -> tuple[EngineKind, str]:
    """The engine a range runs on, and why (said on stderr, in the report and the job record).

    `auto` runs in-process below `auto_spark_bytes` of range (a small range never starts a JVM), on
    Spark from there on, except on a local master whose session is cold: there a JVM would start
    for no core the local engine's forked workers lack (bench/README.md: the local engine beats a
    cold local Spark at every size on this kind of machine). A cluster master, or a session that is
    already warm, takes the threshold. `local` and `spark` are taken as asked."""
    if asked == EngineKind.LOCAL:
        return EngineKind.LOCAL, "asked for"
    if asked == EngineKind.SPARK:
        return EngineKind.SPARK, "asked for"
    if range_bytes < auto_spark_bytes:
        return EngineKind.LOCAL, f"auto: the range's {_mb(range_bytes)} is under {_mb(auto_spark_bytes)}"
    size = f"the range's {_mb(range_bytes)} is at least {_mb(auto_spark_bytes)}"
    if spark_master is not None and is_local_master(spark_master) and not spark_warm:
        return EngineKind.LOCAL, (
            f"auto: {size}, but Spark's master {spark_master} is local and not started: a cold JVM "
            "would bring no core the local engine lacks"
        )
    where = "" if spark_master is None else f" (master {spark_master}, {'warm' if spark_warm else 'cold'})"
    return EngineKind.SPARK, f"auto: {size}{where}"
