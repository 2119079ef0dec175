"""The FastAPI application: a thin layer over the engine."""

from __future__ import annotations

from fastapi import FastAPI

import rollback
from app.api.routes import health


def create_app() -> FastAPI:
    app = FastAPI(title="mysql-rollback", version=rollback.__version__)
    app.include_router(health.router)
    return app


app = create_app()
