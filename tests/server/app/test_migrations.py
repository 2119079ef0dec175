"""Migrations on the scratch MariaDB: upgrade to head, downgrade to base, the models match."""

from __future__ import annotations

from tests.support.migrations import check_migrations_round_trip


def test_mariadb_upgrade_head_downgrade_base_and_models_match(scratch_server):
    scratch_server.query("DROP DATABASE IF EXISTS jobstore")
    scratch_server.query("CREATE DATABASE jobstore CHARACTER SET utf8mb4")
    url = (
        f"mysql+pymysql://{scratch_server.user}:{scratch_server.password}@{scratch_server.host}:"
        f"{scratch_server.port}/jobstore?charset=utf8mb4"
    )
    check_migrations_round_trip(url)
