"""What a job leaves on disk, and its removal: when the job is deleted, or expires.

A job's files are its output directory (script, plan, changes and their indexes), its upload when
no other job uses it, and the binlog files spooled for it from a server when no other job read
them. Jobs that ended more than `retention_days` ago expire, except those that were applied (their
record is what says what was done to a server); uploads no job uses expire after the same time.
"""

from __future__ import annotations

import logging
import shutil
import threading
from datetime import timedelta
from pathlib import Path

from sqlalchemy import select

from app.core.config import Settings
from app.db import Database
from app.models import FINAL_STATES, Job, Upload, utcnow
from rollback import MANIFEST_SUFFIX

log = logging.getLogger("mysql_rollback.retention")

SWEEP_SECONDS = 3600.0


def disk_usage(path: Path) -> int:
    """Bytes the regular files under path take (0 when it does not exist)."""
    if not path.exists():
        return 0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _spooled(job: Job) -> list[str]:
    resolved = job.range_resolved or {}
    if job.source != "server" or "spooled" not in str(resolved.get("via", "")):
        return []
    return list(resolved.get("files", []))


def delete_job(db: Database, settings: Settings, job_id: str) -> bool:
    """Remove a job's record (its executions with it) and every file only it used."""
    with db.session() as session:
        job = session.get(Job, job_id)
        if job is None:
            return False
        upload_id, server, spooled = job.upload_id, job.server, _spooled(job)
        session.delete(job)
        session.commit()
        others = session.scalars(select(Job).where(Job.id != job_id)).all()
        upload_used = upload_id is not None and any(o.upload_id == upload_id for o in others)
        still_read = {name for o in others if o.server == server for name in _spooled(o)}
        if upload_id is not None and not upload_used:
            upload = session.get(Upload, upload_id)
            if upload is not None:
                session.delete(upload)
                session.commit()
    shutil.rmtree(settings.jobs_dir / job_id, ignore_errors=True)
    if upload_id is not None and not upload_used:
        shutil.rmtree(settings.uploads_dir / upload_id, ignore_errors=True)
    if server:
        for name in set(spooled) - still_read:
            for path in (
                settings.spool_dir / server / name,
                settings.spool_dir / server / (name + MANIFEST_SUFFIX),
            ):
                path.unlink(missing_ok=True)
    return True


def sweep(db: Database, settings: Settings) -> int:
    """Delete the jobs and unused uploads past retention; returns the number of jobs deleted."""
    if settings.retention_days <= 0:
        return 0
    cutoff = utcnow() - timedelta(days=settings.retention_days)
    with db.session() as session:
        expired = session.scalars(
            select(Job.id).where(
                Job.state.in_(FINAL_STATES), Job.finished_at < cutoff, Job.applied_execution.is_(None)
            )
        ).all()
        used = set(session.scalars(select(Job.upload_id).where(Job.upload_id.is_not(None))).all())
        stale_uploads = [
            u.id
            for u in session.scalars(select(Upload).where(Upload.created_at < cutoff)).all()
            if u.id not in used
        ]
        for upload_id in stale_uploads:
            upload = session.get(Upload, upload_id)
            if upload is not None:
                session.delete(upload)
        session.commit()
    for upload_id in stale_uploads:
        shutil.rmtree(settings.uploads_dir / upload_id, ignore_errors=True)
    for job_id in expired:
        delete_job(db, settings, job_id)
    if expired or stale_uploads:
        log.info(
            "retention (%d days): deleted %d job(s) and %d unused upload(s)",
            settings.retention_days,
            len(expired),
            len(stale_uploads),
        )
    return len(expired)


class RetentionSweeper:
    """Sweeps at start and then every SWEEP_SECONDS in a daemon thread."""

    def __init__(self, db: Database, settings: Settings):
        self.db = db
        self.settings = settings
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="mysql-rollback-retention", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                sweep(self.db, self.settings)
            except Exception as exc:  # noqa: BLE001 - the next sweep tries again
                log.error("retention sweep failed: %s: %s", type(exc).__name__, exc)
            self._stop.wait(SWEEP_SECONDS)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
