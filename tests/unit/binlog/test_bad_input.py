"""Bad input gives a BinlogFormatError naming the file, the byte offset and the reason: never a crash,
a hang, a silent skip or an unbounded allocation.

Real files from the corpus are cut, flipped and rewritten; a short hypothesis run mutates them at
random and checks that decoding always ends, either at the end of the file or with a
BinlogFormatError (or a subclass).
"""

from __future__ import annotations

import struct
import time
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollback.base.errors import BinlogFormatError
from rollback.binlog.constants import EventType
from rollback.binlog.decode import StreamState, decode_stream
from rollback.binlog.reader import BinlogFile, read_file_facts
from rollback.binlog.rows import mariadb_uncompress
from tests.support.decoding import iter_row_batches
from tests.support.examples import examples

pytestmark = pytest.mark.corpus

# MySQL 5.7.44, CRC32: FDE 4, PREVIOUS_GTIDS 123, ... TABLE_MAP 500, WRITE_ROWS 553 (users: id INT,
# name VARCHAR(100)), XID 599 ... UPDATE_ROWS 1089 ... ROTATE 1453, 1500 bytes.
MINIMAL = "Fanduzi__BinlogVisualizer/cmd/binlogviz/testdata/minimal.binlog"
FUZZ_FILES = [
    MINIMAL,
    "blackbeam__rust_mysql_common/test-data/binlogs/json.binlog.000001",
    "blackbeam__rust_mysql_common/test-data/binlogs/vector.binlog",
    "blackbeam__rust_mysql_common/test-data/binlogs/mysql-enum-string-set.000001",
    "blackbeam__rust_mysql_common/test-data/binlogs/mariadb-bin.000001",
    "blackbeam__rust_mysql_common/test-data/binlogs/transaction_compression.000001",
    "blackbeam__rust_mysql_common/test-data/binlogs/binlog_transaction_with_GTID_TAG.000001",
    "blackbeam__rust_mysql_common/test-data/binlogs/json-opaque.binlog",
    "osheroff__mysql-binlog-connector-java/src/test/resources/mysql-bin.compressed",
    "go-mysql-org__go-mysql/replication/t/tcb-eval002c-bin.003320",
    "apecloud__mysql-binlog-connector-rust/tests/parse_file_tests/mysql-bin.000057",
    "alibaba__canal/parse/src/test/resources/binlog/mysql-bin.000002",  # 5.1, v1 rows, no checksums
]


def decode_all(data: bytes, path: str = "bad.bin", verify: bool = True) -> int:
    """Decode every event and every row; returns the number of events."""
    buf = memoryview(data)
    facts, _ = read_file_facts(buf, path)
    state = StreamState(facts, path=path)
    return sum(1 for _ in iter_row_batches(buf, state, 4, len(buf), verify=verify))


def _error(data: bytes, path: str = "bad.bin", verify: bool = True) -> BinlogFormatError:
    with pytest.raises(BinlogFormatError) as info:
        decode_all(data, path, verify)
    error = info.value
    assert error.path == path
    assert error.offset is not None
    assert str(error).startswith(f"{path} at offset {error.offset}: ")
    assert "\n" not in error.one_line()
    return error


def _recrc(data: bytearray, pos: int) -> None:
    """Recompute the CRC32 of the event at `pos` (after editing its bytes on purpose)."""
    length = struct.unpack_from("<I", data, pos + 9)[0]
    struct.pack_into("<I", data, pos + length - 4, zlib.crc32(data[pos : pos + length - 4]))


@pytest.fixture(scope="module")
def minimal(corpus_dir) -> bytes:
    data = (corpus_dir / MINIMAL).read_bytes()
    assert decode_all(data) == 25
    return data


# ------------------------------------------------------------------------------------------ framing


def test_wrong_magic(minimal):
    error = _error(b"\xfe\x62\x69\x6f" + minimal[4:])
    assert error.offset == 0 and "not a binlog file (magic is fe62696f)" in error.reason


def test_empty_and_tiny_files(tmp_path):
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    with pytest.raises(BinlogFormatError, match="empty") as info:
        BinlogFile(empty)
    assert info.value.path == str(empty) and info.value.offset == 0
    assert _error(b"\xfebin").offset == 4
    assert "truncated" in _error(b"\xfebin\x00\x01").reason


