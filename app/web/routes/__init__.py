"""The DBA web form: server-rendered pages over the same services as the API, one module per page
family, and `router`, the one place they are registered (app/main.py includes it).

Sign-in opens a server-side session (app.core.sessions): the HttpOnly, SameSite=Strict cookie
carries its signed random id, never the API token. Every form that changes something carries an
anti-forgery value derived from that id, and the API accepts the cookie for reads only. Sign-out
revokes the session.

A page module may import app.web's helpers (page.py: templates, sign-in, the form's check), the
API's handlers it shares work with (app.api.routes, app.api.deps), app.services, app.models,
app.schemas and the engine's door (`from rollback import ...`); nothing imports a page module but
this one (resolutions.py reads the conflict check's context from executions.py).
"""

from __future__ import annotations

from fastapi import APIRouter

from app.web.routes import executions, job_page, jobs, picks, resolutions, row_history, sign_in

router = APIRouter(include_in_schema=False)
# Starlette matches in this order: /jobs/new (jobs) before /jobs/{job_id} (job_page).
for family in (sign_in, jobs, picks, job_page, row_history, executions, resolutions):
    router.include_router(family.router)
