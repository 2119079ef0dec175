"""Every version of one row across a job's range."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from app.api.deps import Services
from app.api.routes.jobs import job_out
from app.models import Job
from app.services import change_pages
from app.web.page import page_handler, render, services_of, signed_in

router = APIRouter(include_in_schema=False)


def _history_context(
    services: Services, job_id: str, table: str, key: dict[str, Any]
) -> dict[str, Any] | None:
    with services.db.session() as session:
        job = session.get(Job, job_id)
    if job is None or job.state != "succeeded" or not job.script_path:
        return None
    return {
        "job": job_out(job),
        "history": change_pages.row_history(services.outputs.changes(job.id), table, key),
    }


@router.get("/jobs/{job_id}/history")
@page_handler
async def row_history_page(request: Request, job_id: str, table: str = "", key: str = "") -> Response:
    """Every version of one row (table and key) across the job's range, oldest to newest."""
    principal, sid = signed_in(request, "viewer")
    try:
        wanted = json.loads(key)
    except ValueError:
        wanted = None
    if not isinstance(wanted, dict) or not wanted or "." not in table:
        message = 'Give a table (db.table) and a key as a JSON object, e.g. {"id": 5}.'
        return render(request, "error.html", {"message": message}, 422, principal, sid)
    context = await run_in_threadpool(_history_context, services_of(request), job_id, table, wanted)
    if context is None:
        return render(
            request, "error.html", {"message": f"Job {job_id} has no change log."}, 404, principal, sid
        )
    return render(request, "row_history.html", context, 200, principal, sid)
