"""Every way a fetch can be refused gives one clear line on stderr, exit code 2, and no output:
no stdout, no spool directory."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rollback.base.errors import RangeError
from rollback.binlog.gtid import MariaGtidPos, MariaGtidRange
from rollback.sources.ranges import maria_gtid_range
from rollback.sources.server import BinlogServer


@pytest.fixture
def make_user(scratch_server) -> Iterator:
    """make_user(*grants) -> DSN of a new user holding only those global privileges."""
    made: list[str] = []

    def make(*grants: str) -> str:
        name, password = f"src_{secrets.token_hex(4)}", secrets.token_hex(8)
        conn = scratch_server.connect()
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute(f"CREATE USER '{name}'@'%' IDENTIFIED BY '{password}'")
            for grant in grants:
                cur.execute(f"GRANT {grant} ON *.* TO '{name}'@'%'")
        conn.close()
        made.append(name)
        return f"mysql://{name}:{password}@{scratch_server.host}:{scratch_server.port}/"

    yield make
    conn = scratch_server.connect()
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        for name in made:
            cur.execute(f"DROP USER '{name}'@'%'")
    conn.close()


def assert_refused(result: tuple[int, str, str], spool: Path, *fragments: str) -> str:
    code, out, err = result
    assert code == 2, err
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("mysql-rollback: error: "), err
    for fragment in fragments:
        assert fragment in err, err
    assert not spool.exists()
    return err


def test_a_user_without_replication_privileges_is_told_which_to_grant(
    scratch_server, make_user, fetch_cli, tmp_path: Path
):
    dsn = make_user("SELECT")
    spool = tmp_path / "spool"
    start = scratch_server.binlog_files()[-1].name
    result = fetch_cli("--server", dsn, "--start-file", start, "--spool", str(spool))
    assert_refused(
        result, spool, "BINLOG MONITOR privilege needed to", "needs REPLICATION SLAVE and BINLOG MONITOR"
    )


def test_a_user_that_may_list_logs_but_not_replicate_is_told_replication_slave(
    scratch_server, make_user, fetch_cli, tmp_path: Path
):
    dsn = make_user("BINLOG MONITOR")
    spool = tmp_path / "spool"
    start = scratch_server.binlog_files()[-1].name
    result = fetch_cli("--server", dsn, "--start-file", start, "--spool", str(spool))
    assert_refused(result, spool, "lacks the REPLICATION SLAVE privilege")


def test_a_wrong_password_is_one_line(scratch_server, fetch_cli, tmp_path: Path):
    spool = tmp_path / "spool"
    dsn = f"mysql://{scratch_server.user}:wrong@{scratch_server.host}:{scratch_server.port}/"
    result = fetch_cli("--server", dsn, "--start-file", "mysql-bin.000001", "--spool", str(spool))
    err = assert_refused(result, spool, "access denied")
    assert "wrong" not in err


def test_a_start_position_that_is_not_an_event_boundary(scratch_server, table, fetch_cli, tmp_path: Path):
    rng = scratch_server.run_sql(f"INSERT INTO {table} VALUES (1, 'x')")
    spool = tmp_path / "spool"
    result = fetch_cli(
        "--server", scratch_server.dsn, "--start-file", rng.start_file,
        "--start-position", str(rng.start_position + 3), "--spool", str(spool),
    )  # fmt: skip
    assert_refused(
        result, spool, f"position {rng.start_position + 3} in {rng.start_file}", "not the start of an event"
    )


def test_a_stop_position_inside_an_event(scratch_server, table, fetch_cli, tmp_path: Path):
    rng = scratch_server.run_sql(f"INSERT INTO {table} VALUES (1, 'x')")
    spool = tmp_path / "spool"
    result = fetch_cli(
        "--server", scratch_server.dsn, "--start-file", rng.start_file,
        "--start-position", str(rng.start_position), "--stop-file", rng.stop_file,
        "--stop-position", str(rng.stop_position - 3), "--spool", str(spool),
    )  # fmt: skip
    assert_refused(result, spool, f"stop position {rng.stop_position - 3}", "inside an event")


def test_a_stop_before_the_start(scratch_server, table, fetch_cli, tmp_path: Path):
    rng = scratch_server.run_sql(f"INSERT INTO {table} VALUES (1, 'x')")
    spool = tmp_path / "spool"
    result = fetch_cli(
        "--server", scratch_server.dsn, "--start-file", rng.stop_file,
        "--start-position", str(rng.stop_position), "--stop-position", str(rng.start_position),
        "--spool", str(spool),
    )  # fmt: skip
    assert_refused(result, spool, "before it starts")


def test_a_server_logging_statements_is_refused(scratch_server_factory, fetch_cli, tmp_path: Path):
    server = scratch_server_factory(binlog_format="STATEMENT")
    spool = tmp_path / "spool"
    start = server.binlog_files()[-1].name
    result = fetch_cli("--server", server.dsn, "--start-file", start, "--spool", str(spool))
    assert_refused(result, spool, "binlog_format=STATEMENT", "needs ROW events")


def _purge(server, purged: str, kept: str) -> None:
    """PURGE BINARY LOGS TO `kept` until `purged` is gone: MariaDB keeps a file until its
    transactions are checkpointed, which waits for InnoDB's once-a-second log flush here."""
    deadline = time.monotonic() + 10
    while True:
        server.query(f"PURGE BINARY LOGS TO '{kept}'")
        if purged not in [row[0] for row in server.query("SHOW BINARY LOGS")]:
            return
        assert time.monotonic() < deadline, f"{purged} was never purged"
        time.sleep(0.05)


def test_a_purged_start_file_is_a_range_error(scratch_server_factory, fetch_cli, tmp_path: Path):
    # Its own server: purging the default server's logs would take them from other tests.
    server = scratch_server_factory(extra_args=("--report-host=purge-test",))
    setup = server.run_sql(
        ["CREATE DATABASE IF NOT EXISTS p", "CREATE TABLE IF NOT EXISTS p.t (id INT PRIMARY KEY)"]
    )
    server.run_sql("INSERT INTO p.t VALUES (1)", own_file=True)
    files = server.binlog_files()
    purged, kept = setup.stop_file, files[-1].name
    _purge(server, purged, kept)
    spool = tmp_path / "spool"
    result = fetch_cli("--server", server.dsn, "--start-file", purged, "--spool", str(spool))
    assert_refused(result, spool, f"start file {purged} is no longer on the server (purged)")

    with BinlogServer(server.dsn) as source, pytest.raises(RangeError, match="purged binary logs"):
        maria_gtid_range(source, MariaGtidRange(MariaGtidPos.parse(setup.gtid_before)))


def test_fetch_prints_the_spooled_files_and_reuses_them(scratch_server, table, fetch_cli, tmp_path: Path):
    rng = scratch_server.run_sql(f"INSERT INTO {table} VALUES (1, 'x')", own_file=True)
    spool = tmp_path / "spool"
    argv = ("--server", scratch_server.dsn, "--start-file", rng.start_file, "--stop-file", rng.stop_file,
            "--spool", str(spool))  # fmt: skip
    code, out, err = fetch_cli(*argv)
    assert (code, err) == (0, "")
    path = spool / f"127.0.0.1_{scratch_server.port}" / rng.start_file
    assert out.splitlines() == [str(path)]
    assert path.read_bytes() == rng.files[0].read_bytes()
    assert fetch_cli(*argv) == (0, out, "")
