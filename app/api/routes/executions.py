"""/api/jobs/{id}/executions: apply a job's reverse SQL to a configured target (dry run by default)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from fastapi.exceptions import RequestValidationError
from sqlalchemy import select

from app.api.deps import Operator, ServicesDep, Viewer
from app.api.routes.jobs import NOT_FOUND, NOT_READY, finished_job, get_job
from app.models import Execution, Job
from app.schemas import ERRORS, ErrorOut, ExecutionCreate, ExecutionOut
from app.services.executions import ExecutionOptions, run_execution

router = APIRouter(prefix="/api/jobs", tags=["executions"])


def execution_out(record: Execution) -> ExecutionOut:
    details = record.details or {}
    return ExecutionOut(
        id=record.id,
        job_id=record.job_id,
        target=record.target,
        dry_run=record.dry_run,
        on_conflict=record.on_conflict,
        requested_by=record.requested_by,
        created_at=record.created_at,
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
    )


def executable_job(services: ServicesDep, job_id: str) -> Job:
    job = finished_job(services, job_id)
    if job.mode != "flashback":
        raise HTTPException(409, f"job {job_id} is a {job.mode} job: only flashback jobs are executed")
    if not job.plan_path:
        raise HTTPException(409, f"job {job_id} has no execution plan")
    return job


@router.post(
    "/{job_id}/executions",
    status_code=201,
    response_model=ExecutionOut,
    responses={
        **ERRORS,
        **NOT_FOUND,
        **NOT_READY,
        422: {"description": "invalid request"},
        409: {
            "model": ErrorOut,
            "description": "refused before anything ran (recorded with state `refused`): a statement over the "
            "target's max_allowed_packet, or side effects the request did not accept",
        },
    },
)
def create_execution(job_id: str, req: ExecutionCreate, services: ServicesDep, who: Operator) -> ExecutionOut:
    """Run the job's plan on `target`: conflict check first, one row per statement, all or nothing.

    `dry_run` (the default) rolls back at the end and needs the operator role; `dry_run: false`
    commits and needs the admin role. The outcome is in `state` (succeeded, conflict, failed).

    Before anything runs, the target is asked what the statements set off. Triggers that would fire
    again are refused unless `accept_triggers` (dry runs too); a commit is refused on cascading foreign
    keys unless `accept_cascades`, and on non-transactional tables unless each is named in
    `accept_non_transactional` (a dry run never writes to them: it only runs their checks). A refusal
    answers 409 with the reason, and is recorded. `per_transaction` commits per original transaction
    instead of all or nothing; `lock_wait_timeout` bounds how long a check waits for a row another
    session holds.
    """
    if not req.dry_run and not who.has("admin"):
        raise HTTPException(
            403, f"committing an execution needs the admin role; the token {who.name!r} has {who.role}"
        )
    job = executable_job(services, job_id)
    target = services.servers.get(req.target)
    if target is None:
        known = ", ".join(sorted(services.servers)) or "none configured"
        raise RequestValidationError(
            [
                {
                    "loc": ("body", "target"),
                    "msg": f"unknown server {req.target!r} (configured: {known})",
                    "type": "value_error",
                }
            ]
        )
    options = ExecutionOptions(
        accept_triggers=req.accept_triggers,
        accept_cascades=req.accept_cascades,
        accept_non_transactional=list(req.accept_non_transactional),
        per_transaction=req.per_transaction,
        lock_wait_timeout=req.lock_wait_timeout,
    )
    record = run_execution(
        services.db,
        services.metrics,
        services.scrub,
        job,
        target,
        req.dry_run,
        req.on_conflict,
        who.name,
        options,
    )
    if record.state == "refused":
        raise HTTPException(409, record.error)
    return execution_out(record)


@router.get("/{job_id}/executions", response_model=list[ExecutionOut], responses={**ERRORS, **NOT_FOUND})
def list_executions(job_id: str, services: ServicesDep, _: Viewer) -> list[ExecutionOut]:
    get_job(services, job_id)
    with services.db.session() as session:
        records = session.scalars(
            select(Execution).where(Execution.job_id == job_id).order_by(Execution.id)
        ).all()
    return [execution_out(r) for r in records]
