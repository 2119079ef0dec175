"""A job's page: its progress, script preview, change log and executions; cancelling the job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response
from sqlalchemy import select

from app.api.deps import Services
from app.api.routes.executions import execution_out
from app.api.routes.jobs import job_out
from app.models import Execution, Job
from app.services import artifacts, change_pages, job_progress
from app.services.change_pages import ChangeFilter
from app.web.page import page_handler, read_form, render, services_of, signed_in

router = APIRouter(include_in_schema=False)


PREVIEW_LINES = 200


def _changes_context(services: Services, job: Job, flt: ChangeFilter, page: int) -> dict[str, Any]:
    """The filtered, paged view of the job's change log (the `_changes.html` partial); the change
    log is produced when the page first needs it (app/services/outputs.py)."""
    context: dict[str, Any] = {"filter": flt, "tables": sorted({c["table"] for c in job.counts or []})}
    if job.state == "succeeded" and job.script_path:
        context["changes"] = change_pages.change_page(services.outputs.changes(job.id), flt, page)
    return context


def _job_context(
    services: Services, job_id: str, page: int, flt: ChangeFilter, cpage: int
) -> dict[str, Any] | None:
    with services.db.session() as session:
        job = session.get(Job, job_id)
        if job is None:
            return None
        records = session.scalars(
            select(Execution).where(Execution.job_id == job_id).order_by(Execution.id)
        ).all()
    rate = job_progress.recent_rate(services.db) if job.state in ("queued", "running") else None
    context: dict[str, Any] = {
        "job": job_out(job, rate),
        "phases": job_progress.PHASES,
        "summary": job.summary or {},
        "executions": [execution_out(r) for r in records],
        "preview": [],
        "page": page,
        "pages": 0,
        **_changes_context(services, job, flt, cpage),
    }
    if job.state == "succeeded" and job.script_path and Path(job.script_path).exists():
        path = Path(job.script_path)
        total = artifacts.line_count(path)
        context["pages"] = max(1, -(-total // PREVIEW_LINES))
        page = min(max(page, 1), context["pages"])
        context["page"] = page
        start = (page - 1) * PREVIEW_LINES
        context["first_line"] = start + 1
        context["preview"] = [
            artifacts.highlight_sql(line.decode("utf-8", "replace").rstrip("\n"))
            for line in artifacts.iter_lines(path, start, PREVIEW_LINES)
        ]
    return context


def _filter(table: str, type: str, gtid: str, q: str) -> ChangeFilter:
    return ChangeFilter(
        table.strip()[:200],
        type if type in change_pages.TYPES else "",
        gtid.strip()[:200],
        q.strip()[:200],
    )


@router.get("/jobs/{job_id}")
@page_handler
async def job_page(
    request: Request,
    job_id: str,
    page: int = 1,
    table: str = "",
    type: str = "",
    gtid: str = "",
    q: str = "",
    cpage: int = 1,
) -> Response:
    principal, sid = signed_in(request, "viewer")
    flt = _filter(table, type, gtid, q)
    page, cpage = max(1, min(page, 2**31)), max(1, min(cpage, 2**31))
    context = await run_in_threadpool(_job_context, services_of(request), job_id, page, flt, cpage)
    if context is None:
        return render(request, "error.html", {"message": f"There is no job {job_id}."}, 404, principal, sid)
    return render(request, "job.html", context, 200, principal, sid)


@router.post("/jobs/{job_id}/cancel")
@page_handler
async def cancel_job(request: Request, job_id: str) -> Response:
    principal, sid = signed_in(request, "operator")
    await read_form(request, sid)
    services_of(request).runner.cancel(job_id)
    return RedirectResponse(f"/jobs/{job_id}", status_code=303)
