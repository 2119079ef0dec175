"""The small events: one decode function per event type, and the one dispatch table.

Row events and table maps live in `rows.py` and `table_map.py`; compressed containers
in `payload.py`. Every decoder takes the framed RawEvent and the FormatFacts in force
and returns a dataclass; the raw bytes stay on the RawEvent.
"""

from __future__ import annotations

import re
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rollback.base.errors import BinlogFormatError, UnsupportedEvent
from rollback.binlog.constants import EventType
from rollback.binlog.gtid import GtidSet, decode_mysql_gtid_set
from rollback.binlog.packed import read_lenenc, read_varlen_signed, read_varlen_unsigned
from rollback.binlog.reader import FormatFacts, RawEvent, parse_format_description


@dataclass(slots=True)
class FormatDescription:
    facts: FormatFacts


@dataclass(slots=True)
class Rotate:
    position: int
    next_file: str


@dataclass(slots=True)
class Stop:
    pass


@dataclass(slots=True)
class Query:
    thread_id: int
    exec_time: int
    error_code: int
    database: str
    sql: str
    status: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """BEGIN, COMMIT, ROLLBACK, XA, SAVEPOINT, DDL or OTHER (DML in statement format)."""
        return classify_sql(self.sql)


@dataclass(slots=True)
class Xid:
    xid: int


@dataclass(slots=True)
class Gtid:
    """A MySQL GTID (33), ANONYMOUS_GTID (34) or GTID_TAGGED (42) event."""

    flags: int
    uuid: str
    gno: int
    tag: str = ""
    last_committed: int | None = None
    sequence_number: int | None = None
    immediate_commit_timestamp: int | None = None  # microseconds since the epoch
    original_commit_timestamp: int | None = None
    transaction_length: int | None = None
    immediate_server_version: int | None = None
    anonymous: bool = False

    @property
    def text(self) -> str:
        if self.anonymous:
            return "ANONYMOUS"
        return f"{self.uuid}:{self.tag}:{self.gno}" if self.tag else f"{self.uuid}:{self.gno}"


@dataclass(slots=True)
class PreviousGtids:
    gtid_set: GtidSet


@dataclass(slots=True)
class RowsQuery:
    sql: str


@dataclass(slots=True)
class Intvar:
    kind: int  # 1 LAST_INSERT_ID, 2 INSERT_ID
    value: int


@dataclass(slots=True)
class Rand:
    seed1: int
    seed2: int


@dataclass(slots=True)
class UserVar:
    name: str
    is_null: bool
    value_type: int | None = None
    charset: int | None = None
    value: bytes | None = None
    flags: int = 0


@dataclass(slots=True)
class Incident:
    incident: int
    message: str


@dataclass(slots=True)
class Heartbeat:
    log_file: str


@dataclass(slots=True)
class MariaGtid:
    domain_id: int
    server_id: int
    seq_no: int
    flags: int
    commit_id: int | None = None
    xid: bytes | None = None
    # The session's thread id, which MariaDB 11 writes in the GTID event's extra flags (MDEV-7850)
    # since the GTID event replaced BEGIN; None when the server wrote none (MariaDB 10.x).
    thread_id: int | None = None

    FL_STANDALONE = 1
    FL_GROUP_COMMIT_ID = 2
    FL_TRANSACTIONAL = 4
    FL_DDL = 32
    FL_PREPARED_XA = 64
    FL_COMPLETED_XA = 128
    # flags_extra, the byte after the fields `flags` announces
    FL_EXTRA_MULTI_ENGINE = 0x01  # one byte follows: the number of other engines
    FL_COMMIT_ALTER = 0x04  # with FL_ROLLBACK_ALTER: 8 bytes follow, the START ALTER's seq_no
    FL_ROLLBACK_ALTER = 0x08
    FL_EXTRA_THREAD_ID = 0x10  # 4 bytes follow: the thread id

    @property
    def text(self) -> str:
        return f"{self.domain_id}-{self.server_id}-{self.seq_no}"

    @property
    def standalone(self) -> bool:
        """No BEGIN/COMMIT follows: the group is one statement (DDL)."""
        return bool(self.flags & self.FL_STANDALONE)


@dataclass(slots=True)
class GtidList:
    gtids: list[tuple[int, int, int]]  # (domain, server, seq)
    flags: int = 0


