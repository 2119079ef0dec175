"""The FastAPI application: a thin layer over the engine.

Start-up (the lifespan): create the data dir, apply the migrations, make sure an API token
exists, mark jobs a previous process left running as failed, start the worker pool.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TextIO

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles

import rollback
from app import db as dbmod
from app.api.deps import Services
from app.api.routes import executions, health, jobs, metrics, servers, uploads
from app.core.config import Settings, get_settings
from app.core.security import TokenStore
from app.metrics import Metrics
from app.services.jobs import JobRunner, Scrubber
from app.web import routes as web

log = logging.getLogger("mysql_rollback")
STATIC = Path(__file__).resolve().parent / "static"


def _configure_logging() -> None:
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False


def start_services(
    settings: Settings, token_out: TextIO | None = None, start_workers: bool = True
) -> Services:
    servers = settings.server_configs()
    tokens = settings.tokens()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    dbmod.upgrade(settings.database_url)
    database = dbmod.Database(settings.database_url)
    store = TokenStore(tokens, database)
    store.ensure_default_admin(token_out)
    metrics_ = Metrics(database)
    scrub = Scrubber(servers)
    runner = JobRunner(database, settings, servers, metrics_, scrub)
    if start_workers:
        runner.start()
    else:
        runner.recover()
    return Services(settings, servers, database, store, runner, metrics_, scrub)


def create_app(settings: Settings | None = None, token_out: TextIO | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        _configure_logging()
        services = start_services(settings or get_settings(), token_out)
        app.state.services = services
        log.info(
            "serving: job database %s, %d server(s) configured, %d worker(s), engine %s",
            services.db.engine.url.render_as_string(hide_password=True),
            len(services.servers),
            services.settings.workers,
            services.settings.engine,
        )
        try:
            yield
        finally:
            services.runner.stop()
            services.db.dispose()

    app = FastAPI(
        title="mysql-rollback",
        version=rollback.__version__,
        description="Flashback for MySQL and MariaDB: reverse SQL from a binlog range, verified execution.",
        lifespan=lifespan,
    )
    app.include_router(health.router)
    app.include_router(jobs.router)
    app.include_router(executions.router)
    app.include_router(uploads.router)
    app.include_router(servers.router)
    app.include_router(metrics.router)
    app.include_router(web.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(rollback.RollbackError)
    async def _rollback_error(request: Request, exc: rollback.RollbackError) -> JSONResponse:
        services = getattr(request.app.state, "services", None)
        message = services.scrub(exc.one_line()) if services else exc.one_line()
        return JSONResponse({"detail": message}, status_code=400)

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        log.error("internal error on %s %s: %s", request.method, request.url.path, type(exc).__name__)
        return JSONResponse({"detail": f"internal error ({type(exc).__name__})"}, status_code=500)

    return app


app = create_app()
