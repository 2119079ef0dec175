"""GET /health: liveness plus the versions an operator asks for first."""

from __future__ import annotations

import platform

from fastapi import APIRouter

import rollback
from rollback.pipeline.session import spark_status

router = APIRouter()


@router.get("/health")
def health() -> dict:
    return {
        "status": "ok",
        "version": rollback.__version__,
        "python": platform.python_version(),
        "spark": spark_status(),
    }
