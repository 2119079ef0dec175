"""The planner: a range becomes ordered partitions cut at event boundaries, each carrying the state in
force at its start (facts, table maps, transaction context), read from event headers and small events."""

from __future__ import annotations

import io
import json
import pickle
from pathlib import Path
from types import SimpleNamespace

import pytest

from rollback import Filters, Options, RangeSpec, generate
from rollback.base.errors import RangeError
from rollback.binlog.decode import state_at
from rollback.binlog.reader import BinlogFile
from rollback.pipeline import storage
from rollback.pipeline.plan import Partition, plan_range

pytestmark = pytest.mark.corpus

# Large corpus files with long transactions, payloads and several servers' formats.
GODANNY = "GoDannyLai__binlog_rollback/tmp/mysql-bin.000008"  # 5.7, 1143 small transactions
SAKILA = (
    "osheroff__mysql-binlog-connector-java/src/test/resources/mysql-bin.sakila.gz"  # 5.5, big transactions
)
RUST_US = "rust-us__mysql-cdc-rs/tests/events/8.0/folder/binlog.000693"  # 8.0, 663 transactions
FILES = [pytest.param(GODANNY, marks=pytest.mark.extended), SAKILA, RUST_US]  # GODANNY is not vendored


def _boundaries(path: Path) -> list[int]:
    with BinlogFile(path) as binlog:
        return [raw.pos for raw in binlog.events(verify=False)] + [binlog.size]


@pytest.fixture(params=FILES, ids=lambda rel: rel.rsplit("/", 1)[-1])
def binlog_path(request, corpus_file) -> Path:
    return corpus_file(request.param)


def test_partitions_tile_the_range_at_event_boundaries_near_the_target_size(binlog_path):
    target = 64 << 10
    plan = plan_range(RangeSpec([str(binlog_path)]), target)
    boundaries = _boundaries(binlog_path)
    parts = plan.partitions
    assert len(parts) >= 3
    assert parts[0].start == 4 and parts[-1].end == boundaries[-1]
    assert [p.index for p in parts] == list(range(len(parts)))
    for before, after in zip(parts, parts[1:], strict=False):
        assert before.end == after.start
        assert before.size >= target
    assert all(p.start in boundaries for p in parts)
    assert parts[0].range_start and not any(p.range_start for p in parts[1:])
    assert parts[-1].range_end and not any(p.range_end for p in parts[:-1])
    assert sum(p.events for p in parts) == plan.events_total == len(boundaries) - 1
    assert plan.bytes_total == boundaries[-1] - 4


def test_each_partition_carries_the_state_in_force_at_its_start(binlog_path):
    plan = plan_range(RangeSpec([str(binlog_path)]), 32 << 10)
    with BinlogFile(binlog_path) as binlog:
        for part in plan.partitions:
            rebuilt = part.stream_state()
            expected = state_at(binlog.buf, binlog.facts, part.start, binlog.path)
            assert rebuilt.facts == expected.facts
            assert rebuilt.table_maps == expected.table_maps, part.index
            assert rebuilt.tx.to_dict() == expected.tx.to_dict(), part.index


def test_a_partition_may_start_inside_a_transaction(corpus_file):
    path = corpus_file(SAKILA)
    plan = plan_range(RangeSpec([str(path)]), 16 << 10)
    inside = [p for p in plan.partitions if p.block is not None and p.tx["open"]]
    assert inside, "no cut fell inside a transaction"
    for part in inside:
        assert part.table_maps  # the TABLE_MAP of the running statement travels with the partition
        assert part.block is not None and part.block.ordinal < part.next_block
        assert part.tx["begin_pos"] is not None and part.tx["begin_pos"] < part.start


def test_descriptors_are_small_and_serialisable(binlog_path):
    plan = plan_range(RangeSpec([str(binlog_path)]), 64 << 10)
    for part in plan.partitions:
        text = json.dumps(part.to_dict())
        assert len(text) < 64 << 10
        assert Partition.from_dict(json.loads(text)) == part
        assert pickle.loads(pickle.dumps(part)) == part


