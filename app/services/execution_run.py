"""One execution's run of a job's plan on its target, as its process (execution_process.py) runs it:
the options it takes, the request that crosses into the process, the recorder that writes its
progress to the record, and the values of the record that say how it ended."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.core.config import ServerConfig
from app.models import Execution, utcnow
from app.services import resolutions
from rollback import (
    DEFAULT_LOCK_WAIT_TIMEOUT,
    EXIT_INCOMPLETE,
    EXIT_INTERNAL,
    ConflictError,
    ExecutionCancelled,
    ExecutionConflict,
    ExecutionFailed,
    ExecutionObserver,
    ExecutionProgress,
    ExecutionRefused,
    RollbackError,
    execute_parallel,
    execute_plan,
)

log = logging.getLogger("mysql_rollback.executions")


PROGRESS_SECONDS = 0.5  # at most one progress write per execution in this time (commits are written at once)
STOP_REASON = "the service stopped while this execution waited or ran"


@dataclass
class ExecutionOptions:
    """What the request accepts and how it commits (the API's and the web form's fields)."""

    accept_triggers: bool = False
    accept_cascades: bool = False
    accept_non_transactional: list[str] = field(default_factory=list)
    per_transaction: bool = False
    lock_wait_timeout: int = DEFAULT_LOCK_WAIT_TIMEOUT
    # the job's incident ran with foreign_key_checks=0 (its summary's no_fk_checks): so does its reverse
    foreign_key_checks: bool = True
    parallel: int = 1  # connections of a parallel apply (XA); 1: the one-connection apply
    merge: bool = False  # restore only the columns the range changed (a net plan)
    resolutions: dict[str, Any] | None = None  # the document the merge applies (None: conflicts abort)

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
            "foreign_key_checks": self.foreign_key_checks,
        }

    def merge_arguments(self) -> dict[str, Any]:
        """execute_plan's merge keywords (none outside merge mode)."""
        if not self.merge:
            return {}
        document = self.resolutions
        return {"merge": True, "resolutions": None if document is None else resolutions.parsed(document)}

    @classmethod
    def of(cls, record: Execution) -> ExecutionOptions:
        accepted = record.accepted or {}
        details = record.details or {}
        return cls(
            accept_triggers=bool(accepted.get("triggers")),
            accept_cascades=bool(accepted.get("cascades")),
            accept_non_transactional=list(accepted.get("non_transactional", [])),
            per_transaction=bool(details.get("per_transaction")),
            lock_wait_timeout=int(details.get("lock_wait_timeout", DEFAULT_LOCK_WAIT_TIMEOUT)),
            foreign_key_checks=details.get("foreign_key_checks", True) is not False,
            parallel=int(details.get("parallel", 1)),
            merge=bool(details.get("merge")),
            resolutions=details.get("resolutions"),
        )


RESULT_DETAILS = ("transactions_applied", "read_only_tables", "unverified", "non_transactional_applied")


def result_details(outcome: dict[str, Any]) -> dict[str, Any]:
    """The engine result's values kept in the record's details (a merge's result as merge_result)."""
    kept = {k: outcome[k] for k in RESULT_DETAILS}
    if outcome.get("merge") is not None:
        kept["merge_result"] = outcome["merge"]
    return kept


@dataclass
class RunRequest:
    """What one execution runs (picklable: it crosses into the execution's process)."""

    record_id: int
    dry_run: bool
    on_conflict: str
    options: ExecutionOptions
    details: dict[str, Any]


def conflict_check(
    plan: Path, target: ServerConfig, options: ExecutionOptions | None = None
) -> dict[str, Any]:
    """A dry run that skips conflicting rows, so that every conflict is listed; changes nothing."""
    arguments = (options or ExecutionOptions()).engine_arguments()
    merge = (options or ExecutionOptions()).merge_arguments()
    result = execute_plan(str(plan), target.dsn, commit=False, on_conflict="skip", **arguments, **merge)
    return result.to_dict()


class Recorder(ExecutionObserver):
    """Writes the engine's progress to the execution's record (`write(**values)`); each
    per-transaction commit at once. `cancel` and `stop` are events (threads' or processes').
    `write_later`: how a progress write may go instead, without waiting for it (record_writer.py);
    what the crash record needs (the transaction about to commit, those committed, an XA decision)
    always goes through `write`."""

    def __init__(
        self,
        write: Callable[..., None],
        cancel: Any,
        stop: Any,
        write_later: Callable[..., None] | None = None,
    ):
        self.write = write
        self.write_later = write_later or write
        self.cancel = cancel
        self.stop = stop
        self.applied: list[dict[str, Any]] = []
        self.details: dict[str, Any] = {}
        self._last_write = 0.0
        self._phase: str | None = None

    def progress(self, state: ExecutionProgress) -> None:
        values: dict[str, Any] = {
            "phase": state.phase,
            "progress_done": state.statements_done,
            "progress_total": state.statements_total,
            "current_transaction": state.transaction,
        }
        started = state.phase != self._phase
        if started:
            # when this pass started: the record's rate and time left are of the pass that runs
            self._phase = state.phase
            self.details = self.details | {"phase_started": utcnow().isoformat()}
        if state.xa is not None:
            # a parallel apply's XA record, written before its first XA PREPARE and when it decides to
            # commit: a crash between prepare and commit leaves prepared transactions it names (recover())
            self.details = self.details | {"xa": state.xa}
            values["details"] = self.details | {"transactions_applied": list(self.applied)}
        elif state.committing is not None:
            # written before the COMMIT is sent: a crash from here until the next write leaves this one
            # transaction's outcome unknown, and the record says which it is
            self.details = self.details | {"committing": state.committing}
        elif state.committed is not None:
            self.applied.append(state.committed)
            self.details = {k: v for k, v in self.details.items() if k != "committing"}
        elif (
            not started
            and time.monotonic() - self._last_write < PROGRESS_SECONDS
            # the last statement's is written at once; a total of 0 is not known yet (counted beside the pass)
            and (not state.statements_total or state.statements_done < state.statements_total)
        ):
            return
        values["details"] = self.details | {
            "transactions_applied": list(self.applied),
            "rows_done": state.rows_affected,
        }
        self._last_write = time.monotonic()
        durable = state.xa is not None or state.committing is not None or state.committed is not None
        (self.write if durable else self.write_later)(**values)

    def cancelled(self) -> bool:
        return self.cancel.is_set() or self.stop.is_set()


