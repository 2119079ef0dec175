"""The Spark network settings: loopback in local mode; with a cluster master, authentication with
the configured secret."""

from __future__ import annotations

from rollback.pipeline.session import network_conf


def test_a_cluster_master_authenticates_with_the_configured_secret():
    assert network_conf("spark://spark-master:7077", "s3cret-from-config") == {
        "spark.ui.enabled": "false",
        "spark.authenticate": "true",
        "spark.authenticate.secret": "s3cret-from-config",
    }
    local = network_conf("local[*]", "ignored")
    assert local["spark.driver.host"] == "127.0.0.1" and "spark.authenticate" not in local
