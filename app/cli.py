"""Subcommands the service adds to `mysql-rollback` (registered as an entry point, so the engine never imports app)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

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

    token = sub.add_parser("token", help="the service's API tokens kept in the job database")
    token_sub = token.add_subparsers(dest="token_command", required=True)
    create = token_sub.add_parser(
        "create",
        help="generate a token NAME with ROLE and print it once (only its hash is stored); an existing "
        "token of that NAME is replaced, so `token create admin admin` recovers a lost admin token; a running service takes it at once",
    )
    create.add_argument("name", metavar="NAME")
    create.add_argument(
        "role", metavar="ROLE", choices=("viewer", "operator", "admin"), help="viewer, operator or admin"
    )
    token.set_defaults(func=_token)


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
    from uvicorn.config import STARTUP_FAILURE

    import rollback
    from app.core.first_start import admin_token_once, start_block
    from app.core.http_protocol import JoinedWritesProtocol
    from app.services import execution_process

    settings = _settings()
    JoinedWritesProtocol.header_timeout = settings.header_timeout
    JoinedWritesProtocol.body_timeout = settings.body_timeout
    log_format = (
        rollback.configure_logging()
    )  # uvicorn's lines too: log_config=None leaves its loggers to ours
    logging.getLogger("mysql_rollback").info(
        "serving on http://%s:%d/ (health: /health)", args.host, args.port
    )
    block = start_block(settings, args.host, args.port, admin_token_once(settings))

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[Any] | None = None) -> None:
            await super().startup(sockets)
            if not self.started:
                return
            execution_process.warm()
            if log_format == "json":  # every line of the output stays a JSON object
                for line in block.splitlines():
                    text = line.removeprefix("mysql-rollback: ").strip()
                    if text and set(text) != {"-"}:
                        logging.getLogger("mysql_rollback").info(text)
            else:  # the last lines of the start: what a newcomer needs next
                print(block, file=sys.stderr, flush=True)

    config = uvicorn.Config(
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
    server = Server(config)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    return 0 if server.started else STARTUP_FAILURE


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


def _token(args: argparse.Namespace) -> int:
    from app import db
    from app.core.security import create_token

    if not args.name or len(args.name) > 64 or ":" in args.name or "," in args.name:
        raise SystemExit(
            f"mysql-rollback: error: token name {args.name!r}: 1 to 64 characters, no ':' or ','"
        )
    settings = _settings()
    url = settings.database_url
    if url.startswith("sqlite"):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    db.upgrade(url)
    database = db.Database(url)
    try:
        token = create_token(database, args.name, args.role)
    finally:
        database.dispose()
    print(token)
    print(
        f"mysql-rollback: token {args.name} ({args.role}) stored as its hash; shown once. "
        "A running service takes it at once (and no longer the one it replaced).",
        file=sys.stderr,
    )
    return 0
