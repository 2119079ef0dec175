"""Conformance over real-world binlogs written by MySQL 5.0-9.6 and MariaDB 10.0-11.8, collected from
public test suites: the vendored set (tests/corpus) always, and the extended corpus (the folder
MYSQL_ROLLBACK_CORPUS names) as a second lane when given. Tests that walk a whole corpus run once per
lane (ids `vendored:...`, `extended:...`); tests of one file's facts read the vendored copy, or need
the extended corpus (marker `extended`) when the file is not vendored.

* Every file listed in INDEX.md decodes to its end with CRC32 verified and as many top-level events
  as INDEX.md counts, or stops with the specific error its name (or ORACLES.md) announces.
* Every fact of ORACLES.md is a test below.
* Every row value agrees with what `mariadb-binlog -vv` printed (``_mariadb-binlog-output/``) and
  with MySQL's own `mysqlbinlog -vv` dumps kept beside the rust-us files; event positions agree
  with the `# at` / `end_log_pos` lines and with SHOW BINLOG EVENTS (show.txt).

Where mysqlbinlog prints a value differently from what the server stores, the normalisation below
says which is right (the MySQL source decides).
"""

from __future__ import annotations

import calendar
import gzip
import re
import struct
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, localcontext
from pathlib import Path
from typing import Any

import pytest

from rollback.base.errors import BinlogFormatError, UnsupportedEvent
from rollback.binlog import events as ev
from rollback.binlog.columns import MISSING, ColumnSpec
from rollback.binlog.constants import ChecksumAlg, ColumnType, EventType
from rollback.binlog.decode import DecodedEvent, RowsBatch, StreamState, decode_stream
from rollback.binlog.gtid import GtidSet
from rollback.binlog.json_binary import JsonDiff, decode_json
from rollback.binlog.reader import FormatFacts, read_file_facts
from rollback.binlog.rowdecoder import get_row_decoder
from rollback.binlog.rows import JsonPartial, JsonText, RowsEvent, decode_partial_pairs
from rollback.binlog.table_map import TableMap
from rollback.render.records import batch_records
from tests.support.corpus import (
    JSON_OPAQUE_AS_MYSQL_PRINTS,
    LANES,
    MARIADB_OUT,
    VENDORED,
    Corpus,
    Entry,
    lane_ids,
    lanes_and,
)
from tests.support.decoding import iter_row_batches

pytestmark = pytest.mark.corpus

BB = "blackbeam__rust_mysql_common/test-data/binlogs"
OSH = "osheroff__mysql-binlog-connector-java/src/test/resources"
RUST_US = "rust-us__mysql-cdc-rs/tests/events"
POC = "mariadb-operator__mariadb-poc/mariadb-binlog/binlogs"

# The extended corpus's INDEX.md lists it, its folder does not hold it (2.9 MB, left out of the copy).
ABSENT = "calvinstephen487-oss__Docker-mysql-backup-and-restore/binlog.000001"


def present(lane: Corpus) -> list[Entry]:
    return [e for e in lane.entries if e.rel != ABSENT]


LANE_ENTRIES = [(lane, entry) for lane in LANES for entry in present(lane)]


# ----------------------------------------------------------------------------------------- decoding


@dataclass
class Decoding:
    path: Path
    facts: FormatFacts | None = None
    events: list[DecodedEvent] = field(default_factory=list)  # inner payload events included
    batches: list[RowsBatch] = field(default_factory=list)
    top_level: list[int] = field(default_factory=list)  # positions of the file's own events
    top_types: list[int] = field(default_factory=list)  # their types (TRANSACTION_PAYLOAD for a payload)
    error: BinlogFormatError | None = None

    def of_type(self, event_type: type) -> list[Any]:
        return [d.event for d in self.events if isinstance(d.event, event_type)]


SpecsFor = Callable[[TableMap], tuple[ColumnSpec, ...] | None]


def decode_file(path: Path, specs_for: SpecsFor | None = None) -> Decoding:
    """The whole file, CRC32 verified, rows decoded; stops at the first BinlogFormatError."""
    result = Decoding(path)
    buf = memoryview(path.read_bytes())
    try:
        result.facts, _ = read_file_facts(buf, str(path))
        state = StreamState(result.facts, path=str(path), file_name=path.name)
        for decoded, batch in iter_row_batches(buf, state, 4, len(buf), verify=True, specs_for=specs_for):
            result.events.append(decoded)
            if not result.top_level or result.top_level[-1] != decoded.outer_pos:
                result.top_level.append(decoded.outer_pos)
                # a payload's inner events come first, the first one at inner offset 0
                inner = decoded.raw.pos != decoded.outer_pos
                result.top_types.append(EventType.TRANSACTION_PAYLOAD if inner else decoded.raw.type_code)
            if batch is not None:
                result.batches.append(batch)
    except BinlogFormatError as exc:
        result.error = exc
    return result


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Callable[..., Decoding]:
    """(rel path, lane = the vendored set) -> its Decoding, decoded once per module; `.gz` files are
    gunzipped first."""
    cache: dict[tuple[str, str], Decoding] = {}
    unzipped = tmp_path_factory.mktemp("corpus")

    def get(rel: str, lane: Corpus = VENDORED) -> Decoding:
        key = (lane.lane, rel)
        if key not in cache:
            cache[key] = decode_file(local_path(lane.path(rel), unzipped / lane.lane))
        return cache[key]

    return get


def local_path(path: Path, unzipped: Path) -> Path:
    if path.suffix == ".gz":
        unzipped.mkdir(exist_ok=True)
        target = unzipped / path.name[: -len(".gz")]
        if not target.exists():
            target.write_bytes(gzip.decompress(path.read_bytes()))
        return target
    return path


