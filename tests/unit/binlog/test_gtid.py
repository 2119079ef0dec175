"""GTID sets (MySQL, with tags) and MariaDB positions: text, set algebra, binary encodings, real binlogs."""

from __future__ import annotations

import json
import re
import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rollback.base.errors import BinlogFormatError, RangeError, RollbackError
from rollback.binlog.constants import EventType
from rollback.binlog.decode import DECODERS
from rollback.binlog.events import MariaGtid as MariaGtidEvent
from rollback.binlog.events import decode_maria_gtid
from rollback.binlog.gtid import (
    GTID_LIST_FLAG_IGN_GTIDS,
    GTID_LIST_FLAG_UNTIL_REACHED,
    MAX_GNO,
    Gtid,
    GtidInterval,
    GtidSet,
    GtidSyntaxError,
    MariaGtid,
    MariaGtidList,
    MariaGtidPos,
    MariaGtidRange,
    decode_mariadb_gtid_list,
    decode_mysql_gtid_set,
    encode_mysql_gtid_set,
)
from rollback.binlog.reader import BinlogFile, RawEvent, iter_events
from tests.support import REPO
from tests.support.corpus import LANES, VENDORED, Corpus
from tests.support.raw_events import (
    MARIADB_GTID,
    MARIADB_GTID_LIST,
    PREVIOUS_GTIDS,
    events,
    first_body,
    position_after,
)

U1 = "00000000-0000-0000-0000-000000000001"
U2 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
U3 = "ffffffff-ffff-ffff-ffff-ffffffffffff"

BLACKBEAM = VENDORED.path("blackbeam__rust_mysql_common/test-data/binlogs")
MARIADB_POC = "mariadb-operator__mariadb-poc/mariadb-binlog/binlogs"  # MariaDB 11.8, extended corpus only


# Seed 002 (MySQL 5.7.19 mysql-bin.000002 at offset 123): a whole PREVIOUS_GTIDS event with its CRC32.
# SHOW BINLOG EVENTS prints b0d850c2-dbd0-11e9-90c3-080027b8bded:1-53; the file stores the exclusive end 54.
SEED_002_EVENT = bytes.fromhex(
    "44d92a5e 23 0a000000 47000000 c2000000 8000"  # header: time, type 35, server 10, length 71, next, flags
    " 0100000000000000 b0d850c2dbd011e990c3080027b8bded"  # one sid
    " 0100000000000000 0100000000000000 3600000000000000"  # one interval [1, 54)
    " bddedcf1"  # CRC32
)
# MySQL 9.6 PREVIOUS_GTIDS body of binlog_transaction_with_GTID_TAG.000001 (offset 127, checksum removed).
TAGGED_BODY = bytes.fromhex(
    "0102000000000001"  # format 1 (high and low byte), 2 entries
    " 55778904029911f1b1b84ef0c4956feb 00 0100000000000000 0100000000000000 0e00000000000000"  # untagged, [1, 14)
    " 55778904029911f1b1b84ef0c4956feb 0a6d79746167 0100000000000000 0100000000000000 0300000000000000"  # mytag
)
# MariaDB documentation's GTID_LIST example: a whole event with CRC32, "Gtid list [0-10124-3584]".
MARIADB_DOC_GTID_LIST_EVENT = bytes.fromhex(
    "a4859e59a38c2700002b00000024010000000001000000000000008c270000000e000000000000a8f0d8b6"
)


# --------------------------------------------------------------------------- MySQL text


def test_parse_lowercases_uuids_and_tags_and_merges_intervals():
    s = GtidSet.parse(f"{U2.upper()}:4-6:1-3:9:MyTag:2")
    assert str(s) == f"{U2}:1-6:9:mytag:2"
    assert list(s) == [
        GtidInterval(U2, "", 1, 6),
        GtidInterval(U2, "", 9, 9),
        GtidInterval(U2, "mytag", 2, 2),
    ]


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        (f"{U1}:7-7", f"{U1}:7"),
        (f"{U1}:5:1-3:4", f"{U1}:1-5"),
        (f"{U3}:1,{U1}:2", f"{U1}:2,{U3}:1"),
        (f"{U1}:t2:1:t1:5:2", f"{U1}:t1:2:5:t2:1"),  # a tag holds until the next one
        (f"{U1}:tag:1-3", f"{U1}:tag:1-3"),
        (f"{U1}:1-2,{U1}:x:3,{U1}:3", f"{U1}:1-3:x:3"),
        ("", ""),
        (" ,\n, ", ""),
        (U1, ""),  # a uuid without intervals adds nothing, as in MySQL
        (f"{U1}:lonely_tag", ""),
    ],
)
def test_format_is_mysql_canonical(text, canonical):
    assert str(GtidSet.parse(text)) == canonical


