"""BinlogFile.release drops the pages a walk has passed from the process's resident memory (the
planner calls it at every cut, so a multi-GB file is never resident in the driver), and the events
read the same afterwards."""

from __future__ import annotations

import hashlib

import pytest

from bench.large_range import read_source, write_range
from rollback.binlog.reader import BinlogFile

pytestmark = pytest.mark.corpus

MARIADB = "blackbeam__rust_mysql_common/test-data/binlogs/mariadb-bin.000001"


def _rss_file() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("RssFile:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no RssFile in /proc/self/status")


def _digest(binlog: BinlogFile) -> str:
    digest = hashlib.sha256()
    for event in binlog.events():  # every byte touched: the CRC32 of every event is verified
        digest.update(event.data)
    return digest.hexdigest()


def test_released_pages_leave_the_resident_set_and_read_the_same(corpus_file, tmp_path):
    source = corpus_file(MARIADB)
    body = len(read_source(source).body)
    files, _ = write_range(source, tmp_path, total_bytes=16 << 20, file_bytes=32 << 20)
    with BinlogFile(files[0]) as binlog:
        before = _digest(binlog)
        resident = _rss_file()
        binlog.release(binlog.size)
        dropped = resident - _rss_file()
        assert dropped > binlog.size // 2 > 8 * body
        assert _digest(binlog) == before