# ------------------------------------------------------------------ files that announce their breakage

# rel -> (error class, offset, words of the reason, events read before the error)
BROKEN: dict[str, tuple[type[BinlogFormatError], int, str, int]] = {
    # The magic 0xFE became EF BF BD in a UTF-8 round trip (ORACLES.md).
    "alibaba__canal/parse/src/test/resources/binlog/tsdb/mysql-bin.000001": (
        BinlogFormatError,
        0,
        "not a binlog file",
        0,
    ),
    # 14 bytes: the magic and 10 bytes of a header.
    f"{BB}/binlog_truncated_event.000001": (BinlogFormatError, 4, "truncated", 0),
    # Cut inside PREVIOUS_GTIDS: 9 of its 19 header bytes after the FDE.
    f"{BB}/binlog_truncated_prev_gtid_event.000001": (BinlogFormatError, 120, "truncated event header", 1),
    # A QUERY event of length 171 whose body is garbage (its db_len overruns it).
    f"{BB}/corrupt-relay-bin.000624": (BinlogFormatError, 91204, "QUERY event too short", 872),
    # An XID event of length 0x26: 19 body bytes instead of 8.
    f"{BB}/ver_5_1-wl2325_r.001": (BinlogFormatError, 428, "XID event body is 19 bytes, not 8", 4),
    # MySQL 5.1 beta's pre-GA row events (types 20-22).
    f"{BB}/ver_5_1-wl2325_s.001": (UnsupportedEvent, 411, "pre-GA row event type 20", 4),
    # Rebuilt from an xxd dump: every event is there, then one stray byte.
    "Meituan-Dianping__MyFlash/testbinlog/haha.000005.from-xxd": (
        BinlogFormatError,
        3283,
        "truncated event header (1 of 19 bytes)",
        50,
    ),
    "Meituan-Dianping__MyFlash/testbinlog/haha.000007.from-xxd": (
        BinlogFormatError,
        416,
        "truncated event header (1 of 19 bytes)",
        7,
    ),
    # MariaDB 10.0 'hires' TIMESTAMP(3): the binlog does not say n, the schema must
    # (test_mariadb_hires_timestamps_decode_with_the_schema shows the rest of the file decoding).
    "pingcap__tiflow/mysql-bin.000001": (BinlogFormatError, 1819, "the table schema is needed", 21),
}


def test_the_vendored_index_lists_exactly_the_vendored_binlogs():
    """INDEX.md of tests/corpus and the folder agree: every binlog there is listed, at its listed size."""
    listed = {e.rel for e in VENDORED.entries}
    assert len(listed) >= 50, "INDEX.md table not parsed"
    on_disk = {p.relative_to(VENDORED.root).as_posix() for p in VENDORED.binlogs()}
    sizes = {}
    for e in VENDORED.entries:
        data = VENDORED.path(e.rel).read_bytes()
        sizes[e.rel] = len(gzip.decompress(data) if e.gunzipped else data)
    assert sizes == {e.rel: e.size for e in VENDORED.entries}
    # the files that are not found by their magic: the gzipped one, and the one a UTF-8 round trip mangled
    assert listed - on_disk == {
        f"{OSH}/mysql-bin.sakila.gz",
        "alibaba__canal/parse/src/test/resources/binlog/tsdb/mysql-bin.000001",
    }
    assert {rel for rel in BROKEN if VENDORED.has(rel)} == {rel for rel in BROKEN if rel in listed}


@pytest.mark.extended
def test_every_extended_file_is_present_except_the_one_known_absent(extended_corpus):
    entries = extended_corpus.entries
    assert len(entries) >= 120, "INDEX.md table not parsed"
    missing = [e.rel for e in entries if not extended_corpus.has(e.rel)]
    assert missing == [ABSENT]
    assert set(BROKEN) <= {e.rel for e in present(extended_corpus)}
    decoding = [e for e in present(extended_corpus) if e.rel not in BROKEN]
    assert len(decoding) >= 112  # 122 listed, one absent, nine broken on purpose


@pytest.mark.parametrize(("lane", "entry"), LANE_ENTRIES, ids=[lane.id(e.rel) for lane, e in LANE_ENTRIES])
def test_corpus_file_decodes_to_its_end_or_fails_as_announced(lane: Corpus, entry: Entry, corpus):
    result = corpus(entry.rel, lane)
    broken = BROKEN.get(entry.rel)
    if broken is None:
        assert result.error is None, f"{entry.rel}: {result.error}"
        assert len(result.top_level) == entry.events
        histogram = Counter(result.top_types)
        assert histogram == {int(code): int(n) for code, n in re.findall(r"(\d+) \S+×(\d+)", entry.histogram)}
        if "inner: " in entry.extras:
            inner = Counter(d.raw.type_code for d in result.events if d.raw.pos != d.outer_pos)
            listed = entry.extras.split("inner: ")[1].split(";")[0]
            assert inner == {int(code): int(n) for code, n in re.findall(r"(\d+) \S+×(\d+)", listed)}
        assert result.facts is not None
        assert result.facts.server_version == entry.server_version
        expected_alg = ChecksumAlg.CRC32 if entry.checksum == "CRC32" else ChecksumAlg.OFF
        assert result.facts.checksum == expected_alg
        if "crc ok/bad" in entry.extras:
            ok = int(re.search(r"crc ok/bad (\d+)/0", entry.extras)[1])  # type: ignore[index]
            # INDEX.md counts the events other than FORMAT_DESCRIPTION; we verified those too
            fdes = sum(1 for d in result.events if d.raw.type_code == EventType.FORMAT_DESCRIPTION)
            assert ok == len(result.top_level) - fdes
        return
    error_class, offset, reason, events_before = broken
    assert result.error is not None, f"{entry.rel} decoded without the error it announces"
    assert type(result.error) is error_class
    assert result.error.path == str(result.path)
    assert result.error.offset == offset
    assert reason in result.error.reason
    assert f"{result.path} at offset {offset}: " in str(result.error)
    assert len(result.top_level) == events_before
    if entry.path.endswith(".from-xxd"):
        # the stray trailing byte is all that is left after the events INDEX.md counts
        assert events_before == entry.events and entry.size - 1 == offset


