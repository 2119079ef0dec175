"""The fetch command's argument checks, made before any connection, and its default spool folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollback.base.errors import SourceError
from tests.support.sources import ENGINE, run_cli_in_process


def test_server_arguments_are_checked_before_any_connection(monkeypatch, tmp_path: Path, capsys):
    monkeypatch.setenv("MYSQL_ROLLBACK_DATA_DIR", str(tmp_path / "data"))  # the default spool's parent
    monkeypatch.setenv("HOME", str(tmp_path))  # no developer's ~/.my.cnf names a server
    unreachable = "mysql://nobody:pw@127.0.0.1:1/"
    binlog = tmp_path / "mysql-bin.000001"
    binlog.write_bytes(b"\xfebin")
    cases = {
        "files and --server": (["--server", unreachable, str(binlog)], "not both"),
        "--start-file without --server": (
            [str(binlog), "--start-file", "mysql-bin.000001"],
            "needs --server",
        ),
        "--spool and --server-id without --server": (
            [str(binlog), "--spool", str(tmp_path), "--server-id", "7"],
            "--spool, --server-id need --server",
        ),
        "no range": (["--server", unreachable], "needs a start file"),
        "-R without a server": (["-R", "mysql-bin.000001"], "-R/--read-from-remote-server needs the server"),
        "a local file after -d": (
            ["-d", "shop", str(binlog)],
            f"-d/--database {binlog}: a binlog file after -d",
        ),
        "a server's file after -t": (
            ["--server", unreachable, "-R", "-t", "shop.orders", "mysql-bin.000042"],
            "-t/--table mysql-bin.000042: a binlog file after -t, which takes several names; put the binlog "
            "files before it, or end its names with --",
        ),
        "a position without its file": (
            ["--server", unreachable, "--stop-position", "9"],
            "needs the start file",
        ),
        "two kinds of range": (
            ["--server", unreachable, "--gtid", "0-1-5", "--start-datetime", "2024-01-01 00:00:00"],
            "not by GTIDs and time window",
        ),
    }
    for case, (args, fragment) in cases.items():
        code, out, err = run_cli_in_process(capsys, "flashback", *args, *ENGINE)
        assert code == 2 and out == "", (case, err)
        assert err.count("\n") == 1 and fragment in err, (case, err)
    assert not (tmp_path / "data").exists()


def test_default_spool_dir(monkeypatch, tmp_path: Path):
    from rollback.sources.resolve import default_spool_dir

    monkeypatch.setenv("MYSQL_ROLLBACK_DATA_DIR", str(tmp_path / "data"))
    assert default_spool_dir() == tmp_path / "data" / "spool"
    monkeypatch.delenv("MYSQL_ROLLBACK_DATA_DIR")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    spool = default_spool_dir(create=True)
    assert spool == tmp_path / "mysql-rollback-spool" and spool.is_dir()
    assert spool.stat().st_mode & 0o777 == 0o700  # spooled binlogs hold row data
    spool.rmdir()
    (tmp_path / "elsewhere").mkdir()
    spool.symlink_to(tmp_path / "elsewhere")  # another user's trap in a shared temp dir
    with pytest.raises(SourceError, match="not a directory of this user"):
        default_spool_dir(create=True)