def test_parse_accepts_what_mysql_prints_and_whitespace_between_items():
    printed = f"{U1}:1-5,\n{U2}:1-3:tag:7"
    spaced = f"  {U2} : 1 - 3 :\ttag : 7 ,\n\t{U1}:1-5  "
    assert GtidSet.parse(printed) == GtidSet.parse(spaced)
    assert GtidSet.parse(printed).format(",\n") == printed


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("not-a-uuid:1", "expected a UUID"),
        (f"{U1}:0", "start at 1"),
        (f"{U1}:0-3", "start at 1"),
        (f"{U1}:5-3", "ends before it starts"),
        (f"{U1}:1-", "after '-'"),
        (f"{U1}:-3", "expected a tag or a transaction number"),
        (f"{U1}:1:", "expected a tag or a transaction number"),
        (f"{U1}:1x", "expected ',' or ':'"),
        (f"{U1}:0x10", "start at 1"),  # MySQL's strtoll would read hex; we take decimal only
        (f"{U1}:1 2", "expected ',' or ':'"),
        (f"{U1};1", "expected ',' or ':'"),
        (f"{U1}:t-1", "expected ',' or ':'"),
        (f"{U1}:1,junk", "expected a UUID"),
        (f"{U1}:1:{U3}:2", "expected ',' or ':'"),  # a uuid where a tag or number belongs
        (f"+{U1}:1", "expected a UUID"),
        (f"{U1}0:1", "expected ',' or ':'"),
        (f"{U1}:{'a' * 33}:1", "longer than 32"),
        (f"{U1}:{MAX_GNO + 1}", "above"),
        (f"{U1}:1-{MAX_GNO + 1}", "above"),
    ],
)
def test_malformed_text_raises_one_clear_error(text, reason):
    with pytest.raises(GtidSyntaxError) as caught:
        GtidSet.parse(text)
    error = caught.value
    assert isinstance(error, ValueError) and isinstance(error, RollbackError)
    assert error.text == text and reason in error.reason
    assert "\n" not in str(error) and reason in str(error)


def test_largest_gno_is_the_servers():
    s = GtidSet.parse(f"{U1}:{MAX_GNO}")
    assert s.contains(U1, "", MAX_GNO) and MAX_GNO == 2**63 - 2
    assert decode_mysql_gtid_set(encode_mysql_gtid_set(s)) == s


def test_single_gtid_parses_and_prints():
    assert Gtid.parse(f" {U2.upper()}:MyTag:42 ") == Gtid(U2, "mytag", 42)
    assert str(Gtid(U2, "", 7)) == f"{U2}:7" and str(Gtid(U2, "t", 7)) == f"{U2}:t:7"
    for bad in (f"{U2}:1-2", f"{U2}:0", f"{U2}", f"{U2}:a:b:1", f"{U2}:1,{U1}:2", f"{U2}:9a:1"):
        with pytest.raises(GtidSyntaxError):
            Gtid.parse(bad)


def test_contains_tells_tags_apart():
    s = GtidSet.parse(f"{U1}:1-3:10:blue:5")
    assert s.contains(U1.upper(), "", 2) and s.contains(U1, "", 10) and not s.contains(U1, "", 5)
    assert s.contains(U1, "BLUE", 5) and not s.contains(U1, "blue", 2) and not s.contains(U1, "red", 5)
    assert Gtid(U1, "blue", 5) in s and Gtid(U2, "", 1) not in s and "text" not in s


