"""What a DBA's terminal shows: on a terminal, a progress display with its phases (planning,
decoding+rendering, merging, applying), bytes, events, rows and an ETA, and never a line of the JVM's
logging (log4j, WARN) unless --debug, which lets them through; off a terminal, nothing but the
one-line messages."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.support import REPO
from tests.support.terminal import run_on_terminal

DB = "term"
JVM_LINE = re.compile(r"log4j|SLF4J|\bWARN\b|\bINFO\b|NativeCodeLoader|Setting default log level|Spark")


@pytest.fixture(scope="module")
def workload(scratch_server):
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(200))",
            *(
                f"INSERT INTO {DB}.t VALUES "
                + ", ".join(f"({b * 100 + i}, REPEAT('x', 150))" for i in range(100))
                for b in range(12)
            ),
        ]
    )
    return scratch_server.run_sql(
        [f"DELETE FROM {DB}.t WHERE id >= {b * 100} AND id < {b * 100 + 100}" for b in range(12)]
    )


def _env(tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MYSQL_ROLLBACK_", "MYSQL_PWD"))}
    env["HOME"] = str(tmp_path)
    env["MYSQL_ROLLBACK_DATA_DIR"] = str(tmp_path / "data")
    return env


def _args(server, rng, *extra: str) -> list[str]:
    return [
        "flashback",
        *map(str, rng.files),
        "--start-position",
        str(rng.start_position),
        "--stop-position",
        str(rng.stop_position),
        "--schema-dsn",
        server.dsn,
        *extra,
    ]


def test_the_terminal_shows_phases_and_no_jvm_log_line(scratch_server, workload, tmp_path):
    """Spark through the CLI (several partitions), executed as a dry run: the terminal shows every phase
    and no JVM line; standard output is the script."""
    code, out, terminal = run_on_terminal(
        _args(
            scratch_server,
            workload,
            "--engine",
            "spark",
            "--partition-size",
            "64k",
            "--execute",
            "--target",
            scratch_server.dsn,
        ),
        _env(tmp_path),
    )
    assert code == 0, terminal
    assert out.count("INSERT INTO `term`.`t`") == 1200, (out[:3000], terminal[-3000:])
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", terminal)  # without the terminal's control sequences
    for phase in ("planning", "decoding+rendering", "merging", "applying"):
        assert phase in text, text
    assert "1,200 rows" in text and "1,200/1,200 statements" in text and "eta" in text, text
    assert re.search(r"\d+ partition\(s\), spark", text), text
    leaked = [
        line for line in text.splitlines() if JVM_LINE.search(line) and "partition(s), spark" not in line
    ]
    assert not leaked, leaked


def test_off_a_terminal_nothing_but_the_result(scratch_server, workload, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rollback.cli.commands",
            *_args(scratch_server, workload, "--engine", "local"),
        ],
        cwd=REPO,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(r"mysql-rollback: engine local \([^\n]*\), \d+ partition\(s\)\n", proc.stderr), (
        proc.stderr
    )
    assert proc.stdout.count("INSERT INTO `term`.`t`") == 1200


def test_debug_lets_the_jvm_log_lines_through(scratch_server, workload, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rollback.cli.commands",
            *_args(scratch_server, workload, "--engine", "spark", "--partition-size", "64k", "--debug"),
        ],
        cwd=REPO,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("INSERT INTO `term`.`t`") == 1200
    assert [line for line in proc.stderr.splitlines() if JVM_LINE.search(line)], proc.stderr


def _plain(terminal: str) -> str:
    """The terminal's text without its control sequences and carriage returns."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", terminal).replace("\r", "")


def test_execute_on_a_terminal_says_what_it_restored_skipped_and_committed(scratch_server, tmp_path):
    """--execute --commit with a row taken again since the incident: words on the terminal (per table,
    the skipped row with its key, committed), the JSON line with --json."""
    db = "term_sum"
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(10))",
            f"CREATE TABLE {db}.u (id INT PRIMARY KEY, n INT)",
            f"INSERT INTO {db}.t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')",
            f"INSERT INTO {db}.u VALUES (1, 10)",
        ]
    )
    rng = scratch_server.run_sql([f"DELETE FROM {db}.t WHERE id <= 3", f"UPDATE {db}.u SET n = 0"])
    scratch_server.run_sql(f"INSERT INTO {db}.t VALUES (2, 'again')")  # after the incident: must stay
    execute = [
        "--engine",
        "local",
        "-o",
        str(tmp_path / "r.sql"),
        "--execute",
        "--target",
        scratch_server.dsn,
    ]
    execute += ["--on-conflict", "skip"]
    code, out, terminal = run_on_terminal(_args(scratch_server, rng, *execute, "--json"), _env(tmp_path))
    assert code == 0, terminal
    lines = [line for line in _plain(terminal).splitlines() if line.startswith("{")]
    assert lines, terminal
    facts = json.loads(lines[-1])["execution"]
    assert facts["dry_run"] is True and facts["skipped"] == 1 and facts["rows_affected"] == 3
    code, out, terminal = run_on_terminal(_args(scratch_server, rng, *execute, "--commit"), _env(tmp_path))
    assert code == 0, terminal
    text = _plain(terminal)
    assert f"restored 3 row(s) in 2 table(s): {db}.t 2, {db}.u 1" in text, text
    assert "skipped 1 row(s), left as the target holds them (--on-conflict skip):" in text, text
    assert f"{db}.t INSERT INTO `{db}`.`t`" in text and "(2,'b')" in text.replace(" ", ""), text
    assert "committed on the target" in text and '"execution"' not in text, text
    assert scratch_server.query(f"SELECT id, v FROM {db}.t ORDER BY id") == [
        (1, "a"),
        (2, "again"),
        (3, "c"),
        (4, "d"),
    ]
