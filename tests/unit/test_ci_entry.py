"""The README's test command fails when a test fails and when no test is collected (.ci/run calls it);
its fast lane selects no test that needs a server, a JVM or a browser, and leaves out only those marked slow; a test in the wrong lane folder
fails collection."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO

LANE_MARKERS = {"server", "spark", "cluster", "browser"}
# Collects nothing of its own: writes "node id<TAB>markers" of every collected test to $LANES_OUT.
MARKER_DUMP = """
import os

def pytest_collection_finish(session):
    with open(os.environ["LANES_OUT"], "w") as out:
        for item in session.items:
            marks = sorted({m.name for m in item.iter_markers()})
            out.write(item.nodeid + "\\t" + ",".join(marks) + "\\n")
"""


def _run_test_command(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(REPO / "scripts" / "test"), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_ci_runs_exactly_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text()
    assert "exec ./scripts/test\n" in ci
    readme = (REPO / "README.md").read_text()
    assert "./scripts/test" in readme and "./scripts/test --fast" in readme
    assert "./scripts/test --fast" in (REPO / "CONTRIBUTING.md").read_text()


@pytest.mark.slow
def test_test_command_fails_on_a_failing_test(tmp_path):
    (tmp_path / "test_fails.py").write_text("def test_fails():\n    assert 1 == 2\n")
    args = ("-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path / "test_fails.py"))
    assert _run_test_command(*args).returncode == 1


@pytest.mark.slow
@pytest.mark.parametrize("lane", [(), ("--fast",)], ids=["full", "fast"])
def test_test_command_fails_when_no_test_is_collected(tmp_path, lane):
    (tmp_path / "test_empty.py").write_text("")
    args = ("-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path / "test_empty.py"))
    assert _run_test_command(*lane, *args).returncode == 5


@pytest.mark.slow
def test_the_fast_lane_selects_every_unit_test_and_none_that_needs_a_server_jvm_or_browser(tmp_path):
    (tmp_path / "marker_dump.py").write_text(MARKER_DUMP)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), LANES_OUT=str(tmp_path / "lanes.tsv"))
    done = _run_test_command(
        "--fast", "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "marker_dump", env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    collected = [line.split("\t") for line in (tmp_path / "lanes.tsv").read_text().splitlines()]
    assert len(collected) > 800
    for node_id, marks in collected:
        assert node_id.startswith("tests/unit/"), node_id
        assert not (LANE_MARKERS | {"slow"}) & set(marks.split(",")), (node_id, marks)
    # What it leaves out of tests/unit is exactly what is marked slow (the full suite runs those).
    env["LANES_OUT"] = str(tmp_path / "unit.tsv")
    whole = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "marker_dump",
        ]
        + ["tests/unit"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert whole.returncode == 0, whole.stdout + whole.stderr
    unit = dict(line.split("\t") for line in (tmp_path / "unit.tsv").read_text().splitlines())
    left_out = {node_id for node_id in unit if node_id not in dict(collected)}
    assert left_out and all("slow" in unit[node_id].split(",") for node_id in left_out), left_out


def test_a_unit_test_that_starts_a_server_fails_collection_loudly():
    # Named outside test_*.py so that no concurrent run discovers it; given explicitly, it is collected.
    # ruff leaves the name out (pyproject.toml): test_code_quality's run beside it never reads it.
    probe = REPO / "tests" / "unit" / f"probe_lane_{os.getpid()}.py"
    probe.write_text("def test_probe(scratch_server):\n    pass\n")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", str(probe)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        probe.unlink()
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert f"{Path(probe).name}::test_probe: in tests/unit but uses server fixtures" in done.stderr
