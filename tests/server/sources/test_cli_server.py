"""`flashback --server` and `sql --server`: the script generated from a range read over the replication
protocol equals, byte for byte (header included), the one generated from the server's own binlog
files on disk, by file+position, by MariaDB GTID range and by time window; a bad server range is one
line on stderr, exit code 2, and no script.

Every comparison gives the files run the range the server run resolved to: the same files, the
same positions (a GTID or time range stops at the end of the log when the job starts), the same
datetimes in UTC, and the same server as its schema source (`--schema-dsn`; `--server` takes the
schema from its server when no --schema-* is given).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support.sources import ENGINE, run_cli_in_process


def same_script(capsys, command: str, files_args: list[str], server_args: list[str], dsn: str) -> str:
    """Run `command` on the files and with --server; assert both succeed with the same script; return it."""
    code, from_files, err = run_cli_in_process(capsys, command, *files_args, "--schema-dsn", dsn, *ENGINE)
    assert code == 0, err
    code, from_server, err = run_cli_in_process(capsys, command, *server_args, *ENGINE)
    assert code == 0, err
    assert _until_now(from_server) == _until_now(from_files)
    return from_server


def _until_now(script: str) -> str:
    """The script without the end of the binlog its schema check read up to: the server may write
    between two runs (MariaDB's binlog checkpoint after a rotation), and each run reads up to its now."""
    return re.sub(r"(?m)^(-- schema: .*) up to \S+$", r"\1", script)


def statements(script: str) -> list[str]:
    return [line for line in script.splitlines() if line.startswith(("INSERT", "UPDATE", "DELETE"))]


def test_by_file_and_position_across_a_rotation(scratch_server, table, tmp_path: Path, capsys):
    scratch_server.run_sql(f"INSERT INTO {table} VALUES (1, 'before the range')")
    done = scratch_server.run_sql(
        [
            f"INSERT INTO {table} VALUES (2, 'two'), (3, 'three')",
            f"UPDATE {table} SET v = 'one, changed' WHERE id = 1",
            "FLUSH BINARY LOGS",
            "BEGIN",
            f"DELETE FROM {table} WHERE id = 2",
            f"INSERT INTO {table} VALUES (4, 'four')",
            "COMMIT",
            f"UPDATE {table} SET v = CONCAT(v, '!')",
        ]
    )
    scratch_server.run_sql(f"DELETE FROM {table} WHERE id = 3")  # after the range
    assert done.start_file != done.stop_file and done.start_position > 4
    positions = ["--start-position", str(done.start_position), "--stop-position", str(done.stop_position)]
    files_args = [*map(str, done.files), *positions]
    server_args = [
        *("--server", scratch_server.dsn, "--start-file", done.start_file, "--stop-file", done.stop_file),
        *positions,
        *("--spool", str(tmp_path / "spool"), "--server-id", "4000000001"),
    ]
    script = same_script(capsys, "flashback", files_args, server_args, scratch_server.dsn)
    name = f"`{table.replace('.', '`.`')}`"
    # newest first: UPDATE x3, DELETE + INSERT, UPDATE, DELETE x2
    assert len(statements(script)) == 3 + 2 + 1 + 2
    assert f"files {done.start_file}, {done.stop_file}; start position {done.start_position}" in script
    # row 1 was inserted before the range, row 3 deleted after it: neither is reversed
    assert f"DELETE FROM {name} WHERE `id`=1;" not in script
    assert [line for line in statements(script) if line.startswith("INSERT")] == [
        f"INSERT INTO {name} (`id`, `v`) VALUES (2, 'two');"
    ]
    forward = same_script(capsys, "sql", files_args, server_args, scratch_server.dsn)  # spool reused
    assert len(statements(forward)) == len(statements(script))
    spooled = (tmp_path / "spool").rglob("mysql-bin.*")
    assert sorted(p.name for p in spooled if not p.name.endswith(".json")) == [
        done.start_file,
        done.stop_file,
    ]


def test_by_mariadb_gtid_range(scratch_server, table, monkeypatch, tmp_path: Path, capsys):
    done = scratch_server.run_sql(
        [f"INSERT INTO {table} VALUES ({i}, 'row {i}')" for i in range(1, 7)]  # one GTID each
    )
    domain, server_id, before = done.gtid_before.split("-")
    first, last = int(before) + 2, int(before) + 5  # rows 2..5: one transaction outside each end
    gtid = f"{domain}-{server_id}-{first}..{domain}-{server_id}-{last}"
    files_args = [*map(str, done.files), "--gtid", gtid, "--stop-position", str(done.stop_position)]
    # The password from $MYSQL_PWD, for the replication sessions and the schema's (no FULL metadata here).
    monkeypatch.setenv("MYSQL_PWD", scratch_server.password)
    no_password = f"mysql://{scratch_server.user}@{scratch_server.host}:{scratch_server.port}/"
    server_args = ["--server", no_password, "--gtid", gtid, "--spool", str(tmp_path / "spool")]
    script = same_script(capsys, "flashback", files_args, server_args, scratch_server.dsn)
    deleted = [line for line in statements(script) if line.startswith("DELETE")]
    assert sorted(deleted) == sorted(
        f"DELETE FROM `sources`.`{table.split('.')[1]}` WHERE `id`={i};" for i in (2, 3, 4, 5)
    )
    assert "`id`=1;" not in script and "`id`=6;" not in script


@pytest.fixture
def server_time_zone(scratch_server) -> Iterator[str]:
    """The scratch server's global time zone set to +03:00 for the test (a naive datetime given with
    --server is read in it), restored afterwards."""
    ((old,),) = scratch_server.query("SELECT @@global.time_zone")
    scratch_server.query("SET GLOBAL time_zone = '+03:00'")
    try:
        yield "+03:00"
    finally:
        scratch_server.query("SET GLOBAL time_zone = %s", [old])


def test_by_time_window_edges_are_exact(scratch_server, table, server_time_zone, tmp_path: Path, capsys):
    # A fresh file: the window's files are then the new file alone. Every event is placed at an
    # exact second with SET timestamp: one on each side of each edge of [start, stop).
    scratch_server.flush_binary_logs()
    scratch_server.wait_for_binlog_checkpoint()  # else it may land after the workload, past --stop-position
    ((now,),) = scratch_server.query("SELECT UNIX_TIMESTAMP()")
    # The window starts after the file was created (no older file can hold its events) and the last
    # events are at most 3 s ahead of the clock: the new file is still the last one when resolved.
    start, stop = int(now) + 1, int(now) + 3
    at = {start - 1: 1, start: 2, stop - 1: 3, stop: 4}  # timestamp -> the id inserted then
    workload = []
    for stamp, row in at.items():
        workload += [f"SET timestamp = {stamp}", f"INSERT INTO {table} VALUES ({row}, 'at {stamp}')"]
    workload += [f"SET timestamp = {stop - 1}", f"UPDATE {table} SET v = 'late' WHERE id = 1"]
    done = scratch_server.run_sql(workload)
    assert len(done.files) == 1

    # --server: naive datetimes in the server's time zone (+03:00), as the server shows them.
    # A new session starts in the global zone: FROM_UNIXTIME shows the server's local time.
    ((start_local, stop_local),) = scratch_server.query(
        "SELECT FROM_UNIXTIME(%s), FROM_UNIXTIME(%s)", [start, stop]
    )
    window_server = ["--start-datetime", str(start_local), "--stop-datetime", str(stop_local)]

    def utc(epoch: int) -> str:
        return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S+00:00")

    assert str(start_local) != utc(start)[:19]  # the zone matters

    window_files = ["--start-datetime", utc(start), "--stop-datetime", utc(stop)]
    files_args = [*map(str, done.files), *window_files, "--stop-position", str(done.stop_position)]
    server_args = ["--server", scratch_server.dsn, *window_server, "--spool", str(tmp_path / "spool")]
    script = same_script(capsys, "flashback", files_args, server_args, scratch_server.dsn)
    assert f"time [{utc(start)}, {utc(stop)})" in script
    name = f"`sources`.`{table.split('.')[1]}`"
    # newest first: the UPDATE at stop - 1, then the INSERTs at stop - 1 and at start
    assert statements(script) == [
        f"UPDATE {name} SET `v`='at {start - 1}' WHERE `id`=1;",
        f"DELETE FROM {name} WHERE `id`=3;",
        f"DELETE FROM {name} WHERE `id`=2;",
    ]


# --------------------------------------------------------------------------- refused ranges


@pytest.fixture
def make_user(scratch_server) -> Iterator:
    """make_user(grant) -> DSN of a new user holding only that global privilege (made outside the binlog)."""
    made: list[str] = []

    def make(grant: str) -> str:
        name, password = f"cli_{secrets.token_hex(4)}", secrets.token_hex(8)
        conn = scratch_server.connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SET SESSION sql_log_bin = 0")
                cur.execute(f"CREATE USER '{name}'@'%' IDENTIFIED BY '{password}'")
                made.append(name)
                cur.execute(f"GRANT {grant} ON *.* TO '{name}'@'%'")
        finally:
            conn.close()
        return f"mysql://{name}:{password}@{scratch_server.host}:{scratch_server.port}/"

    yield make
    conn = scratch_server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")
            for name in made:
                cur.execute(f"DROP USER IF EXISTS '{name}'@'%'")
    finally:
        conn.close()


def test_bad_server_ranges_are_one_line_and_no_script(
    scratch_server, table, make_user, tmp_path: Path, capsys
):
    done = scratch_server.run_sql(
        [f"INSERT INTO {table} VALUES (1, 'one')", f"UPDATE {table} SET v = 'uno' WHERE id = 1"]
    )
    file, start, stop = done.start_file, done.start_position, done.stop_position
    cases = {
        "stop before start": (
            scratch_server.dsn,
            ["--start-file", file, "--start-position", str(stop), "--stop-position", str(start)],
            "before it starts",
        ),
        "start not an event boundary": (
            scratch_server.dsn,
            ["--start-file", file, "--start-position", str(start + 1), "--stop-position", str(stop)],
            "is not the start of an event",
        ),
        "stop not an event boundary": (
            scratch_server.dsn,
            ["--start-file", file, "--start-position", str(start), "--stop-position", str(stop - 1)],
            "is inside an event",
        ),
        "no replication privilege at all": (
            make_user("SELECT"),
            ["--start-file", file, "--start-position", str(start), "--stop-position", str(stop)],
            "lacks the SUPER or BINLOG MONITOR privilege needed to read the binary log position",
        ),
        "no REPLICATION SLAVE": (
            make_user("BINLOG MONITOR"),
            ["--start-file", file, "--start-position", str(start), "--stop-position", str(stop)],
            "lacks the REPLICATION SLAVE privilege",
        ),
    }
    for command in ("flashback", "sql"):
        for case, (dsn, range_args, fragment) in cases.items():
            script = tmp_path / f"{command}-{case}.sql"
            spool = tmp_path / f"spool-{command}-{case}"
            code, out, err = run_cli_in_process(
                capsys,
                command,
                "--server",
                dsn,
                *range_args,
                "--spool",
                str(spool),
                "-o",
                str(script),
                *ENGINE,
            )
            assert code == 2, (case, err)
            assert out == "" and not script.exists(), case
            assert err.count("\n") == 1 and err.startswith("mysql-rollback: error: "), (case, err)
            assert fragment in err, (case, err)
            assert not any(p.name.startswith("mysql-bin.") for p in spool.rglob("*")), (case, err)
