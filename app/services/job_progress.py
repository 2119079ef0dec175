"""A job's phase and estimated time left, from its record alone plus the recent jobs' throughput.

The engine reports bytes of the range read; before the first report (while the range is resolved,
spooled from a server, or Spark starts) the estimate comes from how fast recent jobs on this
service read their ranges, so a job shows an ETA from its start instead of "0% of 0 bytes".
"""

from __future__ import annotations

import statistics
import threading
import time
import weakref
from datetime import UTC, datetime

from sqlalchemy import select

from app.db import Database
from app.models import Job

RECENT_JOBS = 20
RATE_SECONDS = 30.0  # the recent throughput is recomputed at most this often
_memo: weakref.WeakKeyDictionary[Database, tuple[float, float | None]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()

PHASES = {
    "queued": "queued: waiting for a worker",
    "resolving": "resolving the range (reading the binlog index, fetching from the server)",
    "planning": "planning (cutting the range at transactions, starting the engine)",
    "decoding": "decoding and inverting the row changes",
    "writing": "merging and writing the outputs",
}


def phase(job: Job) -> str:
    if job.state == "queued":
        return "queued"
    if job.state != "running":
        return job.state
    if job.range_resolved is None:
        return "resolving"
    done, total = job.progress_bytes or 0, job.progress_total or 0
    if done <= 0:
        return "planning"
    return "decoding" if done < total else "writing"


def recent_rate(db: Database) -> float | None:
    """Median bytes per second of the last RECENT_JOBS succeeded jobs (start to end), or None."""
    now = time.monotonic()
    with _lock:
        memo = _memo.get(db)
        if memo is not None and now - memo[0] < RATE_SECONDS:
            return memo[1]
    with db.session() as session:
        rows = session.execute(
            select(Job.progress_total, Job.started_at, Job.finished_at)
            .where(Job.state == "succeeded", Job.started_at.is_not(None), Job.finished_at.is_not(None))
            .order_by(Job.finished_at.desc())
            .limit(RECENT_JOBS)
        ).all()
    rates = [
        total / seconds
        for total, started, finished in rows
        if total and started and finished and (seconds := (finished - started).total_seconds()) > 0
    ]
    rate = statistics.median(rates) if rates else None
    with _lock:
        _memo[db] = (now, rate)
    return rate


def eta_seconds(job: Job, rate: float | None, now: datetime | None = None) -> float | None:
    """Seconds left for a queued or running job: extrapolated from its own progress once it has
    some, else its range's size over the recent throughput; None when neither is known."""
    if job.state not in ("queued", "running"):
        return None
    done, total = job.progress_bytes or 0, job.progress_total or 0
    now = now or datetime.now(UTC)
    if job.state == "running" and job.started_at is not None and 0 < done < total:
        elapsed = (now - job.started_at).total_seconds()
        if elapsed > 0:
            return round(elapsed * (total - done) / done, 1)
    if rate and total:
        elapsed = (now - job.started_at).total_seconds() if job.started_at else 0.0
        return round(max(0.0, total / rate - elapsed), 1)
    return None
