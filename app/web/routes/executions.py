"""Dry runs, the conflict check and its confirmation panel, the commit and cancelling an execution."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response

from app.api.deps import Services
from app.api.routes.executions import already_applied, execution_out, submit_execution
from app.api.routes.jobs import job_out
from app.core.security import Principal
from app.models import Execution, Job
from app.services import resolutions
from app.services.executions import ExecutionOptions
from app.web import resolution_form
from app.web.page import Stop, page_handler, read_form, render, services_of, signed_in

router = APIRouter(include_in_schema=False)


@dataclass
class _ExecutionForm:
    principal: Principal
    sid: str
    data: dict[str, Any]
    job: Job
    target: Any


async def _execution_form(request: Request, job_id: str, role: str) -> _ExecutionForm:
    """The signed-in user with `role`, the form (anti-forgery checked), the job and the chosen target."""
    principal, sid = signed_in(request, role)
    data = await read_form(request, sid)
    job, target = _executable(request, job_id, str(data.get("target", "")), principal, sid)
    return _ExecutionForm(principal, sid, data, job, target)


def _executable(
    request: Request, job_id: str, target_name: str, principal: Principal, sid: str
) -> tuple[Job, Any]:
    services = services_of(request)
    with services.db.session() as session:
        job = session.get(Job, job_id)
    # (the plan itself is produced when the execution first needs it: app/services/outputs.py)
    if job is None or job.state != "succeeded" or job.mode != "flashback":
        raise Stop(
            render(
                request, "error.html", {"message": "This job has no plan to execute."}, 409, principal, sid
            )
        )
    target = services.servers.get(target_name)
    if target is None:
        raise Stop(
            render(
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
    services = services_of(request)
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
        return render(request, "error.html", {"message": str(exc.detail)}, exc.status_code, principal)
    return RedirectResponse(f"/jobs/{job.id}#executions", status_code=303)


@router.post("/jobs/{job_id}/executions/{execution_id}/cancel")
@page_handler
async def cancel_execution(request: Request, job_id: str, execution_id: int) -> Response:
    principal, sid = signed_in(request, "operator")
    await read_form(request, sid)
    services = services_of(request)
    with services.db.session() as session:
        record = session.get(Execution, execution_id) if 0 < execution_id < 2**31 else None
    if record is not None and record.job_id == job_id and (record.dry_run or principal.has("admin")):
        services.executions.cancel(execution_id)
    return RedirectResponse(f"/jobs/{job_id}#executions", status_code=303)


@router.post("/jobs/{job_id}/dry-run")
@page_handler
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
@page_handler
async def execute_check(request: Request, job_id: str) -> Response:
    """Queue the conflict check a commit needs first; its page follows it live."""
    form = await _execution_form(request, job_id, "admin")
    record = await run_in_threadpool(
        submit_execution,
        services_of(request),
        form.job,
        form.target,
        dry_run=True,
        on_conflict="skip",
        who=form.principal.name,
        options=_options(form.data, form.job, resolved=False),
        check=True,
    )
    return RedirectResponse(f"/jobs/{job_id}/execute/{record.id}", status_code=303)


def check_context(services: Services, job_id: str, check_id: int) -> dict[str, Any] | None:
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
@page_handler
async def execute_panel(request: Request, job_id: str, check_id: int) -> Response:
    """What a commit will run, at which target, what it sets off, and the conflict check's rows."""
    principal, sid = signed_in(request, "admin")
    context = await run_in_threadpool(check_context, services_of(request), job_id, check_id)
    if context is None:
        return render(
            request, "error.html", {"message": "There is no such conflict check."}, 404, principal, sid
        )
    return render(request, "execute_confirm.html", context, 200, principal, sid)


@router.post("/jobs/{job_id}/execute")
@page_handler
async def execute(request: Request, job_id: str) -> Response:
    form = await _execution_form(request, job_id, "admin")
    job, target, principal, sid, data = form.job, form.target, form.principal, form.sid, form.data
    if data.get("confirm") != "yes":
        return RedirectResponse(f"/jobs/{job_id}", status_code=303)
    if str(data.get("confirm_target", "")).strip() != target.name:
        return render(
            request,
            "error.html",
            {"message": f"Type the target's name ({target.name}) to confirm the commit; nothing was run."},
            422,
            principal,
            sid,
        )
    reapply = data.get("reapply") == "yes"
    if not reapply and (reason := already_applied(job)):
        return render(
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
