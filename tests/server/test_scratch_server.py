"""The scratch server harness itself: it writes a real binlog we can read back."""

from __future__ import annotations

import os

from rollback.binlog.constants import BINLOG_MAGIC


def test_scratch_server_writes_rows_to_a_binlog_starting_with_magic(scratch_server):
    rng = scratch_server.run_sql(
        [
            "CREATE DATABASE IF NOT EXISTS harness",
            "CREATE TABLE harness.t (id INT PRIMARY KEY, v VARCHAR(20))",
            "INSERT INTO harness.t VALUES (1, 'one'), (2, 'two')",
        ],
        own_file=True,
    )
    assert rng.start_file == rng.stop_file
    assert rng.stop_position > rng.start_position
    data = rng.files[0].read_bytes()
    assert data[:4] == BINLOG_MAGIC == bytes.fromhex("fe62696e")
    assert len(data) >= rng.stop_position
    assert scratch_server.query("SELECT COUNT(*) FROM harness.t") == [(2,)]
    assert scratch_server.query("SELECT @@binlog_format, @@binlog_row_image") == [("ROW", "FULL")]


def test_scratch_server_listens_on_a_private_port_and_pid(scratch_server):
    assert scratch_server.port != 3306
    assert scratch_server.pid and os.path.exists(f"/proc/{scratch_server.pid}")
    assert str(scratch_server.socket_path).startswith(str(scratch_server.base_dir))


def test_range_of_one_statement_covers_exactly_its_events(scratch_server):
    scratch_server.run_sql("CREATE TABLE IF NOT EXISTS harness.r (id INT PRIMARY KEY)")
    first = scratch_server.run_sql("INSERT INTO harness.r VALUES (1)")
    second = scratch_server.run_sql("INSERT INTO harness.r VALUES (2)")
    assert (second.start_file, second.start_position) == (first.stop_file, first.stop_position)
    assert first.gtid_before != first.gtid_after


def test_server_variants_are_separate_servers(scratch_server_factory, scratch_server):
    minimal = scratch_server_factory(row_image="MINIMAL", row_metadata="FULL", gtid_strict=True)
    assert minimal.port != scratch_server.port
    assert minimal.query("SELECT @@binlog_row_image, @@binlog_row_metadata, @@gtid_strict_mode") == [
        ("MINIMAL", "FULL", 1)
    ]
