"""POST /api/uploads, and the web form's new job (which may carry binlog files): who sends it, how
much it declares and how many the client has running are checked before a byte of its body is read,
and its size is counted as the bytes arrive.

FastAPI reads (and spools to disk) a multipart body before it solves the route's dependencies,
the token check included: without this gate anyone who reaches the port could fill the disk.
An upload that crosses MYSQL_ROLLBACK_MAX_UPLOAD_BYTES is cut there with 413: the application's
own answer is dropped and the route, which never ran, left nothing behind.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import jinja2
from fastapi import HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.deps import Services, authenticate, client_address

PATH = "/api/uploads"
WEB_PATH = "/jobs/new"  # the form signs in by its session cookie; its anti-forgery value is in the body
# The multipart framing around the files (boundaries, part headers) is allowed on top of the limit.
FRAMING_BYTES = 1 << 20


# The form's refusals are the web's own error page, rendered here: the gate answers before any route runs.
_PAGES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).resolve().parent.parent / "templates"), autoescape=True
)


class _TooLarge(Exception):
    pass


async def _answer(
    send: Send, status: int, detail: str, headers: Mapping[str, str] | None = None, web: bool = False
) -> None:
    if web:
        body = _PAGES.get_template("error.html").render(message=detail, user=None, upload=True).encode()
        kind = b"text/html; charset=utf-8"
    else:
        body = json.dumps({"detail": detail}).encode()
        kind = b"application/json"
    raw = [(b"content-type", kind), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    # The rest of the body is not read: the connection closes after this answer.
    raw.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class UploadGate:
    def __init__(self, app: ASGIApp):
        self.app = app
        self._running: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"].rstrip("/") if scope["type"] == "http" else ""
        if scope["type"] != "http" or scope["method"] != "POST" or path not in (PATH, WEB_PATH):
            await self.app(scope, receive, send)
            return
        web = path == WEB_PATH
        services: Services | None = getattr(getattr(scope.get("app"), "state", None), "services", None)
        if services is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        try:
            if web:  # a session is looked up in the job database: not on the event loop
                await run_in_threadpool(self._admit, request, services, True)
            else:
                self._admit(request, services, False)
        except HTTPException as exc:
            if web and exc.status_code == 401:
                exc = HTTPException(303, "sign in first", headers={"Location": "/login?next=%2Fjobs%2Fnew"})
            await _answer(send, exc.status_code, str(exc.detail), exc.headers, web)
            return
        client = client_address(request)
        self._running[client] += 1
        try:
            await self._counted(scope, receive, send, services.settings.max_upload_bytes, web)
        finally:
            self._running[client] -= 1
            if not self._running[client]:
                del self._running[client]

    def _admit(self, request: Request, services: Services, allow_session: bool) -> None:
        """401/403/429 for who sends it, 411/413 for what it declares: all before the body."""
        found = authenticate(request, allow_session=allow_session)
        if found is None:
            raise HTTPException(
                401,
                "missing or invalid API token: send Authorization: Bearer <token>",
                headers={"WWW-Authenticate": "Bearer"},
            )
        principal = found[0]
        if not principal.has("operator"):
            who = (
                f"you are signed in as {principal.name} ({principal.role})"
                if allow_session
                else f"the token {principal.name!r} has {principal.role}"
            )
            raise HTTPException(403, f"this needs the operator role; {who}")
        limit = services.settings.max_upload_bytes
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit + FRAMING_BYTES):
            raise HTTPException(413, f"the upload is larger than the limit of {limit} bytes")
        running = self._running[client_address(request)]
        if running >= services.settings.uploads_per_client:
            raise HTTPException(
                429,
                f"this address already sends {running} upload(s); wait for them to finish",
                headers={"Retry-After": "5"},
            )

    async def _counted(self, scope: Scope, receive: Receive, send: Send, limit: int, web: bool) -> None:
        received = 0
        over = False
        started = False

        async def counting_receive() -> Message:
            nonlocal received, over
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit + FRAMING_BYTES:
                    over = True
                    raise _TooLarge()
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if not over:
                started = True
                await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except _TooLarge:
            pass
        if over and not started:
            await _answer(send, 413, f"the upload is larger than the limit of {limit} bytes", web=web)
