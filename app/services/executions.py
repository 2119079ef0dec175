"""Verified execution of a job's plan on a configured target, recorded as an Execution.

The engine does the work (refusals before anything runs, locking conflict checks in the
transaction, one row per statement, all or nothing unless per_transaction; a dry run rolls back).
When it stops on a conflict, a dry run with on_conflict=skip lists every conflicting row so that
the record (and the web form) can show them all. One execution per target at a time.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from app.core.config import ServerConfig
from app.db import Database
from app.metrics import Metrics
from app.models import Execution, Job, utcnow
from app.services.jobs import Scrubber
from rollback import (
    DEFAULT_LOCK_WAIT_TIMEOUT,
    EXIT_INTERNAL,
    ConflictError,
    ExecutionConflict,
    ExecutionFailed,
    ExecutionRefused,
    RollbackError,
    execute_plan,
)

log = logging.getLogger("mysql_rollback.executions")

_target_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


@dataclass
class ExecutionOptions:
    """What the request accepts and how it commits (the API's and the web form's fields)."""

    accept_triggers: bool = False
    accept_cascades: bool = False
    accept_non_transactional: list[str] = field(default_factory=list)
    per_transaction: bool = False
    lock_wait_timeout: int = DEFAULT_LOCK_WAIT_TIMEOUT

    def accepted(self) -> dict[str, Any]:
        return {
            "triggers": self.accept_triggers,
            "cascades": self.accept_cascades,
            "non_transactional": list(self.accept_non_transactional),
        }

    def engine_arguments(self) -> dict[str, Any]:
        return {
            "single_transaction": not self.per_transaction,
            "accept_triggers": self.accept_triggers,
            "accept_cascades": self.accept_cascades,
            "accept_non_transactional": self.accept_non_transactional,
            "lock_wait_timeout": self.lock_wait_timeout,
        }


RESULT_DETAILS = ("transactions_applied", "read_only_tables", "unverified", "non_transactional_applied")


def _lock_for(target: str) -> threading.Lock:
    with _locks_guard:
        return _target_locks.setdefault(target, threading.Lock())


def conflict_check(job: Job, target: ServerConfig, options: ExecutionOptions | None = None) -> dict[str, Any]:
    """A dry run that skips conflicting rows, so that every conflict is listed; changes nothing."""
    arguments = (options or ExecutionOptions()).engine_arguments()
    result = execute_plan(job.plan_path or "", target.dsn, commit=False, on_conflict="skip", **arguments)
    return result.to_dict()


def run_execution(
    db: Database,
    metrics: Metrics,
    scrub: Scrubber,
    job: Job,
    target: ServerConfig,
    dry_run: bool,
    on_conflict: str,
    who: str,
    options: ExecutionOptions | None = None,
) -> Execution:
    options = options or ExecutionOptions()
    record = Execution(
        job_id=job.id,
        target=target.name,
        dry_run=dry_run,
        on_conflict=on_conflict,
        requested_by=who,
        created_at=utcnow(),
        state="running",
        committed=False,
        statements=0,
        rows_affected=0,
        skipped=0,
        conflicts=[],
        accepted=options.accepted(),
        details={"per_transaction": options.per_transaction, "lock_wait_timeout": options.lock_wait_timeout},
    )
    with db.session() as session:
        session.add(record)
        session.commit()
        record_id = record.id
    details = dict(record.details or {})
    values: dict[str, Any] = {}
    log.info(
        "execution %s of job %s on %s: %s", record_id, job.id, target.name, "dry run" if dry_run else "commit"
    )
    with _lock_for(target.name):
        try:
            result = execute_plan(
                job.plan_path or "",
                target.dsn,
                commit=not dry_run,
                on_conflict=on_conflict,
                **options.engine_arguments(),
            )
            outcome = result.to_dict()
            values = {
                "state": "succeeded",
                "exit_code": 0,
                "committed": result.committed,
                "statements": result.statements,
                "rows_affected": result.rows_affected,
                "skipped": result.skipped,
                "conflicts": result.conflicts,
                "side_effects": result.side_effects,
                "details": details | {k: outcome[k] for k in RESULT_DETAILS},
            }
        except ExecutionRefused as exc:
            values = {
                "state": "refused",
                "exit_code": exc.exit_code,
                "error": scrub(exc.one_line()),
                "side_effects": exc.side_effects,
            }
        except ConflictError as exc:
            values = {"state": "conflict", "exit_code": exc.exit_code, "error": scrub(exc.one_line())}
            if isinstance(exc, ExecutionConflict):
                outcome = exc.result.to_dict()
                values["details"] = details | {k: outcome[k] for k in RESULT_DETAILS}
            try:
                check = conflict_check(job, target, options)
                values["conflicts"] = check["conflicts"]
                values["side_effects"] = check["side_effects"]
            except RollbackError as again:
                values["error"] += scrub(f" (listing the conflicts failed: {again.one_line()})")
        except ExecutionFailed as exc:
            values = {"state": "failed", "exit_code": exc.exit_code, "error": scrub(exc.one_line())}
            if exc.result is not None:
                outcome = exc.result.to_dict()
                values["side_effects"] = exc.result.side_effects
                values["details"] = details | {k: outcome[k] for k in RESULT_DETAILS}
        except RollbackError as exc:
            values = {"state": "failed", "exit_code": exc.exit_code, "error": scrub(exc.one_line())}
        except Exception as exc:  # noqa: BLE001 - recorded, never a traceback to the user
            log.error("execution %s failed: %s", record_id, scrub(f"{type(exc).__name__}: {exc}"))
            values = {
                "state": "failed",
                "exit_code": EXIT_INTERNAL,
                "error": scrub(f"internal error ({type(exc).__name__}): {exc}"),
            }
    metrics.executions.labels("dry_run" if dry_run else "commit", values["state"]).inc()
    with db.session() as session:
        stored = session.get(Execution, record_id)
        assert stored is not None
        for key, value in values.items():
            setattr(stored, key, value)
        stored.finished_at = utcnow()
        session.commit()
        return stored
