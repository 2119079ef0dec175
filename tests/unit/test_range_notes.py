"""The notes on what a range holds besides the incident, from the request and the partitions' counts of
transactions per connection (thread id)."""

from __future__ import annotations

from rollback.job.range_notes import range_notes
from rollback.pipeline.parts import Summary
from rollback.request.spec import Filters, RangeSpec


def _summary(index: int, threads: dict[int | None, int]) -> Summary:
    return Summary(index=index, threads=threads)


def test_an_open_range_is_said_and_a_bounded_one_is_not():
    for rng in (RangeSpec(["b.000001"]), RangeSpec(["b.000001"], 4, None, None, "2026-01-01 00:00:00")):
        (note,) = range_notes(rng, Filters(), [])
        assert note.startswith("the range runs to the end of the log") and "bound it" in note
    for rng in (
        RangeSpec(["b.000001"], 4, 900),
        RangeSpec(["b.000001"], stop_datetime="2026-01-01 00:05:00"),
        RangeSpec(["b.000001"], gtid="0-1-5"),
    ):
        assert range_notes(rng, Filters(), []) == []
    resolved = RangeSpec(["spool/b.000001"], 4, 900, to_log_end=True)  # a server range asked without a stop
    assert len(range_notes(resolved, Filters(), [])) == 1
    open_range = RangeSpec(["b.000001"])  # the transactions picked inside it: nothing after them is undone
    assert range_notes(open_range, Filters(include_positions=["b.000001:1157"]), []) == []
    assert range_notes(open_range, Filters(include_gtid="0-1-13"), []) == []
    assert len(range_notes(open_range, Filters(exclude_gtid="0-1-13"), [])) == 1


def test_transactions_of_several_connections_are_named_busiest_first():
    bounded = RangeSpec(["b.000001"], 4, 900)
    summaries = [_summary(0, {12: 1, 15: 3}), _summary(1, {12: 1, None: 2, 17: 1})]
    (note,) = range_notes(bounded, Filters(), summaries)
    assert note.startswith(
        "the range holds transactions of 3 connections, thread ids 15 (3 transaction(s)), "
    )
    assert "12 (2 transaction(s)), 17 (1 transaction(s))" in note and "--thread-id" in note
    assert range_notes(bounded, Filters(thread_id=15), summaries) == []  # already narrowed to one
    assert range_notes(bounded, Filters(), [_summary(0, {12: 4, None: 1})]) == []  # one connection
    many = _summary(0, {t: 1 for t in range(1, 9)})
    assert range_notes(bounded, Filters(), [many])[0].endswith(
        "and 3 more: if the incident is one connection's, keep only it (--thread-id, or "
        "--exclude-thread-id for the others)"
    )
