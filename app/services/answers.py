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

A commit of this process that changed one job's row only (a running job's progress, marked with
`only_job`) replaces that job's answer and the lists, not the answers of the other jobs.
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
_ONLY_JOB = "mysql_rollback.only_job"


def only_job(session: Session, job_id: str) -> None:
    """Mark the session: what it commits changes the row of this job and nothing else."""
    session.info[_ONLY_JOB] = job_id


class Answers:
    def __init__(self, db: Database):
        self.db = db
        self.commits = 0  # commits of this process, but those of `only_job` sessions
        self.job_commits: dict[str, int] = {}  # commits of `only_job` sessions, per job
        self.jobs_commits = 0  # all of those: what the lists show
        self._cache: dict[Hashable, tuple[tuple[int, int, int], float, bytes]] = {}
        self._probe: Any = None
        self._seen: tuple[asyncio.AbstractEventLoop, int] | None = None
        event.listen(db.sessions, "after_commit", self._committed)

    def _committed(self, session: Session) -> None:
        job_id = session.info.get(_ONLY_JOB)
        if job_id is None:
            self.commits += 1
        else:
            self.job_commits[job_id] = self.job_commits.get(job_id, 0) + 1
            self.jobs_commits += 1

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

    def _own(self, key: Hashable) -> int:
        """The `only_job` commits that can change the answer of `key`: ("job", id) or a list."""
        if isinstance(key, tuple) and key[:1] == ("job",):
            return self.job_commits.get(key[1], 0)
        return self.jobs_commits

    def _current(self, key: Hashable) -> tuple[int, int, int]:
        """The version `key`'s answer is built at: this process's commits that can change it, and
        `PRAGMA data_version` (read once per turn of the event loop: the requests a turn answers
        arrived together, and each read of it takes a lock on the file and a statement)."""
        loop = asyncio.get_running_loop()
        if self._seen is None or self._seen[0] is not loop:  # (a loop closed before its turn ended)
            self._seen = (loop, self._data_version())
            loop.call_soon(self._forget)
        return (self.commits, self._own(key), self._seen[1])

    def _forget(self) -> None:
        self._seen = None

    async def get(self, key: Hashable, build: Callable[[Session], BaseModel | None]) -> bytes | None:
        """The answer's JSON for `key`, from the cache while nothing changed; None when `build` says
        there is none (not cached: a 404 is cheap to find again)."""
        version = self._current(key)
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

    def _fresh(self, built: tuple[int, int, int], now: tuple[int, int, int], age: float) -> bool:
        if not self.db.local:
            return built == now and age < MAX_AGE
        # this process's commits at once; another's (a changed data_version) within OTHERS_AGE
        return built[:2] == now[:2] and (built[2] == now[2] or age < OTHERS_AGE)

    def close(self) -> None:
        if self._probe is not None:
            self._probe.close()
            self._probe = None
