"""The DBA web form: server-rendered pages over the same services as the API.

Sign-in opens a server-side session (app.core.sessions): the HttpOnly, SameSite=Strict cookie
carries its signed random id, never the API token. Every form that changes something carries an
anti-forgery value derived from that id, and the API accepts the cookie for reads only. Sign-out
revokes the session.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from pydantic import ValidationError
from sqlalchemy import select
from starlette.datastructures import UploadFile

from app.api.deps import SESSION_COOKIE, Services, authenticate, check_throttle, client_address
from app.api.routes.executions import already_applied, execution_out, submit_execution
from app.api.routes.jobs import job_out, submit_job
from app.api.routes.uploads import store_upload
from app.core.security import Principal, csrf_token
from app.models import Execution, Job
from app.schemas import JobCreate, check_job_request
from app.services import artifacts, change_pages, job_progress, picks, resolutions
from app.services.change_pages import ChangeFilter
from app.services.executions import ExecutionOptions
from app.services.jobs import create_job
from app.services.sources import asks_server_files, check_server_files, unlisted
from app.web import resolution_form
from app.web.conflict_words import conflict_words
from app.web.visible import visible
from rollback import RollbackError, SideEffects

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(Path(__file__).resolve().parent.parent / "templates"))
templates.env.filters["side_effect_warnings"] = lambda found: SideEffects(**found).warnings()
templates.env.filters["conflict_words"] = conflict_words
templates.env.filters["resolution_name"] = resolution_form.resolution_name
templates.env.filters["by_resolution"] = resolution_form.by_resolution
templates.env.finalize = visible
PREVIEW_LINES = 200
LIST_FIELDS = ("types", "accept_non_transactional", "tx", "files")


class _Stop(Exception):
    def __init__(self, response: Response):
        self.response = response


def _services(request: Request) -> Services:
    return request.app.state.services


def _principal(request: Request, role: str) -> tuple[Principal, str]:
    found = authenticate(request, allow_session=True)
    if found is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise _Stop(RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303))
    principal, sid = found[0], found[1] or ""
    if not principal.has(role):
        raise _Stop(
            _render(
                request,
                "error.html",
                {
                    "message": f"This needs the {role} role; you are signed in as {principal.name} ({principal.role})."
                },
                403,
                principal,
                sid,
            )
        )
    return principal, sid


async def _form(request: Request, sid: str) -> dict[str, Any]:
    form = await request.form()
    data: dict[str, Any] = {}
    for key in form:
        values = form.getlist(key)
        data[key] = values if len(values) > 1 or key in LIST_FIELDS else values[0]
    if not sid or data.get("csrf") != csrf_token(sid):
        raise _Stop(HTMLResponse("<p>The form expired; reload the page and try again.</p>", status_code=403))
    return data


def _render(
    request: Request,
    template: str,
    context: dict[str, Any],
    status: int = 200,
    principal: Principal | None = None,
    sid: str = "",
) -> HTMLResponse:
    services = _services(request)
    base = {
        "user": principal,
        "csrf": csrf_token(sid) if sid else "",
        "servers": sorted(services.servers.values(), key=lambda s: s.name),
    }
    return templates.TemplateResponse(request, template, {**base, **context}, status_code=status)


def _page(handler: Any) -> Any:
    """Turn a _Stop raised inside a page handler into its response."""
    import functools

    @functools.wraps(handler)
    async def wrapper(*args: Any, **kwargs: Any) -> Response:
        try:
            return await handler(*args, **kwargs)
        except _Stop as stop:
            return stop.response

    return wrapper


# ---- sign in -------------------------------------------------------------------------------------------


@router.get("/")
async def index() -> Response:
    return RedirectResponse("/jobs", status_code=303)


@router.get("/login")
async def login_form(request: Request, next: str = "/jobs") -> Response:
    return _render(request, "login.html", {"next": next, "error": None})


@router.post("/login")
async def login(request: Request) -> Response:
    form = await request.form()
    token = str(form.get("token") or "").strip()
    target = str(form.get("next") or "/jobs")
    if not target.startswith("/") or target.startswith("//"):
        target = "/jobs"
    services = _services(request)
    check_throttle(request)
    principal = services.tokens.lookup(token)
    if principal is None:
        services.throttle.failed(client_address(request))
        return _render(request, "login.html", {"next": target, "error": "This token is not valid."}, 401)
    cookie = await run_in_threadpool(services.sessions.open, token)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        cookie,
        httponly=True,
        samesite="strict",
        secure=services.settings.https or request.url.scheme == "https",
        max_age=services.sessions.max_age,
    )
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    await run_in_threadpool(_services(request).sessions.revoke, request.cookies.get(SESSION_COOKIE))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE)
    return response


# ---- jobs ----------------------------------------------------------------------------------------------


@router.get("/jobs")
@_page
async def jobs_page(request: Request) -> Response:
    principal, sid = _principal(request, "viewer")
    services = _services(request)

    def load() -> list[Any]:
        with services.db.session() as session:
            rows = session.scalars(select(Job).order_by(Job.created_at.desc()).limit(100)).all()
        return [job_out(j) for j in rows]

    jobs = await run_in_threadpool(load)
    return _render(request, "jobs.html", {"jobs": jobs}, 200, principal, sid)


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


# ---- precise selection: the form's pick fields, and re-generating a job with ticked transactions ----


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
@_page
async def regenerate_with_picks(request: Request, job_id: str) -> Response:
    """Tick boxes of the job page (_picks_preview.html): a new job with only the ticked transactions."""
    principal, sid = _principal(request, "operator")
    data = await _form(request, sid)
    ticked = [t for t in data.get("tx", []) if t]
    if not ticked:
        message = "Tick at least one transaction to re-generate."
        return _render(request, "error.html", {"message": message}, 422, principal, sid)
    try:
        new_id = await run_in_threadpool(_regenerate, _services(request), job_id, ticked, principal.name)
    except RollbackError as exc:
        return _render(request, "error.html", {"message": exc.one_line()}, 422, principal, sid)
    return RedirectResponse(f"/jobs/{new_id}#preview", status_code=303)


@router.get("/jobs/new")
@_page
async def new_job_form(request: Request) -> Response:
    principal, sid = _principal(request, "operator")
    context = {"form": {"range_kind": "position"}, "errors": {}, **_upload_limit(request)}
    return _render(request, "job_new.html", context, 200, principal, sid)


def _upload_limit(request: Request) -> dict[str, Any]:
    return {"max_upload_mib": _services(request).settings.max_upload_bytes / (1 << 20)}


async def _store_files(request: Request, data: dict[str, Any], who: str) -> str | None:
    """The form's binlog files stored as an upload (its id goes into the form: a re-shown form keeps
    it); the error to show at the files field if they are refused."""
    files = [f for f in data.pop("files", []) if isinstance(f, UploadFile) and f.filename]
    if not files:
        return None
    try:
        upload = await store_upload(_services(request), files, who)
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
@_page
async def new_job(request: Request) -> Response:
    principal, sid = _principal(request, "operator")
    services = _services(request)
    data = await _form(request, sid)
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
    return _render(request, "job_new.html", context, 422, principal, sid)


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
@_page
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
    principal, sid = _principal(request, "viewer")
    flt = _filter(table, type, gtid, q)
    page, cpage = max(1, min(page, 2**31)), max(1, min(cpage, 2**31))
    context = await run_in_threadpool(_job_context, _services(request), job_id, page, flt, cpage)
    if context is None:
        return _render(request, "error.html", {"message": f"There is no job {job_id}."}, 404, principal, sid)
    return _render(request, "job.html", context, 200, principal, sid)


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
@_page
async def row_history_page(request: Request, job_id: str, table: str = "", key: str = "") -> Response:
    """Every version of one row (table and key) across the job's range, oldest to newest."""
    principal, sid = _principal(request, "viewer")
    try:
        wanted = json.loads(key)
    except ValueError:
        wanted = None
    if not isinstance(wanted, dict) or not wanted or "." not in table:
        message = 'Give a table (db.table) and a key as a JSON object, e.g. {"id": 5}.'
        return _render(request, "error.html", {"message": message}, 422, principal, sid)
    context = await run_in_threadpool(_history_context, _services(request), job_id, table, wanted)
    if context is None:
        return _render(
            request, "error.html", {"message": f"Job {job_id} has no change log."}, 404, principal, sid
        )
    return _render(request, "row_history.html", context, 200, principal, sid)


