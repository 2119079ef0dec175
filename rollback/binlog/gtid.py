"""GTIDs as values: MySQL GTID sets (with 8.3+ tags) and MariaDB GTID positions, in text and binary form.

MySQL
    A GTID is ``uuid[:tag]:gno``; a GTID set is, per (uuid, tag), a set of disjoint gno intervals.
    Text: ``uuid:1-5:7:tag1:3-4,uuid2:1-3`` (a tag applies to the intervals after it until the next
    tag). Binary (PREVIOUS_GTIDS event body, COM_BINLOG_DUMP_GTID payload), all integers little-endian::

        n_sids:8        format 0 (untagged): the whole field is the entry count (high byte 0);
                        format 1 (tagged, MySQL 8.3+): high byte 1, count in bits 8..55, low byte 1
        n_sids x {
            uuid:16
            tag         tagged format only: length as a MySQL varint (one byte, length << 1), then the
                        lowercase tag bytes; an untagged entry has length 0
            n_intervals:8
            n_intervals x { start:8, end_exclusive:8 }   strictly increasing, never adjacent
        }

    (sql/rpl_gtid_set.cc ``Gtid_set::encode`` / ``add_gtid_encoding`` / ``encode_nsids_format``,
    libs/mysql/gtid/tag.cpp ``Tag::encode_tag``.) The server's largest GNO is 2^63-2: ``GNO_END``
    = INT64_MAX is the exclusive end, and the text parser rejects INT64_MAX itself.

MariaDB
    A GTID is ``domain-server-seq``. A position holds, per domain, the last GTID applied; it
    includes every GTID of that domain with a lower or equal seq, whatever its server id.
    GTID_LIST event body: ``count:4`` (low 28 bits count, high 4 bits flags), then count x
    ``{domain:4, server:4, seq:8}``, little-endian.
"""

from __future__ import annotations

import re
import struct
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby
from typing import NamedTuple

from rollback.base.errors import BinlogFormatError, RangeError, RollbackError

MAX_GNO = 2**63 - 2
TAG_MAX_LENGTH = 32
MARIA_MAX_ID = 2**32 - 1
MARIA_MAX_SEQ = 2**64 - 1

GTID_FORMAT_UNTAGGED = 0
GTID_FORMAT_TAGGED = 1

# Flags of a MariaDB GTID_LIST event, as returned in MariaGtidList.flags (the count field's high 4 bits).
GTID_LIST_FLAG_UNTIL_REACHED = 0x1
GTID_LIST_FLAG_IGN_GTIDS = 0x2

_UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_TAG_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER_RE = re.compile(r"[0-9]+")
_WHITESPACE = " \t\n\r\v\f"

_U64 = struct.Struct("<Q")
_I64_PAIR = struct.Struct("<qq")
_U64_PAIR = struct.Struct("<QQ")
_U32 = struct.Struct("<I")
_MARIA_GTID = struct.Struct("<IIQ")

Interval = tuple[int, int]  # (start, end), both inclusive


class GtidSyntaxError(ValueError, RollbackError):
    """Text that is not a GTID, GTID set or MariaDB GTID position."""

    def __init__(self, text: str, reason: str):
        self.text = text
        self.reason = reason
        shown = text if len(text) <= 200 else text[:200] + "..."
        super().__init__(f"malformed GTID text {shown!r}: {reason}")


# --------------------------------------------------------------------------- MySQL values


class Gtid(NamedTuple):
    """One MySQL GTID; ``tag`` is "" for an untagged GTID."""

    uuid: str
    tag: str
    gno: int

    @classmethod
    def parse(cls, text: str) -> Gtid:
        """``uuid:gno`` or ``uuid:tag:gno``, as in SET gtid_next."""
        parts = [part.strip(_WHITESPACE) for part in text.split(":")]
        if len(parts) == 2:
            parts.insert(1, "")
        if (
            len(parts) != 3
            or not _UUID_RE.fullmatch(parts[0])
            or (parts[1] and not _TAG_RE.fullmatch(parts[1]))
            or not _NUMBER_RE.fullmatch(parts[2])
        ):
            raise GtidSyntaxError(text, "expected one GTID: uuid:gno or uuid:tag:gno")
        uuid, tag, gno = parts[0].lower(), parts[1].lower(), int(parts[2])
        if len(tag) > TAG_MAX_LENGTH:
            raise GtidSyntaxError(text, f"tag longer than {TAG_MAX_LENGTH} characters")
        if not 1 <= gno <= MAX_GNO:
            raise GtidSyntaxError(text, f"transaction number not within 1..{MAX_GNO}")
        return cls(uuid, tag, gno)

    def __str__(self) -> str:
        return f"{self.uuid}:{self.tag}:{self.gno}" if self.tag else f"{self.uuid}:{self.gno}"


