"""Shared fixtures: one scratch MariaDB per option set, and the binlog corpora.

The vendored corpus (tests/corpus) is always there. The extended corpus (MYSQL_ROLLBACK_CORPUS) and the
seed documents (MYSQL_ROLLBACK_SEEDS) live outside the repository: without them the tests that need
them are deselected, never skipped, and the run ends with one line saying which was not given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.corpus import CORPUS_ENV, EXTENDED, SEEDS, SEEDS_ENV, VENDORED, Corpus
from tests.support.mariadb import ScratchServer, ServerOptions

# marker -> (what it needs, whether it was given, the variable that gives it)
_OUTSIDE = {
    "extended": ("extended corpus", EXTENDED is not None, CORPUS_ENV),
    "seeds": ("seed documents", SEEDS is not None, SEEDS_ENV),
}
_LEFT_OUT = pytest.StashKey[dict[str, int]]()


# fixture -> the marker every test using it carries, so that `-m "not server and not spark"` is the fast lane
_MARK_BY_FIXTURE = {"scratch_server_factory": "server", "spark": "spark"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests that start a server or Spark; deselect (not skip) the tests whose outside material
    was not given, and count them for the summary."""
    for item in items:
        for fixture, marker in _MARK_BY_FIXTURE.items():
            if fixture in getattr(item, "fixturenames", ()) and item.get_closest_marker(marker) is None:
                item.add_marker(marker)
    left_out = {marker: 0 for marker, (_, given, _) in _OUTSIDE.items() if not given}
    kept, dropped = [], []
    for item in items:
        missing = [m for m in left_out if item.get_closest_marker(m) is not None]
        for marker in missing:
            left_out[marker] += 1
        (dropped if missing else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    config.stash[_LEFT_OUT] = left_out


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    for marker, count in config.stash.get(_LEFT_OUT, {}).items():
        what, _, variable = _OUTSIDE[marker]
        terminalreporter.write_line(
            f"{what}: not given (set {variable}=DIR to run the {count} tests that need it)"
        )


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
    """The vendored corpus of real binlogs (tests/corpus), in the repository."""
    return VENDORED.root


@pytest.fixture(scope="session")
def extended_corpus() -> Corpus:
    """The extended corpus; only tests marked `extended` ask for it, and they run only when it is given."""
    if EXTENDED is None:
        pytest.fail(f"{CORPUS_ENV} is not set: mark the test `extended`")
    return EXTENDED


@pytest.fixture(scope="session")
def seeds_dir() -> Path:
    """The seed documents; only tests marked `seeds` ask for them, and they run only when given."""
    if SEEDS is None:
        pytest.fail(f"{SEEDS_ENV} is not set: mark the test `seeds`")
    return SEEDS