@dataclass(slots=True)
class BinlogCheckpoint:
    log_file: str


@dataclass(slots=True)
class Ignored:
    """An event with nothing for us (Aurora padding, IGNORABLE, TRANSACTION_CONTEXT, VIEW_CHANGE...)."""

    type_code: int


# --------------------------------------------------------------------------------------------------

_SQL_KIND_PREFIXES = (
    ("BEGIN", "BEGIN"),
    ("COMMIT", "COMMIT"),
    ("ROLLBACK TO", "SAVEPOINT"),
    ("ROLLBACK WORK TO", "SAVEPOINT"),
    ("ROLLBACK", "ROLLBACK"),
    ("SAVEPOINT", "SAVEPOINT"),
    ("RELEASE SAVEPOINT", "SAVEPOINT"),
    ("XA ", "XA"),
    ("START TRANSACTION", "BEGIN"),
)
_DDL_WORDS = (
    "CREATE",
    "ALTER",
    "DROP",
    "RENAME",
    "TRUNCATE",
    "GRANT",
    "REVOKE",
    "ANALYZE",
    "OPTIMIZE",
    "REPAIR",
)


def classify_sql(sql: str) -> str:
    text = _strip_leading_comments(sql).upper()
    for prefix, kind in _SQL_KIND_PREFIXES:
        if text.startswith(prefix):
            return kind
    first = text.split(None, 1)[0] if text.split() else ""
    return "DDL" if first in _DDL_WORDS else "OTHER"


_EXECUTABLE_COMMENT = re.compile(r"/\*M?!\d*")


def _strip_leading_comments(sql: str) -> str:
    text = sql.lstrip()
    while text.startswith("/*"):
        executable = _EXECUTABLE_COMMENT.match(text)
        if executable:  # /*!80013 ALTER ... */: the server executed the content, which is the statement
            text = text[executable.end() :].lstrip()
            continue
        end = text.find("*/")
        if end < 0:
            break
        text = text[end + 2 :].lstrip()
    return text


def _text(raw: bytes | memoryview) -> str:
    return bytes(raw).decode("utf-8", "replace")


def _need(raw: RawEvent, body: memoryview, size: int, what: str) -> None:
    if len(body) < size:
        raise BinlogFormatError(None, raw.pos, f"{raw.type_name} event too short for its {what}")


def decode_format_description(raw: RawEvent, facts: FormatFacts) -> FormatDescription:
    return FormatDescription(parse_format_description(raw.data, raw.pos))


def decode_rotate(raw: RawEvent, facts: FormatFacts) -> Rotate:
    body = raw.body
    post = facts.post_header_len(EventType.ROTATE, 8)
    _need(raw, body, post, "position")
    position = struct.unpack_from("<Q", body, 0)[0] if post >= 8 else 4
    return Rotate(position, _text(body[post:]))


# Status variables of QUERY events: code -> (name, fixed size) or a reader for variable ones.
def _q_str1(body: memoryview, pos: int) -> tuple[Any, int]:
    n = body[pos]
    return _text(body[pos + 1 : pos + 1 + n]), pos + 1 + n


def _q_catalog_nz(body: memoryview, pos: int) -> tuple[Any, int]:
    return _q_str1(body, pos)


def _q_catalog_old(body: memoryview, pos: int) -> tuple[Any, int]:
    n = body[pos]
    return _text(body[pos + 1 : pos + 1 + n]), pos + 2 + n  # length, string, trailing NUL


def _q_updated_dbs(body: memoryview, pos: int) -> tuple[Any, int]:
    count = body[pos]
    pos += 1
    if count == 254:  # OVER_MAX_DBS_IN_EVENT_MTS
        return [], pos
    names = []
    for _ in range(count):
        end = bytes(body[pos:]).index(b"\0")
        names.append(_text(body[pos : pos + end]))
        pos += end + 1
    return names, pos


def _q_invoker(body: memoryview, pos: int) -> tuple[Any, int]:
    user, pos = _q_str1(body, pos)
    host, pos = _q_str1(body, pos)
    return f"{user}@{host}", pos