def test_constructor_rejects_values_mysql_cannot_hold():
    for bad in [
        ("nope", "", 1, 1),
        (U1, "", 0, 1),
        (U1, "", 3, 2),
        (U1, "9x", 1, 1),
        (U1, "", 1, MAX_GNO + 1),
    ]:
        with pytest.raises(ValueError):
            GtidSet([bad])


def test_empty_set():
    empty = GtidSet()
    assert empty.is_empty() and not empty and str(empty) == "" and empty.count() == 0
    assert empty == GtidSet.parse("") and hash(empty) == hash(GtidSet.parse(" "))
    assert GtidSet.parse(f"{U1}:1") and not GtidSet.parse(f"{U1}:1").is_empty()


# --------------------------------------------------------------------------- MySQL set algebra


TAGS = ["", "a", "tag_1", "zz"]
intervals = st.tuples(
    st.sampled_from([U1, U2, U3]), st.sampled_from(TAGS), st.integers(1, 40), st.integers(0, 6)
).map(lambda t: (t[0], t[1], t[2], t[2] + t[3]))
gtid_sets = st.lists(intervals, max_size=8).map(GtidSet)


def model(s: GtidSet) -> set[tuple[str, str, int]]:
    return {(iv.uuid, iv.tag, gno) for iv in s for gno in range(iv.start, iv.end + 1)}


def from_model(gtids: set[tuple[str, str, int]]) -> GtidSet:
    return GtidSet((uuid, tag, gno, gno) for uuid, tag, gno in gtids)


def assert_canonical(s: GtidSet) -> None:
    by_key: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for iv in s:
        by_key.setdefault((iv.uuid, iv.tag), []).append((iv.start, iv.end))
    assert list(by_key) == sorted(by_key)
    for ivs in by_key.values():
        assert all(prev_end + 1 < start for (_, prev_end), (start, _) in zip(ivs, ivs[1:], strict=False))


@given(gtid_sets, gtid_sets)
def test_union_difference_intersection_match_a_set_of_gtids(a, b):
    for result, expected in [
        (a | b, model(a) | model(b)),
        (a - b, model(a) - model(b)),
        (a & b, model(a) & model(b)),
    ]:
        assert model(result) == expected
        assert result == from_model(expected)
        assert_canonical(result)


@given(gtid_sets, gtid_sets, gtid_sets)
def test_set_laws(a, b, c):
    assert a | b == b | a and a & b == b & a
    assert (a | b) | c == a | (b | c) == a.union(b, c)
    assert (a - b) | (a & b) == a
    assert ((a - b) & b).is_empty()
    assert a - (b | c) == (a - b) - c
    assert a.issubset(a | b) and b.issubset(a | b) and (a & b).issubset(a)
    assert a.issubset(b) == (model(a) <= model(b))
    assert (a == b) == (model(a) == model(b))
    if a == b:
        assert hash(a) == hash(b)


@given(gtid_sets)
def test_contains_and_count_match_the_model(s):
    gtids = model(s)
    assert s.count() == len(gtids)
    for uuid in (U1, U2, U3):
        for tag in TAGS:
            for gno in range(1, 50):
                assert s.contains(uuid, tag, gno) == ((uuid, tag, gno) in gtids)


@given(gtid_sets)
def test_text_round_trips(s):
    assert GtidSet.parse(str(s)) == s
    assert GtidSet.parse(s.format(",\n")) == s
    assert str(GtidSet.parse(str(s))) == str(s)
    assert eval(repr(s), {"GtidSet": GtidSet}) == s


spacing = st.sampled_from(["", " ", "\n", "\t ", "  \n  "])


@given(st.lists(st.tuples(intervals, spacing, spacing, st.booleans()), max_size=6))
def test_text_with_whitespace_and_any_case_parses_to_the_same_set(items):
    parts = []
    for (uuid, tag, start, end), ws1, ws2, upper in items:
        text = uuid.upper() if upper else uuid
        if tag:
            text += f"{ws1}:{ws2}{tag.upper() if upper else tag}"
        text += f"{ws2}:{ws1}{start}{ws1}-{ws2}{end}{ws1}"
        parts.append(text)
    text = ",".join(f"{ws}{part}" for part, (_, ws, _, _) in zip(parts, items, strict=True))
    assert GtidSet.parse(text) == GtidSet(item[0] for item in items)


