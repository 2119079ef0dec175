"""The README's test command fails when a test fails and when no test is collected (.ci/run calls it)."""

from __future__ import annotations

import subprocess

from tests.support import REPO


def _run_test_command(*args: str) -> int:
    return subprocess.run(
        [str(REPO / "scripts" / "test"), "-q", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    ).returncode


def test_ci_runs_exactly_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text()
    assert "exec ./scripts/test\n" in ci
    assert "./scripts/test" in (REPO / "README.md").read_text()


def test_test_command_fails_on_a_failing_test(tmp_path):
    (tmp_path / "test_fails.py").write_text("def test_fails():\n    assert 1 == 2\n")
    assert _run_test_command("--rootdir", str(tmp_path), str(tmp_path / "test_fails.py")) == 1


def test_test_command_fails_when_no_test_is_collected(tmp_path):
    (tmp_path / "test_empty.py").write_text("")
    assert _run_test_command("--rootdir", str(tmp_path), str(tmp_path / "test_empty.py")) == 5