def _q_fixed(size: int, fmt: str | None = None) -> Callable[[memoryview, int], tuple[Any, int]]:
    def read(body: memoryview, pos: int) -> tuple[Any, int]:
        if fmt:
            value: Any = struct.unpack_from(fmt, body, pos)
            return (value[0] if len(value) == 1 else value), pos + size
        return int.from_bytes(body[pos : pos + size], "little"), pos + size

    return read


def _q_xa_xid(body: memoryview, pos: int) -> tuple[Any, int]:  # MariaDB Q_XID / MySQL XA?
    return int.from_bytes(body[pos : pos + 8], "little"), pos + 8


def _q_charset_collations(body: memoryview, pos: int) -> tuple[Any, int]:  # MariaDB 11.x
    count = body[pos]
    return bytes(body[pos + 1 : pos + 1 + 4 * count]), pos + 1 + 4 * count


_QUERY_STATUS: dict[int, tuple[str, Callable[[memoryview, int], tuple[Any, int]]]] = {
    0: ("flags2", _q_fixed(4)),
    1: ("sql_mode", _q_fixed(8)),
    2: ("catalog", _q_catalog_old),
    3: ("auto_increment", _q_fixed(4, "<HH")),
    4: ("charset", _q_fixed(6, "<HHH")),  # client, connection collation, server collation
    5: ("time_zone", _q_str1),
    6: ("catalog", _q_catalog_nz),
    7: ("lc_time_names", _q_fixed(2)),
    8: ("charset_database", _q_fixed(2)),
    9: ("table_map_for_update", _q_fixed(8)),
    10: ("master_data_written", _q_fixed(4)),
    11: ("invoker", _q_invoker),
    12: ("updated_db_names", _q_updated_dbs),
    13: ("microseconds", _q_fixed(3)),
    14: ("commit_ts", _q_fixed(8)),
    15: ("commit_ts2", _q_fixed(8)),
    16: ("explicit_defaults_for_timestamp", _q_fixed(1)),
    17: ("ddl_logged_with_xid", _q_fixed(8)),
    18: ("default_collation_for_utf8mb4", _q_fixed(2)),
    19: ("sql_require_primary_key", _q_fixed(1)),
    20: ("default_table_encryption", _q_fixed(1)),
    # MariaDB
    128: ("hrnow", _q_fixed(3)),
    129: ("xid", _q_xa_xid),
    130: ("gtid_flags3", _q_fixed(1)),
    131: ("character_set_collations", _q_charset_collations),
}


def _parse_query_status(raw: RawEvent, block: memoryview) -> dict[str, Any]:
    status: dict[str, Any] = {}
    pos = 0
    try:
        while pos < len(block):
            code = block[pos]
            entry = _QUERY_STATUS.get(code)
            if entry is None:
                # Unknown variable: its size is unknown, so the rest of the block cannot be read.
                status["unparsed_status_code"] = code
                break
            name, reader = entry
            status[name], pos = reader(block, pos + 1)
    except (IndexError, ValueError, struct.error):
        raise BinlogFormatError(None, raw.pos, "QUERY event status variables are malformed") from None
    if pos > len(block):
        raise BinlogFormatError(None, raw.pos, "QUERY event status variables overrun their block")
    return status


def decode_query(raw: RawEvent, facts: FormatFacts) -> Query:
    body = raw.body
    post = facts.post_header_len(EventType.QUERY, 13)
    _need(raw, body, max(post, 11), "post-header")
    thread_id, exec_time, db_len, error_code = struct.unpack_from("<IIBH", body, 0)
    status_len = struct.unpack_from("<H", body, 11)[0] if post >= 13 else 0
    status_end = post + status_len
    _need(raw, body, status_end + db_len + 1, "status variables and database name")
    status = _parse_query_status(raw, body[post:status_end])
    database = _text(body[status_end : status_end + db_len])
    sql = _text(body[status_end + db_len + 1 :])
    return Query(thread_id, exec_time, error_code, database, sql, status)


def decode_xid(raw: RawEvent, facts: FormatFacts) -> Xid:
    body = raw.body
    if len(body) != 8:
        raise BinlogFormatError(None, raw.pos, f"XID event body is {len(body)} bytes, not 8")
    return Xid(struct.unpack_from("<Q", body, 0)[0])


