"""405 answers list every method of the path in `Allow`.

Starlette answers 405 from the first route whose path matches, so a path served by several
routes (GET and POST /api/jobs are two) would list only that route's method.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from fastapi import Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute


def _routes(routes: Iterable[BaseRoute]) -> Iterator[Any]:
    for route in routes:
        included = getattr(route, "original_router", None)  # FastAPI's lazily included router
        if included is not None:
            yield from _routes(included.routes)
        else:
            yield route


def allowed_methods(routes: Iterable[BaseRoute], path: str) -> set[str]:
    methods: set[str] = set()
    for route in _routes(routes):
        regex = getattr(route, "path_regex", None)
        if regex is not None and getattr(route, "methods", None) and regex.match(path):
            methods |= set(route.methods)
    return methods


async def http_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code != 405:
        return await http_exception_handler(request, exc)
    allow = allowed_methods(request.app.routes, request.url.path)
    headers = {**(exc.headers or {}), "Allow": ", ".join(sorted(allow))}
    return JSONResponse({"detail": exc.detail}, status_code=405, headers=headers)