class GtidInterval(NamedTuple):
    """A run of GTIDs of one (uuid, tag): gnos start..end, both inclusive."""

    uuid: str
    tag: str
    start: int
    end: int

    def __str__(self) -> str:
        gnos = str(self.start) if self.start == self.end else f"{self.start}-{self.end}"
        return f"{self.uuid}:{self.tag}:{gnos}" if self.tag else f"{self.uuid}:{gnos}"


_Key = tuple[str, str]  # (uuid, tag)
_Map = dict[_Key, tuple[Interval, ...]]


class GtidSet:
    """An immutable MySQL GTID set. Build it with ``GtidSet.parse(text)`` or from intervals.

    ``GtidSet([("3E11FA47-71CA-11E1-9E33-C80AA9429562", "", 1, 5)])``: uuids and tags are
    normalised to lowercase; intervals may overlap or touch, they are merged.
    """

    __slots__ = ("_map",)
    _map: _Map

    def __init__(self, intervals: Iterable[GtidInterval | tuple[str, str, int, int]] = ()):
        groups: dict[_Key, list[Interval]] = {}
        for uuid, tag, start, end in intervals:
            if not isinstance(uuid, str) or not _UUID_RE.fullmatch(uuid):
                raise ValueError(f"not a UUID: {uuid!r}")
            if not isinstance(tag, str) or (tag and not _valid_tag(tag)):
                raise ValueError(f"not a GTID tag: {tag!r}")
            if not 1 <= start <= end <= MAX_GNO:
                raise ValueError(f"GTID interval {start}-{end} is not within 1..{MAX_GNO} in order")
            groups.setdefault((uuid.lower(), tag.lower()), []).append((start, end))
        self._map = _canonical({key: _merge(ivs) for key, ivs in groups.items()})

    @classmethod
    def _of(cls, mapping: _Map) -> GtidSet:
        new = cls.__new__(cls)
        new._map = _canonical(mapping)
        return new

    @classmethod
    def parse(cls, text: str) -> GtidSet:
        """Parse MySQL's text form; whitespace between items is allowed, "" is the empty set."""
        groups = _parse_mysql_text(text)
        return cls._of({key: _merge(ivs) for key, ivs in groups.items()})

    # ---- reading

    def __iter__(self) -> Iterator[GtidInterval]:
        """The intervals in canonical order: uuid, then untagged before tags sorted, then gno."""
        for (uuid, tag), ivs in self._map.items():
            for start, end in ivs:
                yield GtidInterval(uuid, tag, start, end)

    def contains(self, uuid: str, tag: str, gno: int) -> bool:
        ivs = self._map.get((uuid.lower(), tag.lower()))
        if not ivs:
            return False
        at = bisect_right(ivs, gno, key=lambda iv: iv[0]) - 1
        return at >= 0 and gno <= ivs[at][1]

    def __contains__(self, gtid: object) -> bool:
        if not isinstance(gtid, tuple) or len(gtid) != 3:
            return False
        uuid, tag, gno = gtid
        return self.contains(uuid, tag, gno)

    def is_empty(self) -> bool:
        return not self._map

    def __bool__(self) -> bool:
        return bool(self._map)

    @property
    def has_tags(self) -> bool:
        return any(tag for _, tag in self._map)

    def count(self) -> int:
        """The number of GTIDs in the set."""
        return sum(end - start + 1 for ivs in self._map.values() for start, end in ivs)

    def issubset(self, other: GtidSet) -> bool:
        return not (self - other)

    # ---- set algebra

    def __or__(self, other: GtidSet) -> GtidSet:
        if not isinstance(other, GtidSet):
            return NotImplemented
        merged = dict(self._map)
        for key, ivs in other._map.items():
            merged[key] = _merge(merged.get(key, ()) + ivs)
        return GtidSet._of(merged)

    def __sub__(self, other: GtidSet) -> GtidSet:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return GtidSet._of({key: _subtract(ivs, other._map.get(key, ())) for key, ivs in self._map.items()})

    def __and__(self, other: GtidSet) -> GtidSet:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return GtidSet._of(
            {key: _intersect(ivs, other._map[key]) for key, ivs in self._map.items() if key in other._map}
        )

    def union(self, *others: GtidSet) -> GtidSet:
        result = self
        for other in others:
            result = result | other
        return result

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self._map == other._map

    def __hash__(self) -> int:
        return hash(tuple(self._map.items()))

    # ---- text

    def format(self, separator: str = ",") -> str:
        """MySQL's canonical text; ``separator=",\\n"`` gives what @@gtid_executed shows."""
        parts: list[str] = []
        for uuid, entries in groupby(self._map.items(), key=lambda item: item[0][0]):
            text = uuid
            for (_, tag), ivs in entries:
                text += f":{tag}" if tag else ""
                text += "".join(f":{s}" if s == e else f":{s}-{e}" for s, e in ivs)
            parts.append(text)
        return separator.join(parts)

    def __str__(self) -> str:
        return self.format()

    def __repr__(self) -> str:
        return f"GtidSet.parse({self.format()!r})"


