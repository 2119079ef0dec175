"""The planner's walk skips runs of rows events with `skip_run` (the compiled core's, or its pure-Python
twin): the plan is the same as when every event goes through the planner one at a time (a walker
that skips nothing), for every vendored binlog, whole or from and to positions inside it, at
partition sizes that cut after almost every event, for generated multi-file ranges, and for files
truncated or broken inside a run of rows events (the same error, from the same event)."""

from __future__ import annotations

import gzip
import struct
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from bench.large_range import write_range
from rollback import RangeSpec
from rollback.base.errors import BinlogFormatError, RollbackError
from rollback.binlog import reader
from rollback.binlog.reader import BinlogFile, read_file_facts
from rollback.binlog.rows import ROWS_EVENT_TYPES
from rollback.pipeline import plan as planner
from rollback.pipeline.plan import PartitionPlan, plan_range
from tests.support.corpus import VENDORED
from tests.support.hotpath import compiled_core

pytestmark = pytest.mark.corpus

CORE = compiled_core()  # not built: the module fails, it is never skipped
TARGETS = (1, 300, 4096, 64 << 10)
MARIADB = "blackbeam__rust_mysql_common/test-data/binlogs/mariadb-bin.000001"  # 10.5, CRC32
SAKILA = "osheroff__mysql-binlog-connector-java/src/test/resources/mysql-bin.sakila.gz"  # long runs of rows


def _skip_nothing(buf: Any, pos: int, *_: Any) -> tuple[int, int, int]:
    return pos, 0, -1


WALKS: dict[str, Callable[..., tuple[int, int, int]]] = {
    "compiled": CORE.skip_run,
    "pure": reader.skip_run,
    "one event at a time": _skip_nothing,
}


@contextmanager
def _walking(skip: Callable[..., tuple[int, int, int]]):
    saved = planner._skip_run
    planner._skip_run = lambda: skip
    try:
        yield
    finally:
        planner._skip_run = saved


def _facts_of(plan: PartitionPlan) -> dict[str, Any]:
    return {
        "partitions": [p.to_dict() for p in plan.partitions],
        "bytes_total": plan.bytes_total,
        "events_total": plan.events_total,
        "server_version": plan.server_version,
        "table_maps": plan.table_maps,
        "signatures": plan.signatures,
        "ddl": plan.ddl,
        "map_epochs": plan.map_epochs,
        "notes": plan.notes,
        "unchecked": plan.unchecked,
        "times": plan.times,
    }


def _outcome(rng: RangeSpec, target: int) -> tuple[str, Any]:
    try:
        return "ok", _facts_of(plan_range(rng, target))
    except RollbackError as exc:  # the one line a user sees
        return "error", (type(exc).__name__, str(exc))


def plans_agree(rng: RangeSpec, target: int) -> tuple[str, Any]:
    """The plan (or the error) of every walk; they must be equal."""
    found = {}
    for name, skip in WALKS.items():
        with _walking(skip):
            found[name] = _outcome(rng, target)
    reference = found.pop("one event at a time")
    for name, got in found.items():
        assert got == reference, f"the {name} walk plans otherwise ({rng.files}, target {target})"
    return reference


def _readable(path: Path) -> bool:
    try:
        read_file_facts(memoryview(path.read_bytes()))
    except BinlogFormatError:
        return False
    return True


def _boundaries(path: Path) -> list[int]:
    with BinlogFile(path) as binlog:
        found = []
        try:
            for raw in binlog.events(verify=False):
                found.append(raw.pos)
        except BinlogFormatError:
            pass
        return found


