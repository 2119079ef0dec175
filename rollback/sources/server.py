"""A live server as a binlog source: the replication protocol over PyMySQL.

What a replica does, reduced to what a flashback needs:

    connect (DSN)  ->  preflight (version, binlog settings)  ->  SET session variables
    ->  COM_REGISTER_SLAVE  ->  COM_BINLOG_DUMP  ->  events ... EOF

Wire formats (all integers little-endian; MySQL source sql/rpl_source.cc, MariaDB KB
"COM_BINLOG_DUMP" / "COM_REGISTER_SLAVE"):

    COM_REGISTER_SLAVE    0x15 server_id:4 hostname:(len:1 bytes) user:(len:1 bytes)
                          password:(len:1 bytes) port:2 replication_rank:4 master_id:4
    COM_BINLOG_DUMP       0x12 position:4 flags:2 server_id:4 file_name:(rest of packet)

Every event arrives as one packet `00 <event>`; the stream ends with an EOF packet (`fe`, under
9 bytes) when BINLOG_DUMP_NON_BLOCK is set and the dump thread reaches the end of the log, or
with an ERR packet. The server first sends an artificial ROTATE naming the file (flag
LOG_EVENT_ARTIFICIAL_F, next position 0) and the file's FORMAT_DESCRIPTION; a dump that starts
after position 4 gets that FDE with its next position and created time zeroed.
"""

from __future__ import annotations

import os
import random
import re
import socket
import struct
import uuid
import zlib
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rollback.base.dsn import ConnectionOptions, open_connection, parse_dsn, server_timeouts
from rollback.base.errors import BinlogFormatError, RangeError, RollbackError, SourceError
from rollback.base.server_version import version_tuple
from rollback.binlog.constants import LOG_EVENT_BINLOG_IN_USE_F, V4_HEADER_LEN, EventType
from rollback.binlog.gtid import (
    GtidSet,
    MariaGtidList,
    MariaGtidPos,
    decode_mariadb_gtid_list,
    decode_mysql_gtid_set,
)
from rollback.binlog.reader import EVENT_HEADER, FormatFacts, parse_format_description

COM_BINLOG_DUMP = 0x12
COM_REGISTER_SLAVE = 0x15

BINLOG_DUMP_NON_BLOCK = 0x01
BINLOG_SEND_ANNOTATE_ROWS_EVENT = 0x02  # MariaDB: without it, ANNOTATE_ROWS events are left out

LOG_EVENT_ARTIFICIAL_F = 0x20
MARIA_SLAVE_CAPABILITY_GTID = 4  # the newest capability: events are sent as they are in the file

DEFAULT_PORT = 3306
# A random replica id from the top half of the 32-bit range, where real replicas rarely live.
SERVER_ID_RANGE = (2**31, 2**32 - 1)
HEARTBEAT_SECONDS = 15.0

_HEADER_EVENTS = {
    EventType.GTID_LIST,
    EventType.PREVIOUS_GTIDS,
    EventType.BINLOG_CHECKPOINT,
    EventType.START_ENCRYPTION,
}
_HEARTBEATS = {EventType.HEARTBEAT, EventType.HEARTBEAT_V2}


# --------------------------------------------------------------------------- addresses


@dataclass(frozen=True)
class ServerAddress:
    """Where a server listens and who we log in as. The password never appears in repr()."""

    host: str
    port: int = DEFAULT_PORT
    user: str = ""
    password: str = field(default="", repr=False)
    options: ConnectionOptions = ConnectionOptions()  # a Unix socket, TLS

    @classmethod
    def parse(cls, dsn: str) -> ServerAddress:
        """`mysql://user:password@host:port/[?socket=...&ssl-mode=...]`; a missing password is taken
        from $MYSQL_PWD."""
        parts = parse_dsn(dsn)
        options = ConnectionOptions.of(parts)
        if not parts.host and not options.socket:
            raise SourceError("server DSN names no host (mysql://user:password@host:port/)")
        if parts.database.strip("/") or parts.fragment:
            raise SourceError(
                "server DSN takes no database or fragment: mysql://user:password@host:port/ "
                "(options: ?socket=PATH, ?ssl-mode=..., ?ssl-ca=FILE)"
            )
        password = parts.password if parts.password is not None else os.environ.get("MYSQL_PWD", "")
        return cls(options.host(parts.host), parts.port, parts.user, password, options)

    def session_args(self) -> dict[str, Any]:
        """PyMySQL's arguments for a session to this server (host, port, user, password, socket, TLS)."""
        return {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            **self.options.session_args(),
        }

    @property
    def name(self) -> str:
        """A directory-safe name for this server, used by the spool: `host_port`, or the socket's path."""
        where = self.options.socket.strip("/") if self.options.socket else f"{self.host}_{self.port}"
        return re.sub(r"[^A-Za-z0-9._-]", "_", where)

    def __str__(self) -> str:
        return self.options.describe(self.host, self.port)