def _valid_tag(tag: str) -> bool:
    return len(tag) <= TAG_MAX_LENGTH and _TAG_RE.fullmatch(tag) is not None


def _canonical(mapping: _Map) -> _Map:
    return {key: mapping[key] for key in sorted(mapping) if mapping[key]}


def _merge(ivs: Iterable[Interval]) -> tuple[Interval, ...]:
    out: list[Interval] = []
    for start, end in sorted(ivs):
        if out and start <= out[-1][1] + 1:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return tuple(out)


def _subtract(ivs: tuple[Interval, ...], minus: tuple[Interval, ...]) -> tuple[Interval, ...]:
    out: list[Interval] = []
    j = 0
    for start, end in ivs:
        while j < len(minus) and minus[j][1] < start:
            j += 1
        cur = start
        k = j
        while k < len(minus) and minus[k][0] <= end and cur <= end:
            m_start, m_end = minus[k]
            if m_start > cur:
                out.append((cur, m_start - 1))
            cur = max(cur, m_end + 1)
            k += 1
        if cur <= end:
            out.append((cur, end))
    return tuple(out)


def _intersect(a: tuple[Interval, ...], b: tuple[Interval, ...]) -> tuple[Interval, ...]:
    out: list[Interval] = []
    i = j = 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start <= end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WHITESPACE:
        i += 1
    return i


def _parse_mysql_text(text: str) -> dict[_Key, list[Interval]]:
    """Scan ``uuid(:tag|:gno[-gno])*`` items separated by commas; blank items are skipped as MySQL does."""

    def fail(reason: str, at: int) -> GtidSyntaxError:
        return GtidSyntaxError(text, f"{reason} at character {at}")

    groups: dict[_Key, list[Interval]] = {}
    n = len(text)
    i = _skip_ws(text, 0)
    while True:
        while i < n and text[i] == ",":
            i = _skip_ws(text, i + 1)
        if i >= n:
            return groups
        m = _UUID_RE.match(text, i)
        if m is None:
            raise fail("expected a UUID", i)
        uuid, tag = m.group().lower(), ""
        i = _skip_ws(text, m.end())
        while i < n and text[i] == ":":
            i = _skip_ws(text, i + 1)
            m = _TAG_RE.match(text, i)
            if m is not None:
                if len(m.group()) > TAG_MAX_LENGTH:
                    raise fail(f"tag longer than {TAG_MAX_LENGTH} characters", i)
                tag = m.group().lower()
                i = _skip_ws(text, m.end())
                continue
            at = i
            m = _NUMBER_RE.match(text, i)
            if m is None:
                raise fail("expected a tag or a transaction number", i)
            start = end = int(m.group())
            i = _skip_ws(text, m.end())
            if i < n and text[i] == "-":
                i = _skip_ws(text, i + 1)
                m = _NUMBER_RE.match(text, i)
                if m is None:
                    raise fail("expected a transaction number after '-'", i)
                end = int(m.group())
                i = _skip_ws(text, m.end())
            if start < 1:
                raise fail("transaction numbers start at 1", at)
            if end > MAX_GNO:
                raise fail(f"transaction number above {MAX_GNO}", at)
            if end < start:
                raise fail(f"interval {start}-{end} ends before it starts", at)
            groups.setdefault((uuid, tag), []).append((start, end))
        if i < n and text[i] != ",":
            raise fail("expected ',' or ':'", i)