# --------------------------------------------------------------------------------- ORACLES.md facts


def _after_images(result: Decoding) -> list[tuple]:
    return [row for batch in result.batches for row in batch.rows]


def test_json_opaque_after_images_print_as_mysql_prints_them(corpus):
    result = corpus(f"{BB}/json-opaque.binlog")
    texts = [decode_json(bytes(row[0])) for row in _after_images(result)]
    assert texts == JSON_OPAQUE_AS_MYSQL_PRINTS  # where ORACLES.md differs, the source wins (see there)
    records = [r for batch in result.batches for r in batch_records(batch)]
    assert [r["after"]["a"] for r in records] == [{"json": t} for t in texts]


def test_vector_table_maps_carry_dimensionality_and_rows_hold_float32(corpus):
    result = corpus(f"{BB}/vector.binlog")
    maps = {m.table: m for m in result.of_type(TableMap)}
    assert maps["foo"].vector_dimensions == {1: 3}
    assert maps["bar"].vector_dimensions == {1: 2, 3: 4}
    assert [maps["bar"].vector_dimensions[i] for i in sorted(maps["bar"].vector_dimensions)] == [2, 4]
    # MySQL 9 lists VECTOR columns in DEFAULT_CHARSET (binary, 63); `foo` TEXT is utf8mb4_0900_ai_ci.
    assert maps["bar"].charsets == (None, 63, 255, 63)
    assert maps["bar"].column_names == ("id", "vector_column", "foo", "vector_column2")
    first = result.batches[0]
    assert first.table.table == "foo" and first.kind == "insert"
    row_id, vector = first.rows[0]
    assert row_id == 1 and len(vector) == 12
    assert struct.unpack("<3f", vector) == pytest.approx((1.1, 2.2, 3.3))


def test_bit_values(corpus):
    result = corpus(f"{BB}/mysql_type_bit.000001")
    assert _after_images(result) == [(0b100, b"foo", 0b100000)]
    assert [s.length for s in result.batches[0].table.specs(None)] == [3, 2, 8]


def test_minimal_row_metadata_charsets_and_unsigned_int(corpus):
    result = corpus(f"{BB}/minimal_row_metadata.000001")
    (tmap,) = result.of_type(TableMap)
    # ORACLES.md counts columns from 0: "column 2" is the third column (@3), "column 4" the fifth (@5).
    assert tmap.charsets is not None and tmap.charsets[2] == 255
    assert tmap.unsigned == (False, False, False, False, True)
    assert _after_images(result) == [(1, MISSING, b"a", MISSING, 3230202323)]


def test_negative_time(corpus):
    assert _after_images(corpus(f"{BB}/time_issue.000001")) == [("-507:48:27",)]


def test_mariadb_full_row_metadata_names_and_charsets(corpus):
    result = corpus(f"{BB}/mariadb-bin.000001")
    maps = result.of_type(TableMap)
    assert len(maps) == 2
    for tmap in maps:
        assert tmap.column_names == ("id", "topic", "event_type", "event", "created")
        assert tmap.charsets == (None, 45, 45, 63, None)  # utf8mb4_general_ci; `event` is a BLOB
        assert tmap.enum_values == {2: (b"BLOB", b"JSON", b"PROTOBUF")}
        assert tmap.primary_key == ((0, 0),)
    records = [r for batch in result.batches for r in batch_records(batch)]
    assert records[0]["after"] == {
        "id": 62,
        "topic": "foo",
        "event_type": "JSON",  # ENUM index 2, named by the table map's FULL metadata
        "event": {"hex": b'{"foo":1}'.hex()},
        "created": "2022-04-20 22:18:04",
    }


def test_transaction_payload_holds_query_table_map_write_rows_xid(corpus):
    result = corpus(f"{BB}/transaction_compression.000001")
    payload_pos = 274
    inner = [d.raw.type_code for d in result.events if d.outer_pos == payload_pos]
    assert inner == [EventType.QUERY, EventType.TABLE_MAP, EventType.WRITE_ROWS, EventType.XID]
    assert result.top_level == [4, 126, 197, 274, 431]
    assert _after_images(result) == [(1,)]


def test_tagged_gtid_and_previous_gtids_with_tags(corpus):
    result = corpus(f"{BB}/binlog_transaction_with_GTID_TAG.000001")
    (previous,) = result.of_type(ev.PreviousGtids)
    sid = "55778904-0299-11f1-b1b8-4ef0c4956feb"
    assert previous.gtid_set == GtidSet.parse(f"{sid}:1-13,{sid}:mytag:1-2")
    (gtid,) = result.of_type(ev.Gtid)
    assert (gtid.uuid, gtid.tag, gtid.gno) == (sid, "mytag", 3)
    assert gtid.text == f"{sid}:mytag:3"
    assert result.batches[0].tx.gtid == f"{sid}:mytag:3"
    assert _after_images(result) == [(3, 100, Decimal("250.00"))]