def run_plan(
    plan: Path,
    target: ServerConfig,
    run: RunRequest,
    recorder: Recorder,
    scrub: Callable[[str], str],
) -> dict[str, Any]:
    """Execute the plan on the target; the values of the execution's record that say how it ended."""
    details = run.details
    options = run.options
    try:
        if options.parallel > 1:
            result = _execute_parallel(plan, target, run, recorder)
        else:
            result = execute_plan(
                str(plan),
                target.dsn,
                commit=not run.dry_run,
                on_conflict=run.on_conflict,
                observer=recorder,
                # a one-transaction commit is its own dry run (a conflict rolls it back, nothing applied)
                check_first=False,
                **options.engine_arguments(),
                **options.merge_arguments(),
            )
        outcome = result.to_dict()
        return {
            "state": "succeeded",
            "exit_code": 0,
            "committed": result.committed,
            "statements": result.statements,
            "rows_affected": result.rows_affected,
            "skipped": result.skipped,
            "conflicts": result.conflicts,
            "side_effects": result.side_effects,
            "details": details | result_details(outcome),
            "current_transaction": None,
        }
    except ExecutionCancelled as exc:
        outcome = exc.result.to_dict()
        reason = STOP_REASON if recorder.stop.is_set() and not recorder.cancel.is_set() else None
        return {
            "state": "interrupted" if reason else "cancelled",
            "exit_code": exc.exit_code,
            "error": scrub(f"{reason}: {exc.one_line()}" if reason else exc.one_line()),
            "statements": exc.result.statements,
            "rows_affected": exc.result.rows_affected,
            "details": details | result_details(outcome),
        }
    except ExecutionRefused as exc:
        return {
            "state": "refused",
            "exit_code": exc.exit_code,
            "error": scrub(exc.one_line()),
            "side_effects": exc.side_effects,
        }
    except ConflictError as exc:
        values: dict[str, Any] = {
            "state": "conflict",
            "exit_code": exc.exit_code,
            "error": scrub(exc.one_line()),
        }
        if isinstance(exc, ExecutionConflict):
            outcome = exc.result.to_dict()
            values["details"] = details | result_details(outcome)
            if (
                options.merge
            ):  # a merge read every row first: all its conflicts, unresolved ones without resolution
                values["conflicts"] = exc.result.conflicts
                values["side_effects"] = exc.result.side_effects
                return values
        try:
            check = conflict_check(plan, target, options)
            values["conflicts"] = check["conflicts"]
            values["side_effects"] = check["side_effects"]
        except RollbackError as again:
            values["error"] += scrub(f" (listing the conflicts failed: {again.one_line()})")
        return values
    except ExecutionFailed as exc:
        values = {"state": "failed", "exit_code": exc.exit_code, "error": scrub(exc.one_line())}
        if exc.result is not None:
            outcome = exc.result.to_dict()
            values["side_effects"] = exc.result.side_effects
            values["details"] = details | result_details(outcome)
        return values
    except RollbackError as exc:
        return {"state": "failed", "exit_code": exc.exit_code, "error": scrub(exc.one_line())}
    except OSError as exc:
        return {
            "state": "failed",
            "exit_code": EXIT_INCOMPLETE,
            "error": scrub(f"cannot read the job's plan: {exc.strerror or exc}; nothing was run"),
        }
    except Exception as exc:  # noqa: BLE001 - recorded, never a traceback to the user
        log.error("execution %s failed: %s", run.record_id, scrub(f"{type(exc).__name__}: {exc}"))
        return {
            "state": "failed",
            "exit_code": EXIT_INTERNAL,
            "error": scrub(f"internal error ({type(exc).__name__}): {exc}"),
        }


def _execute_parallel(plan: Path, target: ServerConfig, run: RunRequest, recorder: Recorder) -> Any:
    options = run.options
    if options.merge:
        raise ExecutionRefused(
            "refused, nothing was run: a merge execution runs over one connection (parallel: 1)"
        )
    if options.per_transaction or options.accept_triggers or options.accept_non_transactional:
        raise ExecutionRefused(
            "refused, nothing was run: a parallel apply commits everything at once through XA: it cannot "
            "run per transaction, fire triggers or write non-transactional tables"
        )
    return execute_parallel(
        str(plan),
        target.dsn,
        options.parallel,
        commit=not run.dry_run,
        on_conflict=run.on_conflict,
        accept_cascades=options.accept_cascades,
        lock_wait_timeout=options.lock_wait_timeout,
        observer=recorder,
        foreign_key_checks=options.foreign_key_checks,
    )