@router.post("/jobs/{job_id}/cancel")
@_page
async def cancel_job(request: Request, job_id: str) -> Response:
    principal, sid = _principal(request, "operator")
    await _form(request, sid)
    _services(request).runner.cancel(job_id)
    return RedirectResponse(f"/jobs/{job_id}", status_code=303)


@dataclass
class _ExecutionForm:
    principal: Principal
    sid: str
    data: dict[str, Any]
    job: Job
    target: Any


async def _execution_form(request: Request, job_id: str, role: str) -> _ExecutionForm:
    """The signed-in user with `role`, the form (anti-forgery checked), the job and the chosen target."""
    principal, sid = _principal(request, role)
    data = await _form(request, sid)
    job, target = _executable(request, job_id, str(data.get("target", "")), principal, sid)
    return _ExecutionForm(principal, sid, data, job, target)


def _executable(
    request: Request, job_id: str, target_name: str, principal: Principal, sid: str
) -> tuple[Job, Any]:
    services = _services(request)
    with services.db.session() as session:
        job = session.get(Job, job_id)
    # (the plan itself is produced when the execution first needs it: app/services/outputs.py)
    if job is None or job.state != "succeeded" or job.mode != "flashback":
        raise _Stop(
            _render(
                request, "error.html", {"message": "This job has no plan to execute."}, 409, principal, sid
            )
        )
    target = services.servers.get(target_name)
    if target is None:
        raise _Stop(
            _render(
                request, "error.html", {"message": "Pick a configured target server."}, 422, principal, sid
            )
        )
    return job, target


