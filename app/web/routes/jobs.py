"""The jobs list and the new-job form, read into the API's request body (`job_request_from_form`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError
from sqlalchemy import select
from starlette.datastructures import UploadFile

from app.api.routes.jobs import job_out, submit_job
from app.api.routes.uploads import store_upload
from app.models import Job
from app.schemas import JobCreate, check_job_request
from app.services.jobs import create_job
from app.services.sources import asks_server_files, check_server_files, unlisted
from app.web.page import page_handler, read_form, render, services_of, signed_in
from rollback import RollbackError

router = APIRouter(include_in_schema=False)


@router.get("/jobs")
@page_handler
async def jobs_page(request: Request) -> Response:
    principal, sid = signed_in(request, "viewer")
    services = services_of(request)

    def load() -> list[Any]:
        with services.db.session() as session:
            rows = session.scalars(select(Job).order_by(Job.created_at.desc()).limit(100)).all()
        return [job_out(j) for j in rows]

    jobs = await run_in_threadpool(load)
    return render(request, "jobs.html", {"jobs": jobs}, 200, principal, sid)


FIELD_NAMES = {
    ("server",): "server",
    ("upload",): "files",
    ("range",): "range_kind",
    ("mode",): "mode",
}


def _field_of(loc: tuple[Any, ...]) -> str:
    parts = tuple(p for p in loc if p != "body")
    if parts in FIELD_NAMES:
        return FIELD_NAMES[parts]
    if len(parts) >= 2 and parts[0] in ("range", "filters", "options"):
        return str(parts[1])
    return str(parts[0]) if parts else "form"


def _split(text: str) -> list[str]:
    return [t.strip() for t in text.replace("\n", ",").split(",") if t.strip()]


def job_request_from_form(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The API body the form describes, and errors of fields that are not even numbers."""
    errors: dict[str, str] = {}
    kind = data.get("range_kind") or "position"
    rng: dict[str, Any] = {}
    if kind == "position":
        for name in ("start_file", "stop_file"):
            if data.get(name, "").strip():
                rng[name] = data[name].strip()
        for name in ("start_position", "stop_position"):
            value = data.get(name, "").strip()
            if value:
                if not value.isdigit():
                    errors[name] = "a byte position: digits only"
                else:
                    rng[name] = int(value)
        if "start_file" not in rng:
            errors["start_file"] = "the first binlog file, e.g. mysql-bin.000042"
    elif kind == "gtid":
        rng["gtid_set"] = data.get("gtid_set", "").strip()
        if not rng["gtid_set"]:
            errors["gtid_set"] = "give a GTID set (MySQL) or GTIDs/ranges (MariaDB 0-1-5..0-1-9)"
    else:
        zone = "+00:00" if data.get("time_zone") == "utc" else ""
        for name in ("start_datetime", "stop_datetime"):
            value = data.get(name, "").strip().replace("T", " ")
            if value:
                if len(value) == 16:
                    value += ":00"
                rng[name] = value + zone
        if not rng:
            errors["start_datetime"] = "give a start or a stop time (or both)"
    filters: dict[str, Any] = {
        "databases": _split(data.get("databases", "")),
        "tables": _split(data.get("tables", "")),
        "types": [t for t in data.get("types", []) if t],
    }
    thread = data.get("thread_id", "").strip()
    if thread:
        if not thread.isdigit():
            errors["thread_id"] = "a connection id: digits only"
        else:
            filters["thread_id"] = int(thread)
    _picks_from_form(data, filters, errors)
    upload = str(data.get("upload") or "").strip() or None
    body = {
        # uploaded files are read instead of the server, which then gives the tables' schemas
        "server": None if upload else data.get("server") or None,
        "upload": upload,
        "range": rng,
        "filters": filters,
        "mode": data.get("mode") or "flashback",
        "options": {
            "full_where": data.get("full_where") == "on",
            "allow_partial": data.get("allow_partial") == "on",
            "allow_empty": data.get("allow_empty") == "on",
            "trust_schema": data.get("trust_schema") == "on",
            "accept_lost_rows": data.get("accept_lost_rows") == "on",
            "net": data.get("net") == "on",
            "allow_partial_transactions": data.get("allow_partial_transactions") == "on",
            "ddl": data.get("ddl") or "refuse",
            "schema_server": (data.get("server") or None) if upload else None,
        },
    }
    return body, errors


