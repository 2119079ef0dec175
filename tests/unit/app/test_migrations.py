"""Migrations: upgrade from empty and downgrade to base on SQLite and on the scratch MariaDB; the models
match the migrations (autogenerate finds nothing); `mysql-rollback db upgrade` does the same."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect

from app import db
from app.models import Base

HEAD = ScriptDirectory(str(db.migrations_dir())).get_current_head()

REPO = Path(__file__).resolve().parents[2]
TABLES = {"jobs", "executions", "uploads", "api_tokens"}


def _check_round_trip(url: str) -> None:
    db.upgrade(url)
    engine = create_engine(url)
    try:
        assert TABLES <= set(inspect(engine).get_table_names())
        with engine.connect() as conn:
            diff = compare_metadata(
                MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata
            )
        assert diff == []
        assert db.current_revision(url) == HEAD
        db.downgrade(url, "base")
        assert set(inspect(engine).get_table_names()) & TABLES == set()
        assert db.current_revision(url) is None
        db.upgrade(url)  # and up again from base
        assert TABLES <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_sqlite_upgrade_head_downgrade_base_and_models_match(tmp_path):
    _check_round_trip(f"sqlite:///{tmp_path / 'jobs.sqlite3'}")


@pytest.mark.server
def test_mariadb_upgrade_head_downgrade_base_and_models_match(scratch_server):
    scratch_server.query("DROP DATABASE IF EXISTS jobstore")
    scratch_server.query("CREATE DATABASE jobstore CHARACTER SET utf8mb4")
    url = (
        f"mysql+pymysql://{scratch_server.user}:{scratch_server.password}@{scratch_server.host}:"
        f"{scratch_server.port}/jobstore?charset=utf8mb4"
    )
    _check_round_trip(url)


def test_db_upgrade_command_creates_the_job_database(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYSQL_ROLLBACK_")}
    env["MYSQL_ROLLBACK_DATA_DIR"] = str(tmp_path / "data")
    run = subprocess.run(
        [sys.executable, "-m", "rollback.cli", "db", "upgrade"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert f"revision {HEAD}" in run.stdout
    assert (tmp_path / "data" / "jobs.sqlite3").exists()
    down = subprocess.run(
        [sys.executable, "-m", "rollback.cli", "db", "downgrade", "base"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert down.returncode == 0 and "base (empty)" in down.stdout, down.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "rollback.cli", "db", "upgrade"],
        cwd=REPO,
        env={**env, "MYSQL_ROLLBACK_SERVERS": '{"p": "mysql://u:secret-pw@h:3306/", "bad": 3}'},
        capture_output=True,
        text=True,
    )
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and "secret-pw" not in bad.stderr
    assert "server bad" in bad.stderr


def test_plain_alembic_uses_the_service_settings(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYSQL_ROLLBACK_")}
    env["MYSQL_ROLLBACK_DATA_DIR"] = str(tmp_path / "fresh")
    for args in (["upgrade", "head"], ["downgrade", "base"]):
        run = subprocess.run(
            [sys.executable, "-m", "alembic", *args], cwd=REPO, env=env, capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
    assert (tmp_path / "fresh" / "jobs.sqlite3").exists()
