"""The change log as Parquet, written by Spark from the partitions' JSON lines.

One row per row change: where it is in the binlog, its transaction, table and type, and its images
as JSON text (their columns differ from table to table), so that an incident can be analysed with
Spark SQL: counts per table, per minute, per thread.
"""

from __future__ import annotations

from typing import Any

from rollback.pipeline.session import get_spark


def change_log_schema() -> Any:
    from pyspark.sql import types as T

    return T.StructType(
        [
            T.StructField("file", T.StringType()),
            T.StructField("pos", T.LongType()),
            T.StructField("end_pos", T.LongType()),
            T.StructField("gtid", T.StringType()),
            T.StructField("timestamp", T.StringType()),
            T.StructField("server_id", T.LongType()),
            T.StructField("thread_id", T.LongType()),
            T.StructField("database", T.StringType()),
            T.StructField("table", T.StringType()),
            T.StructField("type", T.StringType()),
            T.StructField("row", T.LongType()),
            # A JSON object read as a string keeps its text: the images stay exact JSON.
            T.StructField("before", T.StringType()),
            T.StructField("after", T.StringType()),
        ]
    )


def write_parquet(parts: list[str], path: str, spark_master: str | None = None) -> None:
    """Write the JSON-lines parts (in order) as one Parquet dataset at `path` (a directory)."""
    from pyspark.sql import functions as F

    spark = get_spark(spark_master)
    frame = (
        spark.read.schema(change_log_schema())
        .option("mode", "FAILFAST")
        .json([p for p in parts])
        .withColumn("time", F.to_timestamp(F.col("timestamp"), "yyyy-MM-dd'T'HH:mm:ssX"))
    )
    frame.write.mode("errorifexists").parquet(path)
