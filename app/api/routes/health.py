"""GET /health: liveness plus the versions an operator asks for first."""

from __future__ import annotations

import platform

from fastapi import APIRouter, Request

import rollback
from app.core.config import get_settings

router = APIRouter()

SESSION_NOT_STARTED = {
    "off": "not started: Spark starts lazily with the first job that needs it (MYSQL_ROLLBACK_WARM_SPARK=true "
    "starts it with the service)",
    "starting": "starting: the warm-up started it with the service (MYSQL_ROLLBACK_WARM_SPARK)",
}


@router.get("/health")
async def health(request: Request) -> dict:  # async: never waits for a worker thread
    services = getattr(request.app.state, "services", None)  # None until the app's startup ran
    settings = services.settings if services is not None else get_settings()
    spark = rollback.spark_status(settings.spark_master)
    # warm: off | starting | ready | failed: <reason> (app/services/spark_warm.py)
    spark["warm"] = warm = services.spark.state if services is not None else "off"
    if spark["session"] != "started":  # one story with `warm`: why it is not started, and when it starts
        spark["session"] = SESSION_NOT_STARTED.get(warm, f"not started (the warm-up {warm})")
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
