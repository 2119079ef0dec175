"""/api/jobs/{id}/executions: apply a job's reverse SQL to a configured target (dry run by default).

An execution is queued and runs in the execution worker pool; the POST answers 202 at once."""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Response
from fastapi import Path as FastAPIPath
from fastapi.exceptions import RequestValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.api.deps import Operator, Services, ServicesDep, Viewer
from app.api.routes.jobs import NOT_FOUND, NOT_READY, finished_job
from app.api.routes.resolutions import checked
from app.core.config import ServerConfig
from app.models import EXECUTION_FINAL_STATES, Execution, Job, utcnow
from app.schemas import ERRORS, ErrorOut, ExecutionCreate, ExecutionOut, ExecutionProgressOut
from app.services import resolutions
from app.services.executions import ExecutionOptions, new_execution

router = APIRouter(prefix="/api/jobs", tags=["executions"])
ExecutionId = Annotated[int, FastAPIPath(ge=1, le=2**31)]


def _rate(record: Execution, done: int, total: int) -> tuple[float | None, float | None]:
    """The running pass's steps a second since it started, and the seconds it has left at that rate."""
    started = (record.details or {}).get("phase_started")
    if record.state != "running" or not started or not done:
        return None, None
    seconds = (utcnow() - datetime.fromisoformat(started)).total_seconds()
    if seconds <= 0:
        return None, None
    rate = done / seconds
    return round(rate, 1), round(max(0, total - done) / rate, 1)


def execution_out(record: Execution) -> ExecutionOut:
    details = record.details or {}
    done, total = record.progress_done or 0, record.progress_total or 0
    finished = record.state == "succeeded"
    rate, eta = _rate(record, done, total)
    base = f"/api/jobs/{record.job_id}/executions/{record.id}"
    return ExecutionOut(
        id=record.id,
        job_id=record.job_id,
        target=record.target,
        dry_run=record.dry_run,
        on_conflict=record.on_conflict,
        requested_by=record.requested_by,
        created_at=record.created_at,
        started_at=record.started_at,
        finished_at=record.finished_at,
        state=record.state,  # type: ignore[arg-type]
        committed=record.committed,
        statements=record.statements,
        rows_affected=record.rows_affected,
        skipped=record.skipped,
        conflicts=record.conflicts or [],
        error=record.error,
        exit_code=record.exit_code,
        accepted=record.accepted or {},
        side_effects=record.side_effects,
        per_transaction=bool(details.get("per_transaction")),
        transactions_applied=details.get("transactions_applied", []),
        read_only_tables=details.get("read_only_tables", []),
        unverified=details.get("unverified", 0),
        non_transactional_applied=details.get("non_transactional_applied", {}),
        progress=ExecutionProgressOut(
            phase=record.phase,  # type: ignore[arg-type]
            statements_done=done,
            statements_total=total,
            percent=100.0 if finished else (min(100.0, round(100.0 * done / total, 1)) if total else 0.0),
            current_transaction=record.current_transaction,
            rows_applied=record.rows_affected
            if record.state in EXECUTION_FINAL_STATES
            else details.get("rows_done", 0),
            rows_per_second=rate,
            eta_seconds=eta,
        ),
        cancel_requested=bool(record.cancel_requested),
        reapply=bool(details.get("reapply")),
        check=bool(details.get("check")),
        parallel=int(details.get("parallel", 1)),
        xa={k: v for k, v in details["xa"].items() if k != "target"} if details.get("xa") else None,
        conflict_view=details.get("conflict_view") or [],
        merge=bool(details.get("merge")),
        merge_result=details.get("merge_result"),
        resolutions=details.get("resolutions"),
        links={"self": base, "cancel": f"{base}/cancel", "job": f"/api/jobs/{record.job_id}"},
    )


def executable_job(services: ServicesDep, job_id: str) -> Job:
    job = finished_job(services, job_id)
    if job.mode != "flashback":
        raise HTTPException(409, f"job {job_id} is a {job.mode} job: only flashback jobs are executed")
    return job  # its plan is produced when the execution first needs it (app/services/outputs.py)