# --------------------------------------------------------------------------- MySQL binary


def test_seed_previous_gtids_event_decodes_to_the_set_mysql_shows():
    event = SEED_002_EVENT
    assert zlib.crc32(event[:-4]) == int.from_bytes(event[-4:], "little")  # transcribed right
    body = event[19:-4]
    s = decode_mysql_gtid_set(body)
    assert str(s) == "b0d850c2-dbd0-11e9-90c3-080027b8bded:1-53"
    assert encode_mysql_gtid_set(s) == body


def test_the_annotated_event_is_the_vendored_seed_vector():
    # tests/unit/binlog/test_seed_events.py checks the vector against the document itself
    vectors = json.loads((REPO / "tests" / "vectors" / "seed_events.json").read_text(encoding="utf-8"))
    assert SEED_002_EVENT == bytes.fromhex("".join(vectors["002_previous_gtids"]["hex"]))


def test_tagged_encoding_of_mysql_9_6():
    s = decode_mysql_gtid_set(TAGGED_BODY)
    assert str(s) == "55778904-0299-11f1-b1b8-4ef0c4956feb:1-13:mytag:1-2"
    assert encode_mysql_gtid_set(s) == TAGGED_BODY
    assert s.contains("55778904-0299-11f1-b1b8-4ef0c4956feb", "mytag", 2)
    assert not s.contains("55778904-0299-11f1-b1b8-4ef0c4956feb", "mytag", 3)


def test_tagged_format_is_used_only_when_needed_unless_forced():
    untagged = GtidSet.parse(f"{U2}:1-5")
    plain = encode_mysql_gtid_set(untagged)
    assert plain[:8] == bytes.fromhex("0100000000000000") and len(plain) == 8 + 16 + 8 + 16
    forced = encode_mysql_gtid_set(untagged, tagged=True)
    assert forced[:8] == bytes.fromhex("0101000000000001") and forced[24] == 0  # empty tag: length 0
    assert decode_mysql_gtid_set(forced) == untagged
    assert encode_mysql_gtid_set(GtidSet()) == bytes(8)
    assert encode_mysql_gtid_set(GtidSet(), tagged=True) == bytes.fromhex("0100000000000001")
    assert decode_mysql_gtid_set(bytes.fromhex("0100000000000001")) == GtidSet()
    with pytest.raises(ValueError, match="untagged"):
        encode_mysql_gtid_set(GtidSet.parse(f"{U2}:t:1"), tagged=False)


def test_repeated_entries_are_merged_as_the_server_does():
    one = encode_mysql_gtid_set(GtidSet.parse(f"{U1}:1-2"))[8:]
    two = encode_mysql_gtid_set(GtidSet.parse(f"{U1}:3-4"))[8:]
    assert decode_mysql_gtid_set((2).to_bytes(8, "little") + one + two) == GtidSet.parse(f"{U1}:1-4")


big_intervals = st.tuples(
    st.sampled_from([U1, U2, U3]), st.sampled_from(TAGS), st.integers(1, MAX_GNO), st.integers(0, 2**40)
).map(lambda t: (t[0], t[1], t[2], min(MAX_GNO, t[2] + t[3])))


@given(st.lists(st.one_of(intervals, big_intervals), max_size=8).map(GtidSet), st.booleans())
def test_binary_round_trips(s, force_tagged):
    encoded = encode_mysql_gtid_set(s, tagged=True if force_tagged else None)
    assert decode_mysql_gtid_set(encoded) == s
    assert decode_mysql_gtid_set(memoryview(encoded)) == s
    assert (encoded[7] == 1) == (force_tagged or s.has_tags)


@given(gtid_sets.filter(bool))
def test_every_truncation_is_a_format_error(s):
    encoded = encode_mysql_gtid_set(s)
    for cut in range(len(encoded)):
        with pytest.raises(BinlogFormatError):
            decode_mysql_gtid_set(encoded[:cut])


def _entry(uuid: str, pairs: list[tuple[int, int]], tag: bytes | None = None) -> bytes:
    out = bytes.fromhex(uuid.replace("-", ""))
    if tag is not None:
        out += tag
    out += struct.pack("<Q", len(pairs))
    return out + b"".join(struct.pack("<qq", start, end) for start, end in pairs)