def test_previous_gtids_without_tags(corpus):
    (previous,) = corpus(f"{BB}/binlog_transaction_previous_GTID_no_tag.000001").of_type(ev.PreviousGtids)
    assert previous.gtid_set == GtidSet.parse("b9b88c66-0755-11f1-9899-4a9da94c4d71:1-2")


@pytest.mark.parametrize(
    ("rel", "count"),
    [
        (f"{OSH}/mysql-bin.sakila.gz", 1462),
        (f"{OSH}/mysql-bin.compressed", 5),
        (f"{OSH}/mysql-bin.checksum-none", 191),
        (f"{OSH}/mysql-bin.checksum-crc32", 303),
    ],
)
def test_osheroff_event_counts(rel, count, corpus):
    result = corpus(rel)
    assert result.error is None and len(result.top_level) == count


def test_osheroff_compressed_payload_holds_one_update(corpus):
    result = corpus(f"{OSH}/mysql-bin.compressed")
    assert [b.kind for b in result.batches] == ["update"]
    payloads = [d for d in result.events if d.raw.type_code == EventType.UPDATE_ROWS]
    assert payloads and all(d.outer_pos != d.raw.pos for d in payloads)  # decoded from inside the payload
    sakila = corpus(f"{OSH}/mysql-bin.sakila.gz")
    assert sum(len(b.rows) for b in sakila.batches) > 40000
    assert {b.table.table for b in sakila.batches} >= {"actor", "film", "rental", "payment"}


def test_aurora_padding_is_skipped_outside_transactions(corpus):
    result = corpus(f"{OSH}/mysql-bin.aurora-padding")
    assert result.top_level == [4, 185, 216, 281, 1209]
    kinds = [d.raw.type_code for d in result.events]
    assert kinds == [
        EventType.FORMAT_DESCRIPTION,
        EventType.PREVIOUS_GTIDS,
        EventType.ANONYMOUS_GTID,
        100,
        EventType.QUERY,
    ]
    assert isinstance(result.events[3].event, ev.Ignored)
    assert result.events[4].event.sql == "BEGIN"


def test_apecloud_payload_transactions(corpus):
    result = corpus("apecloud__mysql-binlog-connector-rust/tests/parse_file_tests/mysql-bin.000057")
    assert len(result.top_level) == 8
    payloads = [
        pos
        for pos, kind in zip(result.top_level, result.top_types, strict=True)
        if kind == EventType.TRANSACTION_PAYLOAD
    ]
    assert len(payloads) == 2
    inner = {d.raw.type_code for d in result.events if d.outer_pos in payloads}
    assert EventType.ROWS_QUERY in inner
    types = {t for m in result.of_type(TableMap) for t in m.column_types}
    assert {ColumnType.JSON, ColumnType.DATE, ColumnType.TIMESTAMP2} <= types
    assert result.facts is not None and result.facts.checksum_len == 4
    other = corpus("apecloud__mysql-binlog-connector-rust/tests/parse_file_tests/mysql-bin.000080")
    assert len(other.top_level) == 37 and other.facts is not None and other.facts.checksum_len == 4


@pytest.mark.parametrize("where", ["cmd/binlogviz", "internal/binlog"])
def test_binlog_visualizer_rows(where, corpus):
    result = corpus(f"Fanduzi__BinlogVisualizer/{where}/testdata/minimal.binlog")
    changes = [(b.kind, b.table.table, b.rows) for b in result.batches]
    assert changes == [
        ("insert", "users", [(1, b"alice")]),
        ("insert", "users", [(2, b"bob")]),
        ("update", "users", [((1, b"alice"), (1, b"alice_updated"))]),
        ("delete", "users", [(2, b"bob")]),
    ]


def _mysql_decimal(literal: str, precision: int, scale: int) -> Decimal:
    """What MySQL stores for a string literal in DECIMAL(p, s): rounded half away from zero to s
    digits, then clamped to +-(10^(p-s) - 10^-s) (out of range in non-strict mode); a result of
    zero has no sign (the file stores '-.000000012345...' into DECIMAL(4,2) as 0.00)."""
    with localcontext() as context:
        context.prec = 100
        quantum = Decimal(1).scaleb(-scale)
        value = Decimal(literal).quantize(quantum, rounding=ROUND_HALF_UP)
        top = Decimal(10) ** (precision - scale) - quantum
        value = max(-top, min(top, value)).quantize(quantum)
        # a value that rounds to zero is stored as zero, never as a negative zero
        return abs(value) if value == 0 else value


def test_seventeen_decimal_rows_match_mysql_rounding_of_ddsql(corpus, corpus_dir):
    sql = (corpus_dir / "go-mysql-org__go-mysql/replication/t/ddsql.sql").read_text()
    columns = re.findall(r"\bv(\d+)_(\d+) decimal\((\d+),(\d+)\)", sql)
    assert len(columns) == 11
    tuples = re.findall(r"^\((.*)\),?$", sql, re.M)
    literals = [[f.strip('"') for f in t.split(",")] for t in tuples]
    assert len(literals) == 17
    result = corpus("go-mysql-org__go-mysql/replication/t/tcb-eval002c-bin.003320")
    rows = _after_images(result)
    assert len(rows) == 17
    for number, (row, values) in enumerate(zip(rows, literals, strict=True), start=1):
        assert row[0] == number
        expected = [
            _mysql_decimal(v, int(p), int(s)) for v, (_, _, p, s) in zip(values[:11], columns, strict=True)
        ]
        assert list(row[1:12]) == expected
        assert [format(v, "f") for v in row[1:12]] == [format(v, "f") for v in expected]  # scale kept
        assert list(row[12:]) == [int(values[11]), int(values[12])]
    assert rows[2][1] == Decimal("99.99")  # '12345' into DECIMAL(4,2): clamped