# --------------------------------------------------------------------------- MySQL binary


def decode_mysql_gtid_set(buf: bytes | bytearray | memoryview) -> GtidSet:
    """Decode a PREVIOUS_GTIDS body (without the checksum) or a COM_BINLOG_DUMP_GTID GTID set.

    The whole buffer must be the encoding, as the server requires. Errors are
    ``BinlogFormatError(None, offset, reason)`` with ``offset`` counted from the start of ``buf``.
    """
    data = bytes(buf)
    size = len(data)

    def fail(offset: int, reason: str) -> BinlogFormatError:
        return BinlogFormatError(None, offset, f"GTID set encoding: {reason}")

    if size < 8:
        raise fail(0, f"{size} bytes, shorter than the 8-byte entry count")
    (head,) = _U64.unpack_from(data, 0)
    fmt = head >> 56
    if fmt == GTID_FORMAT_UNTAGGED:
        n_sids = head
    elif fmt == GTID_FORMAT_TAGGED:
        n_sids = (head >> 8) & 0xFFFF_FFFF_FFFF
    else:
        raise fail(7, f"unknown format {fmt} in the entry count's high byte")
    tagged = fmt == GTID_FORMAT_TAGGED
    min_entry = 16 + (1 if tagged else 0) + 8
    if n_sids > (size - 8) // min_entry:
        raise fail(0, f"{n_sids} entries cannot fit in {size - 8} bytes")

    groups: dict[_Key, list[Interval]] = {}
    pos = 8
    for _ in range(n_sids):
        if size - pos < min_entry:
            raise fail(pos, "truncated entry")
        uuid = _uuid_text(data[pos : pos + 16])
        pos += 16
        tag = ""
        if tagged:
            length_byte = data[pos]
            if length_byte & 1:
                raise fail(pos, f"tag length is not a one-byte varint (0x{length_byte:02x})")
            length = length_byte >> 1
            if length > TAG_MAX_LENGTH:
                raise fail(pos, f"tag length {length} exceeds {TAG_MAX_LENGTH}")
            if size - pos - 1 < length + 8:
                raise fail(pos, "truncated tag")
            raw_tag = data[pos + 1 : pos + 1 + length]
            tag = raw_tag.decode("ascii", errors="replace")
            if length and not _valid_tag(tag):
                raise fail(pos + 1, f"invalid tag {raw_tag!r}")
            tag = tag.lower()
            pos += 1 + length
        (n_intervals,) = _U64.unpack_from(data, pos)
        pos += 8
        if n_intervals > (size - pos) // 16:
            raise fail(pos - 8, f"{n_intervals} intervals cannot fit in {size - pos} bytes")
        ivs = groups.setdefault((uuid, tag), [])
        last = 0
        for _ in range(n_intervals):
            start, end = _I64_PAIR.unpack_from(data, pos)
            if start <= last:
                raise fail(pos, f"interval start {start} is not after the previous end {last}")
            if end <= start:
                raise fail(pos + 8, f"interval end {end} is not after its start {start}")
            ivs.append((start, end - 1))
            last = end
            pos += 16
    if pos != size:
        raise fail(pos, f"{size - pos} bytes after the last entry")
    return GtidSet._of({key: _merge(ivs) for key, ivs in groups.items()})


