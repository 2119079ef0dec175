"""Subcommands the service adds to `mysql-rollback` (registered as an entry point, so the engine never imports app)."""

from __future__ import annotations

import argparse
import sys

from pydantic import ValidationError


def register(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="run the web service (REST API and DBA web form)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.set_defaults(func=_serve)

    db = sub.add_parser("db", help="the job database: apply or undo migrations")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    up = db_sub.add_parser("upgrade", help="apply the migrations (the service also does it at start-up)")
    up.add_argument("revision", nargs="?", default="head")
    down = db_sub.add_parser("downgrade", help="undo migrations (down to `base`: drops every table)")
    down.add_argument("revision", nargs="?", default="-1")
    db_sub.add_parser("current", help="print the database's revision")
    db.set_defaults(func=_db)


def _settings():  # type: ignore[no-untyped-def]
    from app.core.config import ConfigError, Settings

    try:
        settings = Settings()
        settings.server_configs()
        settings.tokens()
    except ValidationError as exc:
        first = exc.errors()[0]
        name = "MYSQL_ROLLBACK_" + str(first["loc"][0]).upper() if first.get("loc") else "settings"
        message = str(first["msg"]).removeprefix("Value error, ")
        if not message.startswith(name):
            message = f"{name}: {message}"
        raise SystemExit(f"mysql-rollback: error: {message}") from None
    except ConfigError as exc:
        raise SystemExit(f"mysql-rollback: error: {exc}") from None
    return settings


def _serve(args: argparse.Namespace) -> int:
    import logging

    import uvicorn

    import rollback
    from app.core.http_protocol import JoinedWritesProtocol

    settings = _settings()
    JoinedWritesProtocol.header_timeout = settings.header_timeout
    JoinedWritesProtocol.body_timeout = settings.body_timeout
    rollback.configure_logging()  # uvicorn's lines too: log_config=None leaves its loggers to ours
    logging.getLogger("mysql_rollback").info(
        "serving on http://%s:%d/ (health: /health)", args.host, args.port
    )
    uvicorn.run(
        "app.main:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        log_config=None,
        access_log=settings.access_log,
        http=JoinedWritesProtocol,
        limit_concurrency=settings.max_connections,
        timeout_keep_alive=5,  # uvicorn's default: idle keep-alive connections closed after 5 s
        log_level=logging.getLevelName(logging.getLogger().level).lower(),
    )
    return 0


def _db(args: argparse.Namespace) -> int:
    from app import db

    settings = _settings()
    url = settings.database_url
    if url.startswith("sqlite"):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    if args.db_command == "upgrade":
        db.upgrade(url, args.revision)
    elif args.db_command == "downgrade":
        db.downgrade(url, args.revision)
    print(
        f"mysql-rollback: job database at revision {db.current_revision(url) or 'base (empty)'}",
        file=sys.stdout,
    )
    return 0