# --------------------------------------------------------------------------- packets


def register_replica_packet(server_id: int, hostname: str = "", port: int = 0) -> bytes:
    """COM_REGISTER_SLAVE payload (command byte included). User and password stay empty."""
    host = hostname.encode("utf-8")[:255]
    return (
        struct.pack("<BI", COM_REGISTER_SLAVE, server_id)
        + bytes([len(host)])
        + host
        + b"\x00"  # user
        + b"\x00"  # password
        + struct.pack("<HII", port, 0, 0)  # port, replication rank, master id
    )


def binlog_dump_packet(file_name: str, position: int, server_id: int, flags: int) -> bytes:
    """COM_BINLOG_DUMP payload (command byte included)."""
    if not 4 <= position <= 0xFFFFFFFF:
        raise RangeError(f"start position {position} is not within 4..{0xFFFFFFFF} (COM_BINLOG_DUMP)")
    return struct.pack("<BIHI", COM_BINLOG_DUMP, position, flags, server_id) + file_name.encode("utf-8")


def session_statements(
    flavor: str,
    version: tuple[int, int, int],
    heartbeat_seconds: float = HEARTBEAT_SECONDS,
    replica_uuid: str | None = None,
) -> list[str]:
    """The SET statements a replica session runs before the dump, for this server flavor/version.

    We announce CRC32 whatever the current @@binlog_checksum: a server strips checksums for a
    replica that announces NONE, and the spool must keep the events as they are in the file
    (a file written with checksums off is sent without them either way).
    """
    heartbeat_ns = int(heartbeat_seconds * 1_000_000_000)
    if flavor == "mariadb":
        return [
            "SET @master_binlog_checksum = 'CRC32'",
            f"SET @master_heartbeat_period = {heartbeat_ns}",
            f"SET @mariadb_slave_capability = {MARIA_SLAVE_CAPABILITY_GTID}",
        ]
    # MySQL renamed the replica variables in 8.0.26; the source reads either spelling there.
    prefix = "source" if version >= (8, 0, 26) else "master"
    statements = [
        f"SET @{prefix}_binlog_checksum = 'CRC32'",
        f"SET @{prefix}_heartbeat_period = {heartbeat_ns}",
    ]
    if replica_uuid:
        statements.append(f"SET @{'replica' if prefix == 'source' else 'slave'}_uuid = '{replica_uuid}'")
    return statements


# --------------------------------------------------------------------------- preflight

PREFLIGHT_VARIABLES = (
    "log_bin",
    "binlog_format",
    "binlog_row_image",
    "binlog_row_metadata",
    "binlog_row_value_options",
    "binlog_checksum",
    "gtid_mode",
    "gtid_strict_mode",
    "binlog_transaction_compression",
    "server_id",
    "server_uuid",
    "gtid_binlog_pos",
    "gtid_executed",
    "gtid_purged",
    "time_zone",
    "system_time_zone",
    "encrypt_binlog",
)


@dataclass(frozen=True)
class ServerInfo:
    """What preflight read from the server, and what it concluded."""

    version: str
    variables: dict[str, str]
    utc_offset_seconds: int = 0  # the server's time zone offset from UTC when preflight ran
    warnings: tuple[str, ...] = ()
    refusals: tuple[str, ...] = ()

    @property
    def flavor(self) -> str:
        return "mariadb" if "mariadb" in self.version.lower() else "mysql"

    @property
    def version_tuple(self) -> tuple[int, int, int]:
        return version_tuple(self.version)

    @property
    def server_id(self) -> int:
        return int(self.variables.get("server_id") or 0)

    @property
    def server_uuid(self) -> str:
        return self.variables.get("server_uuid", "")

    @property
    def time_zone(self) -> str:
        tz = self.variables.get("time_zone", "")
        return self.variables.get("system_time_zone", tz) if tz.upper() == "SYSTEM" else tz

    def var(self, name: str) -> str:
        return self.variables.get(name, "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "flavor": self.flavor,
            "variables": dict(self.variables),
            "utc_offset_seconds": self.utc_offset_seconds,
            "warnings": list(self.warnings),
            "refusals": list(self.refusals),
        }


