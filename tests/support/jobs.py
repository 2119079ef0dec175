"""Running a job and comparing its outputs, and the two big workloads the engine comparisons share:
one huge transaction and the mixed workload. Both workload fixtures are session-scoped: the tests only
read their binlog ranges, and a test that applies a rollback script restores the tables it changed."""

from __future__ import annotations

import random
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rollback import Filters, Options, RangeSpec, Report, generate
from tests.support.restore import snapshot
from tests.support.workloads import TABLES, workload

UNSPLIT = 1 << 40  # a partition size no test range reaches: one partition


@dataclass
class Output:
    script: bytes
    plan: bytes
    changes: bytes
    report: Report

    def same(self, other: Output) -> bool:
        return (self.script, self.plan, self.changes) == (other.script, other.plan, other.changes)


def run(rng: RangeSpec, out_dir: Path, name: str, plan: bool = True, **options: Any) -> Output:
    """The job's outputs. Without a plan, statements take the generated full-image path (no checks)."""
    out = out_dir / name
    out.mkdir()
    plan_path = out / "p.jsonl" if plan else None
    report = generate(
        rng, Filters(), Options(**{"engine": "local", **options}), out / "r.sql", plan_path, out / "c.jsonl"
    )
    return Output(
        (out / "r.sql").read_bytes(),
        (out / "p.jsonl").read_bytes() if plan else b"",
        (out / "c.jsonl").read_bytes(),
        report,
    )


def same_without_plan(without: Output, with_plan: Output) -> bool:
    return (without.script, without.changes) == (with_plan.script, with_plan.changes)


def range_of(binlog_range: Any) -> RangeSpec:
    return RangeSpec(
        [str(f) for f in binlog_range.files], binlog_range.start_position, binlog_range.stop_position
    )


def apply_script(server: Any, script: bytes) -> None:
    done = subprocess.run(
        [
            "mariadb",
            "--no-defaults",
            "-h",
            "127.0.0.1",
            "-P",
            str(server.port),
            "-u",
            server.user,
            f"-p{server.password}",
        ],
        input=script,
        capture_output=True,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")


def sakila(corpus_file) -> Path:
    return corpus_file("osheroff__mysql-binlog-connector-java/src/test/resources/mysql-bin.sakila.gz")


HUGE_ROWS = 100_000


def bulk_job(scratch_server: Any, database: str, rows: int) -> dict[str, Any]:
    """A job body whose range inserts `rows` rows of 300 bytes into `database`.t (about 12 MB for 40,000:
    the engine reports progress, where a cancel is noticed, every MB); each call adds rows after the last."""
    scratch_server.run_sql(
        [
            f"CREATE DATABASE IF NOT EXISTS {database}",
            f"CREATE TABLE IF NOT EXISTS {database}.t (id INT PRIMARY KEY, v TEXT)",
        ]
    )
    base = scratch_server.query(f"SELECT IFNULL(MAX(id), 0) FROM {database}.t")[0][0]
    done = scratch_server.run_sql(
        [
            f"INSERT INTO {database}.t SELECT {base} + seq, REPEAT(CHAR(65 + seq % 26), 300) FROM seq_1_to_{rows}"
        ],
        database=database,
    )
    return {
        "server": "scratch",
        "range": {
            "start_file": done.start_file,
            "start_position": done.start_position,
            "stop_file": done.stop_file,
            "stop_position": done.stop_position,
        },
    }


@pytest.fixture(scope="session")
def huge_delete(scratch_server):
    """A table of 100k mixed-type rows, then `DELETE FROM` it in one transaction: (range, tables, before)."""
    db = "huge"
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"""CREATE TABLE {db}.orders (id INT PRIMARY KEY, customer BIGINT UNSIGNED, amount DECIMAL(12,2),
                note VARCHAR(60) CHARACTER SET utf8mb4, created DATETIME(6), state ENUM('new','paid','sent'),
                doc TEXT, flags BLOB)""",
            f"""INSERT INTO {db}.orders SELECT seq, seq * 7919, seq / 100, CONCAT('order ', seq, ' ü'),
                TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND, 1 + seq % 3,
                IF(seq % 5 = 0, NULL, REPEAT('x', seq % 40)), UNHEX(HEX(seq)) FROM seq_1_to_{HUGE_ROWS}""",
        ],
        database="mysql",
    )
    tables = [f"{db}.orders"]
    before = snapshot(scratch_server, tables)
    rng = scratch_server.run_sql([f"DELETE FROM {db}.orders"])
    return rng, tables, before


@pytest.fixture(scope="session")
def mixed(scratch_server):
    """The flashback issue's mixed workload (every column type, explicit transactions, key changes,
    tables without keys): (range, tables, snapshot before it)."""
    db = "engines"
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}"])
    scratch_server.run_sql([ddl.format(db=db) for ddl in TABLES.values()])
    scratch_server.run_sql(workload(random.Random(11), db, 80, 10_000))
    tables = [f"{db}.{t}" for t in TABLES]
    before = snapshot(scratch_server, tables)
    rng = scratch_server.run_sql(
        [
            "BEGIN",
            *workload(random.Random(12), db, 150, 20_000),
            "COMMIT",
            *workload(random.Random(13), db, 150, 30_000),
            "BEGIN",
            f"UPDATE {db}.pk SET amount = amount * 2",
            f"DELETE FROM {db}.nopk WHERE a < 3",
            "COMMIT",
        ]
    )
    return rng, tables, before
