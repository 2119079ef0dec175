"""Dependencies of the routes: the service container and the caller's identity and role."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request

from app.core.config import ServerConfig, Settings
from app.core.security import Principal, TokenStore
from app.db import Database
from app.metrics import Metrics
from app.services.executions import ExecutionRunner
from app.services.jobs import JobRunner, Scrubber

SESSION_COOKIE = "mysql_rollback_token"


@dataclass
class Services:
    settings: Settings
    servers: dict[str, ServerConfig]
    db: Database
    tokens: TokenStore
    runner: JobRunner
    metrics: Metrics
    scrub: Scrubber
    executions: ExecutionRunner


def get_services(request: Request) -> Services:
    return request.app.state.services


ServicesDep = Annotated[Services, Depends(get_services)]


def token_of(request: Request, allow_cookie: bool) -> str | None:
    header = request.headers.get("authorization")
    if header:
        scheme, _, value = header.partition(" ")
        return value.strip() if scheme.lower() == "bearer" and value.strip() else None
    if allow_cookie:
        return request.cookies.get(SESSION_COOKIE)
    return None


def require(role: str) -> Callable[[Request], Principal]:
    """A dependency: the caller's Principal with at least `role`, else 401 or 403 with a JSON body.

    The web form's session cookie is accepted for reads only (GET/HEAD): every change through the
    API needs the Authorization header, so that no other site can make a browser send one.
    """

    def dependency(request: Request) -> Principal:
        services: Services = request.app.state.services
        token = token_of(request, allow_cookie=request.method in ("GET", "HEAD"))
        principal = services.tokens.lookup(token)
        if principal is None:
            raise HTTPException(
                401,
                "missing or invalid API token: send Authorization: Bearer <token>",
                headers={"WWW-Authenticate": "Bearer"},
            )
        if not principal.has(role):
            raise HTTPException(
                403, f"this needs the {role} role; the token {principal.name!r} has {principal.role}"
            )
        return principal

    dependency.__name__ = f"require_{role}"
    return dependency


Viewer = Annotated[Principal, Depends(require("viewer"))]
Operator = Annotated[Principal, Depends(require("operator"))]
Admin = Annotated[Principal, Depends(require("admin"))]