def preflight_findings(version: str, variables: dict[str, str]) -> tuple[list[str], list[str]]:
    """(warnings, refusals) for these server settings. Pure: the rules of what a rollback needs."""
    warnings: list[str] = []
    refusals: list[str] = []
    flavor = "mariadb" if "mariadb" in version.lower() else "mysql"

    def value(name: str) -> str:
        return variables.get(name, "").upper()

    if value("log_bin") in ("OFF", "0"):
        refusals.append("binary logging is off on the server (log_bin=OFF): there is no binlog to read")
    fmt = value("binlog_format")
    if fmt and fmt != "ROW":
        refusals.append(
            f"the server logs with binlog_format={fmt}; a rollback needs ROW events "
            "(SET GLOBAL binlog_format=ROW for the changes to come)"
        )
    image = value("binlog_row_image")
    if image in ("MINIMAL", "NOBLOB"):
        warnings.append(
            f"binlog_row_image={image}: before-images lack some columns, so some UPDATEs and DELETEs "
            "cannot be fully restored (each is refused with its reason)"
        )
    if "PARTIAL_JSON" in value("binlog_row_value_options"):
        warnings.append(
            "binlog_row_value_options=PARTIAL_JSON: partial JSON updates log only the changed paths; "
            "such UPDATEs cannot be inverted"
        )
    if flavor == "mysql" and value("gtid_mode") and value("gtid_mode") != "ON":
        warnings.append(
            f"gtid_mode={value('gtid_mode')}: ranges can be given by position or time, not by GTID"
        )
    if value("encrypt_binlog") == "ON":
        warnings.append(
            "encrypt_binlog=ON: the server decrypts events for replicas; spooled files are plaintext"
        )
    return warnings, refusals


# --------------------------------------------------------------------------- the event stream


@dataclass(frozen=True, slots=True)
class DumpedEvent:
    """One event of a dump: the file it belongs to, where it starts there (None for artificial
    events, which are in no file), and its bytes exactly as the server sent them."""

    file: str
    pos: int | None
    data: bytes
    timestamp: int
    type_code: int
    server_id: int
    length: int
    next_pos: int
    flags: int

    @property
    def end(self) -> int:
        assert self.pos is not None
        return self.pos + self.length

    @property
    def artificial(self) -> bool:
        return self.pos is None


def _rotate_target(data: bytes) -> tuple[int, str]:
    """(position, file name) of a ROTATE event. Its checksum, if any, is told by a matching CRC:
    the artificial ROTATE precedes the FDE that would tell whether events carry one."""
    length = len(data)
    if length >= V4_HEADER_LEN + 8 + 4 and zlib.crc32(data[: length - 4]) == int.from_bytes(
        data[-4:], "little"
    ):
        length -= 4
    position = struct.unpack_from("<Q", data, V4_HEADER_LEN)[0]
    return position, data[V4_HEADER_LEN + 8 : length].decode("utf-8", "replace")


def events_from_packets(packets: Iterable[bytes], file_name: str = "") -> Iterator[DumpedEvent]:
    """Turn the dump's packets into DumpedEvents, placing each event in its file.

    `packets` are packet payloads: `00 <event>` or the final EOF packet. Artificial events
    (ROTATE naming the file, MariaDB's GTID_LIST announcing a GTID start) come with pos None;
    heartbeats are dropped. A FORMAT_DESCRIPTION is always placed at 4, its file's first event.
    """
    current = file_name
    prev_end = 4
    for packet in packets:
        if not packet:
            raise SourceError("the server sent an empty packet in the binlog stream")
        if packet[0] == 0xFE and len(packet) < 9:
            return
        if packet[0] != 0x00:
            raise SourceError(f"unexpected packet type 0x{packet[0]:02x} in the binlog stream")
        data = bytes(packet[1:])
        if len(data) < V4_HEADER_LEN:
            raise SourceError(f"the server sent a {len(data)}-byte event, shorter than an event header")
        timestamp, type_code, server_id, length, next_pos, flags = EVENT_HEADER.unpack_from(data, 0)
        if length != len(data):
            raise SourceError(f"event header says {length} bytes but the packet holds {len(data)}")
        if type_code in _HEARTBEATS:
            continue
        pos: int | None
        if type_code == EventType.FORMAT_DESCRIPTION:
            pos = 4
        elif flags & LOG_EVENT_ARTIFICIAL_F or next_pos == 0:
            pos = None
        else:
            # next_pos is 32 bits: lift it above the previous event, for files past 4 GiB.
            pos = (prev_end & ~0xFFFFFFFF) + ((next_pos - length) & 0xFFFFFFFF)
            if prev_end - pos > 1 << 31:
                pos += 1 << 32
        event = DumpedEvent(current, pos, data, timestamp, type_code, server_id, length, next_pos, flags)
        yield event
        if type_code == EventType.ROTATE:
            target_pos, target = _rotate_target(data)
            current, prev_end = target, target_pos
        elif pos is not None:
            prev_end = pos + length