UNTAGGED_ONE = (1).to_bytes(8, "little")
TAGGED_ONE = bytes.fromhex("0101000000000001")


@pytest.mark.parametrize(
    ("encoding", "reason"),
    [
        (b"", "shorter than the 8-byte entry count"),
        (bytes.fromhex("0100000000000002"), "unknown format 2"),
        ((5).to_bytes(8, "little") + _entry(U1, [(1, 2)]), "cannot fit"),
        (UNTAGGED_ONE + _entry(U1, [(0, 2)]), "not after the previous end"),
        (UNTAGGED_ONE + _entry(U1, [(-5, 2)]), "not after the previous end"),
        (UNTAGGED_ONE + _entry(U1, [(3, 3)]), "not after its start"),
        (UNTAGGED_ONE + _entry(U1, [(1, 3), (3, 5)]), "not after the previous end"),  # adjacent
        (UNTAGGED_ONE + _entry(U1, [(1, 4), (3, 5)]), "not after the previous end"),  # overlapping
        (UNTAGGED_ONE + _entry(U1, [(1, 2)])[:-1], "cannot fit"),
        (UNTAGGED_ONE + _entry(U1, [(1, 2)]) + b"\0", "1 bytes after the last entry"),
        (TAGGED_ONE + _entry(U1, [(1, 2)], b"\x03a"), "not a one-byte varint"),
        (TAGGED_ONE + _entry(U1, [(1, 2)], bytes([33 << 1]) + b"a" * 33), "exceeds 32"),
        (TAGGED_ONE + _entry(U1, [(1, 2)], b"\x069ab"), "invalid tag"),
        (TAGGED_ONE + _entry(U1, [(1, 2)], b"\x06a-b"), "invalid tag"),
        (TAGGED_ONE + bytes.fromhex(U1.replace("-", "")) + b"\x40" + b"a" * 10, "truncated tag"),
    ],
)
def test_malformed_encoding_raises_a_format_error_with_offset(encoding, reason):
    with pytest.raises(BinlogFormatError) as caught:
        decode_mysql_gtid_set(encoding)
    assert caught.value.path is None and caught.value.offset is not None
    assert 0 <= caught.value.offset <= len(encoding) and reason in caught.value.reason


def test_uppercase_tag_bytes_are_normalised_like_the_server():
    encoding = TAGGED_ONE + _entry(U1, [(1, 2)], b"\x06ABC")
    assert str(decode_mysql_gtid_set(encoding)) == f"{U1}:abc:1"


# --------------------------------------------------------------------------- MariaDB


def test_maria_position_parses_sorts_and_prints():
    pos = MariaGtidPos.parse(" 1-2-5,\n0-3-7 , 0-1-100")
    assert str(pos) == "0-1-100,0-3-7,1-2-5"
    assert list(pos) == [MariaGtid(0, 1, 100), MariaGtid(0, 3, 7), MariaGtid(1, 2, 5)] and len(pos) == 3
    assert pos.domains == {0: (1, 100), 1: (2, 5)}
    assert pos.seq_for(0) == 100 and pos.seq_for(7) is None
    assert MariaGtidPos.parse("") == MariaGtidPos() and not MariaGtidPos.parse("  ")
    assert MariaGtid.parse("4294967295-4294967295-18446744073709551615") == MariaGtid(
        2**32 - 1, 2**32 - 1, 2**64 - 1
    )
    assert str(MariaGtid(0, 1, 2)) == "0-1-2"


@pytest.mark.parametrize(
    "text",
    [
        "0-1",
        "0-1-2-3",
        "a-b-c",
        "0-1-2,",
        ",0-1-2",
        "0-1-2,,1-1-1",
        "-1-2-3",
        "0 -1-2",
        "0-1-0x2",
        "4294967296-1-1",
    ]
    + ["0-4294967296-1", "0-1-18446744073709551616", "0-1-2;1-1-1"],
)
def test_malformed_maria_position_raises_one_clear_error(text):
    with pytest.raises(GtidSyntaxError) as caught:
        MariaGtidPos.parse(text)
    assert caught.value.text == text and "\n" not in str(caught.value)


