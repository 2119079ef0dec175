"""`skip_run`, the planner's walk over a run of rows events: the compiled core's and its pure-Python
twin (rollback/binlog/reader.py) give the same answer, and that answer is what `iter_events` frames:
the leading events of the marked types before the cut position, the stop, or the first event it
cannot frame (where `iter_events` raises its error instead)."""

from __future__ import annotations

import gzip
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollback.base.errors import BinlogFormatError
from rollback.binlog import reader
from rollback.binlog.constants import ChecksumAlg
from rollback.binlog.reader import BinlogFile, FormatFacts, iter_events, read_file_facts
from rollback.binlog.rows import ROWS_EVENT_TYPES
from tests.support.corpus import VENDORED
from tests.support.examples import examples
from tests.support.hotpath import compiled_core, outcome

CORE = compiled_core()  # not built: the module fails, it is never skipped
ROWS = bytes(code in ROWS_EVENT_TYPES for code in range(256))
HEADER = struct.Struct("<IBIIIH")
WRITE_ROWS, TABLE_MAP, XID = 30, 19, 16


def framed(buf, pos, stop, cut_at, facts: FormatFacts) -> tuple[int, int, int]:
    """What skip_run must answer, read off iter_events."""
    count, stamp = 0, -1
    try:
        for raw in iter_events(buf, facts, pos, stop, verify=False):
            if raw.pos >= cut_at or raw.type_code not in ROWS_EVENT_TYPES:
                break
            count, stamp, pos = count + 1, raw.timestamp, raw.end
    except BinlogFormatError:
        pass  # the walk stops before the event iter_events refuses
    return pos, count, stamp


def both(buf, pos, stop, cut_at, facts: FormatFacts, kinds: bytes = ROWS):
    args = (buf, pos, stop, cut_at, facts.header_len, facts.checksum_len, kinds)
    compiled, pure = outcome(CORE.skip_run, *args), outcome(reader.skip_run, *args)
    assert compiled == pure, (pos, stop, cut_at)
    return pure


def _facts(header_len: int, checksum: bool) -> FormatFacts:
    return FormatFacts(
        4, "10.6.0-MariaDB", 0, header_len, b"", ChecksumAlg.CRC32 if checksum else ChecksumAlg.OFF
    )


# An event: its type, the length its header states, and the bytes that follow the header (the
# stated length may disagree with them: too short, too long, past the end).
EVENT = st.tuples(
    st.sampled_from([WRITE_ROWS, 31, 32, 23, 24, 25, 39, 166, TABLE_MAP, XID, 2, 0, 255]),
    st.one_of(st.none(), st.integers(0, 300), st.just(1 << 30), st.just((1 << 32) - 1)),
    st.integers(0, 60),
    st.integers(0, (1 << 32) - 1),
)


def _build(events, header_len: int) -> tuple[bytes, list[int]]:
    out = bytearray(b"\xfebin")
    starts = []
    for type_code, stated, body, stamp in events:
        starts.append(len(out))
        length = header_len + body if stated is None else stated
        head = HEADER.pack(stamp, type_code, 1, length, 0, 0)
        out += head + bytes(header_len - len(head)) + bytes(i % 256 for i in range(body))
    return bytes(out), starts


@settings(max_examples=examples(400), deadline=None)
@given(
    st.lists(EVENT, max_size=12),
    st.sampled_from([19, 20, 23]),
    st.booleans(),
    st.data(),
)
def test_random_streams_walk_alike_in_both_and_as_iter_events_frames_them(events, header_len, checksum, data):
    buf, starts = _build(events, header_len)
    facts = _facts(header_len, checksum)
    places = [*starts, len(buf)]
    pos = data.draw(st.sampled_from(places), label="pos")
    stop = data.draw(st.one_of(st.sampled_from(places), st.integers(0, len(buf) + 40)), label="stop")
    cut_at = data.draw(st.one_of(st.sampled_from(places), st.integers(0, len(buf) + 40)), label="cut_at")
    got = both(memoryview(buf), pos, stop, cut_at, facts)
    assert got == ("ok", framed(memoryview(buf), pos, stop, cut_at, facts))


def test_bad_arguments_are_refused_alike():
    buf = memoryview(b"\xfebin" + bytes(40))
    for pos, header_len, kinds in ((-1, 19, ROWS), (4, 12, ROWS), (4, 19, ROWS[:255])):
        args = (buf, pos, len(buf), len(buf), header_len, 4, kinds)
        compiled, pure = outcome(CORE.skip_run, *args), outcome(reader.skip_run, *args)
        assert compiled == pure and pure[0] == "error" and pure[1][0] == "ValueError"


def _framable() -> list[str]:
    """The vendored files with a FORMAT_DESCRIPTION to frame by (a few are not binlogs at all)."""
    found = []
    for entry in VENDORED.entries:
        path = VENDORED.path(entry.rel)
        if not path.is_file():
            continue
        data = gzip.decompress(path.read_bytes()) if entry.gunzipped else path.read_bytes()
        try:
            read_file_facts(memoryview(data))
        except BinlogFormatError:
            continue
        found.append(entry.rel)
    return found


@pytest.mark.corpus
@pytest.mark.parametrize("rel", _framable())
def test_every_run_of_the_corpus_walks_alike_from_every_event(rel, corpus_file):
    with BinlogFile(corpus_file(rel, VENDORED)) as binlog:
        facts, buf = binlog.facts, binlog.buf
        try:
            starts = [raw.pos for raw in binlog.events(verify=False)]
        except BinlogFormatError as exc:  # a truncated or broken file: the walk up to its error
            starts = [raw.pos for raw in iter_events(buf, facts, 4, exc.offset or 4, verify=False)]
            starts.append(exc.offset or 4)
        size = binlog.size
        for index, pos in enumerate(starts):
            later = starts[index + 1 : index + 4]
            cuts = [pos, *later, pos + 1, size, size + 1]
            stops = [size, *later[-1:], pos + 20]
            for stop in stops:
                for cut_at in cuts:
                    assert both(buf, pos, stop, cut_at, facts) == (
                        "ok",
                        framed(buf, pos, stop, cut_at, facts),
                    )