# --------------------------------------------------------------------------- file headers


@dataclass(frozen=True)
class FileHeader:
    """The first events of a binlog file: what range resolution reads instead of the whole file."""

    name: str
    fde: bytes  # the FORMAT_DESCRIPTION event as stored at offset 4 (position restored if zeroed)
    facts: FormatFacts
    created: int  # the FDE's timestamp: when the server opened the file
    fde_end: int
    gtid_list: MariaGtidList | None = None  # MariaDB: GTIDs logged before this file
    previous_gtids: GtidSet | None = None  # MySQL: GTIDs logged before this file
    first_event_timestamp: int | None = None  # the first event after the header events, if any


def restore_fde(data: bytes, in_use: bool = False) -> bytes:
    """The FDE as the file holds it. A server zeroes the next-position field of the FDE it sends
    (MySQL always, MariaDB past position 4) and clears LOG_EVENT_BINLOG_IN_USE_F, which is set on
    disk while the file is the one being written. The CRC32 is computed without that flag."""
    fixed = bytearray(data)
    flags = struct.unpack_from("<H", fixed, 17)[0] & ~LOG_EVENT_BINLOG_IN_USE_F
    struct.pack_into("<H", fixed, 17, flags)
    if struct.unpack_from("<I", fixed, 13)[0] == 0:
        facts = parse_format_description(data, 4)
        struct.pack_into("<I", fixed, 13, 4 + len(fixed))
        if facts.checksum_len:
            struct.pack_into("<I", fixed, len(fixed) - 4, zlib.crc32(fixed[:-4]))
    if in_use:
        struct.pack_into("<H", fixed, 17, flags | LOG_EVENT_BINLOG_IN_USE_F)
    return bytes(fixed)


def same_fde(a: bytes, b: bytes) -> bool:
    """Equal FORMAT_DESCRIPTION events, whatever their LOG_EVENT_BINLOG_IN_USE_F flag."""
    return len(a) == len(b) >= V4_HEADER_LEN and restore_fde(a) == restore_fde(b)


# --------------------------------------------------------------------------- the client


_PRIVILEGE_IN_MESSAGE = re.compile(r"the (.+?) privilege", re.IGNORECASE)
_NOT_A_BOUNDARY = (
    "binlog truncated in the middle of event",
    "bogus data in log event",
    "event too big",
    "log event entry exceeded max_allowed_packet",
    "wrong offset",
    "invalid event",
    "bad event",
    "error in log format",
)


