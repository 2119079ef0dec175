"""The `spark` fixture: one SparkSession per test run, shared by every test that asks for it."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Any:
    """The process's SparkSession, started once for the whole test run and reused by every test."""
    from rollback.pipeline.session import get_spark

    return get_spark()
