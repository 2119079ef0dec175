"""Verified execution of a job's plan on a configured target, run in a worker pool like jobs.

The engine does the work (refusals before anything runs, locking conflict checks in the
transaction, one row per statement, all or nothing unless per_transaction; a dry run rolls back).
A request records the execution `queued` and returns; a worker takes it when the target is free
(one execution per target at a time), produces the job's plan if it does not exist yet, and runs
it in a process of its own (execution_process.py), which records its progress as it goes, and in
per-transaction mode records each transaction right after the target committed it, so that a
service killed mid-way leaves a record that says exactly what was applied (see recover()). When it stops on a conflict, a
dry run with on_conflict=skip lists every conflicting row so that the record shows them all.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog
from sqlalchemy import select, update

from app.core.config import ServerConfig
from app.db import Database
from app.metrics import Metrics
from app.models import EXECUTION_FINAL_STATES, Execution, Job, utcnow
from app.services import execution_process
from app.services.conflict_view import three_way
from app.services.engine import Cancelled
from app.services.execution_run import STOP_REASON, ExecutionOptions, RunRequest
from app.services.jobs import Scrubber
from app.services.pool import WorkerPool
from rollback import (
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    RollbackError,
    connect,
    recover_xa,
)

log = logging.getLogger("mysql_rollback.executions")


def new_execution(
    db: Database,
    job: Job,
    target: ServerConfig,
    dry_run: bool,
    on_conflict: str,
    who: str,
    options: ExecutionOptions,
    reapply: bool = False,
    check: bool = False,
) -> Execution:
    """The execution's record, queued. A `check` is the web form's conflict check before a commit: a
    dry run that skips conflicting rows (so that it lists them all) and then reads each of them on the
    target, for the three-way view (details["conflict_view"])."""
    options.foreign_key_checks = not (job.summary or {}).get("no_fk_checks")
    record = Execution(
        job_id=job.id,
        target=target.name,
        dry_run=dry_run,
        on_conflict=on_conflict,
        requested_by=who,
        created_at=utcnow(),
        state="queued",
        committed=False,
        statements=0,
        rows_affected=0,
        skipped=0,
        conflicts=[],
        accepted=options.accepted(),
        details={
            "per_transaction": options.per_transaction,
            "lock_wait_timeout": options.lock_wait_timeout,
            "foreign_key_checks": options.foreign_key_checks,
            "parallel": options.parallel,
            "merge": options.merge,
            "resolutions": options.resolutions,
            "reapply": reapply,
            "check": check,
        },
        progress_done=0,
        progress_total=0,
        cancel_requested=False,
    )
    with db.session() as session:
        session.add(record)
        session.commit()
    return record


class ExecutionRunner(WorkerPool[int]):
    """`workers` threads taking queued executions; one execution per target at a time."""

    kind = "execution"

    def __init__(
        self,
        db: Database,
        servers: dict[str, ServerConfig],
        metrics: Metrics,
        scrub: Scrubber,
        workers: int,
        plan_of: Callable[[str], Path],
        changes_of: Callable[[str], Path],
    ):
        super().__init__(workers, scrub)
        # a job's execution plan and change log, produced on first need (outputs.py)
        self.plan_of = plan_of
        self.changes_of = changes_of
        self.db = db
        self.servers = servers
        self.metrics = metrics
        # cancel and stop are events that the execution's process sees too
        self._cancel: dict[int, Any] = {}
        self.stop_children = execution_process.new_event()
        self._targets: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    # ---- life cycle

    def recover(self) -> None:
        """Executions a dead process left queued or running are `interrupted`, with what is known."""
        with self.db.session() as session:
            stale = session.scalars(select(Execution).where(Execution.state.in_(("queued", "running")))).all()
            for record in stale:
                record.state = "interrupted"
                record.exit_code = EXIT_INTERRUPTED
                record.finished_at = utcnow()
                record.error = interrupted_reason(record)
                xa = (record.details or {}).get("xa")
                if xa and not record.dry_run:
                    record.error, record.committed = self._finish_xa(record.target, xa)
                    log.warning("execution %s: %s", record.id, record.error)
            session.commit()
        if stale:
            log.warning(
                "marked %d execution(s) a previous process left unfinished as interrupted", len(stale)
            )

    def _finish_xa(self, target_name: str, xa: dict[str, Any]) -> tuple[str, bool]:
        """What a parallel execution that died between XA prepare and commit left prepared on its
        target, committed or rolled back as its record says (apply_parallel.recover); the record's
        error line and whether it is now committed."""
        stopped = "the service stopped during this parallel execution"
        by_hand = (
            f"XA transaction {xa.get('gtrid')} may still be prepared there: save this execution's `xa` as "
            f"DIR/{xa.get('gtrid')}.json and run `mysql-rollback xa-recover --target DSN --records DIR`"
        )
        target = self.servers.get(target_name)
        if target is None:
            return f"{stopped}; server {target_name!r} is no longer configured: {by_hand}", False
        try:
            outcomes = recover_xa(lambda: connect(target.dsn), [xa], target.name)
        except RollbackError as exc:
            return self.scrub(
                f"{stopped}; finishing its XA transaction failed: {exc.one_line()}; {by_hand}"
            ), False
        mine = [o for o in outcomes if o.gtrid == xa.get("gtrid")]
        line = mine[0].line if mine else f"XA transaction {xa.get('gtrid')}: nothing prepared"
        committed = bool(mine) and mine[0].action == "committed"
        if mine and mine[0].action == "nothing prepared":
            committed = xa.get("decision") == "commit"
        return self.scrub(f"{stopped}; {line}"), committed

    def stop(self, timeout: float = 10.0) -> None:
        self.stop_children.set()  # running executions stop before their next statement (rolled back)
        super().stop(timeout)

    def submit(self, record_id: int) -> None:
        with self._lock:
            self._cancel[record_id] = execution_process.new_event()
        super().submit(record_id)

    # ---- cancellation

    def cancel(self, record_id: int) -> tuple[Execution | None, bool]:
        """A queued execution is cancelled at once; a running one at its next statement (rolled back)."""
        with self._lock, self.db.session() as session:
            record = session.get(Execution, record_id)
            if record is None or record.state in EXECUTION_FINAL_STATES:
                return record, False
            record.cancel_requested = True
            if record.state == "queued":
                record.state = "cancelled"
                record.exit_code = EXIT_INTERRUPTED
                record.finished_at = utcnow()
                record.error = "cancelled before it started; nothing was applied"
            self._cancel.setdefault(record_id, execution_process.new_event()).set()
            session.commit()
            return record, True

    # ---- the work

    def set(self, record_id: int, **values: Any) -> None:
        with self.db.session() as session:
            session.execute(update(Execution).where(Execution.id == record_id).values(**values))
            session.commit()

    def _target_lock(self, target: str) -> threading.Lock:
        with self._lock:
            return self._targets.setdefault(target, threading.Lock())

    def done(self, record_id: int) -> None:
        with self._lock:
            self._cancel.pop(record_id, None)

    def run(self, record_id: int) -> None:
        with self._lock:
            cancel = self._cancel.setdefault(record_id, execution_process.new_event())
        with self.db.session() as session:
            record = session.get(Execution, record_id)
            if record is None or record.state != "queued":
                return
            target_name = record.target
        lock = self._target_lock(target_name)
        while not lock.acquire(timeout=0.2):  # another execution has the target; wait, still cancellable
            if cancel.is_set() or self.stopping.is_set():
                return
        try:
            with self._lock, self.db.session() as session:
                record = session.get(Execution, record_id)
                if record is None or record.state != "queued":
                    return
                record.state = "running"
                record.started_at = utcnow()
                session.commit()
                job = session.get(Job, record.job_id)
                structlog.contextvars.bind_contextvars(job_id=record.job_id)
            if job is not None:
                self._execute(record, job, cancel)
        finally:
            lock.release()

    def _execute(self, record: Execution, job: Job, cancel: Any) -> None:
        record_id = record.id
        run = RunRequest(
            record_id,
            record.dry_run,
            record.on_conflict,
            ExecutionOptions.of(record),
            dict(record.details or {}),
        )
        log.info(
            "execution %s of job %s on %s: %s",
            record_id,
            job.id,
            record.target,
            "dry run" if record.dry_run else "commit",
        )
        target = self.servers.get(record.target)
        if target is None:
            values: dict[str, Any] = {
                "state": "failed",
                "exit_code": EXIT_INCOMPLETE,
                "error": f"server {record.target!r} is no longer configured; nothing was run",
            }
        else:
            values = self._run(job, target, run, cancel)
            # a merge's conflicts carry their three versions themselves
            compare = run.details.get("check") and not run.options.merge
            if compare and values["state"] == "succeeded" and values["conflicts"]:
                values["details"] = values["details"] | {
                    "conflict_view": self._compare(job, target, record.id, values)
                }
        self.metrics.executions.labels("dry_run" if record.dry_run else "commit", values["state"]).inc()
        with self.db.session() as session:
            stored = session.get(Execution, record_id)
            assert stored is not None
            for key, value in values.items():
                setattr(stored, key, value)
            stored.finished_at = utcnow()
            if stored.committed and not stored.dry_run and (stored.rows_affected or 0) > 0:
                applied = session.get(Job, job.id)
                if applied is not None:
                    applied.applied_execution = record_id
                    applied.applied_at = stored.finished_at
                    applied.applied_by = stored.requested_by
            session.commit()
        log.info("execution %s: %s", record_id, values["state"])

    def _compare(self, job: Job, target: ServerConfig, record_id: int, values: dict[str, Any]) -> Any:
        """The conflicting rows three ways (phase "compare"); a failed read is said, never raised."""
        self.set(record_id, phase="compare")
        try:
            return three_way(str(self.changes_of(job.id)), target.dsn, values["conflicts"])
        except (RollbackError, OSError, ValueError) as exc:
            message = exc.one_line() if isinstance(exc, RollbackError) else str(exc)
            return {"error": self.scrub(f"the rows now on the target could not be read: {message}")}

    def _run(self, job: Job, target: ServerConfig, run: RunRequest, cancel: Any) -> dict[str, Any]:
        """The plan (produced here if it does not exist yet), then its execution in a process of its
        own (execution_process.py): a thread of this process would take turns on the GIL with the
        requests."""
        try:
            plan = self.plan_of(job.id)
        except Cancelled:  # the service stopped while the plan was being produced
            return {"state": "interrupted", "exit_code": EXIT_INTERRUPTED, "error": STOP_REASON}
        except RollbackError as exc:
            return {"state": "failed", "exit_code": exc.exit_code, "error": self.scrub(exc.one_line())}
        except OSError as exc:
            problem = f"cannot write the job's plan: {exc.strerror or exc}; nothing was run"
            return {"state": "failed", "exit_code": EXIT_INCOMPLETE, "error": self.scrub(problem)}
        return execution_process.run(self.db.url, plan, target, run, self.scrub, cancel, self.stop_children)


def interrupted_reason(record: Execution) -> str:
    """What a record left unfinished by a dead process can say about the target."""
    details = record.details or {}
    if record.state == "queued" or record.dry_run:
        return (
            "the service stopped before it ran"
            if record.state == "queued"
            else ("the service stopped during this dry run; the target rolled it back: nothing was applied")
        )
    if details.get("per_transaction"):
        applied = details.get("transactions_applied", [])
        committing = details.get("committing")
        current = record.current_transaction
        if committing and committing not in applied:
            pending = (
                f"; transaction {committing.get('tx')} (GTID {committing.get('gtid')}, {committing.get('file')}:"
                f"{committing.get('pos')}) was being committed: whether it was applied is not known "
                "(transaction_in_doubt; a dry run on the target shows it)"
            )
        elif current and current not in applied and record.phase == "apply":
            pending = f"; transaction {current.get('tx')} was open: the target rolled it back"
        else:
            pending = ""
        return (
            f"the service stopped during this execution (per transaction): {len(applied)} transaction(s) were "
            f"committed before, listed in transactions_applied{pending}"
        )
    if record.phase == "apply" and details.get("committing") is not None:
        return (
            "the service stopped while the target was committing this execution: whether the commit happened "
            "is not known; a dry run on the target shows it (every applied row conflicts)"
        )
    return "the service stopped during this execution; the target rolled its transaction back: nothing was applied"
