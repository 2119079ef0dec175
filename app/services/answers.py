"""Serialised answers of the reads that pollers hit (`GET /api/jobs`, `GET /api/jobs/{id}`), built
once per change of the job database instead of once per request.

The database's version is the number of commits this process made, and for a local SQLite file
also `PRAGMA data_version`, which moves when any other connection (another process) commits. An
answer is served from the cache while the version it was built at is current; anything else
rebuilds it, except that another process's commits are taken at most every OTHERS_AGE seconds: the
executions' processes commit their progress twice a second each, which changes no answer cached
here (they write only their own records), and rebuilding every answer on the event loop after each
of them was a good part of its time under load. A database over the network is read again after
MAX_AGE seconds at the latest (its other writers are not seen otherwise).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable
from typing import Any

from pydantic import BaseModel
from sqlalchemy import event
from sqlalchemy.orm import Session

from app.db import Database

MAX_AGE = 1.0
OTHERS_AGE = 0.25
MAX_ENTRIES = 512


class Answers:
    def __init__(self, db: Database):
        self.db = db
        self.commits = 0
        self._cache: dict[Hashable, tuple[tuple[int, int], float, bytes]] = {}
        self._probe: Any = None
        self._seen: tuple[asyncio.AbstractEventLoop, int] | None = None
        event.listen(db.sessions, "after_commit", self._committed)

    def _committed(self, _session: Session) -> None:
        self.commits += 1

    def _data_version(self) -> int:
        if not self.db.local:
            return 0
        if self._probe is None:
            self._probe = self.db.engine.raw_connection()
        cursor = self._probe.cursor()
        try:
            cursor.execute("PRAGMA data_version")
            return int(cursor.fetchone()[0])
        finally:
            cursor.close()

    def version(self) -> tuple[int, int]:
        return (self.commits, self._data_version())

    def _current(self) -> tuple[int, int]:
        """version(), with `PRAGMA data_version` read once per turn of the event loop: the requests
        a turn answers arrived together, and each read of it takes a lock on the file (two system
        calls) and a statement. This process's commits are counted at once as before."""
        loop = asyncio.get_running_loop()
        if self._seen is None or self._seen[0] is not loop:  # (a loop closed before its turn ended)
            self._seen = (loop, self._data_version())
            loop.call_soon(self._forget)
        return (self.commits, self._seen[1])

    def _forget(self) -> None:
        self._seen = None

    async def get(self, key: Hashable, build: Callable[[Session], BaseModel | None]) -> bytes | None:
        """The answer's JSON for `key`, from the cache while nothing changed; None when `build` says
        there is none (not cached: a 404 is cheap to find again)."""
        version = self._current()
        now = time.monotonic()
        found = self._cache.get(key)
        if found is not None and self._fresh(found[0], version, now - found[1]):
            return found[2]
        model = await self.db.read(build)
        if model is None:
            return None
        body = model.model_dump_json().encode("utf-8")
        if len(self._cache) >= MAX_ENTRIES:
            self._cache.clear()
        self._cache[key] = (version, now, body)
        return body

    def _fresh(self, built: tuple[int, int], now: tuple[int, int], age: float) -> bool:
        if not self.db.local:
            return built == now and age < MAX_AGE
        # this process's commits at once; another's (a changed data_version) within OTHERS_AGE
        return built[0] == now[0] and (built[1] == now[1] or age < OTHERS_AGE)

    def close(self) -> None:
        if self._probe is not None:
            self._probe.close()
            self._probe = None
