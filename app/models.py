"""SQLAlchemy models of the job database: jobs, their executions, uploads and generated API tokens.

Portable types only (SQLite, PostgreSQL, MySQL/MariaDB): JSON documents are stored as text,
times as naive UTC. No column ever holds a password: a job names its server.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, Boolean, DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

JOB_STATES = ("queued", "running", "succeeded", "failed", "cancelled")
FINAL_STATES = ("succeeded", "failed", "cancelled")
EXECUTION_STATES = (
    "queued",
    "running",
    "succeeded",
    "failed",
    "conflict",
    "cancelled",
    "interrupted",
    "refused",
)
EXECUTION_FINAL_STATES = ("succeeded", "failed", "conflict", "cancelled", "interrupted", "refused")


def utcnow() -> datetime:
    return datetime.now(UTC)


class JSONText(TypeDecorator[Any]):
    """A JSON document in a TEXT column (the same on every database, and autogenerate agrees)."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)

    def process_result_value(self, value: str | None, dialect: Dialect) -> Any:
        return None if value is None else json.loads(value)


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in, aware UTC datetimes out; stored naive (SQLite keeps no zone)."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is not None:
            value = value.astimezone(UTC)
        return value.replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else value.replace(tzinfo=UTC)


class Base(DeclarativeBase):
    pass


class Job(Base):
    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    created_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    state: Mapped[str] = mapped_column(String(16), index=True)
    mode: Mapped[str] = mapped_column(String(16))
    source: Mapped[str] = mapped_column(String(16))  # server | upload
    server: Mapped[str | None] = mapped_column(String(64))
    upload_id: Mapped[str | None] = mapped_column(String(32))
    range_requested: Mapped[dict[str, Any]] = mapped_column(JSONText())
    range_resolved: Mapped[dict[str, Any] | None] = mapped_column(JSONText())
    filters: Mapped[dict[str, Any]] = mapped_column(JSONText())
    options: Mapped[dict[str, Any]] = mapped_column(JSONText())
    progress_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    progress_total: Mapped[int] = mapped_column(BigInteger, default=0)
    progress_events: Mapped[int] = mapped_column(BigInteger, default=0)
    progress_events_total: Mapped[int] = mapped_column(BigInteger, default=0)
    rows_emitted: Mapped[int] = mapped_column(BigInteger, default=0)
    transactions: Mapped[int] = mapped_column(Integer, default=0)
    statements: Mapped[int] = mapped_column(Integer, default=0)
    counts: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONText())
    summary: Mapped[dict[str, Any] | None] = mapped_column(JSONText())
    warnings: Mapped[list[str] | None] = mapped_column(JSONText())
    irreversible: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONText())
    error: Mapped[str | None] = mapped_column(Text)
    # what the CLI would have exited with (rollback.base.errors.EXIT_*); None until the job ends
    exit_code: Mapped[int | None] = mapped_column(Integer)
    script_path: Mapped[str | None] = mapped_column(String(1024))
    plan_path: Mapped[str | None] = mapped_column(String(1024))
    changes_path: Mapped[str | None] = mapped_column(String(1024))
    script_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    # the execution that committed this job's reversal (the latest one), when and by whom
    applied_execution: Mapped[int | None] = mapped_column(Integer)
    applied_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    applied_by: Mapped[str | None] = mapped_column(String(64))
    disk_bytes: Mapped[int] = mapped_column(BigInteger, default=0)  # script, plan, changes, indexes

    executions: Mapped[list[Execution]] = relationship(
        back_populates="job", cascade="all, delete-orphan", order_by="Execution.id"
    )


class Execution(Base):
    __tablename__ = "executions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    target: Mapped[str] = mapped_column(String(64))
    dry_run: Mapped[bool] = mapped_column(Boolean)
    on_conflict: Mapped[str] = mapped_column(String(8))
    requested_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    state: Mapped[str] = mapped_column(String(16), index=True)  # EXECUTION_STATES
    committed: Mapped[bool] = mapped_column(Boolean, default=False)
    statements: Mapped[int] = mapped_column(Integer, default=0)
    rows_affected: Mapped[int] = mapped_column(Integer, default=0)
    skipped: Mapped[int] = mapped_column(Integer, default=0)
    conflicts: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONText())
    error: Mapped[str | None] = mapped_column(Text)
    # what the request accepted: {triggers, cascades, non_transactional: [db.table]}
    accepted: Mapped[dict[str, Any] | None] = mapped_column(JSONText())
    # what the target said the statements set off (rollback.schema.side_effects.SideEffects.to_dict())
    side_effects: Mapped[dict[str, Any] | None] = mapped_column(JSONText())
    # per_transaction, lock_wait_timeout, and the result's transactions_applied, read_only_tables,
    # unverified, non_transactional_applied
    details: Mapped[dict[str, Any] | None] = mapped_column(JSONText())
    exit_code: Mapped[int | None] = mapped_column(Integer)  # as for jobs; None while running
    # progress of the running pass: "check" (a dry run) or "apply"; steps of the plan passed (its start
    # and rows changed so far: details["phase_started"], details["rows_done"])
    phase: Mapped[str | None] = mapped_column(String(8))
    progress_done: Mapped[int] = mapped_column(Integer, default=0)
    progress_total: Mapped[int] = mapped_column(Integer, default=0)
    current_transaction: Mapped[dict[str, Any] | None] = mapped_column(JSONText())
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)

    job: Mapped[Job] = relationship(back_populates="executions")


class Upload(Base):
    __tablename__ = "uploads"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    created_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    files: Mapped[list[dict[str, Any]]] = mapped_column(JSONText())  # [{name, size}] in log order
    total_bytes: Mapped[int] = mapped_column(BigInteger, default=0)


class ApiTokenRecord(Base):
    """A token the service generated (the embedded default admin): only its SHA-256 is kept."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class WebSession(Base):
    """A signed-in browser: the cookie carries a signed random id, this row says whose and until when.

    `id` is the SHA-256 of that random id, so the table alone opens no session; the token is named
    by its hash, so a session ends when its token is removed from the configuration.
    """

    __tablename__ = "web_sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
