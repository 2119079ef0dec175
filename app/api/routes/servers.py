"""/api/servers: the configured servers (never their passwords), their health and their time zone."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException

from app.api.deps import ServicesDep, Viewer
from app.schemas import ERRORS, ServerOut
from app.services.sources import server_time_zone
from rollback import RollbackError

router = APIRouter(prefix="/api/servers", tags=["servers"])


@router.get("", response_model=list[ServerOut], responses=ERRORS)
async def list_servers(services: ServicesDep, _: Viewer) -> list[ServerOut]:
    """Each server's health is what the service's last call to it found (never a call of its own)."""
    health = services.server_calls.health()
    return [ServerOut(**s.public(), **health[name]) for name, s in sorted(services.servers.items())]


@router.get("/{name}/time-zone", responses={**ERRORS, 404: {"description": "no such server"}})
async def time_zone(name: str, services: ServicesDep, _: Viewer) -> dict[str, Any]:
    """The server's time zone and current UTC offset (naive datetimes of a job are read in it)."""
    server = services.servers.get(name)
    if server is None:
        raise HTTPException(404, f"no server {name!r}")
    try:
        return {
            "name": name,
            **(await services.server_calls.call(name, server_time_zone, server)),
            "error": None,
        }
    except RollbackError as exc:
        return {
            "name": name,
            "time_zone": None,
            "utc_offset": None,
            "version": None,
            "error": services.scrub(exc.one_line()),
        }