def test_positions_must_be_event_boundaries_inside_the_file(binlog_path):
    boundaries = _boundaries(binlog_path)
    with pytest.raises(RangeError, match="not an event boundary"):
        plan_range(RangeSpec([str(binlog_path)], start_position=boundaries[3] + 1))
    with pytest.raises(RangeError, match="not an event boundary"):
        plan_range(RangeSpec([str(binlog_path)], stop_position=boundaries[-2] - 1))
    with pytest.raises(RangeError, match="past the end"):
        plan_range(RangeSpec([str(binlog_path)], stop_position=boundaries[-1] + 10))
    sub = plan_range(RangeSpec([str(binlog_path)], boundaries[5], boundaries[-3]), 16 << 10)
    assert sub.partitions[0].start == boundaries[5] and sub.partitions[-1].end == boundaries[-3]


def test_several_files_plan_in_order_with_block_ordinals_running_on(corpus_file, tmp_path):
    first = corpus_file(RUST_US)
    with pytest.raises(RangeError, match="binlog.000693 is given twice"):
        plan_range(RangeSpec([str(first), str(first)]), 128 << 10)
    # The same bytes as the file that follows it (binlog.000693 ends without a ROTATE: the names tell).
    copy = tmp_path / "binlog.000694"
    copy.write_bytes(first.read_bytes())
    plan = plan_range(RangeSpec([str(first), str(copy)]), 128 << 10)
    files = [p.file_index for p in plan.partitions]
    assert files == sorted(files) and set(files) == {0, 1}
    first_parts = [p for p in plan.partitions if p.file_index == 0]
    second = [p for p in plan.partitions if p.file_index == 1]
    assert second[0].range_start and second[0].block is None and first_parts[-1].range_end
    # The same file twice: the same cuts, and block ordinals that continue after the first file's.
    offset = second[0].next_block
    assert offset > first_parts[-1].next_block
    assert [p.next_block - offset for p in second] == [p.next_block for p in first_parts]


class _CountingFile(io.FileIO):
    read_bytes = 0

    def read(self, size: int = -1) -> bytes:  # type: ignore[override]
        data = super().read(size)
        _CountingFile.read_bytes += len(data)
        return data


def test_remote_files_are_planned_from_headers_and_decode_like_local_ones(corpus_file, monkeypatch, tmp_path):
    """A URL goes through fsspec (here a stand-in serving fake:// from disk): planning fetches the
    headers and the small events, not the row images, and the job's output is the local one's."""
    path = corpus_file(SAKILA)

    def fake_open(url: str, mode: str = "rb") -> SimpleNamespace:
        assert url.startswith("fake://") and mode == "rb"
        return SimpleNamespace(open=lambda: _CountingFile(url[len("fake://") :], "r"))

    monkeypatch.setattr(storage, "_fsspec", lambda: SimpleNamespace(open=fake_open))
    url = f"fake://{path}"
    _CountingFile.read_bytes = 0
    remote = plan_range(RangeSpec([url]), 64 << 10)
    assert _CountingFile.read_bytes < path.stat().st_size // 10
    local = plan_range(RangeSpec([str(path)]), 64 << 10)
    strip = lambda p: {k: v for k, v in p.to_dict().items() if k not in ("path", "location")}  # noqa: E731
    assert [strip(p) for p in remote.partitions] == [strip(p) for p in local.partitions]

    outputs = []
    for name in (url, str(path)):
        out = tmp_path / f"{len(outputs)}"
        out.mkdir()
        options = Options(mode="changes", engine="local", partition_bytes=64 << 10)
        generate(RangeSpec([name]), Filters(), options, out / "s.sql", out / "p.jsonl", out / "c.jsonl")
        outputs.append((out / "c.jsonl").read_bytes())
    assert outputs[0] == outputs[1] and outputs[0].count(b"\n") > 1000
