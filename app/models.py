"""SQLAlchemy models of the job database (jobs and their artifacts)."""

from __future__ import annotations

from sqlalchemy.orm import DeclarativeBase


class Base(DeclarativeBase):
    pass