def _options(data: dict[str, Any], job: Job, resolved: bool = True) -> ExecutionOptions:
    """The acceptances the form's checkboxes carry (the web form always commits all or nothing). A
    merge (a job with a net plan) applies the job's stored resolutions document, unless `resolved` is
    False (the conflict check: it lists every conflict, for the three-way view to resolve)."""
    merge = data.get("merge") == "on" and bool((job.options or {}).get("net"))
    return ExecutionOptions(
        accept_triggers=data.get("accept_triggers") == "on",
        accept_cascades=data.get("accept_cascades") == "on",
        accept_non_transactional=[str(t) for t in data.get("accept_non_transactional", []) if t],
        merge=merge,
        resolutions=resolutions.read(job) if merge and resolved else None,
    )


async def _run_execution(
    request: Request,
    job: Job,
    target: Any,
    principal: Principal,
    options: ExecutionOptions,
    *,
    dry_run: bool,
    on_conflict: str,
    reapply: bool = False,
) -> Response:
    """Queue a (dry) run of a job's plan on a target, as the API does; the job page follows it live."""
    services = _services(request)
    try:
        await run_in_threadpool(
            submit_execution,
            services,
            job,
            target,
            dry_run=dry_run,
            on_conflict=on_conflict,
            who=principal.name,
            options=options,
            reapply=reapply,
        )
    except HTTPException as exc:  # another commit of this job is queued or running
        return _render(request, "error.html", {"message": str(exc.detail)}, exc.status_code, principal)
    return RedirectResponse(f"/jobs/{job.id}#executions", status_code=303)


@router.post("/jobs/{job_id}/executions/{execution_id}/cancel")
@_page
async def cancel_execution(request: Request, job_id: str, execution_id: int) -> Response:
    principal, sid = _principal(request, "operator")
    await _form(request, sid)
    services = _services(request)
    with services.db.session() as session:
        record = session.get(Execution, execution_id) if 0 < execution_id < 2**31 else None
    if record is not None and record.job_id == job_id and (record.dry_run or principal.has("admin")):
        services.executions.cancel(execution_id)
    return RedirectResponse(f"/jobs/{job_id}#executions", status_code=303)


@router.post("/jobs/{job_id}/dry-run")
@_page
async def dry_run(request: Request, job_id: str) -> Response:
    form = await _execution_form(request, job_id, "operator")
    return await _run_execution(
        request,
        form.job,
        form.target,
        form.principal,
        _options(form.data, form.job),
        dry_run=True,
        on_conflict="abort",
    )


@router.post("/jobs/{job_id}/execute/check")
@_page
async def execute_check(request: Request, job_id: str) -> Response:
    """Queue the conflict check a commit needs first; its page follows it live."""
    form = await _execution_form(request, job_id, "admin")
    record = await run_in_threadpool(
        submit_execution,
        _services(request),
        form.job,
        form.target,
        dry_run=True,
        on_conflict="skip",
        who=form.principal.name,
        options=_options(form.data, form.job, resolved=False),
        check=True,
    )
    return RedirectResponse(f"/jobs/{job_id}/execute/{record.id}", status_code=303)