def _picks_from_form(data: dict[str, Any], filters: dict[str, Any], errors: dict[str, str]) -> None:
    """The pick fields of the new-job form (_picks_form.html) into the API body's filters.picks."""
    picks: dict[str, Any] = {}
    for name in ("include_gtid", "exclude_gtid", "include_query", "exclude_query", "where"):
        value = str(data.get(name, "")).strip()
        if value:
            picks[name] = value
    for name in ("include_positions", "exclude_positions"):
        values = _split(str(data.get(name, "")))
        if values:
            picks[name] = values
    threads = _split(str(data.get("exclude_thread_ids", "")))
    if threads:
        if not all(t.isdigit() for t in threads):
            errors["exclude_thread_ids"] = "connection ids: digits, comma-separated"
        else:
            picks["exclude_thread_ids"] = [int(t) for t in threads]
    if picks:
        filters["picks"] = picks


@router.get("/jobs/new")
@page_handler
async def new_job_form(request: Request) -> Response:
    principal, sid = signed_in(request, "operator")
    context = {"form": {"range_kind": "position"}, "errors": {}, **_upload_limit(request)}
    return render(request, "job_new.html", context, 200, principal, sid)


def _upload_limit(request: Request) -> dict[str, Any]:
    return {"max_upload_mib": services_of(request).settings.max_upload_bytes / (1 << 20)}


async def _store_files(request: Request, data: dict[str, Any], who: str) -> str | None:
    """The form's binlog files stored as an upload (its id goes into the form: a re-shown form keeps
    it); the error to show at the files field if they are refused."""
    files = [f for f in data.pop("files", []) if isinstance(f, UploadFile) and f.filename]
    if not files:
        return None
    try:
        upload = await store_upload(services_of(request), files, who)
    except HTTPException as exc:
        return str(exc.detail)
    except RequestValidationError as exc:
        return str(exc.errors()[0]["msg"])
    data["upload"] = upload.id
    data["upload_files"] = [f["name"] for f in upload.files]
    return None


def _validated(body: dict[str, Any], errors: dict[str, str]) -> JobCreate | None:
    """The form's request as the API's model, or None with the reasons added to `errors`."""
    if errors:
        return None
    try:
        return JobCreate.model_validate(body)
    except ValidationError as exc:
        for item in exc.errors():
            errors.setdefault(_field_of(tuple(item["loc"])), item["msg"])
        return None


@router.post("/jobs/new")
@page_handler
async def new_job(request: Request) -> Response:
    principal, sid = signed_in(request, "operator")
    services = services_of(request)
    data = await read_form(request, sid)
    refused = await _store_files(request, data, principal.name)
    body, errors = job_request_from_form(data)
    if refused:
        errors = {"files": refused, **errors}
    req = _validated(body, errors)
    if req is not None and req.upload is not None:  # as POST /api/jobs: the range checked in the files
        try:
            job = await run_in_threadpool(submit_job, services, req, principal.name)
        except RequestValidationError as exc:
            for item in exc.errors():
                errors.setdefault(_field_of(tuple(item["loc"])), item["msg"])
        else:
            return RedirectResponse(f"/jobs/{job.id}", status_code=303)
    elif req is not None:
        problems = check_job_request(req, services.servers, None)
        requested = req.range.model_dump(exclude_none=True)
        server = services.servers.get(req.server) if req.server is not None else None
        if not problems and server is not None and asks_server_files(server, requested):
            try:
                problems = await services.server_calls.call(
                    server.name, check_server_files, server, requested
                )
            except RollbackError as exc:
                problems = unlisted(server.name, exc)
        for problem in problems:
            errors.setdefault(_field_of(tuple(problem["loc"])), services.scrub(problem["msg"]))
        if not errors:
            job = create_job(services.db, req, principal.name)
            services.runner.submit(job.id)
            return RedirectResponse(f"/jobs/{job.id}", status_code=303)
    context = {"form": data, "errors": errors, **_upload_limit(request)}
    return render(request, "job_new.html", context, 422, principal, sid)
