"""What `mysql-rollback serve` says once it listens: where the service is, which token opens it, which
servers it can reach and how to add one. On a fresh machine the generated admin token is shown here,
at the end of the start, not among the install's lines."""

from __future__ import annotations

import io

from app import db as dbmod
from app.core.config import Settings
from app.core.security import TokenStore

ADD_SERVER = (
    'MYSQL_ROLLBACK_SERVERS=\'{"prod1": "mysql://flashback@db1:3306/"}\' '
    "MYSQL_ROLLBACK_PASSWORD_PROD1='…' ./scripts/serve"
)


def admin_token_once(settings: Settings) -> str | None:
    """The admin token generated now when the service has no token at all (first start), else None."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    dbmod.upgrade(settings.database_url)
    database = dbmod.Database(settings.database_url)
    try:
        return TokenStore(settings.tokens(), database).ensure_default_admin(io.StringIO())
    finally:
        database.dispose()


def start_block(settings: Settings, host: str, port: int, token: str | None) -> str:
    shown = f"[{host}]" if ":" in host else host
    lines = [f"service:  http://{shown}:{port}/   (the web form; the API under /api, its docs at /docs)"]
    if token:
        lines.append(f"admin token (shown once; only its hash is stored): {token}")
    elif settings.tokens():
        lines.append("tokens:   those of MYSQL_ROLLBACK_API_TOKENS (and any generated before)")
    else:
        lines.append("tokens:   generated ones, kept as hashes (the first start printed the admin token)")
    lines.append("          a new or lost one: mysql-rollback token create NAME admin|operator|viewer")
    servers = settings.server_configs()
    if servers:
        lines.append(f"servers:  {', '.join(sorted(servers))} (MYSQL_ROLLBACK_SERVERS)")
    else:
        lines.append("servers:  none yet, so jobs can only read uploaded binlog files. Add one and restart:")
        lines.append(f"          {ADD_SERVER}")
    rule = "mysql-rollback: " + "-" * 60
    return "\n".join([rule, *(f"mysql-rollback: {line}" for line in lines), rule])
