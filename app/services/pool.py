"""The worker pool jobs and executions share: daemon threads taking ids from a queue."""

from __future__ import annotations

import logging
import queue
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import structlog

log = logging.getLogger("mysql_rollback")

Id = TypeVar("Id")


class WorkerPool(Generic[Id]):
    """`start()` recovers what a dead process left, then runs `workers` threads calling `run(id)` for
    each submitted id. `stop()` lets them finish what they hold; ids still queued stay queued."""

    kind = "work"  # names the threads and the log lines: "job", "execution"

    def __init__(self, workers: int, scrub: Callable[[str], str]):
        self.workers = workers
        self.scrub = scrub
        self.stopping = threading.Event()
        # each id with the log context of whoever submitted it (the request that created it)
        self._queue: queue.Queue[tuple[Id, dict[str, Any]] | None] = queue.Queue()
        self._threads: list[threading.Thread] = []

    def recover(self) -> None:
        """Mark what a previous process left unfinished (overridden)."""

    def run(self, item: Id) -> None:
        raise NotImplementedError

    def done(self, item: Id) -> None:
        """After `run`, whatever happened (overridden)."""

    def start(self) -> None:
        self.recover()
        for i in range(self.workers):
            thread = threading.Thread(target=self._loop, name=f"mysql-rollback-{self.kind}-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 10.0) -> None:
        self.stopping.set()
        for _ in self._threads:
            self._queue.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._threads.clear()

    def submit(self, item: Id) -> None:
        self._queue.put((item, structlog.contextvars.get_contextvars()))

    def _loop(self) -> None:
        while True:
            queued = self._queue.get()
            if queued is None or self.stopping.is_set():
                return  # a queued item stays queued for the next start
            item, context = queued
            structlog.contextvars.clear_contextvars()
            # every line logged while this item runs names it: job_id=..., execution_id=...
            structlog.contextvars.bind_contextvars(**context, **{f"{self.kind}_id": item})
            try:
                self.run(item)
            except Exception:  # noqa: BLE001 - a worker thread must survive anything one item does
                log.error(
                    "%s %s: unexpected failure in the worker:\n%s",
                    self.kind,
                    item,
                    self.scrub(traceback.format_exc()),
                )
            finally:
                self.done(item)
                structlog.contextvars.clear_contextvars()