def _check_context(services: Services, job_id: str, check_id: int) -> dict[str, Any] | None:
    with services.db.session() as session:
        job = session.get(Job, job_id)
        record = session.get(Execution, check_id) if 0 < check_id < 2**31 else None
        if (
            job is None
            or record is None
            or record.job_id != job_id
            or not (record.details or {}).get("check")
        ):
            return None
    check = execution_out(record)
    stored = resolutions.read(job) if check.merge and job.script_path else None
    return {
        "resolution_rows": resolution_form.view_rows(check.conflicts, stored) if check.merge else [],
        "resolution_tables": resolution_form.tables(check.conflicts),
        "resolutions": stored or {},
        "choices": resolution_form.CHOICES,
        "row_choices": resolution_form.ROW_CHOICES,
        "column_choices": resolution_form.COLUMN_CHOICES,
        "job": job_out(job),
        "target": record.target,
        "check": check,
        "final": check.state not in ("queued", "running"),
        "accept_triggers": check.accepted.get("triggers", False),
        "largest_statement": (job.summary or {}).get("largest_statement"),
        "conflict_view": check.conflict_view if isinstance(check.conflict_view, list) else [],
        "conflict_view_error": check.conflict_view.get("error")
        if isinstance(check.conflict_view, dict)
        else None,
    }


@router.get("/jobs/{job_id}/execute/{check_id}")
@_page
async def execute_panel(request: Request, job_id: str, check_id: int) -> Response:
    """What a commit will run, at which target, what it sets off, and the conflict check's rows."""
    principal, sid = _principal(request, "admin")
    context = await run_in_threadpool(_check_context, _services(request), job_id, check_id)
    if context is None:
        return _render(
            request, "error.html", {"message": "There is no such conflict check."}, 404, principal, sid
        )
    return _render(request, "execute_confirm.html", context, 200, principal, sid)


@router.post("/jobs/{job_id}/execute/{check_id}/resolutions")
@_page
async def save_resolutions(request: Request, job_id: str, check_id: int) -> Response:
    """The three-way view's choices stored as the job's resolutions document (the same document as
    PUT /api/jobs/{id}/resolutions); the panel shows them, and "Execute with merge" applies them."""
    principal, sid = _principal(request, "admin")
    data = await _form(request, sid)
    services = _services(request)
    context = await run_in_threadpool(_check_context, services, job_id, check_id)
    if context is None or not context["check"].merge:
        return _render(
            request, "error.html", {"message": "There is no such merge conflict check."}, 404, principal, sid
        )
    with services.db.session() as session:
        job = session.get(Job, job_id)
    assert job is not None
    document = resolution_form.document_from_form(data, context["check"].conflicts)
    try:
        await run_in_threadpool(resolutions.store, job, document)
    except RollbackError as exc:
        return _render(request, "error.html", {"message": exc.one_line()}, 422, principal, sid)
    return RedirectResponse(f"/jobs/{job_id}/execute/{check_id}#resolutions-saved", status_code=303)


@router.post("/jobs/{job_id}/execute")
@_page
async def execute(request: Request, job_id: str) -> Response:
    form = await _execution_form(request, job_id, "admin")
    job, target, principal, sid, data = form.job, form.target, form.principal, form.sid, form.data
    if data.get("confirm") != "yes":
        return RedirectResponse(f"/jobs/{job_id}", status_code=303)
    if str(data.get("confirm_target", "")).strip() != target.name:
        return _render(
            request,
            "error.html",
            {"message": f"Type the target's name ({target.name}) to confirm the commit; nothing was run."},
            422,
            principal,
            sid,
        )
    reapply = data.get("reapply") == "yes"
    if not reapply and (reason := already_applied(job)):
        return _render(
            request,
            "error.html",
            {"message": reason.replace("send reapply: true", "tick “apply again”")},
            409,
            principal,
            sid,
        )
    on_conflict = "skip" if data.get("on_conflict") == "skip" else "abort"
    return await _run_execution(
        request,
        job,
        target,
        principal,
        _options(data, job),
        dry_run=False,
        on_conflict=on_conflict,
        reapply=reapply,
    )
