"""rollback/target/plan_stream.py: a plan's lines and tables from its bytes, and a producer run ahead in
a thread of its own."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollback.target import plan_stream
from tests.support.examples import examples


def line(table: str | None, kind: str = "update", sql: str = "UPDATE x SET a=1 WHERE id=1;") -> str:
    """A plan line as the plan's writer lays it out (rollback/pipeline/plan_lines.py)."""
    step = {"file": "mysql-bin.000001", "pos": 4, "table": table, "row": 1, "type": kind, "check": "SELECT 1"}
    return json.dumps(step | {"expect": 1, "tx": 1, "gtid": None, "sql": sql}, ensure_ascii=False)


def written(tmp_path, lines: list[str], end: str = "\n") -> str:
    path = tmp_path / "plan.jsonl"
    path.write_text("\n".join(lines) + end, encoding="utf-8")
    return str(path)


def test_lines_and_tables_in_the_order_they_are_first_named(tmp_path):
    tables = ["d.t", 'd."q', "é.ü", "d.t2", "d.t"]
    lines = [line(tables[n % len(tables)]) for n in range(23)]
    assert plan_stream.scan(written(tmp_path, lines), 1 << 20) == (23, ["d.t", 'd."q', "é.ü", "d.t2"])
    assert plan_stream.scan(written(tmp_path, lines, end=""), 1 << 20) == (23, ["d.t", 'd."q', "é.ü", "d.t2"])


def test_a_plan_written_as_compact_json_names_its_tables_too(tmp_path):
    compact = [json.dumps(json.loads(line(name)), separators=(",", ":")) for name in ("d.t", "d.u", "d.t")]
    mixed = [*compact, line("d.v"), line("d.t")]
    assert plan_stream.scan(written(tmp_path, mixed), 1 << 20) == (5, ["d.t", "d.u", "d.v"])


def test_a_table_whose_name_starts_with_another_is_its_own(tmp_path):
    lines = [line("d.t"), line("d.t"), line("d.tt"), line("d.t_"), line("d.t")]
    assert plan_stream.scan(written(tmp_path, lines), 1 << 20) == (5, ["d.t", "d.tt", "d.t_"])


@pytest.mark.parametrize(
    "lines",
    [
        [],
        [line("d.t"), line(None, kind="ddl", sql="DROP TABLE d.t;")],  # the careful path refuses DDL
        [line(f"d.t{n}") for n in range(plan_stream.MAX_TABLES + 2)],
    ],
    ids=["empty", "ddl", "too-many-tables"],
)
def test_what_the_careful_path_takes(tmp_path, lines):
    assert plan_stream.scan(written(tmp_path, lines, end="\n" if lines else ""), 1 << 20) is None


def test_a_line_as_long_as_the_packet_allows_takes_the_careful_path(tmp_path):
    lines = [line("d.t"), line("d.t", sql="UPDATE x SET a='" + "y" * 5000 + "' WHERE id=1;"), line("d.t")]
    path = written(tmp_path, lines)
    longest = max(len(each.encode()) for each in lines)
    assert plan_stream.scan(path, longest + 1) == (3, ["d.t"])
    assert plan_stream.scan(path, longest) is None


def test_a_line_longer_than_a_chunk_is_measured_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(plan_stream, "CHUNK", 64)
    lines = [line("d.t"), line("d.t", sql="UPDATE x SET a='" + "y" * 500 + "' WHERE id=1;"), line("d.t")]
    path = written(tmp_path, lines)
    longest = max(len(each.encode()) for each in lines)
    assert plan_stream.scan(path, longest + 1) == (3, ["d.t"])
    assert plan_stream.scan(path, longest) is None


def test_the_producers_items_come_in_order_and_it_stays_a_few_ahead():
    made: list[int] = []

    def produce() -> Iterator[int]:
        for n in range(100):
            made.append(n)
            yield n

    with plan_stream.Ahead(produce, 4) as ahead:
        items = iter(ahead)
        assert next(items) == 0
        time.sleep(0.3)
        assert len(made) <= 1 + 4 + 1  # the one taken, the queue's, and the one waiting to go in
        assert list(items) == list(range(1, 100))


@pytest.mark.parametrize("error", [plan_stream.Stopped("a step the preflight did not see"), KeyError("tx")])
def test_a_producer_that_stops_or_fails_stops_the_pass_after_what_it_gave(error):
    def produce() -> Iterator[int]:
        yield 1
        yield 2
        raise error

    got: list[int] = []
    with plan_stream.Ahead(produce, 4) as ahead, pytest.raises(plan_stream.Stopped) as stopped:
        for item in ahead:
            got.append(item)
    assert got == [1, 2] and str(error.args[0]) in str(stopped.value)


def test_leaving_early_ends_the_producers_thread():
    def produce() -> Iterator[int]:
        n = 0
        while True:  # endless: only the pass's leaving ends it
            n += 1
            yield n

    before = threading.active_count()
    with plan_stream.Ahead(produce, 2) as ahead:
        assert next(iter(ahead)) == 1
    assert threading.active_count() == before


def test_the_gil_changes_hands_every_millisecond_while_any_producer_runs_and_as_before_after():
    def produce() -> Iterator[int]:
        yield from range(3)

    before = 0.004
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plan_stream.sys, "getswitchinterval", lambda: before)
        seen: list[float] = []
        patch.setattr(plan_stream.sys, "setswitchinterval", seen.append)
        with plan_stream.Ahead(produce, 2) as first:
            with plan_stream.Ahead(produce, 2) as second:  # a parallel apply's passes, at once
                assert list(second) == [0, 1, 2]
            assert seen == [plan_stream.SWITCH_SECONDS]  # the second one neither set nor restored it
            assert list(first) == [0, 1, 2]
        assert seen == [plan_stream.SWITCH_SECONDS, before]
        with pytest.raises(ZeroDivisionError), plan_stream.Ahead(produce, 2):
            raise ZeroDivisionError  # a pass that fails restores it too
        assert seen[-1] == before and len(seen) == 4


@settings(
    max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    widths=st.lists(st.integers(0, 300), min_size=1, max_size=40),
    longest=st.integers(1, 400),
    chunk=st.integers(1, 700),
    end=st.sampled_from(["\n", ""]),
)
def test_a_line_as_long_as_the_packet_allows_is_found_wherever_it_is(tmp_path, widths, longest, chunk, end):
    """The scan measures only the lines that hold a whole block of half `longest` without a break,
    in chunks of any size: it says what measuring every line says."""
    lines = [line("d.t", sql="x" * width) for width in widths]
    path = written(tmp_path, lines, end)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plan_stream, "CHUNK", chunk)
        found = plan_stream.scan(path, longest)
    if max(len(each.encode()) for each in lines) >= longest:
        assert found is None
    else:
        assert found == (len(lines), ["d.t"])
