"""--ddl reverse on Spark: the per-epoch schemas and the inverse DDL travel with the job to the tasks,
and the script split across Spark partitions is the local, unsplit one byte for byte."""

from __future__ import annotations

from tests.support.restore import flashback, span


def test_reverse_on_spark_writes_the_bytes_of_the_local_unsplit_job(scratch_server, spark, tmp_path):
    db = "ddl_reverse_spark"
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT, b VARCHAR(20))",
            f"INSERT INTO {db}.t VALUES (1, 10, 'one'), (2, 20, 'two'), (3, 30, 'three')",
        ]
    )
    first = scratch_server.run_sql([f"DELETE FROM {db}.t WHERE id = 2"])
    scratch_server.run_sql([f"ALTER TABLE {db}.t ADD COLUMN d INT DEFAULT 7 FIRST"])
    scratch_server.run_sql([f"UPDATE {db}.t SET d = {i}, b = 'x{i}' WHERE id = 1" for i in range(20)])
    scratch_server.run_sql([f"RENAME TABLE {db}.t TO {db}.t2"])
    last = scratch_server.run_sql([f"DELETE FROM {db}.t2 WHERE id = 3"])
    rng = span(scratch_server, first, last)
    local, _plan, _report = flashback(scratch_server, rng, tmp_path, name="local", ddl="reverse")
    spark_script, _plan, report = flashback(
        scratch_server, rng, tmp_path, name="spark", ddl="reverse", engine="spark", partition_bytes=1024
    )
    assert report.engine == "spark" and report.partitions > 2
    assert spark_script.read_bytes() == local.read_bytes()
    assert f"RENAME TABLE `{db}`.`t2` TO `{db}`.`t`;" in local.read_text()
