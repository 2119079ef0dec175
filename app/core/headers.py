"""Security headers on every response: CSP, framing, MIME sniffing, referrer, and caching.

A pure ASGI middleware, so that it covers routes, static files, the docs, and the error
responses Starlette makes itself (404, 405, 422).

The pages run no inline script (app/static/*.js only). /docs gets inline styles, which Swagger UI
sets on its elements; still no inline script.
Only the static assets may be cached: every other response shows data (jobs, scripts, changes).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)
DOCS_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'; object-src 'none'"
)
DOCS_PAGE = "/docs"
CACHEABLE = ("/static/", "/docs-assets/")


def _headers(csp: str, cache: bytes) -> tuple[tuple[bytes, bytes], ...]:
    return (
        (b"content-security-policy", csp.encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"x-frame-options", b"DENY"),
        (b"referrer-policy", b"no-referrer"),
        (b"cache-control", cache),
    )


# built once: every response takes one of these
_DATA = _headers(CSP, b"no-store")
_STATIC = _headers(CSP, b"no-cache")
_DOCS = _headers(DOCS_CSP, b"no-store")
NAMES = frozenset(name for name, _ in _DATA)


def headers_for(path: str) -> tuple[tuple[bytes, bytes], ...]:
    if path == DOCS_PAGE:
        return _DOCS
    return _STATIC if path.startswith(CACHEABLE) else _DATA


class SecurityHeaders:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = headers_for(scope["path"])

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in NAMES]
                message["headers"] = kept + list(extra)
            await send(message)

        await self.app(scope, receive, send_with_headers)
