"""The job database: engine, sessions, and the Alembic migrations applied at start-up."""

from __future__ import annotations

import importlib.resources
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

import app

MIGRATIONS_ENV = "MYSQL_ROLLBACK_MIGRATIONS"
T = TypeVar("T")


SQLITE_POOL = 32  # request threads (40 in anyio's pool) and workers each hold one for a moment


def make_engine(url: str) -> Engine:
    kwargs: dict[str, Any] = {"pool_pre_ping": True}
    if url.startswith("sqlite"):
        # A file database never drops a connection, so no ping per checkout; a pool as large as the
        # threads that read at once, so that none waits for another's connection (measured:
        # with the default 5 + 10, GET /api/jobs spent most of its time in QueuePool under load).
        kwargs = {
            "connect_args": {"check_same_thread": False, "timeout": 30},
            "pool_size": SQLITE_POOL,
            "max_overflow": SQLITE_POOL,
        }
    engine = create_engine(url, **kwargs)
    if url.startswith("sqlite"):

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

    return engine


class Database:
    def __init__(self, url: str):
        self.url = url
        self.engine = make_engine(url)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)
        self.local = url.startswith("sqlite")

    async def read(self, fn: Callable[[Session], T]) -> T:
        """A short read for an async route: on the event loop when the database is a local SQLite
        file (WAL: a read never waits for a writer), in a worker thread when it is over the network."""
        if self.local:
            with self.session() as session:
                return fn(session)
        return await run_in_threadpool(self._read, fn)

    def _read(self, fn: Callable[[Session], T]) -> T:
        with self.session() as session:
            return fn(session)

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self.sessions() as session:
            yield session

    def dispose(self) -> None:
        self.engine.dispose()


def migrations_dir() -> Path:
    """Where MYSQL_ROLLBACK_MIGRATIONS points; else migrations/ beside the package (a checkout, an
    editable install); else the copy an installed package carries (app/_migrations, setup.py)."""
    if os.environ.get(MIGRATIONS_ENV):
        return Path(os.environ[MIGRATIONS_ENV])
    beside = Path(app.__file__).resolve().parent.parent / "migrations"
    if (beside / "env.py").exists():
        return beside
    packaged = Path(str(importlib.resources.files("app") / "_migrations"))
    if (packaged / "env.py").exists():
        return packaged
    return Path.cwd() / "migrations"


def alembic_config(url: str) -> Any:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    from alembic import command

    ensure_sqlite_dir(url)
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    from alembic import command

    command.downgrade(alembic_config(url), revision)


def current_revision(url: str) -> str | None:
    from alembic.runtime.migration import MigrationContext

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def ensure_sqlite_dir(url: str) -> None:
    prefix = "sqlite:///"
    if url.startswith(prefix) and ":memory:" not in url:
        Path(url[len(prefix) :]).parent.mkdir(parents=True, exist_ok=True)
