"""A job's phase and time left (app.services.job_progress) from its record."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.models import Job
from app.services.job_progress import eta_seconds, phase

NOW = datetime(2026, 11, 25, 1, 0, tzinfo=UTC)


def _job(**values) -> Job:
    base = {
        "state": "running",
        "range_resolved": None,
        "progress_bytes": 0,
        "progress_total": 0,
        "started_at": NOW,
    }
    return Job(**(base | values))


def test_phases_follow_the_record():
    assert phase(_job(state="queued")) == "queued"
    assert phase(_job()) == "resolving"
    assert phase(_job(range_resolved={"files": []}, progress_total=100)) == "planning"
    assert phase(_job(range_resolved={"files": []}, progress_bytes=40, progress_total=100)) == "decoding"
    assert phase(_job(range_resolved={"files": []}, progress_bytes=100, progress_total=100)) == "writing"
    assert phase(_job(state="succeeded")) == "succeeded"


def test_eta_from_the_jobs_own_progress_once_it_has_some():
    job = _job(
        range_resolved={}, progress_bytes=25, progress_total=100, started_at=NOW - timedelta(seconds=10)
    )
    assert eta_seconds(job, rate=None, now=NOW) == 30.0  # 10 s for a quarter: 30 s for the rest


def test_eta_from_recent_throughput_before_the_first_progress():
    job = _job(range_resolved={}, progress_total=1000, started_at=NOW - timedelta(seconds=2))
    assert eta_seconds(job, rate=100.0, now=NOW) == 8.0
    assert eta_seconds(job, rate=None, now=NOW) is None  # nothing to go by: said, not guessed
    assert eta_seconds(_job(state="succeeded", progress_total=1000), rate=100.0, now=NOW) is None