def decode_gtid(raw: RawEvent, facts: FormatFacts) -> Gtid:
    """GTID and ANONYMOUS_GTID: flags:1 sid:16 gno:8 [lt_type:1 last_committed:8 sequence_number:8]
    [immediate_commit_timestamp:7 (high bit: original follows, 7)] [transaction_length: packed]
    [immediate_server_version:4 (high bit: original follows, 4)]."""
    body = raw.body
    _need(raw, body, 25, "sid and gno")
    flags = body[0]
    sid = str(uuid.UUID(bytes=bytes(body[1:17])))
    gno = struct.unpack_from("<q", body, 17)[0]
    event = Gtid(flags, sid, gno, anonymous=raw.type_code == EventType.ANONYMOUS_GTID)
    pos = 25
    if len(body) >= pos + 17 and body[pos] == 2:  # LOGICAL_TIMESTAMP_TYPECODE
        event.last_committed, event.sequence_number = struct.unpack_from("<qq", body, pos + 1)
        pos += 17
    if len(body) >= pos + 7:
        ts = int.from_bytes(body[pos : pos + 7], "little")
        pos += 7
        if ts & (1 << 55):
            ts &= ~(1 << 55)
            if len(body) >= pos + 7:
                event.original_commit_timestamp = int.from_bytes(body[pos : pos + 7], "little")
                pos += 7
        else:
            event.original_commit_timestamp = ts
        event.immediate_commit_timestamp = ts
        if pos < len(body):
            event.transaction_length, pos = read_lenenc(body, pos)
        if len(body) >= pos + 4:
            version = struct.unpack_from("<I", body, pos)[0]
            event.immediate_server_version = version & 0x7FFFFFFF
    return event


# GTID_TAGGED (MySQL 8.3+): a mysql::serialization message. Field ids and their kinds.
_TAGGED_FIELDS = {
    0: ("flags", "u"),
    1: ("uuid", "uuid"),
    2: ("gno", "s"),
    3: ("tag", "str"),
    4: ("last_committed", "s"),
    5: ("sequence_number", "s"),
    6: ("immediate_commit_timestamp", "u"),
    7: ("original_commit_timestamp", "u"),
    8: ("transaction_length", "u"),
    9: ("immediate_server_version", "u"),
    10: ("original_server_version", "u"),
    11: ("commit_group_ticket", "u"),
}


def decode_gtid_tagged(raw: RawEvent, facts: FormatFacts) -> Gtid:
    """Message: format version, serializable size, last non-ignorable field id, then (field id, value)
    pairs, every integer in the variable-length encoding (signed ones zig-zagged), the uuid as 16
    variable-length bytes and the tag as a length-prefixed string."""
    body = raw.body
    try:
        _version, pos = read_varlen_unsigned(body, 0)
        size, pos = read_varlen_unsigned(body, pos)
        end = min(len(body), pos - 1 + size) if size else len(body)
        _last_required, pos = read_varlen_unsigned(body, pos)
        values: dict[str, Any] = {}
        while pos < end:
            field_id, pos = read_varlen_unsigned(body, pos)
            if field_id not in _TAGGED_FIELDS:
                break  # a newer optional field: nothing after it is needed
            name, kind = _TAGGED_FIELDS[field_id]
            if kind == "u":
                values[name], pos = read_varlen_unsigned(body, pos)
            elif kind == "s":
                values[name], pos = read_varlen_signed(body, pos)
            elif kind == "uuid":
                octets = bytearray()
                for _ in range(16):
                    octet, pos = read_varlen_unsigned(body, pos)
                    octets.append(octet & 0xFF)
                values[name] = str(uuid.UUID(bytes=bytes(octets)))
            else:
                length, pos = read_varlen_unsigned(body, pos)
                values[name] = _text(body[pos : pos + length])
                pos += length
    except BinlogFormatError as exc:
        raise BinlogFormatError(None, raw.pos, f"GTID_TAGGED event malformed: {exc.reason}") from None
    if "uuid" not in values or "gno" not in values:
        raise BinlogFormatError(None, raw.pos, "GTID_TAGGED event lacks its uuid or gno")
    return Gtid(
        values.get("flags", 0),
        values["uuid"],
        values["gno"],
        tag=values.get("tag", ""),
        last_committed=values.get("last_committed"),
        sequence_number=values.get("sequence_number"),
        immediate_commit_timestamp=values.get("immediate_commit_timestamp"),
        original_commit_timestamp=values.get(
            "original_commit_timestamp", values.get("immediate_commit_timestamp")
        ),
        transaction_length=values.get("transaction_length"),
        immediate_server_version=values.get("immediate_server_version"),
    )