@pytest.mark.extended
def test_mariadb_poc_gtid_ranges_and_file_starts(corpus, extended_corpus):
    files = sorted(extended_corpus.path(POC).rglob("mariadb-repl-bin.*"))
    assert len(files) == 10
    for path in files:
        result = corpus(path.relative_to(extended_corpus.root).as_posix(), extended_corpus)
        assert result.error is None
        kinds = [d.raw.type_code for d in result.events[:3]]
        assert kinds == [EventType.FORMAT_DESCRIPTION, EventType.GTID_LIST, EventType.BINLOG_CHECKPOINT]
        assert {d.raw.server_id for d in result.events} == {10}
    second = corpus(f"{POC}/domain_id_0/mariadb-repl-bin.000002", extended_corpus)
    gtids = [g.text for g in second.of_type(ev.MariaGtid)]
    assert gtids[0] == "0-10-250080" and gtids[-1] == "0-10-254512"
    assert len(gtids) == 4433 and len(set(gtids)) == 4433


def test_canal_file_mangled_by_utf8_is_not_a_binlog(corpus):
    result = corpus("alibaba__canal/parse/src/test/resources/binlog/tsdb/mysql-bin.000001")
    assert result.error is not None and "not a binlog file" in result.error.reason
    assert "efbfbd62" in result.error.reason


# MariaDB 10.0 'hires' temporals: the precision comes from the CREATE TABLE statements in the file.
_TIFLOW_FSP = {"t": 3, "t1": 0, "t2": 4, "t3": 0, "t4": 4, "t5": 1, "t6": 4}


def test_mariadb_hires_timestamps_need_the_schema(corpus):
    result = corpus("pingcap__tiflow/mysql-bin.000001")
    assert result.facts is not None and result.facts.server_version.startswith("10.0.17-MariaDB")
    assert result.facts.checksum == ChecksumAlg.OFF
    (tmap,) = [m for m in result.of_type(TableMap) if m.table == "t"]
    assert tmap.column_types == bytes([ColumnType.LONG, ColumnType.TIMESTAMP]) and tmap.column_meta == (0, 0)
    assert result.error is not None
    assert "column 2 (TIMESTAMP)" in result.error.reason and "schema" in result.error.reason


def test_mariadb_hires_timestamps_decode_with_the_schema(corpus_dir):
    path = corpus_dir / "pingcap__tiflow/mysql-bin.000001"
    buf = path.read_bytes()
    facts, _ = read_file_facts(memoryview(buf), str(path))
    events = decode_stream(buf, StreamState(facts, path=str(path)), 4, len(buf))  # rows left undecoded
    ddl_text = " ".join(d.event.sql for d in events if isinstance(d.event, ev.Query))
    for table, fsp in _TIFLOW_FSP.items():
        if table in ("t3", "t4"):
            assert f"create table {table} like t{int(table[1]) - 2}" in ddl_text
        else:
            assert (
                f"create table {table}" in ddl_text
                and ("timestamp" + (f"({fsp})" if fsp else "")) in ddl_text
            )

    def schema(tmap: TableMap) -> tuple[ColumnSpec, ...] | None:
        if tmap.database != "steven":
            return None
        return (ColumnSpec(ColumnType.LONG), ColumnSpec(ColumnType.TIMESTAMP, _TIFLOW_FSP[tmap.table]))

    result = decode_file(path, schema)
    assert result.error is None and len(result.top_level) == 59
    steven = [(b.table.table, b.rows, b.timestamp) for b in result.batches if b.table.database == "steven"]
    assert [(t, rows) for t, rows, _ in steven] == [
        ("t", [(1, "2022-05-16 14:53:10.000")]),
        ("t1", [(1, "2022-05-16 14:55:47")]),
        ("t2", [(1, "2022-05-16 14:56:37.0000")]),
        ("t3", [(1, "2022-05-18 03:04:55")]),
        ("t3", [(2, "2022-05-18 03:05:05")]),
        ("t5", [(1, "2022-05-18 03:07:06.0")]),
        ("t6", [(1, "2022-05-18 03:10:02.0000")]),
    ]
    # the values were CURRENT_TIMESTAMP: each equals its event's own timestamp (UTC)
    for _, rows, stamp in steven:
        assert rows[0][1][:19] == time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(stamp))


# --------------------------------------------------------------------- PARTIAL_UPDATE_ROWS (json.binlog)


def test_partial_json_update_with_a_minimal_before_image_keeps_the_diffs(corpus):
    result = corpus(f"{BB}/json.binlog.000001")
    (partial,) = [b for b in result.batches if b.pos == 3750]
    assert [d.raw.type_code for d in result.events if d.outer_pos == 3750] == [EventType.PARTIAL_UPDATE_ROWS]
    ages = {1: 26, 2: 34, 3: 42, 4: 26, 5: 34, 6: 42}
    names = {1: b"Joe", 2: b"Sue", 3: b"Pete", 4: b"Joe", 5: b"Sue", 6: b"Pete"}
    assert len(partial.rows) == 6
    for before, after in partial.rows:
        row_id = before[0]
        assert before[1:] == (MISSING, MISSING, MISSING)  # binlog_row_image=MINIMAL: the key only
        assert after[0] is MISSING
        assert after[1] == JsonPartial((JsonDiff("REPLACE", "$.age", str(ages[row_id])),))
        assert after[2:] == (names[row_id], ages[row_id])
    record = next(batch_records(partial))
    assert record["after"]["@2"] == {"json_diff": [{"op": "REPLACE", "path": "$.age", "value": "26"}]}


