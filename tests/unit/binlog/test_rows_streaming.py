"""Rows stream: a rows event is decoded ROWS_PER_BATCH rows at a time (decode.rows_batches), so that an
event of millions of tiny rows (a few bytes of file each, and a compressed payload makes the file
tiny) never becomes one list of them; the engine renders and logs each part as it comes, and gives
the same bytes whatever the size of the parts."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from rollback import Filters, Options, RangeSpec, generate
from rollback.binlog import decode
from rollback.binlog.decode import StreamState, decode_stream, rows_batch, rows_batches
from rollback.binlog.reader import read_file_facts
from rollback.binlog.rows import RowsEvent
from tests.support.hostile import (
    DELETE_ROWS,
    LONG,
    MINIMAL,
    UPDATE_ROWS,
    VARCHAR,
    WRITE_ROWS,
    Column,
    crafted_binlog,
    rows_body,
    table_map_body,
)
from tests.support.hotpath import compiled_core, hot_path, outcome

pytestmark = pytest.mark.corpus

CORE = compiled_core()
TINY = 1
MiB = 1 << 20


@pytest.fixture(scope="module")
def minimal(corpus_dir) -> bytes:
    return (corpus_dir / MINIMAL).read_bytes()


def _rows_event(data: bytes) -> tuple[memoryview, StreamState, object]:
    buf = memoryview(data)
    facts, _ = read_file_facts(buf, "many.bin")
    state = StreamState(facts, path="many.bin")
    for decoded in decode_stream(buf, state, 4, len(buf)):
        if isinstance(decoded.event, RowsEvent):
            return buf, state, decoded
    raise AssertionError("no rows event")


@pytest.mark.parametrize("core", [None, CORE], ids=["pure", "compiled"])
def test_a_rows_event_of_many_tiny_rows_is_decoded_a_part_at_a_time(minimal, core):
    """Two-byte rows (a NULL bitmap and a TINYINT): 800 KiB of event, 400,000 rows (40 parts). As one list
    they take over 20 MiB of tuples, four times the bound below; a part at a time, what one part takes."""
    count = 400_000
    rows = b"\x00\x07" * count
    table = table_map_body(b"db", b"t", [Column(b"c", TINY)])
    data = crafted_binlog(minimal, table, WRITE_ROWS, rows_body(WRITE_ROWS, 1, rows))
    with hot_path(core):
        _buf, state, decoded = _rows_event(data)
        tracemalloc.start()
        try:
            seen = 0
            for batch in rows_batches(decoded, decoded.event, state):
                assert batch.first_row == seen
                assert 0 < len(batch.rows) <= decode.ROWS_PER_BATCH
                assert batch.rows[0] == (7,)
                seen += len(batch.rows)
                assert batch.statement_end == (seen == count)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert seen == count
    assert peak < 3 * len(rows) // 2 + 4 * MiB  # the rows' bytes, once copied, and one part


def test_an_empty_rows_event_gives_one_empty_batch(minimal):
    table = table_map_body(b"db", b"t", [Column(b"c", TINY)])
    data = crafted_binlog(minimal, table, WRITE_ROWS, rows_body(WRITE_ROWS, 1, b""))
    _buf, state, decoded = _rows_event(data)
    batches = list(rows_batches(decoded, decoded.event, state))
    assert [(b.rows, b.first_row, b.statement_end) for b in batches] == [([], 0, True)]


def test_a_bad_row_in_a_later_part_fails_with_the_error_of_the_whole_event(minimal):
    table = table_map_body(b"db", b"t", [Column(b"id", LONG)])
    rows = b"\x00\x01\x00\x00\x00" * 25 + b"\x00\x01\x00"  # the 26th row is cut
    data = crafted_binlog(minimal, table, WRITE_ROWS, rows_body(WRITE_ROWS, 1, rows))
    _buf, state, decoded = _rows_event(data)
    whole = outcome(rows_batch, decoded, decoded.event, state)
    parts = outcome(lambda: [len(b.rows) for b in rows_batches(decoded, decoded.event, state, limit=10)])
    assert whole[0] == parts[0] == "error" and whole[1] == parts[1]
    assert "row image of table column 1 runs past the event end" in whole[1][1]


# ------------------------------------------------------------------------------- the engine


def _keyed_events(minimal: bytes, tmp_path: Path) -> list[Path]:
    """One file per kind of rows event, 25 rows each, of (id INT primary key, v VARCHAR(100))."""
    table = table_map_body(b"db", b"t", [Column(b"id", LONG), Column(b"v", VARCHAR, b"\x64\x00")])

    def image(i: int, text: bytes) -> bytes:
        return b"\x00" + i.to_bytes(4, "little") + bytes([len(text)]) + text

    inserts = b"".join(image(i, b"v%d" % i) for i in range(25))
    updates = b"".join(image(i, b"v%d" % i) + image(i, b"w%d" % i) for i in range(25))
    paths = []
    for kind, rows in ((WRITE_ROWS, inserts), (UPDATE_ROWS, updates), (DELETE_ROWS, inserts)):
        path = tmp_path / f"rows-{kind}.bin"
        path.write_bytes(crafted_binlog(minimal, table, kind, rows_body(kind, 2, rows)))
        paths.append(path)
    return paths


def _outputs(path: Path, mode: str, filters: Filters) -> tuple[bytes, ...]:
    out = path.with_name(f"{path.name}.{mode}.sql")
    plan, changes = out.with_suffix(".plan.jsonl"), out.with_suffix(".changes.jsonl")
    options = Options(mode=mode, engine="local", allow_partial_transactions=filters.where is not None)
    generate(RangeSpec([str(path)]), filters, options, out, plan, changes)
    return out.read_bytes(), plan.read_bytes(), changes.read_bytes()


@pytest.mark.parametrize("where", [None, "id % 3 = 1"])
def test_the_engine_gives_the_same_bytes_whatever_the_size_of_the_parts(
    minimal, tmp_path, monkeypatch, where
):
    filters = Filters(where=where)
    for path in _keyed_events(minimal, tmp_path):
        for mode in ("flashback", "forward"):
            for core in (None, CORE):
                with hot_path(core):
                    whole = outcome(_outputs, path, mode, filters)
                    for size in (1, 7):
                        monkeypatch.setattr(decode, "ROWS_PER_BATCH", size)
                        assert outcome(_outputs, path, mode, filters) == whole, (path.name, mode, size)
                        monkeypatch.undo()
                assert whole[0] == "ok", whole
                script = whole[1][0].decode()
                assert script.count("\n-- transaction ") == 1  # one block, its statements in order
