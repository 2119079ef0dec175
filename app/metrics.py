"""Prometheus metrics of one service instance (its own registry, so that several apps can share a process)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from app.db import Database
from app.models import JOB_STATES, Job


class _JobStates(Collector):
    def __init__(self, db: Database):
        self._db = db

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "mysql_rollback_jobs", "Jobs in the job database by state", labels=["state"]
        )
        counts = dict.fromkeys(JOB_STATES, 0)
        with self._db.session() as session:
            for state, n in session.execute(select(Job.state, func.count()).group_by(Job.state)):
                counts[state] = n
        for state, n in counts.items():
            family.add_metric([state], n)
        yield family


class Metrics:
    def __init__(self, db: Database):
        self.registry = CollectorRegistry()
        self.registry.register(_JobStates(db))
        self.bytes_decoded = Counter(
            "mysql_rollback_bytes_decoded", "Binlog bytes read by finished jobs", registry=self.registry
        )
        self.rows_emitted = Counter(
            "mysql_rollback_rows_emitted", "Row changes emitted by finished jobs", registry=self.registry
        )
        self.job_duration = Histogram(
            "mysql_rollback_job_duration_seconds",
            "Time from start to end of jobs",
            ["outcome"],
            buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, float("inf")),
            registry=self.registry,
        )
        self.executions = Counter(
            "mysql_rollback_executions",
            "Executions by kind and outcome",
            ["kind", "state"],
            registry=self.registry,
        )
