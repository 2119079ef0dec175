"""The engines a job's partitions run on: one `Engine` protocol, one module each.

Both run the same partition function (rollback/pipeline/partition.py) and give the same
summaries; the tests hold them to the same bytes.
"""

from __future__ import annotations

from rollback.pipeline.engines.base import Engine
from rollback.request import EngineKind


def engine_for(kind: EngineKind, spark_master: str | None = None) -> Engine:
    """The engine of that kind; Spark on `spark_master` (None: the process's setting)."""
    if kind == EngineKind.SPARK:
        from rollback.pipeline.engines.spark import SparkEngine  # pyspark only when asked for

        return SparkEngine(spark_master)
    from rollback.pipeline.engines.local import LocalEngine

    return LocalEngine()
