"""GET /health: liveness plus the versions an operator asks for first."""

from __future__ import annotations

import platform

from fastapi import APIRouter, Request

import rollback
from app.core.config import get_settings

router = APIRouter()


@router.get("/health")
async def health(request: Request) -> dict:  # async: never waits for a worker thread
    services = getattr(request.app.state, "services", None)  # None until the app's startup ran
    settings = services.settings if services is not None else get_settings()
    spark = rollback.spark_status(settings.spark_master)
    # warm: off | starting | ready | failed: <reason> (app/services/spark_warm.py)
    spark["warm"] = services.spark.state if services is not None else "off"
    if services is not None and services.spark.seconds is not None:
        spark["warm_seconds"] = services.spark.seconds
    return {
        "status": "ok",
        "version": rollback.__version__,
        "python": platform.python_version(),
        "spark": spark,
        "hot_path": rollback.hot_path(),
        # each configured server's health as the last call to it found it (GET /api/servers)
        "servers": (
            {name: h["health"] for name, h in services.server_calls.health().items()} if services else {}
        ),
    }
