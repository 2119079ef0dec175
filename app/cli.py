"""Subcommands the service adds to `mysql-rollback` (registered as an entry point, so the engine never imports app)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="run the web service (REST API and DBA web form)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    print(f"mysql-rollback: serving on http://{args.host}:{args.port}/ (health: /health)", flush=True)
    uvicorn.run("app.main:app", host=args.host, port=args.port, log_level="info")
    return 0
