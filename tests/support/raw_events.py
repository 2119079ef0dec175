"""Events of a binlog file read with nothing but the header layout, independently of the decoder, and
the MariaDB GTID position a file ends at: the tests compare the decoder with what these find."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

from rollback.binlog.gtid import MariaGtidPos, decode_mariadb_gtid_list

HEADER = struct.Struct("<IBIIIH")
PREVIOUS_GTIDS, MARIADB_GTID, MARIADB_GTID_LIST = 35, 162, 163


def events(path: Path) -> Iterator[tuple[int, int, int, bytes]]:
    """(offset, type, server_id, body without checksum) of every whole event of a binlog file."""
    data = path.read_bytes()
    assert data[:4] == b"\xfebin", path
    pos = 4
    while pos + HEADER.size <= len(data):
        _, type_code, server_id, length, _, _ = HEADER.unpack_from(data, pos)
        if length < HEADER.size or pos + length > len(data):
            break
        event = data[pos : pos + length]
        has_crc = len(event) >= 23 and zlib.crc32(event[:-4]) == int.from_bytes(event[-4:], "little")
        yield pos, type_code, server_id, event[HEADER.size : -4 if has_crc else None]
        pos += length


def first_body(path: Path, type_code: int) -> bytes:
    return next(body for _, t, _, body in events(path) if t == type_code)


def position_after(path: Path) -> MariaGtidPos:
    """The GTID_LIST a file starts with, advanced by every GTID event in it."""
    pos = MariaGtidPos()
    for _, type_code, server_id, body in events(path):
        if type_code == MARIADB_GTID_LIST:
            pos = pos | decode_mariadb_gtid_list(body).pos
        elif type_code == MARIADB_GTID:
            seq, domain = struct.unpack_from("<QI", body)
            pos = pos | MariaGtidPos([(domain, server_id, seq)])
    return pos
