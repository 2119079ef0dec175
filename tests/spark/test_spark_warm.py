"""Spark starts with the service, in the background, and /health says when it is warm."""

from __future__ import annotations

import time

import rollback
from tests.support.app import VIEWER, auth


def test_the_service_warms_spark_and_health_says_when_it_is_ready(make_client, spark, tmp_path):
    client = make_client(data_dir=tmp_path / "data", warm_spark=True, engine="spark")
    deadline = time.monotonic() + 180
    while True:
        health = client.get("/health").json()["spark"]
        if health["warm"] != "starting" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert health["warm"] == "ready" and health["session"] == "started" and health["warm_seconds"] >= 0
    assert client.get("/api/jobs", headers=auth(VIEWER)).status_code == 200


def test_warm_spark_starts_a_python_worker_per_slot(spark):
    warm = rollback.warm_spark()
    assert warm["slots"] == spark.sparkContext.defaultParallelism >= 1
    assert warm["workers"] and all(isinstance(pid, int) for pid in warm["workers"])
