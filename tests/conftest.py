"""Shared fixtures: one scratch MariaDB per option set and one corpus location per test run."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.corpus import CORPUS
from tests.support.mariadb import ScratchServer, ServerOptions

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def scratch_server_factory() -> Iterator[Callable[..., ScratchServer]]:
    """Returns get(**ServerOptions fields) -> a running server; one server per distinct option set.

    Example: scratch_server_factory(row_image="MINIMAL"), scratch_server_factory(row_metadata="FULL").
    Every server is stopped at the end of the session, whatever happened.
    """
    servers: dict[ServerOptions, ScratchServer] = {}

    def get(**options) -> ScratchServer:
        key = ServerOptions(**options)
        if key not in servers:
            servers[key] = ScratchServer(options=key).start()
        return servers[key]

    try:
        yield get
    finally:
        for server in servers.values():
            server.stop()


@pytest.fixture(scope="session")
def scratch_server(scratch_server_factory) -> ScratchServer:
    """The default scratch server: ROW format, FULL row images."""
    return scratch_server_factory()


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The shared corpus of real binlogs. CI has it beside the clone; a missing corpus is a failure, not a skip."""
    if not (CORPUS / "INDEX.md").exists():
        pytest.fail(f"binlog corpus not found at {CORPUS} (set MYSQL_ROLLBACK_CORPUS)")
    return CORPUS


@pytest.fixture(scope="session")
def seeds_dir() -> Path:
    path = Path(os.environ.get("MYSQL_ROLLBACK_SEEDS", REPO.parent / "shared" / "seeds")).resolve()
    if not path.is_dir():
        pytest.fail(f"seed documents not found at {path} (set MYSQL_ROLLBACK_SEEDS)")
    return path
