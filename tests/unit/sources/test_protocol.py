"""The replication protocol on bytes: packets we send, and streams as a server sends them.

No MySQL server runs here, so the MySQL-only paths (@source_* variables,
tagged GTID sets) are checked against packets written out by hand from the protocol's layout
(MySQL sql/rpl_source.cc, the MariaDB knowledge base), and a MySQL 9.6 binlog of the corpus is
replayed as the packet stream a MySQL source sends for it.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from rollback.base.errors import RangeError, SourceError
from rollback.binlog.constants import LOG_EVENT_BINLOG_IN_USE_F, EventType
from rollback.binlog.reader import BinlogFile
from rollback.sources.ranges import BinlogPosition
from rollback.sources.server import (
    SERVER_ID_RANGE,
    BinlogServer,
    ServerAddress,
    ServerInfo,
    binlog_dump_packet,
    events_from_packets,
    preflight_findings,
    register_replica_packet,
    restore_fde,
    same_fde,
    session_statements,
    version_tuple,
)
from rollback.sources.spool import FILLER_FLAGS, _Fetch

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
UUID_BYTES = "3e11fa4771ca11e19e33c80aa9429562"
EOF_PACKET = bytes.fromhex("fe00000200")


def h(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


# --------------------------------------------------------------------------- packets we send


def test_binlog_dump_packet_matches_the_mariadb_documentation_example():
    # MariaDB KB, COM_BINLOG_DUMP: position 1588, flags 2, server id 10101, mysql-bin.000034.
    expected = h("12 34 06 00 00 02 00 75 27 00 00") + b"mysql-bin.000034"
    assert binlog_dump_packet("mysql-bin.000034", 1588, 10101, 0x02) == expected


def test_binlog_dump_packet_refuses_positions_that_do_not_fit_four_bytes():
    with pytest.raises(RangeError):
        binlog_dump_packet("mysql-bin.000001", 2**32, 7, 1)
    with pytest.raises(RangeError):
        binlog_dump_packet("mysql-bin.000001", 3, 7, 1)


def test_register_replica_packet_carries_id_host_and_empty_credentials():
    expected = h("15 75 27 00 00 04") + b"box1" + h("00 00 ea 0c 00 00 00 00 00 00 00 00")
    assert register_replica_packet(10101, "box1", 3306) == expected


def test_checksum_and_heartbeat_variables_follow_the_server_flavor_and_version():
    assert session_statements("mysql", (8, 0, 26), 1.5) == [
        "SET @source_binlog_checksum = 'CRC32'",
        "SET @source_heartbeat_period = 1500000000",
    ]
    assert session_statements("mysql", (8, 0, 25), 2, replica_uuid="u") == [
        "SET @master_binlog_checksum = 'CRC32'",
        "SET @master_heartbeat_period = 2000000000",
        "SET @slave_uuid = 'u'",
    ]
    assert session_statements("mysql", (8, 4, 0), 1, replica_uuid="u")[-1] == "SET @replica_uuid = 'u'"
    assert session_statements("mariadb", (10, 11, 19), 1) == [
        "SET @master_binlog_checksum = 'CRC32'",
        "SET @master_heartbeat_period = 1000000000",
        "SET @mariadb_slave_capability = 4",
    ]


# --------------------------------------------------------------------------- addresses and preflight


def test_dsn_gives_host_port_user_and_decoded_password():
    address = ServerAddress.parse("mysql://rb%40ops:p%3Ass@db1.example:3307/")
    assert (address.host, address.port, address.user, address.password) == (
        "db1.example",
        3307,
        "rb@ops",
        "p:ss",
    )
    assert "p:ss" not in repr(address)
    assert address.name == "db1.example_3307"


def test_dsn_without_password_takes_it_from_the_environment(monkeypatch):
    monkeypatch.setenv("MYSQL_PWD", "from-env")
    assert ServerAddress.parse("mysql://rb@db1/").password == "from-env"
    assert ServerAddress.parse("mysql://rb@db1/").port == 3306


@pytest.mark.parametrize(
    "dsn", ["db1:3306", "http://db1/", "mysql:///", "mysql://u@db1/sales", "mysql://db1:x/"]
)
def test_malformed_dsn_is_a_source_error(dsn):
    with pytest.raises(SourceError):
        ServerAddress.parse(dsn)


def test_version_tuple_reads_mysql_and_mariadb_spellings():
    assert version_tuple("10.11.19-MariaDB-0+deb12u1-log") == (10, 11, 19)
    assert version_tuple("8.0.36") == (8, 0, 36)
    assert version_tuple("9.6") == (9, 6, 0)


def test_preflight_refuses_statement_format_and_binlog_off():
    _, refusals = preflight_findings("8.0.36", {"binlog_format": "STATEMENT", "log_bin": "OFF"})
    assert any("log_bin=OFF" in r for r in refusals)
    assert any("binlog_format=STATEMENT" in r for r in refusals)
    _, refusals = preflight_findings("10.11.19-MariaDB", {"binlog_format": "MIXED", "log_bin": "ON"})
    assert refusals and "MIXED" in refusals[0]


def test_preflight_warns_where_rollback_would_be_partial():
    warnings, refusals = preflight_findings(
        "8.0.36",
        {
            "binlog_format": "ROW",
            "log_bin": "ON",
            "binlog_row_image": "MINIMAL",
            "binlog_row_value_options": "PARTIAL_JSON",
            "gtid_mode": "OFF",
        },
    )
    assert refusals == []
    assert [w.split(":")[0].split("=")[0] for w in warnings] == [
        "binlog_row_image",
        "binlog_row_value_options",
        "gtid_mode",
    ]
    assert preflight_findings("10.11.19-MariaDB", {"binlog_format": "ROW", "binlog_row_image": "FULL"}) == (
        [],
        [],
    )


# --------------------------------------------------------------------------- a MySQL source's stream

CORPUS_TAGGED = "blackbeam__rust_mysql_common/test-data/binlogs/binlog_transaction_with_GTID_TAG.000001"


def _event(ts: int, type_code: int, body: bytes, next_pos: int, flags: int, crc: bool = True) -> bytes:
    length = 19 + len(body) + (4 if crc else 0)
    data = struct.pack("<IBIIIH", ts, type_code, 1, length, next_pos, flags) + body
    return data + struct.pack("<I", zlib.crc32(data)) if crc else data


def _as_sent(fde: bytes, zero_created: bool) -> bytes:
    """The FDE as a MySQL source sends it: next position 0, in-use flag off, created 0 past position 4."""
    sent = bytearray(fde)
    struct.pack_into("<I", sent, 13, 0)
    struct.pack_into("<H", sent, 17, struct.unpack_from("<H", sent, 17)[0] & ~LOG_EVENT_BINLOG_IN_USE_F)
    if zero_created:
        struct.pack_into("<I", sent, 19 + 2 + 50, 0)
    struct.pack_into("<I", sent, len(sent) - 4, zlib.crc32(sent[:-4]))
    return bytes(sent)


def _mysql_stream(disk: bytes, name: str, start: int, fde_end: int) -> list[bytes]:
    fake_rotate = _event(0, EventType.ROTATE, struct.pack("<Q", start) + name.encode(), 0, 0x20)
    packets = [b"\x00" + fake_rotate, b"\x00" + _as_sent(disk[4:fde_end], zero_created=start > 4)]
    heartbeat = _event(0, EventType.HEARTBEAT_V2, b"\x01\x02", 0, 0x20)
    pos = start if start > 4 else fde_end
    while pos < len(disk):
        length = struct.unpack_from("<I", disk, pos + 9)[0]
        packets.append(b"\x00" + disk[pos : pos + length])
        packets.append(b"\x00" + heartbeat)
        pos += length
    return packets + [EOF_PACKET]


@pytest.fixture
def tagged_binlog(corpus_dir) -> tuple[bytes, int, list[int]]:
    path = corpus_dir / CORPUS_TAGGED
    disk = path.read_bytes()
    with BinlogFile(path) as binlog:
        fde_end = binlog.fde_end
        positions = [e.pos for e in binlog.events()]
    return disk, fde_end, positions


def test_events_of_a_mysql_stream_are_placed_at_their_file_offsets(tagged_binlog):
    disk, fde_end, positions = tagged_binlog
    events = list(events_from_packets(_mysql_stream(disk, "binlog.000001", 4, fde_end)))
    placed = [(e.file, e.pos) for e in events if e.pos is not None]
    assert placed == [("binlog.000001", p) for p in positions]
    assert events[0].pos is None and events[0].type_code == EventType.ROTATE  # artificial: in no file
    assert EventType.GTID_TAGGED in [e.type_code for e in events]
    assert EventType.HEARTBEAT_V2 not in [e.type_code for e in events]


def test_restore_fde_rebuilds_the_stored_event_from_the_one_sent(tagged_binlog):
    disk, fde_end, _ = tagged_binlog
    stored = disk[4:fde_end]
    assert restore_fde(_as_sent(stored, zero_created=False)) == stored
    in_use = restore_fde(stored, in_use=True)
    assert in_use != stored and same_fde(in_use, stored)
    assert restore_fde(in_use) == stored


@pytest.mark.parametrize("start_index", [0, 2, 4])
def test_a_recorded_mysql_stream_spools_byte_identical_from_any_event(
    tagged_binlog, tmp_path: Path, start_index
):
    disk, fde_end, positions = tagged_binlog
    start = positions[start_index] if start_index else 4
    name = "binlog.000001"
    fde_as_stored = restore_fde(_as_sent(disk[4:fde_end], zero_created=False))  # what a probe at 4 gets
    fetch = _Fetch(
        tmp_path,
        BinlogPosition(name, len(disk)),
        BinlogPosition(name, start),
        first_fde=fde_as_stored if start > 4 else None,
        files=[name],
    )
    (writer,) = fetch.run(events_from_packets(_mysql_stream(disk, name, start, fde_end), name))
    spooled = (tmp_path / name).read_bytes()
    assert len(spooled) == len(disk)
    assert spooled[:fde_end] == disk[:fde_end]
    assert spooled[start:] == disk[start:]
    with BinlogFile(tmp_path / name) as binlog:  # the whole file frames, every CRC verifies
        framed = [(e.pos, e.type_code, e.flags) for e in binlog.events(verify=True)]
    if start > fde_end:
        assert framed[1] == (fde_end, EventType.IGNORABLE, FILLER_FLAGS)
    assert writer.segments == ([[4, len(disk)]] if start == 4 else [[4, fde_end], [start, len(disk)]])


def test_a_stop_inside_an_event_is_a_range_error(tagged_binlog, tmp_path: Path):
    disk, fde_end, positions = tagged_binlog
    name = "binlog.000001"
    fetch = _Fetch(tmp_path, BinlogPosition(name, positions[3] + 5), BinlogPosition(name, 4), files=[name])
    with pytest.raises(RangeError, match="inside an event"):
        fetch.run(events_from_packets(_mysql_stream(disk, name, 4, fde_end), name))


def test_a_start_that_is_not_where_the_next_event_begins_is_a_range_error(tagged_binlog, tmp_path: Path):
    disk, fde_end, positions = tagged_binlog
    name = "binlog.000001"
    # A server that found an event at some other offset than asked: the spool notices.
    fetch = _Fetch(
        tmp_path, BinlogPosition(name, len(disk)), BinlogPosition(name, positions[2] + 1), files=[name]
    )
    with pytest.raises(RangeError, match="not the start of an event"):
        fetch.run(events_from_packets(_mysql_stream(disk, name, positions[2], fde_end), name))


def test_a_stream_that_ends_early_is_a_range_error(tagged_binlog, tmp_path: Path):
    disk, fde_end, _ = tagged_binlog
    name = "binlog.000001"
    fetch = _Fetch(tmp_path, BinlogPosition(name, len(disk) + 100), BinlogPosition(name, 4), files=[name])
    with pytest.raises(RangeError, match="ends at"):
        fetch.run(events_from_packets(_mysql_stream(disk, name, 4, fde_end), name))


def test_a_gap_right_after_the_fde_is_filled_in_a_position_dump(tagged_binlog, tmp_path: Path):
    disk, fde_end, positions = tagged_binlog
    name = "binlog.000001"
    # MariaDB does not send an encrypted binlog's START_ENCRYPTION event: here, PREVIOUS_GTIDS is missing.
    packets = _mysql_stream(disk, name, 4, fde_end)
    del packets[2:4]  # the event after the FDE and the heartbeat after it
    fetch = _Fetch(tmp_path, BinlogPosition(name, len(disk)), BinlogPosition(name, 4), files=[name])
    fetch.run(events_from_packets(packets, name))
    spooled = (tmp_path / name).read_bytes()
    assert spooled[positions[2] :] == disk[positions[2] :]
    with BinlogFile(tmp_path / name) as binlog:
        assert [e.type_code for e in binlog.events()][:2] == [
            EventType.FORMAT_DESCRIPTION,
            EventType.IGNORABLE,
        ]


def test_event_positions_past_4_gib_are_lifted_above_the_previous_event():
    base = (1 << 32) - 100
    rotate = _event(0, EventType.ROTATE, struct.pack("<Q", base) + b"big.000001", 0, 0x20)
    first = _event(1, EventType.QUERY, bytes(50), (base + 73) & 0xFFFFFFFF, 0)
    second = _event(1, EventType.XID, bytes(8), (base + 73 + 31) & 0xFFFFFFFF, 0)
    events = list(events_from_packets([b"\x00" + rotate, b"\x00" + first, b"\x00" + second, EOF_PACKET]))
    assert [e.pos for e in events] == [None, base, base + 73]


# --------------------------------------------------------------------------- replica server ids


def _server_with(own_id: int, requested: int | None = None) -> BinlogServer:
    server = BinlogServer("mysql://u:p@db1/", server_id=requested)
    server._info = ServerInfo("8.0.40", {"server_id": str(own_id)})
    return server


def test_the_replica_id_is_random_high_and_never_the_server_s_own():
    ids = {_server_with(own_id=7).server_id for _ in range(20)}
    assert len(ids) > 1 and all(SERVER_ID_RANGE[0] <= i <= SERVER_ID_RANGE[1] for i in ids)
    assert _server_with(own_id=7, requested=12).server_id == 12
    with pytest.raises(SourceError, match="the server's own"):
        _ = _server_with(own_id=7, requested=7).server_id


# --------------------------------------------------------------------------- a MySQL GTID dump
