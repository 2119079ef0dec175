"""Ranges and files: files out of order, twice or with a gap are refused with the log order; positions
that cannot be event boundaries get one clear line; a range that selects nothing exits 4 (unless
--allow-empty) saying what was searched and what the files hold; binlogs without checksums are noted.

Every binlog here is written by the scratch MariaDB.
"""

from __future__ import annotations

import shutil

import pytest

from tests.support.mariadb import BinlogRange
from tests.support.restore import flashback, run_cli

DB = "rchk"


@pytest.fixture(scope="module")
def three_files(scratch_server):
    """Three consecutive binlog files, each holding one change of rchk.t: (A, B, C) and their ranges."""
    server = scratch_server
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v INT)",
        ]
    )
    ranges = []
    server.flush_binary_logs()
    for sql in (
        f"INSERT INTO {DB}.t VALUES (1, 1)",
        f"UPDATE {DB}.t SET v = 2 WHERE id = 1",
        f"DELETE FROM {DB}.t WHERE id = 1",
    ):
        ranges.append(server.run_sql([sql]))
        server.flush_binary_logs()
    files = [r.files[0] for r in ranges]
    names = [p.name for p in server.binlog_files()]
    assert names.index(files[2].name) - names.index(files[0].name) == 2  # consecutive
    return files, ranges


def cli(server, *args: str):
    return run_cli("flashback", *args, "--schema-dsn", server.dsn, "--engine", "local")


def one_line_error(done, code: int) -> str:
    assert done.returncode == code, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mysql-rollback: error: "), done.stderr
    return lines[0]


# ---- files ---------------------------------------------------------------------------------------------


def test_files_out_of_order_are_refused_with_the_log_order(scratch_server, three_files):
    (a, b, _c), _ = three_files
    line = one_line_error(cli(scratch_server, str(b), str(a)), 2)
    assert f"{a.name} is given after {b.name}" in line
    assert f"give them in log order, every file once: {a.name}, {b.name}" in line


def test_a_file_given_twice_is_refused(scratch_server, three_files):
    (a, b, _c), _ = three_files
    line = one_line_error(cli(scratch_server, str(a), str(b), str(b)), 2)
    assert f"{b.name} is given twice" in line


def test_a_gap_between_files_is_refused_naming_the_missing_file(scratch_server, three_files):
    (a, b, c), _ = three_files
    line = one_line_error(cli(scratch_server, str(a), str(c)), 2)
    assert f"{b.name} is missing between {a.name} and {c.name}" in line
    assert f"{a.name}, {b.name}, {c.name}" in line


def test_consecutive_files_in_order_are_accepted(scratch_server, three_files, tmp_path):
    (a, b, c), _ = three_files
    done = cli(scratch_server, str(a), str(b), str(c), "-o", str(tmp_path / "r.sql"))
    assert done.returncode == 0, done.stderr
    assert "-- rows: rchk.t delete 1" in (tmp_path / "r.sql").read_text()


def test_renamed_copies_are_ordered_by_their_gtids(scratch_server, three_files, tmp_path):
    """Names that tell nothing: MariaDB's GTID_LIST of a file is the GTID state at the end of the one before."""
    (a, b, c), _ = three_files
    first, second, third = (tmp_path / "upload-x.log", tmp_path / "upload-a.log", tmp_path / "upload-q.log")
    for src, dst in ((a, first), (b, second), (c, third)):
        shutil.copyfile(src, dst)
    line = one_line_error(cli(scratch_server, str(second), str(first)), 2)
    assert f"{first.name} does not follow {second.name}" in line
    line = one_line_error(cli(scratch_server, str(first), str(third)), 2)
    assert f"{third.name} does not follow {first.name}" in line
    # Renamed copies alone cannot prove the schema (test_schema_safety covers that check): trusted here.
    done = cli(
        scratch_server, str(first), str(second), str(third), "-o", str(tmp_path / "r.sql"), "--trust-schema"
    )
    assert done.returncode == 0, done.stderr


