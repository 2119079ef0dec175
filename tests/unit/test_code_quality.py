"""ruff and mypy run inside the suite so they cannot rot."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.support import REPO


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True)


def test_ruff_finds_nothing():
    result = _run("ruff", "check", "rollback", "app", "tests", "bench", "tools")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean():
    result = _run("ruff", "format", "--check", "rollback", "app", "tests", "bench", "tools")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_passes_on_the_engine_and_the_service():
    result = _run("mypy", "rollback", "app", "tools")
    assert result.returncode == 0, result.stdout + result.stderr


def test_engine_never_imports_the_service():
    offenders = [
        str(path.relative_to(REPO))
        for path in (REPO / "rollback").rglob("*.py")
        if any(
            line.lstrip().startswith(("import app", "from app"))
            for line in path.read_text(encoding="utf-8").splitlines()
        )
    ]
    assert offenders == []


def test_test_modules_import_nothing_of_other_test_modules():
    """Shared fixtures and helpers live in tests/conftest.py and tests/support/; a test module that
    imported another would run that module's fixtures and tests a second time under another name."""
    offenders = []
    for path in (REPO / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                if (name == "tests" or name.startswith("tests.")) and not (
                    name == "tests.support" or name.startswith("tests.support.")
                ):
                    offenders.append(f"{path.relative_to(REPO)}: {name}")
    assert offenders == []


def test_servers_jvms_and_browsers_start_only_in_the_fixtures_the_markers_come_from():
    """tests/conftest.py derives the server, spark and browser markers from scratch_server_factory,
    spark and browser: a test that started one another way would slip into the fast lane."""
    owners = {
        "ScratchServer(": "tests/conftest.py",
        "get_spark(": "tests/support/spark.py",
        "chromium.launch(": "tests/support/browser.py",
    }
    found = [
        f"{path.relative_to(REPO)}: {call}"
        for path in (REPO / "tests").rglob("*.py")
        if path != Path(__file__).resolve()  # names them above
        for call, owner in owners.items()
        if call in path.read_text(encoding="utf-8") and str(path.relative_to(REPO)) != owner
    ]
    assert found == []
