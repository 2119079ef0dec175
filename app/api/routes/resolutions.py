"""/api/jobs/{id}/resolutions: the document that resolves a merge execution's conflicts, stored on
the job (app/services/resolutions.py); an execution with `merge: true` and no `resolutions` of its
own applies it."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, HTTPException
from fastapi.exceptions import RequestValidationError

from app.api.deps import Admin, ServicesDep, Viewer
from app.api.routes.jobs import NOT_FOUND, NOT_READY, finished_job
from app.schemas import ERRORS
from app.services import resolutions
from rollback import RollbackError

router = APIRouter(prefix="/api/jobs", tags=["executions"])


def checked(doc: Any, loc: tuple[str, ...] = ("body",)) -> dict[str, Any]:
    """The document, or a 422 with the engine's one line naming the bad entry."""
    try:
        resolutions.check(doc)
    except RollbackError as exc:
        raise RequestValidationError([{"loc": loc, "msg": exc.one_line(), "type": "value_error"}]) from None
    document: dict[str, Any] = doc
    return document


@router.get(
    "/{job_id}/resolutions",
    response_model=dict[str, Any],
    responses={**ERRORS, **NOT_FOUND, **NOT_READY},
)
def read_resolutions(job_id: str, services: ServicesDep, _: Viewer) -> dict[str, Any]:
    """The job's stored resolutions document; 404 when it has none."""
    job = finished_job(services, job_id)
    document = resolutions.read(job)
    if document is None:
        raise HTTPException(404, f"job {job_id} has no resolutions document (PUT one)")
    return document


@router.put(
    "/{job_id}/resolutions",
    response_model=dict[str, Any],
    responses={**ERRORS, **NOT_FOUND, **NOT_READY, 422: {"description": "invalid document"}},
)
def store_resolutions(
    job_id: str, services: ServicesDep, _: Admin, doc: Annotated[dict[str, Any], Body()]
) -> dict[str, Any]:
    """Store how a merge execution of this job resolves its conflicts: `{"version": 1, "default":
    choice, "tables": {"db.t": choice}, "rows": [{"table", "key", "choice", "columns"}]}` with the
    choices keep_now, take_before, take_before_where_unchanged and column (docs/execution.md). The
    engine checks it; a bad document is a 422 naming the entry. Replaces the stored one; needs the
    admin role (it decides what a commit writes)."""
    job = finished_job(services, job_id)
    document = checked(doc)
    resolutions.store(job, document)
    return document
