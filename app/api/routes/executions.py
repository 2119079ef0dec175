"""/api/jobs/{id}/executions: apply a job's reverse SQL to a configured target (dry run by default)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from fastapi.exceptions import RequestValidationError
from sqlalchemy import select

from app.api.deps import Operator, ServicesDep, Viewer
from app.api.routes.jobs import NOT_FOUND, NOT_READY, finished_job, get_job
from app.models import Execution, Job
from app.schemas import ERRORS, ExecutionCreate, ExecutionOut
from app.services.executions import run_execution

router = APIRouter(prefix="/api/jobs", tags=["executions"])


def execution_out(record: Execution) -> ExecutionOut:
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
    responses={**ERRORS, **NOT_FOUND, **NOT_READY, 422: {"description": "invalid request"}},
)
def create_execution(job_id: str, req: ExecutionCreate, services: ServicesDep, who: Operator) -> ExecutionOut:
    """Run the job's plan on `target`: conflict check first, one row per statement, all or nothing.

    `dry_run` (the default) rolls back at the end and needs the operator role; `dry_run: false`
    commits and needs the admin role. The outcome is in `state` (succeeded, conflict, failed).
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
    record = run_execution(
        services.db, services.metrics, services.scrub, job, target, req.dry_run, req.on_conflict, who.name
    )
    return execution_out(record)


@router.get("/{job_id}/executions", response_model=list[ExecutionOut], responses={**ERRORS, **NOT_FOUND})
def list_executions(job_id: str, services: ServicesDep, _: Viewer) -> list[ExecutionOut]:
    get_job(services, job_id)
    with services.db.session() as session:
        records = session.scalars(
            select(Execution).where(Execution.job_id == job_id).order_by(Execution.id)
        ).all()
    return [execution_out(r) for r in records]
