"""GET /health: liveness plus the versions an operator asks for first."""

from __future__ import annotations

import platform

from fastapi import APIRouter, Request

import rollback
from app.core.config import get_settings

router = APIRouter()


@router.get("/health")
def health(request: Request) -> dict:
    services = getattr(request.app.state, "services", None)  # None until the app's startup ran
    settings = services.settings if services is not None else get_settings()
    return {
        "status": "ok",
        "version": rollback.__version__,
        "python": platform.python_version(),
        "spark": rollback.spark_status(settings.spark_master),
        "hot_path": rollback.hot_path(),
    }