def known_target(services: Services, name: str) -> ServerConfig:
    target = services.servers.get(name)
    if target is None:
        known = ", ".join(sorted(services.servers)) or "none configured"
        raise RequestValidationError(
            [
                {
                    "loc": ("body", "target"),
                    "msg": f"unknown server {name!r} (configured: {known})",
                    "type": "value_error",
                }
            ]
        )
    return target


def already_applied(job: Job) -> str | None:
    """Why committing this job again needs `reapply`, or None."""
    if job.applied_execution is None or job.applied_at is None:
        return None
    return (
        f"job {job.id} was already applied by {job.applied_by} at {job.applied_at:%Y-%m-%d %H:%M:%S} UTC "
        f"(execution {job.applied_execution}); send reapply: true to commit it again (the conflict check "
        "still runs first)"
    )


_COMMITS = threading.Lock()  # the check for a running commit and the new record, as one step


def submit_execution(
    services: Services,
    job: Job,
    target: ServerConfig,
    *,
    dry_run: bool,
    on_conflict: str,
    who: str,
    options: ExecutionOptions,
    reapply: bool = False,
    check: bool = False,
) -> Execution:
    """Record the execution queued and hand it to the worker pool (the API and the web form).

    A commit of a job waits for no other: while one is queued or running, another is refused (409),
    so that two sent back to back cannot both run and `applied` names the one that applied rows."""
    with _COMMITS:
        if not dry_run:
            with services.db.session() as session:
                active = session.scalars(
                    select(Execution.id).where(
                        Execution.job_id == job.id,
                        Execution.dry_run.is_(False),
                        Execution.state.in_(("queued", "running")),
                    )
                ).first()
            if active is not None:
                raise HTTPException(
                    409,
                    f"execution {active} is already committing job {job.id}; wait for it to end (or cancel it)",
                )
        record = new_execution(services.db, job, target, dry_run, on_conflict, who, options, reapply, check)
    services.executions.submit(record.id)
    return record


@router.post(
    "/{job_id}/executions",
    status_code=202,
    response_model=ExecutionOut,
    responses={
        **ERRORS,
        **NOT_FOUND,
        **NOT_READY,
        422: {"description": "invalid request"},
        409: {
            "model": ErrorOut,
            "description": "the job has no plan, its reversal was already committed and `reapply` is not set, "
            "or another commit of it is queued or running",
        },
    },
)
def create_execution(
    job_id: str, req: ExecutionCreate, services: ServicesDep, who: Operator, response: Response
) -> ExecutionOut:
    """Queue a run of the job's plan on `target`; answers 202 at once with the execution and its Location.

    The execution then goes `queued` → `running` → `succeeded` | `conflict` | `failed` | `refused` |
    `cancelled` | `interrupted` (GET its Location). `dry_run` (the default) rolls back at the end and
    needs the operator role; `dry_run: false` commits and needs the admin role; a job already applied
    needs `reapply: true` to be committed again.

    Before anything runs, the target is asked what the statements set off. Triggers that would fire
    again are refused unless `accept_triggers` (dry runs too); a commit is refused on cascading foreign
    keys unless `accept_cascades`, and on non-transactional tables unless each is named in
    `accept_non_transactional` (a dry run never writes to them: it only runs their checks). A refusal
    ends the execution in state `refused` with the reason in `error`. `per_transaction` commits per
    original transaction instead of all or nothing, recording each as it commits; `lock_wait_timeout`
    bounds how long a check waits for a row another session holds; `parallel` applies over that many
    connections, all or nothing through XA (docs/execution.md). `merge` (a job created with
    `options.net`) restores only the columns the range changed and keeps later changes to other
    columns; rows whose changed columns changed since are conflicts, resolved by `resolutions` or the
    job's stored document (PUT /api/jobs/{id}/resolutions); `merge_result` and `conflicts` say what
    became of each. Progress (statements passed of
    the plan, the transaction being reversed) is in `progress` while it runs.
    """
    if not req.dry_run and not who.has("admin"):
        raise HTTPException(
            403, f"committing an execution needs the admin role; the token {who.name!r} has {who.role}"
        )
    job = executable_job(services, job_id)
    target = known_target(services, req.target)
    if not req.dry_run and not req.reapply:
        reason = already_applied(job)
        if reason:
            raise HTTPException(409, reason)
    options = ExecutionOptions(
        accept_triggers=req.accept_triggers,
        accept_cascades=req.accept_cascades,
        accept_non_transactional=list(req.accept_non_transactional),
        per_transaction=req.per_transaction,
        lock_wait_timeout=req.lock_wait_timeout,
        parallel=req.parallel,
    )
    if req.merge:
        options.merge, options.resolutions = True, merge_resolutions(job, req.resolutions)
    elif req.resolutions is not None:
        raise _invalid("resolutions", "resolutions apply to a merge execution only: send merge: true")
    record = submit_execution(
        services,
        job,
        target,
        dry_run=req.dry_run,
        on_conflict=req.on_conflict,
        who=who.name,
        options=options,
        reapply=req.reapply,
    )
    response.headers["Location"] = f"/api/jobs/{job_id}/executions/{record.id}"
    return execution_out(record)


