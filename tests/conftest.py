"""Shared fixtures: one scratch MariaDB per option set, and the binlog corpora; the lanes of the suite.

The tree has one folder per lane: tests/unit (no server, no JVM, no browser: `./scripts/test --fast`),
tests/server (the scratch MariaDB), tests/spark (a Spark session), tests/cluster (a Spark standalone
cluster), tests/browser (Chromium). A test's
markers come from the fixtures it uses, directly or through other fixtures (_MARK_BY_FIXTURE), never
from memory; collection fails when a test sits in a lane folder its fixtures contradict.

The vendored corpus (tests/corpus) is always there. The extended corpus (MYSQL_ROLLBACK_CORPUS) and the
seed documents (MYSQL_ROLLBACK_SEEDS) live outside the repository: without them the tests that need
them are deselected, never skipped, and the run ends with one line saying which was not given.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator
from pathlib import Path

import hypothesis
import pytest

pytest.register_assert_rewrite("tests.support")

# No time limit per example: on a loaded 2-core machine a slow example is the machine, not the code
# (hypothesis' 200 ms deadline failed a decimal round trip while the other process ran server tests).
# The fast lane tries fewer examples of each property (tests/support/examples.py); the whole suite all.
from tests.support.examples import DEFAULT_EXAMPLES, examples  # noqa: E402

hypothesis.settings.register_profile("suite", deadline=None, max_examples=examples(DEFAULT_EXAMPLES))
hypothesis.settings.load_profile("suite")

# after the rewrite hook, so support asserts explain themselves
from tests.support import REPO, both_ways  # noqa: E402
from tests.support.corpus import CORPUS_ENV, EXTENDED, SEEDS, SEEDS_ENV, VENDORED, Corpus, locate  # noqa: E402
from tests.support.mariadb import ScratchServer, ServerOptions  # noqa: E402

# Fixture modules: every fixture lives here or in one of these, so any test may use it by name.
pytest_plugins = [
    "tests.support.app",
    "tests.support.browser",
    "tests.support.cluster",
    "tests.support.fake_mysql",
    "tests.support.jobs",
    "tests.support.service",
    "tests.support.sources",
    "tests.support.spark",
    "tests.support.workloads",
]

# marker -> (what it needs, whether it was given, the variable that gives it)
_OUTSIDE = {
    "extended": ("extended corpus", EXTENDED is not None, CORPUS_ENV),
    "seeds": ("seed documents", SEEDS is not None, SEEDS_ENV),
}
_LEFT_OUT = pytest.StashKey[dict[str, int]]()


# fixture -> the marker of every test that uses it, directly or through another fixture (pytest's closure
# of a test's fixtures covers both): `-m "not server and not spark and not cluster and not browser"` is the fast lane.
# `scratch_server_factory` starts every scratch MariaDB (`scratch_server`, `table`, `service`, ... use it);
# `service_process` is asked for by tests that start their own `mysql-rollback serve` (a server too);
# `spark` starts the JVM; `spark_cluster` a Spark standalone cluster (tests/support/cluster.py);
# `browser` starts Chromium.
_MARK_BY_FIXTURE = {
    "scratch_server_factory": "server",
    "service_process": "server",
    "spark": "spark",
    "spark_cluster": "cluster",
    "browser": "browser",
}
LANE_MARKERS = ("server", "spark", "cluster", "browser")
# lane folder -> the marker its tests must carry (None: tests/unit, which must carry none of them)
_LANE_OF_FOLDER = {
    "unit": None,
    "server": "server",
    "spark": "spark",
    "cluster": "cluster",
    "browser": "browser",
}


def _lane_error(item: pytest.Item) -> str | None:
    """Why the test sits in the wrong lane folder, or None."""
    try:
        parts = Path(str(item.path)).resolve().relative_to(REPO / "tests").parts
    except ValueError:
        return None  # a test outside the tree (e.g. a temporary file given on the command line)
    if len(parts) < 2 or parts[0] not in _LANE_OF_FOLDER:
        return f"{item.nodeid}: a test module belongs in one of tests/{{{','.join(_LANE_OF_FOLDER)}}}/"
    needed = parts[0]
    marks = {m for m in LANE_MARKERS if item.get_closest_marker(m) is not None}
    if _LANE_OF_FOLDER[needed] is None and marks:
        return (
            f"{item.nodeid}: in tests/unit but uses {', '.join(sorted(marks))} fixtures; move it to that lane"
        )
    if _LANE_OF_FOLDER[needed] is not None and _LANE_OF_FOLDER[needed] not in marks:
        return f"{item.nodeid}: in tests/{needed} but uses no {_LANE_OF_FOLDER[needed]} fixture"
    return None


# The whole suite runs on two processes (scripts/test: pytest-xdist `--dist loadscope` with the scheduler
# below). The tests that need the scratch server, Spark, the cluster or the browser form two units of work,
# each run in order by one process: "jvm" (tests/spark, tests/cluster, tests/browser, the service's
# tests/server/app, and the few tests/server tests that take the `spark` fixture, named here) holds the one
# Spark session; "server" (the rest of tests/server) needs only a scratch server of its own. Each unit test
# is a unit of its own, for whichever process is free.
_JVM_FOLDERS = ("tests/spark/", "tests/cluster/", "tests/browser/", "tests/server/app/")
_SPARK_IN_SERVER = (
    "tests/server/test_partial_holdback.py::test_held_back_changes_follow_the_row_across_partitions_on_both_engines",
    "tests/server/test_savepoints.py::test_both_engines_write_the_same_bytes_across_partitions",
)


def _scheduling_unit(nodeid: str) -> str:
    if nodeid.startswith("tests/unit/"):
        return nodeid
    if nodeid.startswith(_JVM_FOLDERS) or nodeid.startswith(_SPARK_IN_SERVER):
        return "jvm"
    return "server"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class LaneScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scheduling_unit(nodeid)

    return LaneScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests that start a server, Spark or a browser; refuse a test in the wrong lane folder;
    deselect (not skip) the tests whose outside material was not given, and count them for the summary."""
    for item in items:
        for fixture, marker in _MARK_BY_FIXTURE.items():
            if fixture in getattr(item, "fixturenames", ()) and item.get_closest_marker(marker) is None:
                item.add_marker(marker)
    misplaced = [error for error in map(_lane_error, items) if error]
    misplaced += [
        f"{item.nodeid}: uses Spark but would run in the suite's server process: name it in _SPARK_IN_SERVER"
        for item in items
        if item.get_closest_marker("spark") and _scheduling_unit(item.nodeid) == "server"
    ]
    if misplaced:
        raise pytest.UsageError("tests in the wrong lane folder:\n  " + "\n  ".join(misplaced))
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


