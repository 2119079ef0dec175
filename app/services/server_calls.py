"""Requests' calls to configured servers (time zone, binlog listing), off the threads that serve
requests, and each server's health as those calls found it.

Each server has one thread of its own: a server that stops answering holds that thread (until the
read timeout ends the call), never the pool that serves /health and reads. A caller waits at most
`wait` seconds for an answer; while a call has been waiting longer than that, the server is "not
answering" and later calls to it are refused at once instead of queueing behind it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pymysql

from rollback import RollbackError, SourceError

T = TypeVar("T")


@dataclass
class _Server:
    pool: concurrent.futures.ThreadPoolExecutor
    health: str = "unknown"  # unknown | ok | not answering | error
    error: str | None = None
    busy_since: float | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class ServerCalls:
    def __init__(self, names: list[str], wait: float, scrub: Callable[[str], str]):
        self.wait = wait
        self._scrub = scrub
        self._servers = {
            name: _Server(concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"server-{name}"))
            for name in names
        }

    def health(self) -> dict[str, dict[str, Any]]:
        """Each server's health, as its last call (or the one still waiting) found it."""
        now = time.monotonic()
        out = {}
        for name, server in sorted(self._servers.items()):
            health, error = server.health, server.error
            since = server.busy_since
            if since is not None and now - since > self.wait:
                health, error = "not answering", self._silent(name, now - since)
            out[name] = {"health": health, "error": error}
        return out

    def _silent(self, name: str, seconds: float) -> str:
        return f"server {name} is not answering (a call has waited {seconds:.0f} s for it)"

    def submit(self, name: str, fn: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
        server = self._servers[name]
        since = server.busy_since
        if since is not None and time.monotonic() - since > self.wait:
            raise SourceError(self._silent(name, time.monotonic() - since))
        return server.pool.submit(self._run, name, server, fn, *args)

    def _run(self, name: str, server: _Server, fn: Callable[..., T], *args: Any) -> T:
        server.busy_since = time.monotonic()
        try:
            result = fn(*args)
        except RollbackError as exc:
            server.health, server.error = "error", self._scrub(exc.one_line())
            raise
        except (pymysql.MySQLError, RuntimeError, OSError) as exc:
            # What PyMySQL raises on a hostile answer (a RuntimeError for a LOCAL INFILE it refuses)
            message = self._scrub(f"server {name}: {type(exc).__name__}: {' '.join(str(exc).split())}")
            server.health, server.error = "error", message
            raise SourceError(message) from None
        finally:
            server.busy_since = None
        server.health, server.error = "ok", None
        return result

    def _timed_out(self, name: str) -> SourceError:
        server = self._servers[name]
        server.health = "not answering"
        server.error = f"server {name} is not answering (no answer within {self.wait:g} s)"
        return SourceError(server.error)

    async def call(self, name: str, fn: Callable[..., T], *args: Any) -> T:
        """fn(*args) on the server's thread; SourceError when it fails or takes longer than `wait`."""
        future = self.submit(name, fn, *args)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), self.wait)
        except TimeoutError:
            raise self._timed_out(name) from None

    def call_blocking(self, name: str, fn: Callable[..., T], *args: Any) -> T:
        """call(), for a caller on a worker thread."""
        future = self.submit(name, fn, *args)
        try:
            return future.result(self.wait)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise self._timed_out(name) from None

    def close(self) -> None:
        for server in self._servers.values():
            server.pool.shutdown(wait=False, cancel_futures=True)