def _invalid(field: str, message: str) -> RequestValidationError:
    return RequestValidationError([{"loc": ("body", field), "msg": message, "type": "value_error"}])


def merge_resolutions(job: Job, given: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a merge execution of the job applies: the body's document, else the job's stored one
    (None: unresolved conflicts abort). A job without a net plan cannot merge."""
    if not (job.options or {}).get("net"):
        raise _invalid(
            "merge",
            f"job {job.id}'s plan was not written with net: a merge needs a job created with options.net",
        )
    if given is not None:
        return checked(given, ("body", "resolutions"))
    return resolutions.read(job)


def get_execution(services: Services, job_id: str, execution_id: int) -> Execution:
    with services.db.session() as session:
        record = session.get(Execution, execution_id)
    if record is None or record.job_id != job_id:
        raise HTTPException(404, f"no execution {execution_id} of job {job_id!r}")
    return record


@router.get(
    "/{job_id}/executions/{execution_id}",
    response_model=ExecutionOut,
    responses={**ERRORS, 404: {"model": ErrorOut, "description": "no such execution"}},
)
async def read_execution(
    job_id: str, execution_id: ExecutionId, services: ServicesDep, _: Viewer
) -> ExecutionOut:
    record = await services.db.read(lambda session: session.get(Execution, execution_id))
    if record is None or record.job_id != job_id:
        raise HTTPException(404, f"no execution {execution_id} of job {job_id!r}")
    return execution_out(record)


@router.post(
    "/{job_id}/executions/{execution_id}/cancel",
    status_code=202,
    response_model=ExecutionOut,
    responses={
        **ERRORS,
        404: {"model": ErrorOut, "description": "no such execution"},
        409: {"model": ErrorOut, "description": "the execution already finished"},
    },
)
def cancel_execution(
    job_id: str, execution_id: ExecutionId, services: ServicesDep, who: Operator
) -> ExecutionOut:
    """Queued: cancelled at once. Running: stops before its next statement and rolls back its open
    transaction (per-transaction mode: the transactions committed before stay, listed). Cancelling a
    commit needs the admin role. Finished: 409."""
    record = get_execution(services, job_id, execution_id)
    if not record.dry_run and not who.has("admin"):
        raise HTTPException(
            403, f"cancelling a commit needs the admin role; the token {who.name!r} has {who.role}"
        )
    cancelled, changed = services.executions.cancel(execution_id)
    if cancelled is None:
        raise HTTPException(404, f"no execution {execution_id} of job {job_id!r}")
    if not changed:
        raise HTTPException(409, f"execution {execution_id} already finished ({cancelled.state})")
    return execution_out(cancelled)


@router.get("/{job_id}/executions", response_model=list[ExecutionOut], responses={**ERRORS, **NOT_FOUND})
async def list_executions(job_id: str, services: ServicesDep, _: Viewer) -> list[ExecutionOut]:
    def records(session: Session) -> list[Execution] | None:
        if session.get(Job, job_id) is None:
            return None
        return list(
            session.scalars(select(Execution).where(Execution.job_id == job_id).order_by(Execution.id))
        )

    found = await services.db.read(records)
    if found is None:
        raise HTTPException(404, f"no job {job_id!r}")
    return [execution_out(r) for r in found]
