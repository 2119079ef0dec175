"""Server-side browser sessions: the cookie holds a random id signed with itsdangerous, never a token.

A session is valid while its row exists, is not revoked, has not expired, and its token is still
configured. Sign-out revokes it; a token removed from the configuration revokes its sessions at the
next start (and they stop working at once, since the token no longer resolves).
"""

from __future__ import annotations

import hashlib
import os
import secrets
from datetime import timedelta
from pathlib import Path

from itsdangerous import BadSignature, URLSafeTimedSerializer
from sqlalchemy import delete, select, update

from app.core.security import Principal, TokenStore, hash_token
from app.db import Database
from app.models import WebSession, utcnow

SECRET_FILE = "session-secret"


def load_or_create_secret(data_dir: Path) -> str:
    """The cookie-signing secret kept in the data dir (0600), made on first use."""
    path = data_dir / SECRET_FILE
    if path.exists():
        return path.read_text().strip()
    secret = secrets.token_urlsafe(48)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(secret + "\n")
    return secret


def _key(sid: str) -> str:
    return hashlib.sha256(sid.encode("ascii")).hexdigest()


class SessionStore:
    def __init__(self, db: Database, tokens: TokenStore, secret: str, lifetime: timedelta):
        self._db = db
        self._tokens = tokens
        self._lifetime = lifetime
        self._signer = URLSafeTimedSerializer(secret, salt="mysql-rollback web session")

    @property
    def max_age(self) -> int:
        return int(self._lifetime.total_seconds())

    def open(self, token: str) -> str:
        """A new session for a valid token: the cookie value to send."""
        sid = secrets.token_urlsafe(32)
        now = utcnow()
        with self._db.session() as session:
            session.add(
                WebSession(
                    id=_key(sid),
                    token_hash=hash_token(token),
                    created_at=now,
                    expires_at=now + self._lifetime,
                )
            )
            session.commit()
        return self._signer.dumps(sid)

    def _sid(self, cookie: str | None) -> str | None:
        if not cookie:
            return None
        try:
            sid = self._signer.loads(cookie, max_age=self.max_age)
        except BadSignature:
            return None
        return sid if isinstance(sid, str) else None

    def resolve(self, cookie: str | None) -> tuple[Principal, str] | None:
        """The signed-in principal and the session id (the anti-forgery key), or None."""
        sid = self._sid(cookie)
        if sid is None:
            return None
        with self._db.session() as session:
            record = session.get(WebSession, _key(sid))
        if record is None or record.revoked_at is not None or record.expires_at <= utcnow():
            return None
        principal = self._tokens.by_hash(record.token_hash)
        return (principal, sid) if principal is not None else None

    def revoke(self, cookie: str | None) -> None:
        sid = self._sid(cookie)
        if sid is None:
            return
        with self._db.session() as session:
            session.execute(
                update(WebSession)
                .where(WebSession.id == _key(sid), WebSession.revoked_at.is_(None))
                .values(revoked_at=utcnow())
            )
            session.commit()

    def revoke_unknown_tokens(self) -> int:
        """Revoke the sessions of tokens no longer configured, and forget expired ones.

        Returns how many tokens had their sessions revoked."""
        now = utcnow()
        with self._db.session() as session:
            live = session.scalars(
                select(WebSession.token_hash).where(WebSession.revoked_at.is_(None)).distinct()
            ).all()
            gone = [h for h in live if self._tokens.by_hash(h) is None]
            if gone:
                session.execute(
                    update(WebSession)
                    .where(WebSession.token_hash.in_(gone), WebSession.revoked_at.is_(None))
                    .values(revoked_at=now)
                )
            session.execute(delete(WebSession).where(WebSession.expires_at < now))
            session.commit()
        return len(gone)