@pytest.mark.parametrize(
    ("cut", "offset", "reason"),
    [
        (4 + 10, 4, "first event header (truncated)"),  # inside the FDE header
        (4 + 60, 4, "runs past end of file"),  # inside the FDE body
        (130, 123, "truncated event header (7 of 19 bytes)"),  # inside PREVIOUS_GTIDS' header
        (560, 553, "truncated event header"),
        (590, 553, "truncated event: length 46 runs past end of file at 590"),  # inside WRITE_ROWS
        (1499, 1453, "runs past end of file at 1499"),  # the last byte missing
    ],
)
def test_truncated_file(minimal, cut, offset, reason):
    error = _error(minimal[:cut])
    assert error.offset == offset
    assert reason in error.reason


def test_every_truncation_is_reported_at_an_event_boundary(minimal):
    boundaries = [4, 123, 154, 219, 361, 426, 500, 553, 599, 630, 695, 769, 822, 866, 897, 962, 1036, 1089]
    boundaries += [1155, 1186, 1251, 1325, 1378, 1422, 1453, 1500]
    for cut in range(0, len(minimal)):
        if cut in boundaries:
            decode_all(minimal[:cut]) if cut >= 123 else None
            continue
        error = _error(minimal[:cut])
        assert error.offset in [0, *boundaries]
        assert error.offset <= cut


def test_flipped_bit_fails_the_crc_of_its_event(minimal):
    for pos, event_start, type_code in ((560, 553, 30), (1120, 1089, 31), (130, 123, 35), (1480, 1453, 4)):
        data = bytearray(minimal)
        data[pos] ^= 0x10
        error = _error(bytes(data))
        assert error.offset == event_start
        assert error.reason.startswith(f"CRC32 mismatch in event type {type_code} ")
        assert error.data is None or len(error.data) < 1 << 20


def test_flipped_bit_in_the_format_description(minimal):
    data = bytearray(minimal)
    data[40] ^= 0x01
    error = _error(bytes(data))
    assert error.offset == 4 and "CRC32 mismatch in FORMAT_DESCRIPTION" in error.reason


def test_flipped_bit_without_verification_reaches_the_parsers(minimal):
    """With --no-verify the same flip must still end in a clear error or a decoded file, never a crash."""
    for pos in range(4, len(minimal)):
        data = bytearray(minimal)
        data[pos] ^= 0xFF
        try:
            decode_all(bytes(data), verify=False)
        except BinlogFormatError as error:
            assert error.path == "bad.bin" and error.offset is not None


@pytest.mark.parametrize(
    ("length", "reason"),
    [
        (18, "event length 18 is smaller than its header"),
        (22, "event length 22 is smaller than its header"),  # 19 + CRC 4 is the least
        (0, "event length 0 is smaller than its header"),
        (10_000, "truncated event: length 10000 runs past end of file at 1500"),
        (0xFFFFFFFF, "event length 4294967295 is impossible"),
    ],
)
def test_event_length_out_of_bounds(minimal, length, reason):
    data = bytearray(minimal)
    struct.pack_into("<I", data, 553 + 9, length)  # the WRITE_ROWS event's length
    started = time.monotonic()
    error = _error(bytes(data))
    assert time.monotonic() - started < 5
    assert error.offset == 553 and reason in error.reason


def test_fde_length_out_of_bounds(minimal):
    data = bytearray(minimal)
    struct.pack_into("<I", data, 4 + 9, 5000)
    error = _error(bytes(data))
    assert error.offset == 4 and "runs past end of file" in error.reason
    struct.pack_into("<I", data, 4 + 9, 40)
    assert _error(bytes(data)).offset == 4


# ------------------------------------------------------------------------------------ event content


def test_table_map_column_count_disagrees_with_the_rows_event(minimal):
    data = bytearray(minimal)
    # WRITE_ROWS body: table_id:6 flags:2 extra_len:2, then the column count (2): claim 3
    body = 553 + 19
    assert data[body + 10] == 2
    data[body + 10] = 3
    _recrc(data, 553)
    error = _error(bytes(data))
    assert error.offset == 553
    assert error.reason == "rows event has 3 columns but TABLE_MAP of testdb.users has 2"


def test_rows_event_without_its_table_map(minimal):
    data = bytearray(minimal)
    struct.pack_into("<I", data, 553 + 19, 0x99)  # table id 109 -> 153
    _recrc(data, 553)
    error = _error(bytes(data))
    assert error.offset == 553 and "table id 153 without TABLE_MAP" in error.reason