@pytest.mark.parametrize("rel", [e.rel for e in VENDORED.entries if VENDORED.has(e.rel)])
def test_every_vendored_file_plans_the_same_on_every_walk(rel, corpus_file):
    path = corpus_file(rel, VENDORED)
    outcomes = [plans_agree(RangeSpec([str(path)]), target) for target in TARGETS]
    if not _readable(path):
        assert all(kind == "error" for kind, _ in outcomes)
        return
    starts = _boundaries(path)
    if len(starts) < 4:
        return
    # From and to events inside the file: the walk before the range, and a stop inside a transaction.
    for first, last in ((1, len(starts) // 2), (len(starts) // 3, len(starts) - 1), (2, 3)):
        rng = RangeSpec([str(path)], start_position=starts[first], stop_position=starts[last])
        for target in (1, 4096):
            plans_agree(rng, target)


def test_the_walks_plan_long_runs_of_rows_events_alike(corpus_file):
    """A file where runs of rows events are long: cuts fall inside them at every size."""
    path = corpus_file(SAKILA, VENDORED)
    with BinlogFile(path) as binlog:
        types = [raw.type_code in ROWS_EVENT_TYPES for raw in binlog.events(verify=False)]
    longest = max(len(run) for run in "".join("r" if t else "." for t in types).split("."))
    assert longest >= 20
    for target in (1000, 10_000, 100_000, 1 << 20):
        kind, plan = plans_agree(RangeSpec([str(path)]), target)
        assert kind == "ok" and len(plan["partitions"]) >= 2


def test_a_generated_range_of_several_files_plans_the_same_on_every_walk(corpus_file, tmp_path):
    source = corpus_file(MARIADB, VENDORED)
    files, _ = write_range(source, tmp_path, total_bytes=40 * source.stat().st_size, file_bytes=9000)
    assert len(files) >= 3
    for target in (1, 2000, 1 << 20):
        kind, plan = plans_agree(RangeSpec([str(f) for f in files]), target)
        assert kind == "ok" and len({p["file_index"] for p in plan["partitions"]}) == len(files)


def _with_savepoints_and_clock(data: bytes) -> bytes:
    """The file with each event's timestamp its index (the last event of a range tells which it
    was), and in every transaction a SAVEPOINT after its second rows event and a ROLLBACK TO it after
    its fourth (as a server logs them when a non-transactional table was changed too): the planner
    counts the rows events the rollback undid. MySQL 5.5, no checksums: nothing to recompute."""
    facts, fde_end = read_file_facts(memoryview(data))
    assert facts.checksum_len == 0
    out = bytearray(data[:fde_end])
    begin: bytes | None = None
    rows = 0

    def event(raw: bytes) -> None:
        stamped = bytearray(raw)
        struct.pack_into("<I", stamped, 0, 1_600_000_000 + len(out))
        out.extend(stamped)

    def query(sql: bytes) -> None:
        assert begin is not None
        body = begin[19:]
        head = body[: 13 + struct.unpack_from("<H", body, 11)[0] + body[8] + 1]
        event(begin[:9] + struct.pack("<I", 19 + len(head) + len(sql)) + begin[13:19] + head + sql)

    for raw in reader.iter_events(memoryview(data), facts, fde_end, len(data), verify=False):
        whole = bytes(raw.data)
        event(whole)
        if raw.type_code == 2 and whole.endswith(b"\x00BEGIN"):
            begin, rows = whole, 0
        elif raw.type_code in ROWS_EVENT_TYPES and begin is not None:
            rows += 1
            if rows == 2:
                query(b"SAVEPOINT `s1`")
            elif rows == 4:
                query(b"ROLLBACK TO `s1`")
        elif raw.type_code == 16:
            begin = None
    return bytes(out)


def test_a_generated_file_with_savepoints_plans_the_same_on_every_walk(tmp_path):
    path = tmp_path / "savepoints-bin.000001"
    path.write_bytes(_with_savepoints_and_clock(gzip.decompress(VENDORED.path(SAKILA).read_bytes())))
    kind, plan = plans_agree(RangeSpec([str(path)]), 1 << 20)
    assert kind == "ok" and any("undid the 2 rows event(s)" in note for note in plan["notes"])
    assert any(part["voids"] for part in plan["partitions"])
    with BinlogFile(path) as binlog:
        after_rows = [raw.end for raw in binlog.events(verify=False) if raw.type_code in ROWS_EVENT_TYPES]
    # Ranges that stop right after a rows event inside a run, and start inside another.
    for start, stop in ((after_rows[3], after_rows[-3]), (after_rows[40], after_rows[len(after_rows) // 2])):
        for target in (1, 1000, 30_000, 1 << 20):
            kind, plan = plans_agree(RangeSpec([str(path)], start_position=start, stop_position=stop), target)
            assert kind == "ok" and plan["times"][-1] == 1_600_000_000 + stop - _length_before(path, stop)


def _length_before(path: Path, end: int) -> int:
    """The length of the event that ends at `end`."""
    with BinlogFile(path) as binlog:
        return next(raw.length for raw in binlog.events(verify=False) if raw.end == end)


def _rows_positions(data: bytes) -> list[tuple[int, int]]:
    """(position, length) of every rows event of a whole binlog in memory."""
    with_facts, _ = read_file_facts(memoryview(data))
    return [
        (raw.pos, raw.length)
        for raw in reader.iter_events(memoryview(data), with_facts, 4, len(data), verify=False)
        if raw.type_code in ROWS_EVENT_TYPES
    ]


def test_a_file_truncated_or_broken_inside_a_run_of_rows_stops_on_every_walk_with_the_same_error(
    corpus_file, tmp_path
):
    data = gzip.decompress((VENDORED.path(SAKILA)).read_bytes())
    rows = _rows_positions(data)
    middle = rows[len(rows) // 2]
    cases = {
        "cut in an event": data[: middle[0] + middle[1] // 2],
        "cut in a header": data[: middle[0] + 7],
        "length too small": _with_length(data, middle[0], 10),
        "length past the end": _with_length(data, middle[0], len(data)),
    }
    for name, broken in cases.items():
        path = tmp_path / f"{name.replace(' ', '-')}.bin"
        path.write_bytes(broken)
        for target in (1000, 1 << 20):
            kind, error = plans_agree(RangeSpec([str(path)]), target)
            assert kind == "error" and error[0] == "BinlogFormatError", name
            assert f"at offset {middle[0]}:" in error[1] and "\n" not in error[1], (name, error)
    # A stop position inside a rows event is refused before the walk, alike.
    whole = tmp_path / "whole.bin"
    whole.write_bytes(data)
    kind, error = plans_agree(RangeSpec([str(whole)], stop_position=middle[0] + 5), 1000)
    assert kind == "error"


def _with_length(data: bytes, pos: int, length: int) -> bytes:
    out = bytearray(data)
    struct.pack_into("<I", out, pos + 9, length)
    return bytes(out)