def encode_mysql_gtid_set(s: GtidSet, tagged: bool | None = None) -> bytes:
    """Encode as MySQL does. ``tagged=None`` uses the tagged format only when the set has tags.

    Raises ``ValueError`` when ``tagged=False`` and the set has tags: the untagged format cannot
    carry them (servers before 8.3 only read that one).
    """
    if tagged is None:
        tagged = s.has_tags
    elif not tagged and s.has_tags:
        raise ValueError("the untagged GTID set format cannot carry tagged GTIDs")
    entries = s._map
    if tagged:
        head = (GTID_FORMAT_TAGGED << 56) | (len(entries) << 8) | GTID_FORMAT_TAGGED
    else:
        head = len(entries)
    out = bytearray(_U64.pack(head))
    for (uuid, tag), ivs in entries.items():
        out += bytes.fromhex(uuid.replace("-", ""))
        if tagged:
            raw_tag = tag.encode("ascii")
            out.append(len(raw_tag) << 1)
            out += raw_tag
        out += _U64.pack(len(ivs))
        for start, end in ivs:
            out += _U64_PAIR.pack(start, end + 1)
    return bytes(out)


def _uuid_text(raw: bytes) -> str:
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# --------------------------------------------------------------------------- MariaDB


class MariaGtid(NamedTuple):
    """One MariaDB GTID: ``domain-server-seq``."""

    domain: int
    server: int
    seq: int

    @classmethod
    def parse(cls, text: str) -> MariaGtid:
        return _parse_maria_gtid(text, text.strip(), 0)

    def __str__(self) -> str:
        return f"{self.domain}-{self.server}-{self.seq}"


class MariaGtidPos:
    """An immutable MariaDB GTID position: the last seq per (domain, server).

    One GTID per domain is the usual case (@@gtid_slave_pos, @@gtid_binlog_pos); several server
    ids in a domain occur in @@gtid_binlog_state and GTID_LIST events. A domain's position is its
    highest seq (with gtid_strict_mode, the most recent GTID of a domain has the highest seq).
    """

    __slots__ = ("_seqs", "_domains")
    _seqs: dict[tuple[int, int], int]
    _domains: dict[int, tuple[int, int]]

    def __init__(self, gtids: Iterable[MariaGtid | tuple[int, int, int]] = ()):
        seqs: dict[tuple[int, int], int] = {}
        for domain, server, seq in gtids:
            if not (
                0 <= domain <= MARIA_MAX_ID and 0 <= server <= MARIA_MAX_ID and 0 <= seq <= MARIA_MAX_SEQ
            ):
                raise ValueError(f"MariaDB GTID {domain}-{server}-{seq} is out of range")
            key = (domain, server)
            if seq > seqs.get(key, -1):
                seqs[key] = seq
        self._seqs = {key: seqs[key] for key in sorted(seqs)}
        self._domains = {}
        for (domain, server), seq in self._seqs.items():
            if domain not in self._domains or seq >= self._domains[domain][1]:
                self._domains[domain] = (server, seq)

    @classmethod
    def parse(cls, text: str) -> MariaGtidPos:
        """``0-1-100,1-2-5``; whitespace around items is allowed, "" is the empty position."""
        if not text.strip():
            return cls()
        gtids = []
        offset = 0
        for item in text.split(","):
            gtids.append(_parse_maria_gtid(text, item.strip(), offset + len(item) - len(item.lstrip())))
            offset += len(item) + 1
        return cls(gtids)

    def __iter__(self) -> Iterator[MariaGtid]:
        """The GTIDs sorted by domain, then server."""
        for (domain, server), seq in self._seqs.items():
            yield MariaGtid(domain, server, seq)

    def __len__(self) -> int:
        return len(self._seqs)

    def __bool__(self) -> bool:
        return bool(self._seqs)

    @property
    def domains(self) -> dict[int, tuple[int, int]]:
        """domain -> (server_id, seq) of the domain's position (its highest seq)."""
        return dict(self._domains)

    def seq_for(self, domain: int) -> int | None:
        """The domain's position (highest seq), or None if the position does not name the domain."""
        best = self._domains.get(domain)
        return None if best is None else best[1]

    def contains(self, gtid: MariaGtid | tuple[int, int, int]) -> bool:
        """True if the position includes ``gtid``: its domain is named and its seq is not above it."""
        domain, _, seq = gtid
        at = self.seq_for(domain)
        return at is not None and seq <= at

    def __contains__(self, gtid: object) -> bool:
        return isinstance(gtid, tuple) and len(gtid) == 3 and self.contains(gtid)  # type: ignore[arg-type]

    def __or__(self, other: MariaGtidPos) -> MariaGtidPos:
        """Union: the highest seq per (domain, server)."""
        if not isinstance(other, MariaGtidPos):
            return NotImplemented
        return MariaGtidPos([*self, *other])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MariaGtidPos):
            return NotImplemented
        return self._seqs == other._seqs

    def __hash__(self) -> int:
        return hash(tuple(self._seqs.items()))

    def __str__(self) -> str:
        return ",".join(str(gtid) for gtid in self)

    def __repr__(self) -> str:
        return f"MariaGtidPos.parse({str(self)!r})"


