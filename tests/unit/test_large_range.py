"""bench/large_range.py makes a multi-file range out of one real file that our reader and planner
take as a server's: every event framed with its CRC32 verified and its next position right, a
ROTATE naming the next file, MariaDB GTIDs unique and increasing with each file's GTID_LIST the
state before it, and the source's row changes times the copies."""

from __future__ import annotations

import pytest

from bench.large_range import BASE_NAME, SourceError, read_source, row_changes, write_range
from rollback import Filters, Options, RangeSpec, generate
from rollback.binlog import events as ev
from rollback.binlog.constants import LOG_EVENT_BINLOG_IN_USE_F, EventType
from rollback.binlog.decode import StreamState, decode_stream
from rollback.binlog.reader import BinlogFile
from rollback.pipeline.plan import plan_range

pytestmark = pytest.mark.corpus

MARIADB = "blackbeam__rust_mysql_common/test-data/binlogs/mariadb-bin.000001"  # 10.5, CRC32, 2 GTIDs
MYSQL_GTIDS = "Meituan-Dianping__MyFlash/testbinlog/haha.000041"  # 5.7, real GTIDs


def _events(path):
    with BinlogFile(path) as binlog:
        state = StreamState(binlog.facts, path=binlog.path)
        return binlog.facts, [
            (d.raw.pos, d.raw.length, d.raw.next_pos, d.raw.flags, d.event)
            for d in decode_stream(binlog.buf, state, 4, binlog.size)
        ]


def test_a_range_of_copies_reads_as_a_servers_range(corpus_file, tmp_path):
    source = corpus_file(MARIADB)
    body = len(read_source(source).body)
    files, copies = write_range(source, tmp_path, total_bytes=10 * body, file_bytes=3 * body)
    assert copies == 10
    assert [f.name for f in files] == [f"{BASE_NAME}.{n:06d}" for n in range(1, 5)]
    assert row_changes(files) == 10 * row_changes([source]) > 0
    seqs = []
    last_before = None
    for index, path in enumerate(files):
        facts, events = _events(path)  # every CRC32 verified on the way
        assert facts.checksum_len == 4
        for pos, length, next_pos, _flags, _event in events:
            assert next_pos == pos + length
        assert events[-1][2] == path.stat().st_size
        assert not events[0][3] & LOG_EVENT_BINLOG_IN_USE_F
        rotate = events[-1][4]
        assert isinstance(rotate, ev.Rotate) and rotate.next_file == f"{BASE_NAME}.{index + 2:06d}"
        gtid_list = next(e for *_, e in events if isinstance(e, ev.GtidList))
        if last_before is not None:
            assert [(d, s, q) for d, s, q in gtid_list.gtids] == [last_before]
        mine = [(e.domain_id, e.server_id, e.seq_no) for *_, e in events if isinstance(e, ev.MariaGtid)]
        seqs += [q for *_, q in mine]
        last_before = mine[-1]
    assert seqs == sorted(set(seqs)) and len(seqs) == 10 * 2


def test_our_planner_and_engine_take_the_range_in_order(corpus_file, tmp_path):
    source = corpus_file(MARIADB)
    body = len(read_source(source).body)
    files, copies = write_range(source, tmp_path / "range", total_bytes=4 * body, file_bytes=body)
    rng = RangeSpec([str(f) for f in files])
    assert len(files) == 4 and not plan_range(rng).notes  # the ROTATEs tell the order: no warning
    with pytest.raises(Exception, match="is given after"):
        plan_range(RangeSpec([str(files[1]), str(files[0])]))
    one = generate(RangeSpec([str(source)]), Filters(), Options(engine="local"), tmp_path / "one.sql")
    all_ = generate(rng, Filters(), Options(engine="local"), tmp_path / "all.sql")
    assert all_.statements == copies * one.statements > 0


def test_a_mysql_file_with_real_gtids_is_refused(corpus_file, tmp_path):
    with pytest.raises(SourceError, match=f"event type {int(EventType.GTID)}"):
        write_range(corpus_file(MYSQL_GTIDS), tmp_path, total_bytes=1 << 20)
