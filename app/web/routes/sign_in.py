"""Sign-in and sign-out: the session cookie opened from a token (app.core.sessions) and revoked."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response

from app.api.deps import SESSION_COOKIE, check_throttle, client_address
from app.web.page import render, services_of

router = APIRouter(include_in_schema=False)


@router.get("/")
async def index() -> Response:
    return RedirectResponse("/jobs", status_code=303)


@router.get("/login")
async def login_form(request: Request, next: str = "/jobs") -> Response:
    return render(request, "login.html", {"next": next, "error": None})


@router.post("/login")
async def login(request: Request) -> Response:
    form = await request.form()
    token = str(form.get("token") or "").strip()
    target = str(form.get("next") or "/jobs")
    if not target.startswith("/") or target.startswith("//"):
        target = "/jobs"
    services = services_of(request)
    check_throttle(request)
    principal = services.tokens.lookup(token)
    if principal is None:
        services.throttle.failed(client_address(request))
        return render(request, "login.html", {"next": target, "error": "This token is not valid."}, 401)
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
    await run_in_threadpool(services_of(request).sessions.revoke, request.cookies.get(SESSION_COOKIE))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE)
    return response
