"""The job database's migrations: the head revision, and the round trip every database must make."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect

from app import db
from app.models import Base

JOB_TABLES = {"jobs", "executions", "uploads", "api_tokens"}
MIGRATIONS_HEAD = ScriptDirectory(str(db.migrations_dir())).get_current_head()


def check_migrations_round_trip(url: str) -> None:
    """Upgrade to head (the models match), down to base, up again: on any database URL."""
    db.upgrade(url)
    engine = create_engine(url)
    try:
        assert JOB_TABLES <= set(inspect(engine).get_table_names())
        with engine.connect() as conn:
            diff = compare_metadata(
                MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata
            )
        assert diff == []
        assert db.current_revision(url) == MIGRATIONS_HEAD
        db.downgrade(url, "base")
        assert set(inspect(engine).get_table_names()) & JOB_TABLES == set()
        assert db.current_revision(url) is None
        db.upgrade(url)  # and up again from base
        assert JOB_TABLES <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