def test_partial_json_update_with_a_full_before_image_rebuilds_the_document(corpus):
    """The json.binlog event rebuilt with FULL before images (taken from the file's own full UPDATE
    event at 2612): the diff applies to the before document, as the server applies it."""
    result = corpus(f"{BB}/json.binlog.000001")
    (full_update,) = [b for b in result.batches if b.pos == 2612]
    partial = next(d.event for d in result.events if d.outer_pos == 3750)
    assert isinstance(partial, RowsEvent)
    specs = full_update.table.specs(None)
    all_columns = (1 << 4) - 1
    before_decoder = get_row_decoder(specs, all_columns)
    after_decoder = get_row_decoder(specs, partial.present_after)
    # before image: null bits, id, JSON (4-byte length), name (2-byte length), age
    _, after_full = full_update.rows[0]
    document = bytes(after_full[1])
    before = (
        b"\x00"
        + struct.pack("<i", 1)
        + struct.pack("<I", len(document))
        + document
        + struct.pack("<H", 3)
        + b"Joe"
        + struct.pack("<i", 25)
    )
    diff = b"\x00\x05$.age\x03\x05\x1a\x00"  # REPLACE $.age with int16 26
    after = b"\x01\x01" + b"\x00" + struct.pack("<I", len(diff)) + diff + struct.pack("<H", 3) + b"Joe"
    after += struct.pack("<i", 26)
    pairs = decode_partial_pairs(specs, before + after, before_decoder, after_decoder)
    ((old, new),) = pairs
    assert decode_json(bytes(old[1])) == '{"age": 25, "data": "xxxxxxxxxx", "name": "Joe"}'
    assert new[1] == JsonText('{"age": 26, "data": "xxxxxxxxxx", "name": "Joe"}')
    assert new[2:] == (b"Joe", 26)
    # value_options 0: the after image is a plain one
    plain = (
        b"\x00"
        + b"\x00"
        + struct.pack("<I", len(document))
        + document
        + b"\x03\x00Joe"
        + struct.pack("<i", 25)
    )
    ((_, same),) = decode_partial_pairs(specs, before + plain, before_decoder, after_decoder)
    assert bytes(same[1]) == document


def test_partial_json_update_rejects_unknown_value_options(corpus):
    result = corpus(f"{BB}/json.binlog.000001")
    (full_update,) = [b for b in result.batches if b.pos == 2612]
    specs = full_update.table.specs(None)
    data = b"\x00" + struct.pack("<i", 1) + b"\x02"
    with pytest.raises(BinlogFormatError, match="value_options 2 is unknown"):
        decode_partial_pairs(specs, data, get_row_decoder(specs, 1), get_row_decoder(specs, 14))


# ---------------------------------------------------------------------- row values vs mysqlbinlog -vv

_HEAD = re.compile(rb"^### (INSERT INTO|UPDATE|DELETE FROM) `((?:[^`]|``)*)`\.`((?:[^`]|``)*)`$")
_VALUE = re.compile(rb"^###   @(\d+)=(.*?) */\* (.+?) meta=(\d+) nullable=(\d) is_null=(\d) \*/$")
_INT_BYTES = {"TINYINT": 1, "SHORTINT": 2, "MEDIUMINT": 3, "INT": 4, "LONGINT": 8}

Image = dict[int, tuple[bytes, str]]


def parse_mysqlbinlog_rows(text: bytes) -> list[tuple[str, str, Image | None, Image | None]]:
    """(verb, db.table, WHERE image, SET image) of every `### ...` row of a mysqlbinlog -vv output."""
    rows: list[list[Any]] = []
    image: Image = {}
    for line in text.splitlines():
        line = line.rstrip(b"\r")
        if not line.startswith(b"###"):
            continue
        head = _HEAD.match(line)
        if head:
            table = (head[2] + b"." + head[3]).decode("utf-8", "replace")
            rows.append([head[1].split()[0].decode(), table, None, None])
        elif line == b"### WHERE":
            image = rows[-1][2] = {}
        elif line == b"### SET":
            image = rows[-1][3] = {}
        else:
            value = _VALUE.match(line)
            assert value, f"unparsed mysqlbinlog line {line[:120]!r}"
            image[int(value[1])] = (value[2], value[3].decode())
    return [(r[0], r[1], r[2], r[3]) for r in rows]


def _unescape(text: bytes) -> bytes:
    # mysqlbinlog's my_b_write_quoted() prints bytes below 0x20 as \xNN and everything else raw
    return re.sub(rb"\\x([0-9a-f]{2})", lambda m: bytes([int(m[1], 16)]), text)