def decode_previous_gtids(raw: RawEvent, facts: FormatFacts) -> PreviousGtids:
    try:
        return PreviousGtids(decode_mysql_gtid_set(bytes(raw.body)))
    except BinlogFormatError as exc:
        raise BinlogFormatError(None, raw.pos, f"PREVIOUS_GTIDS event malformed: {exc.reason}") from None


def decode_rows_query(raw: RawEvent, facts: FormatFacts) -> RowsQuery:
    body = raw.body
    post = facts.post_header_len(EventType.ROWS_QUERY, 0)
    # One length byte (truncated at 255, so ignored) precedes the text.
    return RowsQuery(_text(body[post + 1 :]))


def decode_annotate_rows(raw: RawEvent, facts: FormatFacts) -> RowsQuery:
    return RowsQuery(_text(raw.body))


def decode_intvar(raw: RawEvent, facts: FormatFacts) -> Intvar:
    body = raw.body
    _need(raw, body, 9, "value")
    return Intvar(body[0], struct.unpack_from("<Q", body, 1)[0])


def decode_rand(raw: RawEvent, facts: FormatFacts) -> Rand:
    body = raw.body
    _need(raw, body, 16, "seeds")
    return Rand(*struct.unpack_from("<QQ", body, 0))


def decode_user_var(raw: RawEvent, facts: FormatFacts) -> UserVar:
    body = raw.body
    try:
        name_len = struct.unpack_from("<I", body, 0)[0]
        name = _text(body[4 : 4 + name_len])
        pos = 4 + name_len
        is_null = bool(body[pos])
        if is_null:
            return UserVar(name, True)
        value_type, charset, value_len = struct.unpack_from("<BII", body, pos + 1)
        pos += 10
        value = bytes(body[pos : pos + value_len])
        if len(value) != value_len:
            raise IndexError
        flags = body[pos + value_len] if pos + value_len < len(body) else 0
    except (IndexError, struct.error):
        raise BinlogFormatError(None, raw.pos, "USER_VAR event truncated") from None
    return UserVar(name, False, value_type, charset, value, flags)


def decode_incident(raw: RawEvent, facts: FormatFacts) -> Incident:
    body = raw.body
    _need(raw, body, 2, "incident code")
    incident = struct.unpack_from("<H", body, 0)[0]
    message = ""
    if len(body) > 2:
        n = body[2]
        message = _text(body[3 : 3 + n])
    return Incident(incident, message)


def decode_heartbeat(raw: RawEvent, facts: FormatFacts) -> Heartbeat:
    return Heartbeat(_text(raw.body))


def decode_maria_gtid(raw: RawEvent, facts: FormatFacts) -> MariaGtid:
    body = raw.body
    _need(raw, body, 13, "sequence and domain")
    seq_no, domain_id, flags = struct.unpack_from("<QIB", body, 0)
    event = MariaGtid(domain_id, raw.server_id, seq_no, flags)
    at = 13
    if flags & MariaGtid.FL_GROUP_COMMIT_ID and len(body) >= 21:
        event.commit_id = struct.unpack_from("<Q", body, 13)[0]
        at = 21
    elif flags & (MariaGtid.FL_PREPARED_XA | MariaGtid.FL_COMPLETED_XA) and len(body) >= 19:
        gtrid_len, bqual_len = body[17], body[18]
        event.xid = bytes(body[13 : 19 + gtrid_len + bqual_len])
        at = 19 + gtrid_len + bqual_len
    # Then flags_extra and what it announces, in this order (MariaDB's Gtid_log_event). Older servers
    # pad the event with zero bytes there, which read as no extra flag.
    if at < len(body):
        extra = body[at]
        at += 1
        if extra & MariaGtid.FL_EXTRA_MULTI_ENGINE:
            at += 1
        if extra & (MariaGtid.FL_COMMIT_ALTER | MariaGtid.FL_ROLLBACK_ALTER):
            at += 8
        if extra & MariaGtid.FL_EXTRA_THREAD_ID:
            _need(raw, body, at + 4, "the thread id its extra flags announce")
            event.thread_id = struct.unpack_from("<I", body, at)[0]
    return event