def _parse_maria_gtid(text: str, item: str, at: int) -> MariaGtid:
    parts = item.split("-")
    if len(parts) != 3 or not all(_NUMBER_RE.fullmatch(part) for part in parts):
        raise GtidSyntaxError(text, f"expected domain-server-seq at character {at}")
    domain, server, seq = (int(part) for part in parts)
    if domain > MARIA_MAX_ID or server > MARIA_MAX_ID:
        raise GtidSyntaxError(text, f"domain and server ids are 32-bit at character {at}")
    if seq > MARIA_MAX_SEQ:
        raise GtidSyntaxError(text, f"sequence number is 64-bit at character {at}")
    return MariaGtid(domain, server, seq)


@dataclass(frozen=True, slots=True)
class MariaGtidRange:
    """GTIDs after ``start`` and at or before ``stop``, decided per domain.

    Like mariadb-binlog's --start-position / --stop-position: start is exclusive, stop inclusive.
    A domain that ``start`` does not name starts at its beginning. When ``stop`` is given, only the
    domains it names are in range; ``stop=None`` leaves every domain open-ended.
    """

    start: MariaGtidPos = MariaGtidPos()
    stop: MariaGtidPos | None = None

    def __post_init__(self) -> None:
        if self.stop is None:
            return
        for domain, (_, stop_seq) in self.stop.domains.items():
            start_seq = self.start.seq_for(domain)
            if start_seq is not None and stop_seq < start_seq:
                raise RangeError(f"GTID range stops at {domain}-*-{stop_seq}, before its start {start_seq}")

    def contains(self, gtid: MariaGtid | tuple[int, int, int]) -> bool:
        domain, _, seq = gtid
        start_seq = self.start.seq_for(domain)
        if start_seq is not None and seq <= start_seq:
            return False
        if self.stop is None:
            return True
        stop_seq = self.stop.seq_for(domain)
        return stop_seq is not None and seq <= stop_seq

    def __contains__(self, gtid: object) -> bool:
        return isinstance(gtid, tuple) and len(gtid) == 3 and self.contains(gtid)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class MariaGtidList:
    """A decoded GTID_LIST event body: its GTIDs in the order written, and its 4 flag bits."""

    gtids: tuple[MariaGtid, ...]
    flags: int = 0

    @property
    def pos(self) -> MariaGtidPos:
        return MariaGtidPos(self.gtids)


def decode_mariadb_gtid_list(buf: bytes | bytearray | memoryview) -> MariaGtidList:
    """Decode a GTID_LIST event body (without the checksum).

    Bytes after the list are ignored, as the server does (it writes 2 padding bytes after an empty
    list). Errors are ``BinlogFormatError(None, offset, reason)``, offsets counted from ``buf``.
    """
    data = bytes(buf)
    if len(data) < 4:
        raise BinlogFormatError(None, 0, f"GTID_LIST body of {len(data)} bytes has no 4-byte count")
    (word,) = _U32.unpack_from(data, 0)
    count, flags = word & 0x0FFF_FFFF, word >> 28
    need = 4 + count * _MARIA_GTID.size
    if len(data) < need:
        raise BinlogFormatError(
            None, len(data), f"GTID_LIST of {count} GTIDs needs {need} bytes, the body has {len(data)}"
        )
    gtids = tuple(MariaGtid(*_MARIA_GTID.unpack_from(data, 4 + i * _MARIA_GTID.size)) for i in range(count))
    return MariaGtidList(gtids, flags)