def test_row_image_overrunning_its_event(minimal):
    data = bytearray(minimal)
    # the row: null bitmap fc, id 01000000, VARCHAR length 05 'alice': claim 50 bytes of name
    row = minimal.index(b"\x05alice", 553)
    data[row] = 50
    _recrc(data, 553)
    error = _error(bytes(data))
    assert error.offset == 553
    assert "rows of testdb.users" in error.reason and "column 2" in error.reason


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        # column types 03 0f, metadata length 02, VARCHAR metadata 64 00 (100): a metadata length of 5
        (lambda body, at: body.__setitem__(at["meta_len"], 5), "TABLE_MAP"),
        # a column type with no known metadata layout
        (lambda body, at: body.__setitem__(at["types"] + 1, 0xEE), "type code 238"),
        # metadata block of 1 byte for a VARCHAR that needs 2
        (lambda body, at: body.__setitem__(at["meta_len"], 1), "TABLE_MAP"),
        # a column count far larger than the event
        (lambda body, at: body.__setitem__(at["count"], 250), "TABLE_MAP event truncated"),
    ],
)
def test_garbage_table_map_metadata(minimal, edit, reason):
    data = bytearray(minimal)
    body_at = 500 + 19
    body = data[body_at : 500 + 53 - 4]
    # table_id:6 flags:2 db_len:1 "testdb\0" tbl_len:1 "users\0" count:1 types:2 meta_len:1 meta:2 nulls:1
    count = 8 + 1 + 7 + 1 + 6
    at = {"count": count, "types": count + 1, "meta_len": count + 3}
    assert body[count] == 2 and body[at["meta_len"]] == 2
    edit(body, at)
    data[body_at : 500 + 53 - 4] = body
    _recrc(data, 500)
    error = _error(bytes(data))
    assert error.offset == 500 and reason in error.reason


def test_garbage_optional_metadata(corpus_dir):
    """mysql-enum-string-set.000001 (8.0.28) carries every kind of optional metadata; corrupt the
    length of a field so that it runs past the event."""
    path = "blackbeam__rust_mysql_common/test-data/binlogs/mysql-enum-string-set.000001"
    data = bytearray((corpus_dir / path).read_bytes())
    with BinlogFile(corpus_dir / path) as binlog:
        table_map = next(e for e in binlog.events() if e.type_code == EventType.TABLE_MAP)
        pos, length = table_map.pos, table_map.length
    names = data.index(b"\x04\x0f\x02f1", pos, pos + length)  # COLUMN_NAME, 15 bytes: f1 ... f5
    data[names + 1] = 0xF0  # 240 bytes
    _recrc(data, pos)
    error = _error(bytes(data))
    assert error.offset == pos and "optional metadata" in error.reason


def test_unknown_event_inside_a_transaction_is_an_error(minimal):
    data = bytearray(minimal)
    data[553 + 4] = 0x77  # WRITE_ROWS -> type 119, between BEGIN and XID
    _recrc(data, 553)
    error = _error(bytes(data))
    assert error.offset == 553 and "unknown event type 119 inside a transaction" in error.reason


def test_xid_of_bad_length(minimal):
    data = bytearray(minimal[:599]) + bytearray(minimal[599:630])
    data[599 + 9] = 35  # 4 more bytes
    data[599 + 19 + 8 : 599 + 19 + 8] = b"\x00\x00\x00\x00"
    _recrc(data, 599)
    error = _error(bytes(data))
    assert error.offset == 599 and "XID event body is 12 bytes, not 8" in error.reason


def test_mariadb_compressed_payload_checks(minimal):
    good = zlib.compress(b"x" * 100)
    assert mariadb_uncompress(b"\x81\x64" + good, 7) == b"x" * 100
    for data, reason in (
        (b"", "no compression header"),
        (b"\x81", "bad length header"),
        (b"\x81\x65" + good, "inflates to 100 bytes, header says 101"),
        (b"\x81\x64" + b"garbage", "does not inflate"),
        (b"\x84\xff\xff\xff\xff" + good, "claims 4294967295 bytes uncompressed"),
        (b"\x81\x64" + good[:-3], "the zlib stream is truncated"),
    ):
        with pytest.raises(BinlogFormatError, match=reason) as info:
            mariadb_uncompress(data, 7)
        assert info.value.offset == 7


def test_decompression_is_bounded_by_the_declared_length():
    bomb = zlib.compress(b"\x00" * (64 << 20), 9)  # 64 MiB of zeros in ~64 KiB
    started = time.monotonic()
    with pytest.raises(BinlogFormatError, match="more than the 16 bytes its header says"):
        mariadb_uncompress(b"\x81\x10" + bomb, 0)
    assert time.monotonic() - started < 2


# ---------------------------------------------------------------------------------------- fuzzing


