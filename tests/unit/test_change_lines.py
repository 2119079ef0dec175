"""The change log's lines built without a dict per row (rollback.render.change_lines) are the bytes that
record_json(batch_records(...)) writes: on hand-built rows that take every branch (MISSING columns,
members, bytes that are not UTF-8, JSON, booleans, floats) and on every rows event of the corpus,
from the generated Python encoder and from the compiled core's (ChangeImages)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from rollback.base.errors import RollbackError
from rollback.binlog.columns import MISSING
from rollback.binlog.constants import ColumnType as T
from rollback.binlog.decode import RowsBatch, TxContext, decode_stream, rows_batch, state_at
from rollback.binlog.reader import BinlogFile
from rollback.binlog.rows import JsonText, RowsEvent
from rollback.binlog.table_map import TableMap
from rollback.render.change_lines import ChangeLineCache
from rollback.render.records import batch_records, record_json
from rollback.schema.tables import Column
from tests.support.hotpath import compiled_core, hot_path

CORE = compiled_core()  # not built: the module fails, it is never skipped
PATHS = pytest.mark.parametrize("core", [None, CORE], ids=["pure", "compiled"])

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
UTF8MB4, BINARY = 255, 63
# (id INT, note VARCHAR utf8mb4, raw VARBINARY, doc JSON, price DECIMAL, state ENUM, tags SET, f DOUBLE)
TMAP = TableMap(
    5,
    1,
    "shop",
    'it"ems',
    bytes([T.LONG, T.VARCHAR, T.VARCHAR, T.JSON, T.NEWDECIMAL, T.STRING, T.STRING, T.DOUBLE]),
    (0, 80, 16, 4, (6 << 8) | 2, (T.ENUM << 8) | 1, (T.SET << 8) | 1, 8),
    (False,) + (True,) * 7,
    charsets=(None, UTF8MB4, BINARY, None, None, UTF8MB4, UTF8MB4, None),
    column_names=("id", 'n"o\\te', "raw", "doc", "price", "state", "tags", "f"),
    enum_values={5: (b"new", b'pa"id')},
    set_values={6: (b"a", b"b")},
)


def _expected(batch: RowsBatch, names=None, columns=None) -> str:
    return "".join(record_json(r) + "\n" for r in batch_records(batch, names, columns))


ROWS = [
    (1, b"plain", b"\x00\xff", b"\x04\x01", Decimal("-0.10"), 2, 3, 1.5),
    (2, 'café 😀 "q" \\ \n'.encode(), b"", JsonText('{"a": 1}'), Decimal("1E+3"), 0, 0, float("nan")),
    (3, b"caf\xe9", None, None, None, 9, 8, float("-inf")),  # not UTF-8; members outside the definition
    (4, "str", b"x", b"\x05\x2a\x00", Decimal("0"), None, None, True),  # a bool stays true
    (5, MISSING, MISSING, MISSING, Decimal("2.00"), MISSING, MISSING, MISSING),  # a minimal image
    (-(2**63), b"", b"", b"\x0c\x03abc", Decimal("1.50"), 1, 1, 0.1),
]


def _same(cache: ChangeLineCache, batch: RowsBatch, names=None, columns=None) -> None:
    expected = _expected(batch, names, columns)
    assert cache.lines(batch, names, columns) == expected
    assert cache.encoded(batch, names, columns) == expected.encode("utf-8")


@PATHS
@pytest.mark.parametrize("kind", ["insert", "delete", "update"])
def test_hand_built_rows_give_the_bytes_of_the_records(kind, core):
    rows = [(ROWS[i], ROWS[-1 - i]) for i in range(len(ROWS))] if kind == "update" else ROWS
    tx = TxContext(gtid="0-1-5", thread_id=11)
    batch = RowsBatch("binlog.000002", 1234, 1400, kind, TMAP, tx, 1486595539, 93157, rows, True)
    with hot_path(core):
        cache = ChangeLineCache()
        _same(cache, batch)
        _same(cache, batch)  # the cached encoder


@PATHS
def test_values_the_compiled_encoder_hands_back_give_the_same_bytes(core):
    """Integers beyond 64 bits, members outside the definition, a row that is a list, strings with
    every character JSON escapes, and values of no type the encoders write themselves."""
    rows = [
        (2**64 + 1, '\x00\x1f"\\\n\t\x7f é', b"\xff", None, Decimal("-1E-7"), -1, -1, -0.0),
        [-(2**70), b"\x01\x08\x0c\r", b"plain", b"\x04\x00", Decimal("NaN"), 3, 2**70, 1e300],
        (0, 7, JsonText("[]"), JsonText("{}"), 1.5, "new", "a", False),
    ]
    batch = RowsBatch("b.000003", 4, 90, "insert", TMAP, TxContext(), 1486595539, 1, rows, True)
    with hot_path(core):
        _same(ChangeLineCache(), batch)


@PATHS
def test_members_and_names_from_the_schema_are_used_and_kept_apart_per_schema(core):
    tmap = TableMap(9, 1, "shop", "orders", bytes([T.LONG, T.STRING]), (0, (T.ENUM << 8) | 1), (False, True))
    rows = [(1, 1), (2, 2), (3, 0)]
    batch = RowsBatch("b.000001", 4, 90, "insert", tmap, TxContext(), 1486595539, 1, rows, True)
    one = [Column("id"), Column("state", "enum", enum_values=("new", "paid"))]
    other = [Column("id"), Column("state", "enum", enum_values=("old", "gone"))]
    with hot_path(core):
        cache = ChangeLineCache()
        for names, columns in ((None, None), (("k", "s"), one), (("k", "s"), other)):
            _same(cache, batch, names, columns)


def _corpus_files() -> list[Path]:
    return sorted(
        p
        for p in CORPUS.rglob("*")
        if p.is_file() and p.stat().st_size > 4 and p.open("rb").read(4) == b"\xfebin"
    )


@PATHS
def test_every_rows_event_of_the_corpus_gives_the_same_bytes(core):
    with hot_path(core):
        assert _corpus_events() > 500


def _corpus_events() -> int:
    events = 0
    for path in _corpus_files():
        try:
            binlog = BinlogFile(str(path))
        except RollbackError:
            continue
        try:
            state = state_at(binlog.buf, binlog.facts, 4, binlog.path)
            cache = ChangeLineCache()
            for decoded in decode_stream(binlog.buf, state, 4, binlog.size, verify=False):
                if isinstance(decoded.event, RowsEvent):
                    batch = rows_batch(decoded, decoded.event, state)
                    expected = _expected(batch)
                    assert cache.lines(batch) == expected, f"{path}:{decoded.outer_pos}"
                    assert cache.encoded(batch) == expected.encode(), f"{path}:{decoded.outer_pos}"
                    events += 1
        except RollbackError:
            pass  # a file of the corpus that is broken on purpose: its good events were compared
        finally:
            binlog.close()
    return events
