"""Precise selection: a job re-generated with only the transactions ticked on its page."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError

from app.api.deps import Services
from app.api.routes.jobs import submit_job
from app.models import Job
from app.schemas import JobCreate
from app.services import picks
from app.web.page import page_handler, read_form, render, services_of, signed_in
from rollback import RollbackError

router = APIRouter(include_in_schema=False)


def _regenerate(services: Services, job_id: str, ticked: list[str], who: str) -> str:
    """A new job like `job_id` undoing only the ticked transactions; its id (RollbackError: why not)."""
    with services.db.session() as session:
        job = session.get(Job, job_id)
        if job is None:
            raise RollbackError(f"there is no job {job_id}")
        body = picks.regenerated_body(job, ticked)
    try:
        req = JobCreate.model_validate(body)
        return submit_job(services, req, who).id
    except (ValidationError, RequestValidationError) as exc:
        first = exc.errors()[0]
        raise RollbackError(services.scrub(str(first.get("msg", first)))) from None


@router.post("/jobs/{job_id}/picks")
@page_handler
async def regenerate_with_picks(request: Request, job_id: str) -> Response:
    """Tick boxes of the job page (_picks_preview.html): a new job with only the ticked transactions."""
    principal, sid = signed_in(request, "operator")
    data = await read_form(request, sid)
    ticked = [t for t in data.get("tx", []) if t]
    if not ticked:
        message = "Tick at least one transaction to re-generate."
        return render(request, "error.html", {"message": message}, 422, principal, sid)
    try:
        new_id = await run_in_threadpool(_regenerate, services_of(request), job_id, ticked, principal.name)
    except RollbackError as exc:
        return render(request, "error.html", {"message": exc.one_line()}, 422, principal, sid)
    return RedirectResponse(f"/jobs/{new_id}#preview", status_code=303)
