"""The local file source: a directory's binlog files in log order, between two files."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollback.errors import RangeError
from rollback.sources.files import binlog_files, binlog_names


def make(directory: Path, *names: str) -> None:
    for name in names:
        (directory / name).write_bytes(b"\xfebin")


def test_numeric_suffixes_order_the_files_when_there_is_no_index(tmp_path: Path):
    make(tmp_path, "mysql-bin.999999", "mysql-bin.1000000", "mysql-bin.000002", "mysql-bin.000002.spool.json")
    assert binlog_names(tmp_path) == ["mysql-bin.000002", "mysql-bin.999999", "mysql-bin.1000000"]
    assert binlog_files(tmp_path, "mysql-bin.999999") == [
        tmp_path / "mysql-bin.999999",
        tmp_path / "mysql-bin.1000000",
    ]


def test_the_index_file_gives_the_order_and_the_base_name_picks_the_log(tmp_path: Path):
    make(tmp_path, "bin.000001", "bin.000002", "bin.000003", "relay.000001")
    (tmp_path / "bin.index").write_text("./bin.000002\n/var/lib/mysql/bin.000003\n")
    assert binlog_files(tmp_path, "bin.000002", "bin.000003") == [
        tmp_path / "bin.000002",
        tmp_path / "bin.000003",
    ]
    with pytest.raises(RangeError, match="several names"):
        binlog_names(tmp_path)
    with pytest.raises(RangeError, match="bin.000001 is not in"):
        binlog_files(tmp_path, "bin.000001")


def test_a_stop_file_before_the_start_file_is_a_range_error(tmp_path: Path):
    make(tmp_path, "mysql-bin.000001", "mysql-bin.000002")
    with pytest.raises(RangeError, match="comes before"):
        binlog_files(tmp_path, "mysql-bin.000002", "mysql-bin.000001")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RangeError, match="no binlog files"):
        binlog_files(tmp_path / "empty")
