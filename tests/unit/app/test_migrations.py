"""Migrations: upgrade from empty and downgrade to base on SQLite and on the scratch MariaDB; the models
match the migrations (autogenerate finds nothing); `mysql-rollback db upgrade` does the same."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support import REPO
from tests.support.app import run_db_command
from tests.support.migrations import MIGRATIONS_HEAD as HEAD
from tests.support.migrations import check_migrations_round_trip


def test_sqlite_upgrade_head_downgrade_base_and_models_match(tmp_path):
    check_migrations_round_trip(f"sqlite:///{tmp_path / 'jobs.sqlite3'}")


@pytest.mark.slow
def test_db_upgrade_command_creates_the_job_database(tmp_path):
    data = str(tmp_path / "data")
    run = run_db_command(REPO, "upgrade", MYSQL_ROLLBACK_DATA_DIR=data)
    assert run.returncode == 0, run.stderr
    assert f"revision {HEAD}" in run.stdout
    assert (tmp_path / "data" / "jobs.sqlite3").exists()
    down = run_db_command(REPO, "downgrade", "base", MYSQL_ROLLBACK_DATA_DIR=data)
    assert down.returncode == 0 and "base (empty)" in down.stdout, down.stderr
    servers = '{"p": "mysql://u:secret-pw@h:3306/", "bad": 3}'
    bad = run_db_command(REPO, "upgrade", MYSQL_ROLLBACK_DATA_DIR=data, MYSQL_ROLLBACK_SERVERS=servers)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and "secret-pw" not in bad.stderr
    assert "server bad" in bad.stderr


@pytest.mark.slow
def test_plain_alembic_uses_the_service_settings(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYSQL_ROLLBACK_")}
    env["MYSQL_ROLLBACK_DATA_DIR"] = str(tmp_path / "fresh")
    for args in (["upgrade", "head"], ["downgrade", "base"]):
        run = subprocess.run(
            [sys.executable, "-m", "alembic", *args], cwd=REPO, env=env, capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
    assert (tmp_path / "fresh" / "jobs.sqlite3").exists()