def gtid_of(raw: RawEvent, facts: FormatFacts) -> str | None:
    """The GTID a transaction's GTID event gives it (MySQL, tagged MySQL, MariaDB); None for any other
    event and for ANONYMOUS_GTID."""
    if raw.type_code == EventType.MARIA_GTID:
        return decode_maria_gtid(raw, facts).text
    if raw.type_code == EventType.GTID:
        return decode_gtid(raw, facts).text
    if raw.type_code == EventType.GTID_TAGGED:
        return decode_gtid_tagged(raw, facts).text
    return None


def decode_gtid_list(raw: RawEvent, facts: FormatFacts) -> GtidList:
    body = raw.body
    _need(raw, body, 4, "count")
    word = struct.unpack_from("<I", body, 0)[0]
    count, flags = word & 0x0FFFFFFF, word >> 28
    _need(raw, body, 4 + 16 * count, f"{count} GTIDs")
    gtids = [struct.unpack_from("<IIQ", body, 4 + 16 * i) for i in range(count)]
    return GtidList([(d, s, q) for d, s, q in gtids], flags)


def decode_binlog_checkpoint(raw: RawEvent, facts: FormatFacts) -> BinlogCheckpoint:
    body = raw.body
    _need(raw, body, 4, "name length")
    n = struct.unpack_from("<I", body, 0)[0]
    return BinlogCheckpoint(_text(body[4 : 4 + n]))


def decode_start_encryption(raw: RawEvent, facts: FormatFacts) -> Any:
    raise UnsupportedEvent(
        None, raw.pos, "encrypted binlog (START_ENCRYPTION event): decrypt it with the server first"
    )


def decode_stop(raw: RawEvent, facts: FormatFacts) -> Stop:
    return Stop()


def decode_ignored(raw: RawEvent, facts: FormatFacts) -> Ignored:
    return Ignored(raw.type_code)


Decoder = Callable[[RawEvent, FormatFacts], Any]

# Row events, table maps and payload containers are registered by their own modules (see decode.py).
SMALL_EVENT_DECODERS: dict[int, Decoder] = {
    EventType.FORMAT_DESCRIPTION: decode_format_description,
    EventType.ROTATE: decode_rotate,
    EventType.STOP: decode_stop,
    EventType.QUERY: decode_query,
    EventType.XID: decode_xid,
    EventType.GTID: decode_gtid,
    EventType.ANONYMOUS_GTID: decode_gtid,
    EventType.GTID_TAGGED: decode_gtid_tagged,
    EventType.PREVIOUS_GTIDS: decode_previous_gtids,
    EventType.ROWS_QUERY: decode_rows_query,
    EventType.INTVAR: decode_intvar,
    EventType.RAND: decode_rand,
    EventType.USER_VAR: decode_user_var,
    EventType.INCIDENT: decode_incident,
    EventType.HEARTBEAT: decode_heartbeat,
    EventType.HEARTBEAT_V2: decode_ignored,
    EventType.IGNORABLE: decode_ignored,
    EventType.TRANSACTION_CONTEXT: decode_ignored,
    EventType.VIEW_CHANGE: decode_ignored,
    EventType.XA_PREPARE: decode_ignored,
    EventType.ANNOTATE_ROWS: decode_annotate_rows,
    EventType.BINLOG_CHECKPOINT: decode_binlog_checkpoint,
    EventType.MARIA_GTID: decode_maria_gtid,
    EventType.GTID_LIST: decode_gtid_list,
    EventType.START_ENCRYPTION: decode_start_encryption,
    # Events of statement-based LOAD DATA and friends carry no row images.
    EventType.BEGIN_LOAD_QUERY: decode_ignored,
    EventType.EXECUTE_LOAD_QUERY: decode_ignored,
    EventType.APPEND_BLOCK: decode_ignored,
    EventType.DELETE_FILE: decode_ignored,
    EventType.NEW_LOAD: decode_ignored,
    EventType.CREATE_FILE: decode_ignored,
    EventType.EXEC_LOAD: decode_ignored,
    EventType.LOAD: decode_ignored,
    EventType.SLAVE: decode_ignored,
}
