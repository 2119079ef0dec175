"""GTID lists of the binlog files the scratch server writes."""

from __future__ import annotations

from rollback.binlog.gtid import decode_mariadb_gtid_list
from tests.support.raw_events import MARIADB_GTID_LIST, first_body, position_after


def test_gtid_list_of_each_file_the_scratch_server_writes_is_where_the_previous_one_ended(scratch_server):
    """The same fact on MariaDB files written here: files of one to four transactions, each followed by
    an empty one (run_sql rotates the log before and after)."""
    scratch_server.run_sql(
        [
            "CREATE DATABASE IF NOT EXISTS gtid_lists",
            "CREATE OR REPLACE TABLE gtid_lists.t (id INT PRIMARY KEY)",
        ]
    )
    written = [
        scratch_server.run_sql(
            [f"INSERT INTO gtid_lists.t VALUES ({10 * n + i})" for i in range(n + 1)], own_file=True
        ).start_file
        for n in range(4)
    ]
    first = written[0]
    names = [path.name for path in scratch_server.binlog_files()]
    files = [scratch_server.binlog_dir / name for name in names[names.index(first) :]]
    assert len(files) >= 5
    moved = 0
    for this, following in zip(files, files[1:], strict=False):
        starts = decode_mariadb_gtid_list(first_body(following, MARIADB_GTID_LIST))
        assert starts.pos == position_after(this), (this.name, following.name)
        moved += starts.pos != decode_mariadb_gtid_list(first_body(this, MARIADB_GTID_LIST)).pos
    assert moved >= 4
