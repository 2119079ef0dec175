"""Spooling from the scratch MariaDB: the local files equal the server's own binlog files, byte for
byte, over the range fetched; re-runs reuse a verified spool; a GTID start works by connect state."""

from __future__ import annotations

from pathlib import Path

from rollback.binlog.constants import EventType
from rollback.sources.ranges import BinlogPosition, position_range
from rollback.sources.server import BinlogServer
from rollback.sources.spool import MANIFEST_SUFFIX, spool_range
from tests.support.sources import event_positions


def test_whole_closed_file_is_spooled_byte_identical(scratch_server, table, tmp_path: Path):
    rng = scratch_server.run_sql(
        [f"INSERT INTO {table} VALUES (1, 'one'), (2, 'two')", f"UPDATE {table} SET v = 'zwei' WHERE id = 2"],
        own_file=True,
    )
    with BinlogServer(scratch_server.dsn) as server:
        spool = spool_range(
            server, position_range(server, rng.start_file, stop_file=rng.start_file), tmp_path
        )
    (spooled,) = spool.files
    assert spooled.path == tmp_path / f"127.0.0.1_{scratch_server.port}" / rng.start_file
    assert spooled.path.read_bytes() == rng.files[0].read_bytes()
    assert (spooled.start, spooled.stop) == (4, rng.files[0].stat().st_size)


def test_partial_range_across_a_rotation_is_byte_identical_where_fetched(
    scratch_server, table, tmp_path: Path
):
    scratch_server.run_sql(f"INSERT INTO {table} VALUES (1, 'before the range')")
    rng = scratch_server.run_sql(
        [
            f"INSERT INTO {table} VALUES (2, 'first file')",
            "FLUSH BINARY LOGS",
            f"INSERT INTO {table} VALUES (3, 'second file')",
        ]
    )
    scratch_server.run_sql(f"INSERT INTO {table} VALUES (4, 'after the range')")
    assert rng.start_file != rng.stop_file and rng.start_position > 4
    with BinlogServer(scratch_server.dsn) as server:
        server_range = position_range(
            server, rng.start_file, rng.start_position, rng.stop_file, rng.stop_position
        )
        spool = spool_range(server, server_range, tmp_path)
    first, second = spool.files
    disk_first, disk_second = (path.read_bytes() for path in rng.files)
    mine_first, mine_second = first.path.read_bytes(), second.path.read_bytes()

    fde_end = event_positions(first.path)[1][0]  # where the filler after the FDE starts
    assert mine_first[:fde_end] == disk_first[:fde_end]  # magic and FDE
    assert mine_first[rng.start_position :] == disk_first[rng.start_position :]  # to the ROTATE
    assert len(mine_first) == len(disk_first)
    assert mine_second == disk_second[: rng.stop_position]  # FDE (in use, as on disk) to the stop
    assert (first.start, first.stop, second.start, second.stop) == (
        rng.start_position,
        len(disk_first),
        4,
        rng.stop_position,
    )
    # The bytes before the range are one filler event: the file frames from 4, every CRC verifies.
    assert event_positions(first.path)[1] == (fde_end, EventType.IGNORABLE)
    assert event_positions(first.path)[2][0] == rng.start_position
    assert event_positions(second.path)[-1][0] < rng.stop_position


def test_rerun_reuses_a_complete_spool_and_refetches_a_damaged_one(scratch_server, table, tmp_path: Path):
    rng = scratch_server.run_sql([f"INSERT INTO {table} VALUES (1, 'x')", f"DELETE FROM {table}"])
    with BinlogServer(scratch_server.dsn) as server:
        server_range = position_range(
            server, rng.start_file, rng.start_position, rng.stop_file, rng.stop_position
        )
        first = spool_range(server, server_range, tmp_path)
        path = first.files[0].path
        stamp = path.stat().st_mtime_ns
        again = spool_range(server, server_range, tmp_path)
        assert again.reused == (rng.start_file,) and path.stat().st_mtime_ns == stamp
        assert again.files == first.files

        data = bytearray(path.read_bytes())
        data[rng.start_position + 30] ^= 0xFF
        path.write_bytes(bytes(data))
        repaired = spool_range(server, server_range, tmp_path)
    assert repaired.reused == ()
    disk = rng.files[0].read_bytes()
    assert path.read_bytes()[rng.start_position :] == disk[rng.start_position : rng.stop_position]
    assert (path.parent / (path.name + MANIFEST_SUFFIX)).is_file()


def test_an_empty_range_at_the_end_of_the_log_spools_a_file_without_events(
    scratch_server, table, tmp_path: Path
):
    scratch_server.run_sql(f"INSERT INTO {table} VALUES (1, 'x')")
    with BinlogServer(scratch_server.dsn) as server:
        end = BinlogPosition(*server.end_position())
        spool = spool_range(server, position_range(server, end.file, end.position), tmp_path)
    (spooled,) = spool.files
    assert (spooled.start, spooled.stop) == (end.position, end.position)
    kinds = [code for _, code in event_positions(spooled.path)]
    assert kinds == [EventType.FORMAT_DESCRIPTION, EventType.IGNORABLE]
    assert spooled.path.stat().st_size == end.position
