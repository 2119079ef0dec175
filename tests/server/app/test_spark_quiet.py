"""The Spark JVM that `mysql-rollback serve` warms at start-up keeps its lines off the service's
standard error: no JVM warning, no log4j profile or log level notice, no WARN or INFO line of its
logging; MYSQL_ROLLBACK_SPARK_LOG_LEVEL (docs/reference/configuration.md) lets them through."""

from __future__ import annotations

import re

from tests.support.service import Service, service_env

JVM_LINE = re.compile(
    r"^\d\d:\d\d:\d\d (WARN|INFO) |NativeCodeLoader|Using Spark's default log4j profile"
    r"|Setting default log level|Using incubator modules",
    re.M,
)


def _warm_service_log(service_process: type[Service], tmp_path, **extra: str) -> str:
    env = service_env(
        tmp_path / "data", "{}", MYSQL_ROLLBACK_WARM_SPARK="true", MYSQL_ROLLBACK_ENGINE="spark", **extra
    )
    service = service_process(tmp_path / "data", env, tmp_path / "service.log").start()
    try:
        warm = service.wait_warm()
        assert warm == "ready", warm
    finally:
        service.stop()
    return (tmp_path / "service.log").read_text(errors="replace")


def test_the_warm_jvm_says_nothing_on_the_services_stderr(service_process, tmp_path):
    log = _warm_service_log(service_process, tmp_path)
    assert "Spark warm after" in log  # the service's own line
    assert JVM_LINE.search(log) is None, log


def test_the_spark_log_level_setting_lets_the_jvms_lines_through(service_process, tmp_path):
    log = _warm_service_log(service_process, tmp_path, MYSQL_ROLLBACK_SPARK_LOG_LEVEL="WARN")
    assert re.search(r"^\d\d:\d\d:\d\d WARN NativeCodeLoader: ", log, re.M), log
