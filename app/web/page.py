"""What every web page shares: the templates, the signed-in user and role, the form's anti-forgery
check, and `Stop`, the response a helper gives up with (turned into the page's answer by `page`)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from app.api.deps import Services, authenticate
from app.core.security import Principal, csrf_token
from app.web import resolution_form
from app.web.conflict_words import conflict_words
from app.web.visible import visible
from rollback import SideEffects

templates = Jinja2Templates(directory=str(Path(__file__).resolve().parent.parent / "templates"))
templates.env.filters["side_effect_warnings"] = lambda found: SideEffects(**found).warnings()
templates.env.filters["conflict_words"] = conflict_words
templates.env.filters["resolution_name"] = resolution_form.resolution_name
templates.env.filters["by_resolution"] = resolution_form.by_resolution
templates.env.finalize = visible
LIST_FIELDS = ("types", "accept_non_transactional", "tx", "files")


class Stop(Exception):
    def __init__(self, response: Response):
        self.response = response


def services_of(request: Request) -> Services:
    return request.app.state.services


def signed_in(request: Request, role: str) -> tuple[Principal, str]:
    found = authenticate(request, allow_session=True)
    if found is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise Stop(RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303))
    principal, sid = found[0], found[1] or ""
    if not principal.has(role):
        raise Stop(
            render(
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


async def read_form(request: Request, sid: str) -> dict[str, Any]:
    form = await request.form()
    data: dict[str, Any] = {}
    for key in form:
        values = form.getlist(key)
        data[key] = values if len(values) > 1 or key in LIST_FIELDS else values[0]
    if not sid or data.get("csrf") != csrf_token(sid):
        raise Stop(HTMLResponse("<p>The form expired; reload the page and try again.</p>", status_code=403))
    return data


def render(
    request: Request,
    template: str,
    context: dict[str, Any],
    status: int = 200,
    principal: Principal | None = None,
    sid: str = "",
) -> HTMLResponse:
    services = services_of(request)
    base = {
        "user": principal,
        "csrf": csrf_token(sid) if sid else "",
        "servers": sorted(services.servers.values(), key=lambda s: s.name),
    }
    return templates.TemplateResponse(request, template, {**base, **context}, status_code=status)


def page_handler(handler: Any) -> Any:
    """Turn a Stop raised inside a page handler into its response."""

    @functools.wraps(handler)
    async def wrapper(*args: Any, **kwargs: Any) -> Response:
        try:
            return await handler(*args, **kwargs)
        except Stop as stop:
            return stop.response

    return wrapper