def pytest_configure(config: pytest.Config) -> None:
    # Before any test module imports it: every execute_plan on a scratch server is checked both ways.
    import rollback.target.execute

    if not hasattr(rollback.target.execute.execute_plan, "unchecked"):
        rollback.target.execute.execute_plan = both_ways.checked_execute_plan(
            rollback.target.execute.execute_plan
        )


@pytest.fixture(autouse=True)
def _both_ways_test(request: pytest.FixtureRequest) -> None:
    both_ways.CURRENT_TEST[0] = request.node


def pytest_sessionfinish(session: pytest.Session) -> None:
    if hasattr(session.config, "workeroutput"):  # a pytest-xdist worker: its counts go to the controller
        session.config.workeroutput["both_ways"] = dict(both_ways.COUNTS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    both_ways.COUNTS.update(getattr(node, "workeroutput", {}).get("both_ways", {}))


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    if both_ways.summary():
        terminalreporter.write_line(both_ways.summary())
    # Without the stash (a run that collected nothing of its own, e.g. a pytest-xdist controller): no count.
    not_given = {marker: 0 for marker, (_, given, _) in _OUTSIDE.items() if not given}
    for marker, count in config.stash.get(_LEFT_OUT, not_given).items():
        what, _, variable = _OUTSIDE[marker]
        # count 0: none of the selected tests needed it (a subset was run); a count would read "the 0 tests"
        which = {0: "the tests that need it", 1: "the 1 test that needs it"}.get(
            count, f"the {count} tests that need it"
        )
        terminalreporter.write_line(f"{what}: not given (set {variable}=DIR to run {which})")


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
            both_ways.register(servers[key])
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


@pytest.fixture(scope="session")
def corpus_file(tmp_path_factory):
    """(rel path, lane = the vendored copy, else the extended one) -> a local binlog file, gunzipped when
    the corpus keeps it compressed."""
    unzipped = tmp_path_factory.mktemp("corpus-gunzipped")

    def get(rel: str, lane: Corpus | None = None) -> Path:
        path = lane.path(rel) if lane else locate(rel)
        if path.suffix == ".gz":
            target = unzipped / (lane.lane if lane else "any") / path.name[: -len(".gz")]
            target.parent.mkdir(exist_ok=True)
            if not target.exists():
                target.write_bytes(gzip.decompress(path.read_bytes()))
            return target
        return path

    return get
