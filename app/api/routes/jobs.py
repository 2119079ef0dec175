"""/api/jobs: create (validated up front), list, read, cancel, and the job's script, changes and summary."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, Response, StreamingResponse
from sqlalchemy import func, select
from sqlalchemy.orm import Session, defer

from app.api.deps import Operator, Services, ServicesDep, Viewer
from app.models import FINAL_STATES, Execution, Job, Upload
from app.schemas import (
    ERRORS,
    AppliedOut,
    ErrorOut,
    JobCreate,
    JobList,
    JobOut,
    ProgressOut,
    SummaryOut,
    check_job_request,
)
from app.services import artifacts, job_progress, retention
from app.services.jobs import create_job
from app.services.sources import asks_server_files, check_server_files, unlisted
from app.services.upload_range import check_upload_range
from rollback import RollbackError

router = APIRouter(prefix="/api/jobs", tags=["jobs"])

NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorOut, "description": "no such job"}}
NOT_READY: dict[int | str, dict[str, Any]] = {
    409: {"model": ErrorOut, "description": "the job has no output"}
}
MAX_PAGE = 100_000


def job_out(job: Job, rate: float | None = None) -> JobOut:
    """The job as the API shows it; `rate` (job_progress.recent_rate) lets a job estimate its time
    left before its own first progress report."""
    total = job.progress_total or 0
    done = job.progress_bytes or 0
    percent = 100.0 if job.state == "succeeded" else (round(100.0 * done / total, 1) if total else 0.0)
    links = {"self": f"/api/jobs/{job.id}", "web": f"/jobs/{job.id}"}
    if job.state == "succeeded":
        links.update(
            script=f"/api/jobs/{job.id}/script",
            changes=f"/api/jobs/{job.id}/changes",
            summary=f"/api/jobs/{job.id}/summary",
            executions=f"/api/jobs/{job.id}/executions",
        )
    return JobOut(
        id=job.id,
        state=job.state,  # type: ignore[arg-type]
        created_by=job.created_by,
        created_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        mode=job.mode,
        source=job.source,  # type: ignore[arg-type]
        server=job.server,
        upload=job.upload_id,
        range=job.range_requested or {},
        range_resolved=job.range_resolved,
        filters=job.filters or {},
        options=job.options or {},
        progress=ProgressOut(
            bytes=done,
            total=total,
            events=job.progress_events or 0,
            events_total=job.progress_events_total or 0,
            percent=min(percent, 100.0),
            phase=job_progress.phase(job),
            eta_seconds=job_progress.eta_seconds(job, rate),
        ),
        rows=job.rows_emitted or 0,
        transactions=job.transactions or 0,
        statements=job.statements or 0,
        counts=job.counts or [],
        warnings=job.warnings or [],
        irreversible=job.irreversible or [],
        error=job.error,
        exit_code=job.exit_code,
        cancel_requested=bool(job.cancel_requested),
        script_bytes=job.script_bytes or 0,
        applied=(
            AppliedOut(execution=job.applied_execution, by=job.applied_by or "", at=job.applied_at)
            if job.applied_execution is not None and job.applied_at is not None
            else None
        ),
        disk_bytes=job.disk_bytes or 0,
        links=links,
    )


def get_job(services: Services, job_id: str) -> Job:
    with services.db.session() as session:
        job = session.get(Job, job_id)
    if job is None:
        raise HTTPException(404, f"no job {job_id!r}")
    return job


def finished_job(services: Services, job_id: str) -> Job:
    job = get_job(services, job_id)
    if job.state != "succeeded" or not job.script_path or not Path(job.script_path).exists():
        raise HTTPException(409, f"job {job_id} has no output (state: {job.state})")
    return job


def submit_job(services: Services, req: JobCreate, who: str) -> Job:
    """Validate (422 with field errors), record, queue."""
    upload_files = None
    if req.upload is not None:
        with services.db.session() as session:
            upload = session.get(Upload, req.upload)
            upload_files = [f["name"] for f in upload.files] if upload else None
    errors = check_job_request(req, services.servers, upload_files)
    requested = req.range.model_dump(exclude_none=True)
    server = services.servers.get(req.server) if req.server is not None else None
    if not errors and server is not None and asks_server_files(server, requested):
        try:
            errors = services.server_calls.call_blocking(server.name, check_server_files, server, requested)
        except RollbackError as exc:
            errors = unlisted(server.name, exc)
    if not errors and req.upload is not None and upload_files:
        errors = check_upload_range(
            services.settings.uploads_dir / req.upload, upload_files, req.range.model_dump(exclude_none=True)
        )
    if errors:
        for error in errors:
            error["msg"] = services.scrub(error["msg"])
        raise RequestValidationError(errors)
    job = create_job(services.db, req, who)
    services.runner.submit(job.id)
    return job


@router.post(
    "", status_code=202, response_model=JobOut, responses={**ERRORS, 422: {"description": "invalid request"}}
)
def create(req: JobCreate, services: ServicesDep, who: Operator) -> JobOut:
    """Start a job: a server (or an upload), a range, filters, a mode. Runs in the background."""
    return job_out(submit_job(services, req, who.name))


# The read routes that pollers and lists hit are async and read through Database.read: a few
# indexed rows of a local SQLite file are cheaper to read on the event loop, in arrival order, than
# in one of 40 threads that take turns on the GIL with the engine's and executions' workers. Their
# answers are serialised once per change of the job database (app/services/answers.py).
@router.get("", response_model=JobList, responses=ERRORS)
async def list_jobs(
    services: ServicesDep,
    _: Viewer,
    state: Annotated[Literal["queued", "running", "succeeded", "failed", "cancelled"] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=2**31)] = 0,
) -> Response:
    """Newest first."""
    body = await list_answer(services, state, limit, offset)
    return Response(body, media_type="application/json")


async def list_answer(services: Services, state: str | None, limit: int, offset: int) -> bytes:
    """The JSON of GET /api/jobs (app/api/polled_reads.py answers it too)."""

    def page(session: Session) -> JobList:
        # built here, on a cache miss only: building the statements costs more than a cached answer
        query = select(Job).options(defer(Job.summary))  # the list shows no summary: not decoded
        count = select(func.count()).select_from(Job)
        if state is not None:
            query = query.where(Job.state == state)
            count = count.where(Job.state == state)
        total = session.scalar(count) or 0
        jobs = session.scalars(
            query.order_by(Job.created_at.desc(), Job.id).limit(limit).offset(offset)
        ).all()
        return JobList(items=[job_out(j) for j in jobs], total=total, limit=limit, offset=offset)

    body = await services.answers.get(("list", state, limit, offset), page)
    assert body is not None  # a list always exists
    return body


async def job_answer(services: Services, job_id: str) -> bytes | None:
    """The JSON of GET /api/jobs/{id}; None when there is no such job."""

    def one(session: Session) -> JobOut | None:
        # the answer shows no summary: not decoded (a job's transaction list alone can be megabytes,
        # and this is rebuilt on the event loop after every commit of any job or execution)
        job = session.get(Job, job_id, options=[defer(Job.summary)])
        if job is None:
            return None
        if job.state in ("queued", "running"):  # the rate is read from the job database too
            return job_out(job, job_progress.recent_rate(services.db))
        return job_out(job)

    return await services.answers.get(("job", job_id), one)


@router.get("/{job_id}", response_model=JobOut, responses={**ERRORS, **NOT_FOUND})
async def read(job_id: str, services: ServicesDep, _: Viewer) -> Response:
    body = await job_answer(services, job_id)
    if body is None:
        raise HTTPException(404, f"no job {job_id!r}")
    return Response(body, media_type="application/json")


@router.post(
    "/{job_id}/cancel", status_code=202, response_model=JobOut, responses={**ERRORS, **NOT_FOUND, **NOT_READY}
)
def cancel(job_id: str, services: ServicesDep, _: Operator) -> JobOut:
    """Queued: cancelled at once. Running: stops at its next rows event or commit (state stays
    running with cancel_requested until then). Finished: 409."""
    job, changed = services.runner.cancel(job_id)
    if job is None:
        raise HTTPException(404, f"no job {job_id!r}")
    if not changed:
        raise HTTPException(409, f"job {job_id} already finished ({job.state})")
    return job_out(job)


@router.delete(
    "/{job_id}",
    status_code=204,
    responses={
        **ERRORS,
        **NOT_FOUND,
        409: {"model": ErrorOut, "description": "the job is queued or running, or an execution of it is"},
    },
)
def delete(job_id: str, services: ServicesDep, who: Operator) -> Response:
    """Delete a finished job: its record, its executions, its output files, its upload when no other
    job uses it, and the binlog files spooled for it. A job that was applied needs the admin role."""
    job = get_job(services, job_id)
    if job.state not in FINAL_STATES:
        raise HTTPException(409, f"job {job_id} is {job.state}: cancel it first")
    with services.db.session() as session:
        busy = session.scalar(
            select(func.count())
            .select_from(Execution)
            .where(Execution.job_id == job_id, Execution.state.in_(("queued", "running")))
        )
    if busy:
        raise HTTPException(409, f"job {job_id} has an execution queued or running: cancel it first")
    if job.applied_execution is not None and not who.has("admin"):
        raise HTTPException(403, f"job {job_id} was applied: deleting it needs the admin role")
    retention.delete_job(services.db, services.settings, job_id)
    return Response(status_code=204)


def _paged(path: Path, offset: int | None, limit: int | None, media_type: str, request: Request) -> Any:
    if offset is None and limit is None:
        return FileResponse(
            path, media_type=media_type, filename=path.name, content_disposition_type="inline"
        )
    start = offset or 0
    count = limit or 1000
    total = artifacts.line_count(path)
    headers = {"X-Total-Lines": str(total), "X-Offset": str(start), "X-Limit": str(count)}
    if start + count < total:
        headers["X-Next-Offset"] = str(start + count)
        headers["Link"] = f'<{request.url.path}?offset={start + count}&limit={count}>; rel="next"'
    return StreamingResponse(
        artifacts.page_chunks(path, start, count), media_type=media_type, headers=headers
    )


PAGE_DOC = (
    "Without offset/limit: the whole file, streamed (HTTP Range requests give byte ranges). "
    "With them: lines [offset, offset+limit); X-Total-Lines and X-Next-Offset tell the rest."
)


@router.get(
    "/{job_id}/script",
    description="The reverse SQL. " + PAGE_DOC,
    responses={
        **ERRORS,
        **NOT_FOUND,
        **NOT_READY,
        200: {"content": {"application/sql": {}, "text/plain": {}}, "description": "the reverse SQL"},
        206: {"content": {"application/sql": {}}, "description": "a byte range of the script"},
    },
    response_class=FileResponse,
)
def script(
    job_id: str,
    request: Request,
    services: ServicesDep,
    _: Viewer,
    offset: Annotated[int | None, Query(ge=0, le=2**62)] = None,
    limit: Annotated[int | None, Query(ge=1, le=MAX_PAGE)] = None,
    download: bool = False,
) -> Any:
    job = finished_job(services, job_id)
    path = Path(job.script_path or "")
    if download and offset is None and limit is None:
        return FileResponse(path, media_type="application/sql", filename=f"rollback-{job_id}.sql")
    return _paged(
        path, offset, limit, "text/plain; charset=utf-8" if offset or limit else "application/sql", request
    )


@router.get(
    "/{job_id}/changes",
    description="The decoded row changes as JSON lines. " + PAGE_DOC,
    responses={
        **ERRORS,
        **NOT_FOUND,
        **NOT_READY,
        200: {"content": {"application/x-ndjson": {}}, "description": "the decoded changes, one JSON a line"},
        206: {"content": {"application/x-ndjson": {}}, "description": "a byte range"},
    },
    response_class=FileResponse,
)
def changes(
    job_id: str,
    request: Request,
    services: ServicesDep,
    _: Viewer,
    offset: Annotated[int | None, Query(ge=0, le=2**62)] = None,
    limit: Annotated[int | None, Query(ge=1, le=MAX_PAGE)] = None,
) -> Any:
    """Produced on the first request when the job did not ask for it (options.outputs)."""
    finished_job(services, job_id)
    path = services.outputs.changes(job_id)
    return _paged(path, offset, limit, "application/x-ndjson", request)


def plan_file(services: Services, job: Job) -> Path:
    """The job's execution plan (the statements with their checks, JSON lines), as executions read
    it; produced on the first request when the job did not ask for it (app/services/outputs.py)."""
    return services.outputs.plan(job.id)


@router.get(
    "/{job_id}/plan",
    description="The execution plan: one JSON object a line, each statement of the script with its check "
    "(what `mysql-rollback verify --job` applies to a scratch copy). " + PAGE_DOC,
    responses={
        **ERRORS,
        **NOT_FOUND,
        **NOT_READY,
        200: {"content": {"application/x-ndjson": {}}, "description": "the plan, one statement a line"},
        206: {"content": {"application/x-ndjson": {}}, "description": "a byte range"},
    },
    response_class=FileResponse,
)
def plan(
    job_id: str,
    request: Request,
    services: ServicesDep,
    _: Viewer,
    offset: Annotated[int | None, Query(ge=0, le=2**62)] = None,
    limit: Annotated[int | None, Query(ge=1, le=MAX_PAGE)] = None,
) -> Any:
    job = finished_job(services, job_id)
    return _paged(plan_file(services, job), offset, limit, "application/x-ndjson", request)


@router.get("/{job_id}/summary", response_model=SummaryOut, responses={**ERRORS, **NOT_FOUND, **NOT_READY})
def summary(job_id: str, services: ServicesDep, _: Viewer) -> SummaryOut:
    """Rows per table and type, the largest transactions, warnings."""
    job = finished_job(services, job_id)
    extra = job.summary or {}
    tables: dict[str, dict[str, Any]] = {}
    for item in job.counts or []:
        entry = tables.setdefault(item["table"], {"table": item["table"], "rows": 0})
        entry[item["type"]] = item["rows"]
        entry["rows"] += item["rows"]
    return SummaryOut(
        id=job.id,
        state=job.state,
        counts=job.counts or [],
        tables=sorted(tables.values(), key=lambda t: (-t["rows"], t["table"])),
        transactions=job.transactions,
        statements=job.statements,
        rows=job.rows_emitted,
        largest_transactions=extra.get("largest_transactions", []),
        warnings=job.warnings or [],
        irreversible=job.irreversible or [],
        ddl=extra.get("ddl", []),
        server_version=extra.get("server_version"),
        row_images=extra.get("row_images", []),
        side_effects=extra.get("side_effects"),
        largest_statement=extra.get("largest_statement"),
        schema_check=extra.get("schema_check"),
        engine=(
            {
                "name": extra["engine"],
                "reason": extra.get("engine_reason"),
                "partitions": extra.get("partitions"),
            }
            if extra.get("engine")
            else None
        ),
        transactions_list=extra.get("transactions_list") or [],
        dependencies=extra.get("dependencies"),
        dependency_count=extra.get("dependency_count") or 0,
        partial_transactions=extra.get("partial_transactions") or [],
        ddl_mode=extra.get("ddl_mode") or "refuse",
        lost_rows=extra.get("lost_rows") or [],
        schema_timelines=extra.get("schema_timelines") or [],
    )