def test_maria_position_includes_every_earlier_gtid_of_its_domains():
    pos = MariaGtidPos.parse("0-1-100,1-2-5")
    assert pos.contains(MariaGtid(0, 1, 100)) and MariaGtid(0, 1, 99) in pos
    assert MariaGtid(0, 9, 42) in pos  # another server of the same domain, earlier seq
    assert MariaGtid(0, 1, 101) not in pos and MariaGtid(2, 1, 1) not in pos and "0-1-1" not in pos


def test_maria_position_with_several_servers_per_domain_uses_the_highest_seq():
    pos = MariaGtidPos.parse("0-1-100,0-2-150,0-3-20")
    assert pos.domains == {0: (2, 150)} and MariaGtid(0, 1, 140) in pos and MariaGtid(0, 3, 151) not in pos


maria_gtids = st.tuples(st.integers(0, 3), st.integers(1, 3), st.integers(0, 2**64 - 1)).map(
    lambda t: MariaGtid(*t)
)
maria_positions = st.lists(maria_gtids, max_size=6).map(MariaGtidPos)


@given(maria_positions, maria_positions, maria_positions)
def test_maria_union_keeps_the_highest_seq_per_domain_and_server(a, b, c):
    union = a | b
    assert union == b | a and (a | b) | c == a | (b | c) and a | a == a
    for domain, server, seq in union:
        assert seq == max(s for d, sv, s in [*a, *b] if (d, sv) == (domain, server))
    assert {(d, sv) for d, sv, _ in union} == {(d, sv) for d, sv, _ in [*a, *b]}
    assert all(gtid in union for gtid in [*a, *b])
    assert MariaGtidPos.parse(str(union)) == union and hash(union) == hash(MariaGtidPos(list(union)))


@pytest.mark.parametrize(
    ("start", "stop", "inside", "outside"),
    [
        ("0-1-10", "0-1-20", ["0-1-11", "0-1-20", "0-7-15"], ["0-1-10", "0-1-21", "1-1-15"]),
        ("0-1-10", None, ["0-1-11", "1-1-1", "5-5-0"], ["0-1-10", "0-2-3"]),
        ("", "0-1-20,1-1-5", ["0-1-0", "0-1-20", "1-9-5"], ["0-1-21", "1-1-6", "2-1-1"]),
        ("0-1-10,1-1-3", "0-1-20", ["0-1-11"], ["1-1-4", "1-1-2"]),  # domain 1 not in stop
        ("0-1-10", "0-1-10", [], ["0-1-10", "0-1-11", "0-1-9"]),
        ("", None, ["0-0-0", "9-9-9"], []),
    ],
)
def test_maria_range_is_after_start_and_at_or_before_stop_per_domain(start, stop, inside, outside):
    window = MariaGtidRange(MariaGtidPos.parse(start), None if stop is None else MariaGtidPos.parse(stop))
    for text in inside:
        assert MariaGtid.parse(text) in window, text
    for text in outside:
        assert not window.contains(MariaGtid.parse(text)), text


def test_maria_range_that_stops_before_it_starts_is_refused():
    with pytest.raises(RangeError, match="before its start"):
        MariaGtidRange(MariaGtidPos.parse("0-1-10"), MariaGtidPos.parse("0-1-9"))


def gtid_list_body(gtids, flags: int = 0) -> bytes:
    """A GTID_LIST body as the server writes it (count and flags, then domain, server, seq each)."""
    items = [tuple(g) for g in gtids]
    return struct.pack("<I", len(items) | (flags << 28)) + b"".join(struct.pack("<IIQ", *g) for g in items)


def test_gtid_list_of_the_mariadb_documentation():
    event = MARIADB_DOC_GTID_LIST_EVENT
    assert zlib.crc32(event[:-4]) == int.from_bytes(event[-4:], "little")
    decoded = decode_mariadb_gtid_list(event[19:-4])
    assert decoded == MariaGtidList((MariaGtid(0, 10124, 3584),), 0)
    assert str(decoded.pos) == "0-10124-3584"
    assert gtid_list_body(decoded.gtids) == event[19:-4]