class BinlogServer:
    """A connection to one server: preflight, binlog listings, and binlog dumps.

    Queries run on one ordinary session; every dump opens its own session (a dump turns the
    session into a stream that the server ends by closing it).
    """

    def __init__(
        self,
        address: ServerAddress | str,
        server_id: int | None = None,
        connect_timeout: float | None = None,
        read_timeout: float | None = None,
        heartbeat_seconds: float = HEARTBEAT_SECONDS,
    ):
        self.address = ServerAddress.parse(address) if isinstance(address, str) else address
        self._requested_server_id = server_id
        timeouts = server_timeouts()  # MYSQL_ROLLBACK_CONNECT_TIMEOUT, _READ_TIMEOUT, _WRITE_TIMEOUT
        self.connect_timeout = timeouts["connect_timeout"] if connect_timeout is None else connect_timeout
        self.read_timeout = timeouts["read_timeout"] if read_timeout is None else read_timeout
        self.heartbeat_seconds = heartbeat_seconds
        self._conn: Any = None
        self._info: ServerInfo | None = None
        self._server_id: int | None = None
        self._headers: dict[str, FileHeader] = {}

    # ---- sessions

    def _connect(self, read_timeout: float | None = None) -> Any:
        import pymysql  # here, not at the top: a run on local files never loads it

        try:
            return open_connection(
                **self.address.session_args(),
                connect_timeout=self.connect_timeout,
                read_timeout=read_timeout,
                autocommit=True,
                charset="utf8mb4",
            )
        except pymysql.MySQLError as exc:
            raise self._error(exc, "connect") from None

    def __enter__(self) -> BinlogServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        import pymysql

        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except pymysql.MySQLError:
                pass

    def query(
        self, sql: str, args: Sequence[Any] | None = None, action: str = "query the server"
    ) -> list[tuple]:
        import pymysql

        if self._conn is None:
            self._conn = self._connect(read_timeout=self.read_timeout)
        try:
            with self._conn.cursor() as cur:
                cur.execute(sql, args)
                return list(cur.fetchall())
        except pymysql.MySQLError as exc:
            raise self._error(exc, action) from None
        except RuntimeError as exc:  # PyMySQL's answer to a reply it refuses (a LOCAL INFILE request)
            raise SourceError(f"{self.address}: cannot {action}: unexpected answer: {exc}") from None

    # ---- preflight

    @property
    def info(self) -> ServerInfo:
        if self._info is None:
            self._info = self.preflight()
        return self._info

    def preflight(self) -> ServerInfo:
        """Read the server's version and binlog settings; warnings and refusals come with them."""
        ((version, offset),) = self.query(
            "SELECT VERSION(), TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), NOW())",
            action="read the server version",
        )
        names = ", ".join(f"'{name}'" for name in PREFLIGHT_VARIABLES)
        rows = self.query(
            f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names})", action="read the server variables"
        )
        variables = {str(name).lower(): "" if value is None else str(value) for name, value in rows}
        warnings, refusals = preflight_findings(version, variables)
        self._info = ServerInfo(version, variables, int(offset or 0), tuple(warnings), tuple(refusals))
        return self._info

    def check(self) -> ServerInfo:
        """Preflight, and raise SourceError with the first reason the server cannot be a source."""
        info = self.info
        if info.refusals:
            raise SourceError(f"{self.address}: {info.refusals[0]}")
        return info

    @property
    def server_id(self) -> int:
        """Our replica id: the one asked for, else random in SERVER_ID_RANGE; never the server's own."""
        if self._server_id is None:
            own = self.info.server_id
            if self._requested_server_id is not None:
                if not 1 <= self._requested_server_id <= 0xFFFFFFFF:
                    raise SourceError(
                        f"replica server id {self._requested_server_id} is not within 1..4294967295"
                    )
                if self._requested_server_id == own:
                    raise SourceError(
                        f"replica server id {own} is the server's own server_id; choose another"
                    )
                self._server_id = self._requested_server_id
            else:
                rng = random.SystemRandom()
                while (candidate := rng.randint(*SERVER_ID_RANGE)) == own:
                    pass
                self._server_id = candidate
        return self._server_id

    # ---- listings

    def binary_logs(self) -> list[tuple[str, int]]:
        """(name, size) of every binary log the server still has, oldest first."""
        rows = self.query("SHOW BINARY LOGS", action="list the binary logs (SHOW BINARY LOGS)")
        return [(str(row[0]), int(row[1])) for row in rows]

    def end_position(self) -> tuple[str, int]:
        """The current end of the binary log: (file, position) of the next event to be written."""
        info = self.info
        if info.flavor == "mariadb":
            spellings = ["SHOW BINLOG STATUS", "SHOW MASTER STATUS"]  # 10.5.2+, older
        elif info.version_tuple >= (8, 2, 0):
            spellings = ["SHOW BINARY LOG STATUS", "SHOW MASTER STATUS"]  # 8.2+ (8.4 LTS), older
        else:
            spellings = ["SHOW MASTER STATUS"]
        for sql in spellings:
            try:
                rows = self.query(sql, action=f"read the binary log position ({sql})")
            except SourceError as exc:
                if "syntax" in str(exc).lower() and sql != spellings[-1]:
                    continue
                raise
            if not rows:
                raise SourceError(f"{self.address}: {sql} returned nothing; is binary logging on?")
            return str(rows[0][0]), int(rows[0][1])
        raise SourceError(f"{self.address}: cannot read the binary log position")  # pragma: no cover

    def gtid_state(self) -> GtidSet | MariaGtidPos:
        """MySQL: @@gtid_executed; MariaDB: @@gtid_binlog_pos (the GTIDs the binlog holds up to now)."""
        if self.info.flavor == "mariadb":
            ((pos,),) = self.query("SELECT @@global.gtid_binlog_pos", action="read gtid_binlog_pos")
            return MariaGtidPos.parse(pos or "")
        ((executed,),) = self.query("SELECT @@global.gtid_executed", action="read gtid_executed")
        return GtidSet.parse(executed or "")

    # ---- dumps

    def dump(self, file_name: str, position: int) -> Generator[DumpedEvent, None, None]:
        """The events from (file, position) to the current end of the log (non-blocking dump).

        Stop reading whenever you like: closing the generator closes the session.
        """
        self.check()
        flags = BINLOG_DUMP_NON_BLOCK
        if self.info.flavor == "mariadb":
            flags |= BINLOG_SEND_ANNOTATE_ROWS_EVENT
        packet = binlog_dump_packet(file_name, position, self.server_id, flags)
        return self._stream(packet, [], file_name, (file_name, position))

    def _stream(
        self, packet: bytes, extra: list[str], file_name: str, start: tuple[str, int] | None
    ) -> Generator[DumpedEvent, None, None]:
        import pymysql

        info = self.info
        statements = session_statements(
            info.flavor, info.version_tuple, self.heartbeat_seconds, _replica_uuid(self.server_id)
        )
        conn = self._connect(read_timeout=max(self.read_timeout, 4 * self.heartbeat_seconds))
        action = "read the binary log (replication)"
        try:
            try:
                with conn.cursor() as cur:
                    for sql in statements + extra:
                        cur.execute(sql)
                conn._execute_command(
                    COM_REGISTER_SLAVE, register_replica_packet(self.server_id, _hostname())[1:]
                )
                conn._read_packet()
                conn._execute_command(packet[0], packet[1:])
            except pymysql.MySQLError as exc:
                raise self._error(exc, action) from None
            started = start is None
            for event in events_from_packets(_packets(conn), file_name):
                if not started and event.pos is not None and event.type_code != EventType.FORMAT_DESCRIPTION:
                    started = True
                yield event
        except _WireError as wire:
            if start is not None and not started and _is_not_a_boundary(wire.exc):
                first_clause = _message(wire.exc).split(";")[0]
                raise RangeError(
                    f"position {start[1]} in {start[0]} is not the start of an event (the server: {first_clause})"
                ) from None
            raise self._error(wire.exc, action, start) from None
        finally:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - the dump may have left the socket mid-stream
                pass

    def file_header(self, name: str) -> FileHeader:
        """FDE, GTID list / previous GTIDs and first event time of a file, read over the protocol."""
        if name in self._headers:
            return self._headers[name]
        fde: bytes | None = None
        facts: FormatFacts | None = None
        gtid_list: MariaGtidList | None = None
        previous: GtidSet | None = None
        first_ts: int | None = None
        stream = self.dump(name, 4)
        try:
            for event in stream:
                if event.pos is None:
                    continue
                if event.file != name:
                    break
                if event.type_code == EventType.FORMAT_DESCRIPTION:
                    fde = restore_fde(event.data)
                    facts = parse_format_description(fde, 4, name)
                    continue
                if facts is None:
                    raise SourceError(
                        f"{self.address}: {name} does not begin with a FORMAT_DESCRIPTION event"
                    )
                body = event.data[facts.header_len : event.length - facts.checksum_len]
                try:
                    if event.type_code == EventType.GTID_LIST:
                        gtid_list = decode_mariadb_gtid_list(body)
                    elif event.type_code == EventType.PREVIOUS_GTIDS:
                        previous = decode_mysql_gtid_set(body)
                except BinlogFormatError as exc:
                    raise BinlogFormatError(name, event.pos, exc.reason) from None
                if event.type_code not in _HEADER_EVENTS:
                    if event.type_code != EventType.ROTATE and event.type_code != EventType.STOP:
                        first_ts = event.timestamp
                    break
        finally:
            stream.close()
        if fde is None or facts is None:
            raise SourceError(f"{self.address}: the server sent no FORMAT_DESCRIPTION event for {name}")
        header = FileHeader(
            name, fde, facts, EVENT_HEADER.unpack_from(fde, 0)[0], 4 + len(fde), gtid_list, previous, first_ts
        )
        if first_ts is not None:
            self._headers[name] = header  # written events and header events never change
        return header

    # ---- errors

    def _error(self, exc: BaseException, action: str, start: tuple[str, int] | None = None) -> RollbackError:
        """One clear line for a failed server operation."""
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
        message = _message(exc)
        where = str(self.address)
        user = self.address.user or "(anonymous)"
        if code == 1045 and action == "connect":
            return SourceError(
                f"cannot log in to {where} as '{user}': access denied (check user and password)"
            )
        if code in (2002, 2003, 2005, 2006, 2013, 2055) and action == "connect":
            return SourceError(f"cannot connect to {where}: {message}")
        if code in (1227, 1142, 1044, 1045):  # MariaDB answers COM_REGISTER_SLAVE with 1045
            return SourceError(self._privilege_message(action, message))
        if code == 1236:
            return _fatal_read_error(message, start)
        if code in (2006, 2013):
            return SourceError(f"lost the connection to {where} while trying to {action}: {message}")
        return SourceError(f"{where}: cannot {action}: {message}" + (f" (error {code})" if code else ""))

    def _privilege_message(self, action: str, message: str) -> str:
        info = self._info
        mariadb_10_5 = info is None or (info.flavor == "mariadb" and info.version_tuple >= (10, 5, 2))
        monitor = "BINLOG MONITOR" if mariadb_10_5 else "REPLICATION CLIENT"
        named = _PRIVILEGE_IN_MESSAGE.search(message)
        if named:
            missing = " or ".join(part.strip() for part in named.group(1).split(","))
        else:
            missing = "REPLICATION SLAVE" if "replication" in action else monitor
        user = self.address.user or "(anonymous)"
        return (
            f"user '{user}' on {self.address} lacks the {missing} privilege needed to {action}; "
            f"a rollback source needs REPLICATION SLAVE and {monitor} "
            f"(GRANT REPLICATION SLAVE, {monitor} ON *.* TO '{user}'@'...')"
        )


