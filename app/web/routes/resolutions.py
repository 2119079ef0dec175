"""The merge view's three-way choices stored as the job's resolutions document."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response

from app.models import Job
from app.services import resolutions
from app.web import resolution_form
from app.web.page import page_handler, read_form, render, services_of, signed_in
from app.web.routes.executions import check_context
from rollback import RollbackError

router = APIRouter(include_in_schema=False)


@router.post("/jobs/{job_id}/execute/{check_id}/resolutions")
@page_handler
async def save_resolutions(request: Request, job_id: str, check_id: int) -> Response:
    """The three-way view's choices stored as the job's resolutions document (the same document as
    PUT /api/jobs/{id}/resolutions); the panel shows them, and "Execute with merge" applies them."""
    principal, sid = signed_in(request, "admin")
    data = await read_form(request, sid)
    services = services_of(request)
    context = await run_in_threadpool(check_context, services, job_id, check_id)
    if context is None or not context["check"].merge:
        return render(
            request, "error.html", {"message": "There is no such merge conflict check."}, 404, principal, sid
        )
    with services.db.session() as session:
        job = session.get(Job, job_id)
    assert job is not None
    document = resolution_form.document_from_form(data, context["check"].conflicts)
    try:
        await run_in_threadpool(resolutions.store, job, document)
    except RollbackError as exc:
        return render(request, "error.html", {"message": exc.one_line()}, 422, principal, sid)
    return RedirectResponse(f"/jobs/{job_id}/execute/{check_id}#resolutions-saved", status_code=303)