@pytest.fixture(scope="module")
def fuzz_inputs(corpus_dir) -> list[tuple[bytes, list[tuple[int, int]]]]:
    """(file bytes, [(event pos, event length)]) of the fuzzed files."""
    inputs = []
    for rel in FUZZ_FILES:
        data = (corpus_dir / rel).read_bytes()
        with BinlogFile(corpus_dir / rel) as binlog:
            frames = [(e.pos, e.length) for e in binlog.events()]
            crc = binlog.facts.checksum_len == 4
        decode_all(data)
        inputs.append((data, frames if crc else []))
    return inputs


_mutation = st.tuples(
    st.sampled_from(["set", "flip", "insert", "delete", "truncate"]),
    st.floats(min_value=0, max_value=1, exclude_max=True),
    st.integers(min_value=0, max_value=255),
)


def _mutate(data: bytes, mutations: list[tuple[str, float, int]]) -> bytearray:
    out = bytearray(data)
    for kind, where, value in mutations:
        pos = 4 + int(where * (len(out) - 4)) if len(out) > 4 else 0
        if kind == "set" and pos < len(out):
            out[pos] = value
        elif kind == "flip" and pos < len(out):
            out[pos] ^= 1 << (value % 8)
        elif kind == "insert":
            out[pos:pos] = bytes([value]) * (1 + value % 7)
        elif kind == "delete":
            del out[pos : pos + 1 + value % 7]
        elif kind == "truncate":
            del out[pos:]
    return out


def _check_terminates(data: bytes, verify: bool) -> None:
    started = time.monotonic()
    try:
        decode_all(data, "fuzz.bin", verify)
    except BinlogFormatError as error:
        assert error.path == "fuzz.bin"
        assert error.offset is not None and 0 <= error.offset <= max(len(data), 4)
        assert error.reason and "\n" not in error.one_line()
    assert time.monotonic() - started < 10


@settings(
    max_examples=examples(150),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    file=st.integers(min_value=0, max_value=len(FUZZ_FILES) - 1), mutations=st.lists(_mutation, max_size=6)
)
def test_fuzz_mutated_corpus_files_only_raise_binlog_format_errors(fuzz_inputs, file, mutations):
    data, _ = fuzz_inputs[file]
    mutated = bytes(_mutate(data, mutations))
    _check_terminates(mutated, verify=True)
    _check_terminates(mutated, verify=False)


@settings(
    max_examples=examples(200),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    file=st.integers(min_value=0, max_value=len(FUZZ_FILES) - 1),
    edits=st.lists(
        st.tuples(st.floats(min_value=0, max_value=1, exclude_max=True), st.integers(0, 255)),
        min_size=1,
        max_size=8,
    ),
)
def test_fuzz_event_bodies_with_valid_checksums(fuzz_inputs, file, edits):
    """Bytes changed inside event bodies, CRCs recomputed: the garbage reaches every event parser and
    the row decoder, past the checksum."""
    data, frames = fuzz_inputs[file]
    out = bytearray(data)
    bodies = [(pos, length) for pos, length in frames if length > 19 + 4]
    for where, value in edits:
        if bodies:
            pos, length = bodies[int(where * len(bodies))]
            out[pos + 19 + int(where * 997) % (length - 19 - 4)] = value
        else:  # a file without checksums: any byte after the FDE
            out[4 + int(where * (len(out) - 4))] = value
    for pos, length in frames:
        if pos + length <= len(out) and length >= 23:
            _recrc(out, pos)
    _check_terminates(bytes(out), verify=True)


def test_fuzz_decode_stream_from_every_offset(minimal):
    """Starting at a position that is not an event boundary (a wrong --start-position) must fail
    cleanly, never loop or crash."""
    buf = memoryview(minimal)
    facts, _ = read_file_facts(buf, "bad.bin")
    for start in range(4, len(minimal), 3):
        state = StreamState(facts, path="bad.bin")
        try:
            for _ in decode_stream(buf, state, start, len(minimal)):
                pass
        except BinlogFormatError as error:
            assert error.offset is not None and error.offset >= start


def test_corpus_file_on_disk_can_be_closed_after_a_failure(tmp_path, minimal):
    path = Path(tmp_path / "cut.bin")
    path.write_bytes(minimal[:700])
    with BinlogFile(path) as binlog:
        events = []
        with pytest.raises(BinlogFormatError):
            for event in binlog.events():
                events.append(event)
    assert [e.pos for e in events] == [4, 123, 154, 219, 361, 426, 500, 553, 599, 630]