class _WireError(Exception):
    def __init__(self, exc: BaseException):
        super().__init__(str(exc))
        self.exc = exc


def _packets(conn: Any) -> Iterator[bytes]:
    """The raw payloads of the dump, read through PyMySQL (which joins packets over 16 MiB)."""
    import pymysql

    while True:
        try:
            packet = conn._read_packet()
        except pymysql.MySQLError as exc:
            raise _WireError(exc) from None
        data = packet.get_all_data()
        yield data
        if data[:1] == b"\xfe" and len(data) < 9:
            return


def _message(exc: BaseException) -> str:
    if len(exc.args) >= 2:
        return " ".join(str(exc.args[1]).split())
    return " ".join(str(exc).split()) or type(exc).__name__


def _is_not_a_boundary(exc: BaseException) -> bool:
    message = _message(exc).lower()
    return bool(exc.args) and exc.args[0] == 1236 and any(text in message for text in _NOT_A_BOUNDARY)


def _fatal_read_error(message: str, start: tuple[str, int] | None) -> SourceError | RangeError:
    """Error 1236 (ER_MASTER_FATAL_ERROR_READING_BINLOG) by what the server's message says."""
    lower = message.lower()
    if "could not find first log file" in lower or "purged" in lower:
        name = f" {start[0]}" if start else ""
        return RangeError(f"binary log{name} is no longer on the server (purged?): {message}")
    if "impossible position" in lower and start is not None:
        return RangeError(f"position {start[1]} is beyond the end of {start[0]}: {message}")
    if "gtid" in lower:
        return RangeError(f"the server cannot start at that GTID position: {message}")
    return SourceError(f"the server stopped the binlog dump: {message}")


def _hostname() -> str:
    try:
        return socket.gethostname()
    except OSError:  # pragma: no cover
        return ""


def _replica_uuid(server_id: int) -> str:
    """One replica UUID per replica id (MySQL ends an older dump thread with the same UUID)."""
    return str(uuid.uuid5(uuid.NAMESPACE_OID, f"mysql-rollback:{server_id}"))