def test_gtid_list_flags_live_in_the_count_high_bits():
    body = gtid_list_body([(1, 2, 3)], flags=GTID_LIST_FLAG_UNTIL_REACHED | GTID_LIST_FLAG_IGN_GTIDS)
    assert body[:4] == bytes.fromhex("01000030")
    assert decode_mariadb_gtid_list(body) == MariaGtidList((MariaGtid(1, 2, 3),), 0x3)


def test_gtid_list_ignores_padding_and_rejects_truncation():
    assert decode_mariadb_gtid_list(bytes(6)) == MariaGtidList((), 0)  # what the server writes for []
    body = gtid_list_body([(0, 1, 5), (1, 1, 6)])
    for cut in range(len(body)):
        with pytest.raises(BinlogFormatError) as caught:
            decode_mariadb_gtid_list(body[:cut])
        assert caught.value.path is None and caught.value.offset is not None


@given(st.lists(maria_gtids, max_size=6), st.integers(0, 15))
def test_gtid_list_round_trips_in_written_order(gtids, flags):
    decoded = decode_mariadb_gtid_list(gtid_list_body(gtids, flags))
    assert decoded.gtids == tuple(gtids) and decoded.flags == flags
    assert decoded.pos == MariaGtidPos(gtids)


# --------------------------------------------------------------------------- real binlogs

LANE_IDS = [lane.lane for lane in LANES]
# lane -> (PREVIOUS_GTIDS events re-encoded, GTID_LIST events compared with mariadb-binlog): at least
MINIMUM = {"vendored": (40, 2), "extended": (50, 10)}


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("binlog_transaction_with_GTID_TAG.000001", "55778904-0299-11f1-b1b8-4ef0c4956feb:1-13:mytag:1-2"),
        ("binlog_transaction_previous_GTID_no_tag.000001", "b9b88c66-0755-11f1-9899-4a9da94c4d71:1-2"),
    ],
)
def test_previous_gtids_of_real_mysql_files(name, expected):
    s = decode_mysql_gtid_set(first_body(BLACKBEAM / name, PREVIOUS_GTIDS))
    assert s == GtidSet.parse(expected) and str(s) == expected


@pytest.mark.corpus
@pytest.mark.parametrize("lane", LANES, ids=LANE_IDS)
def test_every_previous_gtids_event_of_the_corpus_reencodes_byte_for_byte(lane: Corpus):
    seen = 0
    for path in lane.binlogs():
        for offset, type_code, _, body in events(path):
            if type_code != PREVIOUS_GTIDS:
                continue
            s = decode_mysql_gtid_set(body)
            assert encode_mysql_gtid_set(s, tagged=body[7] == 1) == body, (path, offset)
            seen += 1
    assert seen >= MINIMUM[lane.lane][0]


@pytest.mark.corpus
@pytest.mark.parametrize("lane", LANES, ids=LANE_IDS)
def test_gtid_lists_of_the_corpus_match_what_mariadb_binlog_printed(lane: Corpus):
    compared = 0
    for path in lane.binlogs():
        lists = [decode_mariadb_gtid_list(body) for _, t, _, body in events(path) if t == MARIADB_GTID_LIST]
        printed = lane.mariadb_output(path.relative_to(lane.root).as_posix())
        if not lists or not printed.is_file():
            continue
        shown = re.findall(r"Gtid list \[([^\]]*)\]", printed.read_text(encoding="utf-8", errors="replace"))
        assert [MariaGtidPos.parse(text) for text in shown] == [gtid_list.pos for gtid_list in lists], path
        compared += len(lists)
    assert compared >= MINIMUM[lane.lane][1]


@pytest.mark.corpus
@pytest.mark.extended
@pytest.mark.parametrize(("this", "following"), [(4, 5), (5, 6), (6, 7), (9, 10)])
def test_gtid_list_of_a_file_is_where_the_previous_file_ended(this, following, extended_corpus):
    folder = extended_corpus.path(MARIADB_POC) / "domain_id_0"
    ended = position_after(folder / f"mariadb-repl-bin.{this:06d}")
    starts = decode_mariadb_gtid_list(
        first_body(folder / f"mariadb-repl-bin.{following:06d}", MARIADB_GTID_LIST)
    )
    assert starts.pos == ended and len(starts.gtids) == 1