# ---- positions -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--start-position", "0", "start position 0 is before the first event (events start at 4)"),
        ("--start-position", "-5", "start position -5 is before the first event (events start at 4)"),
        ("--start-position", "2", "start position 2 is before the first event (events start at 4)"),
        ("--stop-position", "0", "stop position 0 is before the first event (events start at 4)"),
        ("--stop-position", "-1", "stop position -1 is before the first event (events start at 4)"),
        ("--start-position", "5", "position 5 is not an event boundary"),
        ("--start-position", "99999999", "start position 99999999 is past the end of the file"),
    ],
)
def test_positions_that_cannot_start_or_stop_a_range_get_one_clear_line(
    scratch_server, three_files, flag, value, says
):
    (a, _b, _c), _ = three_files
    line = one_line_error(cli(scratch_server, str(a), f"{flag}={value}"), 2)
    assert says in line and a.name in line


# ---- a range that selects nothing ----------------------------------------------------------------------


def test_a_gtid_not_in_the_files_exits_4_saying_what_the_files_hold(scratch_server, three_files, tmp_path):
    (a, b, _c), ranges = three_files
    line = one_line_error(cli(scratch_server, str(a), str(b), "--gtid", "0-1-999999"), 4)
    first_gtid, last_gtid = ranges[0].gtid_after, ranges[1].gtid_after
    assert (
        "the range selected no row change" in line and "searched files" in line and "gtid 0-1-999999" in line
    )
    assert f"from gtid {first_gtid} at " in line and f"to gtid {last_gtid} at " in line and " UTC" in line
    assert f"{DB}.t (insert 1, update 1)" in line and "--allow-empty" in line
    done = cli(scratch_server, str(a), "--gtid", "0-1-999999", "--allow-empty", "-o", str(tmp_path / "r.sql"))
    assert done.returncode == 0, done.stderr
    assert "-- warning: the range selected no row change" in (tmp_path / "r.sql").read_text()


def test_an_empty_time_window_exits_4(scratch_server, three_files):
    (a, _b, _c), _ = three_files
    args = [str(a), "--start-datetime", "2001-01-01 00:00:00", "--stop-datetime", "2001-01-02 00:00:00"]
    line = one_line_error(cli(scratch_server, *args), 4)
    assert "time [2001-01-01 00:00:00, 2001-01-02 00:00:00)" in line and f"{DB}.t (insert 1)" in line


def test_a_table_filter_without_its_database_exits_4_with_a_hint(scratch_server, three_files):
    (a, _b, _c), _ = three_files
    line = one_line_error(cli(scratch_server, str(a), "-t", "t"), 4)
    assert f"did you mean {DB}.t?" in line


# ---- checksums -----------------------------------------------------------------------------------------


@pytest.mark.both_ways_off("the module's ranges are rolled back by other tests: only the header is read")
def test_binlogs_without_checksums_are_noted_in_the_header(
    scratch_server_factory, scratch_server, three_files, tmp_path
):
    bare = scratch_server_factory(extra_args=("--binlog-checksum=NONE",))
    bare.run_sql(
        [f"CREATE DATABASE IF NOT EXISTS {DB}", f"CREATE TABLE IF NOT EXISTS {DB}.t (id INT PRIMARY KEY)"]
    )
    rng: BinlogRange = bare.run_sql([f"INSERT INTO {DB}.t VALUES (1)"])
    script, _plan, _report = flashback(bare, rng, tmp_path)
    note = (
        f"-- note: {rng.files[0].name} has no event checksums (binlog_checksum=NONE): "
        "corruption cannot be detected"
    )
    assert note in script.read_text().splitlines()
    _files, ranges = three_files
    checked, _plan, _report = flashback(scratch_server, ranges[0], tmp_path, name="checked")
    assert "no event checksums" not in checked.read_text()


def test_a_range_without_row_changes_exits_4_with_the_time_its_events_span(scratch_server, three_files):
    rng = scratch_server.run_sql([f"CREATE TABLE IF NOT EXISTS {DB}.u (id INT)"])
    args = [*map(str, rng.files), "--start-position", str(rng.start_position)]
    line = one_line_error(cli(scratch_server, *args, "--stop-position", str(rng.stop_position)), 4)
    assert "the files hold no row changes in that range (its events are from 20" in line and " UTC)" in line
