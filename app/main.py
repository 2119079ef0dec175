"""The FastAPI application: a thin layer over the engine.

Start-up (the lifespan): create the data dir, apply the migrations, make sure an API token
exists, mark jobs a previous process left running as failed, start the worker pool.
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import TextIO

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp

import rollback
from app import db as dbmod
from app.api import allow, openapi
from app.api.deps import Services
from app.api.polled_reads import PolledReads
from app.api.routes import docs, executions, health, jobs, metrics, resolutions, servers, uploads
from app.api.upload_gate import UploadGate
from app.core.config import Settings, get_settings
from app.core.headers import SecurityHeaders
from app.core.request_id import RequestId
from app.core.security import TokenStore
from app.core.sessions import SessionStore, load_or_create_secret
from app.core.throttle import AuthThrottle
from app.metrics import Metrics
from app.services import job_process
from app.services.answers import Answers
from app.services.executions import ExecutionRunner
from app.services.jobs import JobRunner
from app.services.outputs import Outputs
from app.services.redact import Redactor
from app.services.retention import RetentionSweeper
from app.services.server_calls import ServerCalls
from app.services.spark_warm import SparkWarmer
from app.services.storage import database_problem
from app.web import routes as web

log = logging.getLogger("mysql_rollback")
STATIC = Path(__file__).resolve().parent / "static"


def start_services(
    settings: Settings, token_out: TextIO | None = None, start_workers: bool = True
) -> Services:
    servers = settings.server_configs()
    tokens = settings.tokens()
    settings.export_timeouts()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    dbmod.upgrade(settings.database_url)
    database = dbmod.Database(settings.database_url)
    store = TokenStore(tokens, database)
    store.ensure_default_admin(token_out)
    metrics_ = Metrics(database)
    scrub = Redactor(servers, settings)
    runner = JobRunner(database, settings, servers, metrics_, scrub)
    runner.in_process = job_process.run
    outputs = Outputs(runner)
    executions_ = ExecutionRunner(
        database, servers, metrics_, scrub, settings.execution_workers, outputs.plan, outputs.changes
    )
    spark = SparkWarmer(settings)
    runner.spark_ready = spark.ready
    if start_workers:
        spark.start()
        runner.start()
        executions_.start()
        RetentionSweeper(database, settings).start()
    else:
        runner.recover()
        executions_.recover()
    if settings.spark_secret is not None:
        os.environ.setdefault("MYSQL_ROLLBACK_SPARK_SECRET", settings.spark_secret.get_secret_value())
    if settings.spark_cores_max is not None:
        os.environ.setdefault("MYSQL_ROLLBACK_SPARK_CORES_MAX", str(settings.spark_cores_max))
    secret = (
        settings.session_secret.get_secret_value()
        if settings.session_secret
        else load_or_create_secret(settings.data_dir)
    )
    sessions = SessionStore(database, store, secret, timedelta(hours=settings.session_hours))
    sessions.revoke_unknown_tokens()
    throttle = AuthThrottle(settings.auth_failures_per_minute)
    return Services(
        settings,
        servers,
        database,
        store,
        runner,
        metrics_,
        scrub,
        sessions,
        throttle,
        executions_,
        outputs,
        spark,
        Answers(database),
        ServerCalls(list(servers), settings.connect_timeout, scrub),
    )


class _App(FastAPI):
    """FastAPI with the security headers and the request id outermost: on the 500 answers of
    unhandled errors too; then the uploads' checks before their body (app/api/upload_gate.py), and
    the pollers' reads answered from their cache before routing (app/api/polled_reads.py)."""

    def build_middleware_stack(self) -> ASGIApp:
        return SecurityHeaders(RequestId(UploadGate(PolledReads(super().build_middleware_stack()))))


def create_app(settings: Settings | None = None, token_out: TextIO | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        rollback.configure_logging()
        services = start_services(settings or get_settings(), token_out)
        app.state.services = services
        # What start-up made (modules, the app, the engines) lives as long as the service: frozen,
        # the collector's full passes no longer walk it (measured: 100-300 ms each, every few
        # seconds under polling, on the event loop). Thawed at shutdown for a process that goes on.
        gc.freeze()
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
            services.executions.stop()
            services.runner.stop()
            services.answers.close()
            services.server_calls.close()
            services.db.dispose()
            gc.unfreeze()

    app = _App(
        title="mysql-rollback",
        version=rollback.__version__,
        description="Flashback for MySQL and MariaDB: reverse SQL from a binlog range, verified execution.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
    )
    openapi.install(app)
    app.add_exception_handler(StarletteHTTPException, allow.http_error_handler)
    app.include_router(health.router)
    app.include_router(jobs.router)
    app.include_router(executions.router)
    app.include_router(resolutions.router)
    app.include_router(uploads.router)
    app.include_router(servers.router)
    app.include_router(metrics.router)
    app.include_router(web.router)
    app.include_router(docs.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.mount(docs.ASSETS_URL, docs.assets(), name="docs-assets")

    @app.exception_handler(rollback.RollbackError)
    async def _rollback_error(request: Request, exc: rollback.RollbackError) -> JSONResponse:
        services = getattr(request.app.state, "services", None)
        message = services.scrub(exc.one_line()) if services else exc.one_line()
        return JSONResponse({"detail": message}, status_code=400)

    @app.exception_handler(OperationalError)
    async def _database(request: Request, exc: OperationalError) -> JSONResponse:
        log.error("the job database refused %s %s: %s", request.method, request.url.path, exc.orig)
        return JSONResponse({"detail": database_problem(exc, "the request")}, status_code=507)

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        log.error("internal error on %s %s: %s", request.method, request.url.path, type(exc).__name__)
        return JSONResponse({"detail": f"internal error ({type(exc).__name__})"}, status_code=500)

    return app


app = create_app()
