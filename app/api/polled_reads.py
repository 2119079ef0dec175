"""GET /api/jobs (without a query) and GET /api/jobs/{id} with a bearer token, answered before
FastAPI's routing and dependency solving: what those cost is most of what a cached answer costs,
and pollers send these two requests more than all others together.

It answers only what it can answer exactly as the routes would (the same bytes, from the same
cache: routes/jobs.py); everything else goes on into the application unchanged, which then
answers it, errors included: another path, a query string, no bearer token (a browser session), a
throttled address, a token that does not check out or is not allowed to read, a job that does not
exist, anything that fails here.
"""

from __future__ import annotations

import logging
import re

from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.deps import Services
from app.api.routes.jobs import job_answer, list_answer

log = logging.getLogger("mysql_rollback")

PREFIX = "/api/jobs/"
_JOB_ID = re.compile(r"[0-9a-f]{32}")


class PolledReads:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and not scope.get("query_string"):
            body = await self._answer(scope)
            if body is not None:
                await send(
                    {
                        "type": "http.response.start",
                        "status": 200,
                        "headers": [
                            (b"content-length", str(len(body)).encode("ascii")),
                            (b"content-type", b"application/json"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)

    async def _answer(self, scope: Scope) -> bytes | None:
        path = scope["path"]
        job_id = path[len(PREFIX) :] if path.startswith(PREFIX) else None
        if path != "/api/jobs" and (job_id is None or not _JOB_ID.fullmatch(job_id)):
            return None
        app = scope.get("app")
        services: Services | None = getattr(getattr(app, "state", None), "services", None)
        if services is None:
            return None
        token = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, _, rest = value.decode("latin-1").partition(" ")
                token = rest.strip() if scheme.lower() == "bearer" else None
                break
        if not token:
            return None
        client = scope.get("client")
        if services.throttle.retry_after(client[0] if client else "unknown") is not None:
            return None
        principal = services.tokens.lookup(token)
        if principal is None or not principal.has("viewer"):
            return None
        try:
            if job_id is None:
                return await list_answer(services, None, 50, 0)
            return await job_answer(services, job_id)
        except Exception:  # noqa: BLE001 - the application answers it, and reports what failed
            log.debug("the polled-read fast path passed %s on after an error", path, exc_info=True)
            return None
