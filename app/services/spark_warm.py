"""Spark started with the service, in the background, and kept warm (rollback.warm_spark).

/health reports the state: `off` (the local engine is configured, or warming is turned off),
`starting`, `ready`, or `failed: <reason>`. A job that wants Spark before it is ready waits for the
session the warm-up is starting (one session per process), and gets the warm workers after it.
"""

from __future__ import annotations

import logging
import threading
import time

import rollback
from app.core.config import Settings

log = logging.getLogger("mysql_rollback")


class SparkWarmer:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.state = "off"
        self.seconds: float | None = None  # how long the warm-up took

    def ready(self) -> bool:
        return self.state == "ready"

    def start(self) -> None:
        if not self.settings.warm_spark or self.settings.engine == "local":
            return
        self.state = "starting"
        threading.Thread(target=self._warm, name="mysql-rollback-spark-warm", daemon=True).start()

    def _warm(self) -> None:
        started = time.monotonic()
        try:
            found = rollback.warm_spark(self.settings.spark_master, self.settings.spark_niceness)
        except Exception as exc:  # noqa: BLE001 - reported by /health; jobs report their own errors
            self.state = f"failed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
            log.error("Spark did not start: %s", self.state)
            return
        self.seconds = round(time.monotonic() - started, 2)
        self.state = "ready"
        log.info("Spark warm after %.1fs: %d slot(s)", self.seconds, found["slots"])