def mysqlbinlog_agrees(value: Any, text: bytes, tag: str) -> bool:
    """Does mysqlbinlog's `text` (typed `tag`) print our decoded `value`?"""
    base = tag.split("(")[0]
    if value is None or text == b"NULL":
        return value is None and text == b"NULL"
    if base in _INT_BYTES:
        # printed signed, plus "(unsigned)" when negative: mysqlbinlog does not know the signedness
        bits = 8 * _INT_BYTES[base]
        signed = value - (1 << bits) if value >= 1 << (bits - 1) else value
        expected = f"{signed} ({signed + (1 << bits)})" if signed < 0 else str(signed)
        return text.decode() == expected
    if base == "DECIMAL":
        return text.decode() == format(value, "f")
    if base == "FLOAT":
        return text.decode() == f"{value:g}"  # "%-20g" of the float widened to double
    if base == "DOUBLE":
        return float(text) == value
    if base == "TIMESTAMP":
        # printed as seconds since the epoch (".frac" for fsp > 0); we keep the UTC text of the instant
        whole, _, frac = value.partition(".")
        seconds = (
            0 if whole.startswith("0000") else calendar.timegm(time.strptime(whole, "%Y-%m-%d %H:%M:%S"))
        )
        return text.decode() == (f"{seconds}.{frac}" if frac else str(seconds))
    if base == "DATE":
        # log_event.cc prints DATE as '%04d:%02d:%02d' (colons): a display quirk of mysqlbinlog;
        # the stored value and SELECT say YYYY-MM-DD, which is what we keep.
        return text.decode() == f"'{value.replace('-', ':')}'"
    if base in ("DATETIME", "TIME"):
        return text.decode() == f"'{value}'"
    if base == "ENUM":
        return text.decode() == str(value)
    if base == "SET":
        return text.decode() == f"b'{value:0{8 * int(tag.split('(')[1].split()[0])}b}'"
    if base == "BIT":
        return text.decode() == f"b'{value:0{int(tag.split('(')[1].rstrip(')'))}b}'"
    if base in ("VARSTRING", "STRING") or "BLOB" in base:
        return text[:1] == b"'" == text[-1:] and _unescape(text[1:-1]) == bytes(value)
    raise AssertionError(f"mysqlbinlog type {tag} is not handled by this test")


def our_rows(result: Decoding) -> list[tuple[str, str, tuple | None, tuple | None]]:
    verbs = {"insert": "INSERT", "update": "UPDATE", "delete": "DELETE"}
    out = []
    for batch in result.batches:
        for row in batch.rows:
            before, after = (
                (None, row) if batch.kind == "insert" else row if batch.kind == "update" else (row, None)
            )
            out.append((verbs[batch.kind], batch.table.qualified_name, before, after))
    return out


def compare_with_mysqlbinlog(result: Decoding, text: bytes, complete: bool) -> int:
    """Compare every value mysqlbinlog printed with ours; returns how many were compared."""
    theirs = parse_mysqlbinlog_rows(text)
    ours = our_rows(result)
    if complete:
        assert len(ours) == len(theirs)
    else:
        assert len(ours) >= len(theirs)
    compared = 0
    for index, (mine, other) in enumerate(zip(ours, theirs, strict=False)):
        assert mine[:2] == other[:2], f"row change {index}"
        for our_image, their_image in ((mine[2], other[2]), (mine[3], other[3])):
            assert (our_image is None) == (their_image is None), f"row change {index}"
            if our_image is None or their_image is None:
                continue
            present = {i + 1 for i, v in enumerate(our_image) if v is not MISSING}
            assert present == set(their_image), f"row change {index}: columns in the image"
            for column, (value_text, tag) in their_image.items():
                value = our_image[column - 1]
                assert mysqlbinlog_agrees(value, value_text, tag), (
                    f"row change {index} @{column} {tag}: ours {value!r}, mysqlbinlog {value_text[:80]!r}"
                )
                compared += 1
    return compared


def _mariadb_outputs(lane: Corpus) -> list[str]:
    """The files whose mariadb-binlog output holds row images."""
    root = lane.root / MARIADB_OUT
    if not root.is_dir():
        return []
    return sorted(
        p.relative_to(root).as_posix()[: -len(".txt")]
        for p in root.rglob("*.txt")
        if b"\n### " in p.read_bytes()
    )


def _status(lane: Corpus) -> dict[str, tuple[int, str]]:
    status = {}
    path = lane.root / MARIADB_OUT / "STATUS.tsv"
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("#") or not line.strip():
                continue
            rel, rc, message = (line.split("\t") + ["", ""])[:3]
            status[rel] = (int(rc) if rc.lstrip("-").isdigit() else -1, message)  # '-': output removed
    return status


MARIADB_OUTPUTS = {lane.lane: _mariadb_outputs(lane) for lane in LANES}
STATUS = {lane.lane: _status(lane) for lane in LANES}
WITH_ROWS_PRINTED = lanes_and(lambda lane: MARIADB_OUTPUTS[lane.lane])
PRINTED = lanes_and(lambda lane: [r for r in sorted(STATUS[lane.lane]) if lane.mariadb_output(r).exists()])


@pytest.mark.parametrize(("lane", "rel"), WITH_ROWS_PRINTED, ids=lane_ids(WITH_ROWS_PRINTED))
def test_row_values_agree_with_mariadb_binlog(lane, rel, corpus):
    result = corpus(rel, lane)
    text = lane.mariadb_output(rel).read_bytes()
    rc, message = STATUS[lane.lane].get(rel, (0, ""))
    # The tool printed every row unless it stopped early (a non-zero exit or an error line), or we
    # stopped where the file is broken.
    complete = rc == 0 and not message.startswith("ERROR") and result.error is None
    assert compare_with_mysqlbinlog(result, text, complete) > 0


# lane -> (files with row images printed, row values compared): at least these many
COVERAGE = {"vendored": (27, 3800), "extended": (45, 31000)}


@pytest.mark.parametrize("lane", LANES, ids=[lane.lane for lane in LANES])
def test_mariadb_binlog_comparison_covers_the_corpus_rows(lane, corpus):
    outputs = MARIADB_OUTPUTS[lane.lane]
    compared = sum(
        compare_with_mysqlbinlog(corpus(rel, lane), lane.mariadb_output(rel).read_bytes(), complete=False)
        for rel in outputs
    )
    files, values = COVERAGE[lane.lane]
    assert len(outputs) >= files
    assert compared >= values


