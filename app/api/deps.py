"""Dependencies of the routes: the service container and the caller's identity and role."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.concurrency import run_in_threadpool

from app.core.config import ServerConfig, Settings
from app.core.security import Principal, TokenStore
from app.core.sessions import SessionStore
from app.core.throttle import AuthThrottle
from app.db import Database
from app.metrics import Metrics
from app.services.answers import Answers
from app.services.executions import ExecutionRunner
from app.services.jobs import JobRunner, Scrubber
from app.services.outputs import Outputs
from app.services.server_calls import ServerCalls
from app.services.spark_warm import SparkWarmer

SESSION_COOKIE = "mysql_rollback_session"


@dataclass
class Services:
    settings: Settings
    servers: dict[str, ServerConfig]
    db: Database
    tokens: TokenStore
    runner: JobRunner
    metrics: Metrics
    scrub: Scrubber
    sessions: SessionStore
    throttle: AuthThrottle
    executions: ExecutionRunner
    outputs: Outputs
    spark: SparkWarmer
    answers: Answers
    server_calls: ServerCalls


async def get_services(request: Request) -> Services:  # async: no worker-thread hop per request
    return request.app.state.services


ServicesDep = Annotated[Services, Depends(get_services)]


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def bearer_token(request: Request) -> str | None:
    """The Authorization header's bearer token; "" for a header that is not a bearer token."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def check_throttle(request: Request) -> None:
    services: Services = request.app.state.services
    wait = services.throttle.retry_after(client_address(request))
    if wait is not None:
        raise HTTPException(
            429,
            f"too many failed authentications from this address; try again in {wait} s",
            headers={"Retry-After": str(wait)},
        )


def authenticate(request: Request, allow_session: bool) -> tuple[Principal, str | None] | None:
    """Who sends the request: by its bearer token, else (when allowed) by its browser session.

    Returns the principal and the session id (None for a token); a wrong token counts as a failure
    for the throttle of the client's address, and a throttled address gets 429 before anything.
    """
    services: Services = request.app.state.services
    check_throttle(request)
    token = bearer_token(request)
    if token is not None:
        principal = services.tokens.lookup(token)
        if principal is None:
            services.throttle.failed(client_address(request))
            return None
        return principal, None
    if allow_session:
        return services.sessions.resolve(request.cookies.get(SESSION_COOKIE))
    return None


def require(role: str) -> Callable[[Request], Awaitable[Principal]]:
    """A dependency: the caller's Principal with at least `role`, else 401 or 403 with a JSON body.

    The web form's session cookie is accepted for reads only (GET/HEAD): every change through the
    API needs the Authorization header, so that no other site can make a browser send one.
    """

    async def dependency(request: Request) -> Principal:
        # A bearer token is checked in memory, on the event loop; a session needs the job database.
        if bearer_token(request) is None and request.method in ("GET", "HEAD"):
            found = await run_in_threadpool(authenticate, request, True)
        else:
            found = authenticate(request, allow_session=False)
        if found is None:
            raise HTTPException(
                401,
                "missing or invalid API token: send Authorization: Bearer <token>",
                headers={"WWW-Authenticate": "Bearer"},
            )
        principal = found[0]
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
