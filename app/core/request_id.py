"""Every HTTP request gets an id, bound to structlog's contextvars while it is handled: each log line
written meanwhile (the access line, a job queued by it) carries `request_id`, and the response
carries it as `X-Request-ID`. A client's own id is taken when it is a short token, else one is made."""

from __future__ import annotations

import itertools
import re
import secrets

import structlog
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = "x-request-id"
_NAME = HEADER.encode()
_CLIENT_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
# 32 hex digits unique to this process and request: a random prefix and a counter (uuid4 asked the
# kernel for 16 random bytes on every request, a system call per answer on the event loop; an id
# that correlates log lines needs no secrecy)
_PREFIX = secrets.token_hex(8)
_counter = itertools.count(1)


class RequestId:
    """A pure ASGI middleware (not BaseHTTPMiddleware): the app runs in this task, so the bound id
    reaches everything the request logs, uvicorn's access line included."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = next((v for k, v in scope["headers"] if k == _NAME), b"").decode("latin-1")
        request_id = given if _CLIENT_ID.match(given) else f"{_PREFIX}{next(_counter):016x}"

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[HEADER] = request_id
            await send(message)

        with structlog.contextvars.bound_contextvars(request_id=request_id):
            await self.app(scope, receive, send_with_id)