@pytest.mark.corpus
@pytest.mark.extended
def test_range_picks_gtids_of_a_real_mariadb_file(extended_corpus):
    second = extended_corpus.path(MARIADB_POC) / "domain_id_0" / "mariadb-repl-bin.000002"
    gtids = [
        MariaGtid(domain, server_id, seq)
        for _, type_code, server_id, body in events(second)
        if type_code == MARIADB_GTID
        for seq, domain in [struct.unpack_from("<QI", body)]
    ]
    assert (
        len(gtids) == 4433 and gtids[0] == MariaGtid(0, 10, 250080) and gtids[-1] == MariaGtid(0, 10, 254512)
    )
    window = MariaGtidRange(MariaGtidPos.parse("0-10-250099"), MariaGtidPos.parse("0-10-250199"))
    picked = [gtid for gtid in gtids if gtid in window]
    assert len(picked) == 100 and picked[0].seq == 250100 and picked[-1].seq == 250199
    assert all(gtid in MariaGtidRange() for gtid in gtids)
    assert not any(gtid in MariaGtidRange(stop=MariaGtidPos.parse("1-10-999999")) for gtid in gtids)


def _maria_gtid_event(body_hex: str) -> RawEvent:
    body = bytes.fromhex(body_hex)
    header = struct.pack("<IBIIIH", 0, MARIADB_GTID, 10, 19 + len(body), 0, 8)
    data = memoryview(header + body)
    return RawEvent(335, 0, MARIADB_GTID, 10, len(data), 0, 8, data, 19, 0)


@pytest.mark.parametrize(
    ("body", "thread_id", "commit_id"),
    [
        # mariadb-operator/mariadb-poc mariadb-repl-bin.000002 at 335 (MariaDB 11.8.5): flags 0x29, then
        # flags_extra 0x10 (FL_EXTRA_THREAD_ID) and thread id 71 (the next QUERY's thread id is 71)
        ("e0d00300000000000000000029104700000000", 71, None),
        # the same after a group commit id (8 bytes) and with the multi-engine byte before the thread id
        ("e0d0030000000000000000000a" + "0500000000000000" + "11" + "02" + "aa000000", 170, 5),
        # MariaDB 10.x: six zero bytes after the flags (no extra flag)
        ("e0d0030000000000000000000c000000000000", None, None),
        # an older, shorter event: nothing after the group commit id
        ("e0d0030000000000000000000e0900000000000000", None, 9),
    ],
)
def test_a_mariadb_gtid_event_gives_the_thread_id_its_extra_flags_carry(body, thread_id, commit_id):
    event = decode_maria_gtid(_maria_gtid_event(body), None)  # it reads no format facts
    assert (event.seq_no, event.thread_id, event.commit_id) == (250080, thread_id, commit_id)


def test_a_mariadb_gtid_event_announcing_a_thread_id_it_lacks_is_a_format_error():
    with pytest.raises(BinlogFormatError, match="thread id"):
        decode_maria_gtid(_maria_gtid_event("e0d00300000000000000000029104700"), None)


@pytest.mark.corpus
@pytest.mark.extended
def test_every_gtid_event_of_mariadb_11_names_the_thread_its_query_events_name(extended_corpus):
    """Oracle: in MariaDB 11.8's statement-based files every GTID event is followed by a QUERY event
    (BEGIN or the statement) that carries the session's thread id; the GTID event must give the same."""
    compared = 0
    for path in sorted((extended_corpus.path(MARIADB_POC) / "domain_id_0").glob("mariadb-repl-bin.0*")):
        with BinlogFile(path) as binlog:
            gtid: MariaGtidEvent | None = None
            for raw in iter_events(binlog.buf, binlog.facts, 4, binlog.size, binlog.path, verify=True):
                if raw.type_code == MARIADB_GTID:
                    gtid = decode_maria_gtid(raw, binlog.facts)
                elif raw.type_code == EventType.QUERY and gtid is not None:
                    query = DECODERS[raw.type_code](raw, binlog.facts)
                    assert gtid.thread_id == query.thread_id, (path.name, raw.pos)
                    compared += 1
                    gtid = None
    assert compared >= 4433
