"""API tokens: bearer tokens with a role (viewer < operator < admin). Only hashes are compared or stored.

Tokens come from MYSQL_ROLLBACK_API_TOKENS (name:role:token). When none is configured and the
job database holds no generated token, the service generates an admin token on first start,
stores its SHA-256 and prints the token once; `mysql-rollback token create NAME ROLE` makes another
(or replaces a lost one), which a running service takes without a restart.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sys
import time
from dataclasses import dataclass
from typing import TextIO

from sqlalchemy import select

from app.core.config import ROLES, ApiToken
from app.db import Database
from app.models import ApiTokenRecord, utcnow

LEVEL = {role: i for i, role in enumerate(ROLES)}
RELOAD_SECONDS = 1.0  # at most one read of the generated tokens per second


@dataclass(frozen=True)
class Principal:
    name: str
    role: str

    def has(self, role: str) -> bool:
        return LEVEL[self.role] >= LEVEL[role]


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def csrf_token(session_id: str) -> str:
    """The web form's per-session anti-forgery value, derived from the (secret, random) session id."""
    return hmac.new(session_id.encode("utf-8"), b"mysql-rollback web form", hashlib.sha256).hexdigest()[:32]


def create_token(db: Database, name: str, role: str) -> str:
    """A new random token NAME with ROLE in the job database (only its SHA-256 is stored), replacing the
    one of that name: how a lost generated admin token is replaced (`mysql-rollback token create`)."""
    token = secrets.token_urlsafe(32)
    with db.session() as session:
        for old in session.scalars(select(ApiTokenRecord).where(ApiTokenRecord.name == name)):
            session.delete(old)
        session.flush()
        session.add(ApiTokenRecord(name=name, role=role, token_hash=hash_token(token), created_at=utcnow()))
        session.commit()
    return token


class TokenStore:
    """The configured tokens, and the generated ones of the job database, read again when a token is
    looked up and they are older than RELOAD_SECONDS: a `token create` counts without a restart, and
    the token it replaced stops counting."""

    def __init__(self, configured: list[ApiToken], db: Database):
        self._configured: dict[str, Principal] = {
            hash_token(t.token): Principal(t.name, t.role) for t in configured
        }
        self._generated: dict[str, Principal] = {}
        self._loaded_at = -RELOAD_SECONDS
        self._db = db

    def load_generated(self) -> None:
        with self._db.session() as session:
            records = session.scalars(select(ApiTokenRecord)).all()
        self._generated = {r.token_hash: Principal(r.name, r.role) for r in records}
        self._loaded_at = time.monotonic()

    def ensure_default_admin(self, out: TextIO | None = None) -> str | None:
        """Generate the embedded default's admin token if there is no token at all; print it once."""
        self.load_generated()
        if self._configured or self._generated:
            return None
        token = create_token(self._db, "admin", "admin")
        self.load_generated()
        stream = out or sys.stderr
        print(
            "mysql-rollback: no API token was configured, so an admin token was generated.\n"
            f"mysql-rollback: admin token (shown once; only its hash is stored): {token}",
            file=stream,
            flush=True,
        )
        return token

    def by_hash(self, digest: str) -> Principal | None:
        return self._configured.get(digest) or self._generated.get(digest)

    def lookup(self, token: str | None) -> Principal | None:
        if not token:
            return None
        if time.monotonic() - self._loaded_at >= RELOAD_SECONDS:
            self.load_generated()  # tokens created or replaced since (mysql-rollback token create)
        return self._find(hash_token(token))

    def _find(self, digest: str) -> Principal | None:
        for known, principal in [*self._configured.items(), *self._generated.items()]:
            if hmac.compare_digest(known, digest):
                return principal
        return None