_AT = re.compile(rb"^# at (\d+)\r?$")
_END = re.compile(rb"^#\d{6} +\d+:\d\d:\d\d server id \d+ +end_log_pos (\d+)")


@pytest.mark.parametrize(("lane", "rel"), PRINTED, ids=lane_ids(PRINTED))
def test_event_positions_agree_with_mariadb_binlog(lane, rel, corpus):
    result = corpus(rel, lane)
    if result.facts is None:
        return
    ends = {d.raw.pos: d.raw.next_pos for d in result.events if d.raw.pos == d.outer_pos}
    stop = result.error.offset if result.error is not None and result.error.offset is not None else None
    lines = lane.mariadb_output(rel).read_bytes().splitlines()
    # `# at` and the header lines are not always adjacent (the tool holds back ANNOTATE_ROWS and table
    # maps until their rows event), so positions and end_log_pos values are checked as sets.
    printed = [int(m[1]) for m in map(_AT.match, lines) if m]
    ended = [int(m[1]) for m in map(_END.match, lines) if m]
    if stop is not None:
        printed = [p for p in printed if p < stop]
        ended = [e for e in ended if e <= stop]
    assert set(printed) <= set(ends), "mariadb-binlog has events at positions we do not"
    assert set(ended) <= set(ends.values()), "mariadb-binlog has end_log_pos values we do not"
    assert printed or not ends


# MySQL's own mysqlbinlog (5.7.30 -vv, text; 8.0 -vvvvvv, UTF-16LE) beside the rust-us files.
def _read_dump(path: Path) -> bytes:
    raw = path.read_bytes()
    if raw[:2] == b"\xff\xfe":
        return raw.decode("utf-16").replace("\r\n", "\n").encode("utf-8")
    return raw


def _rust_us_dumps(lane: Corpus) -> list[str]:
    root = lane.path(RUST_US)
    if not root.is_dir():
        return []
    # 8.0/02_query_bigger/dump.txt holds only the command line, nothing to compare
    return sorted(
        p.parent.relative_to(lane.root).as_posix()
        for p in root.rglob("dump.txt")
        if b"# at " in _read_dump(p)
    )


DUMPS = lanes_and(_rust_us_dumps)
SHOWN = [(lane, folder) for lane, folder in DUMPS if lane.path(folder).joinpath("show.txt").exists()]


def _binlog_in(folder: Path) -> Path:
    (found,) = [p for p in folder.iterdir() if p.name not in ("dump.txt", "show.txt", "sql.sql")]
    return found


@pytest.mark.parametrize(("lane", "folder"), DUMPS, ids=lane_ids(DUMPS))
def test_rows_and_positions_agree_with_mysql_mysqlbinlog_dumps(lane, folder, corpus):
    binlog = _binlog_in(lane.path(folder))
    result = corpus(binlog.relative_to(lane.root).as_posix(), lane)
    assert result.error is None
    dump = _read_dump(lane.path(folder) / "dump.txt")
    if b"\n### " in dump:
        assert compare_with_mysqlbinlog(result, dump, complete=True) > 0
    ends = {d.raw.pos: d.raw.next_pos for d in result.events if d.raw.pos == d.outer_pos}
    printed = [int(m[1]) for m in re.finditer(rb"^# at (\d+)$", dump, re.M)]
    assert printed and set(printed) <= set(ends)
    for m in re.finditer(rb"^#\d{6} +\d+:\d\d:\d\d server id \d+ +end_log_pos (\d+)", dump, re.M):
        assert int(m[1]) in set(ends.values())


_SHOW_NAMES = {
    "Format_desc": EventType.FORMAT_DESCRIPTION,
    "Previous_gtids": EventType.PREVIOUS_GTIDS,
    "Anonymous_Gtid": EventType.ANONYMOUS_GTID,
    "Gtid": EventType.GTID,
    "Query": EventType.QUERY,
    "Table_map": EventType.TABLE_MAP,
    "Write_rows": EventType.WRITE_ROWS,
    "Update_rows": EventType.UPDATE_ROWS,
    "Delete_rows": EventType.DELETE_ROWS,
    "Xid": EventType.XID,
    "Rotate": EventType.ROTATE,
    "Stop": EventType.STOP,
}


@pytest.mark.parametrize(("lane", "folder"), SHOWN, ids=lane_ids(SHOWN))
def test_events_agree_with_show_binlog_events(lane, folder, corpus):
    binlog = _binlog_in(lane.path(folder))
    result = corpus(binlog.relative_to(lane.root).as_posix(), lane)
    show = _read_dump(lane.path(folder) / "show.txt").decode("utf-8")
    listed = [
        (int(m[1]), _SHOW_NAMES[m[2]], int(m[3]), int(m[4]))
        for m in re.finditer(r"^\| \S+ +\| +(\d+) \| (\w+) +\| +(\d+) \| +(\d+) \|", show, re.M)
    ]
    ours = [
        (d.raw.pos, d.raw.type_code, d.raw.server_id, d.raw.next_pos)
        for d in result.events
        if d.raw.pos == d.outer_pos
    ]
    # show.txt was taken from the live server: it may list events written after the file was copied
    # (19_30's file ends at 1275, SHOW BINLOG EVENTS adds the STOP event written there later)
    assert listed[: len(ours)] == ours
    assert all(pos >= binlog.stat().st_size for pos, *_ in listed[len(ours) :])
