"""app/services/record_writer.py and the Recorder's use of it: progress written in the background (the
newest one waiting only), what the crash record needs written before the call returns, in order."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from app.services.execution_run import Recorder
from app.services.record_writer import RecordWriter
from rollback import ExecutionProgress


class Slow:
    """A record's write that waits for `go` before each write; what it wrote, in order."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.written: list[dict[str, Any]] = []
        self.fail: BaseException | None = None

    def open(self) -> Any:
        def write(**values: Any) -> None:
            assert self.go.wait(10)
            if self.fail is not None:
                raise self.fail
            self.written.append(values)

        return write


def test_progress_goes_in_the_background_and_only_the_newest_waiting_one_is_written():
    slow = Slow()
    writer = RecordWriter(slow.open)
    writer.later(done=1)  # taken by the thread at once, which then waits for `go`
    for done in range(2, 6):
        writer.later(done=done)  # each replaces the one waiting
    slow.go.set()
    writer.close()
    assert slow.written[-1] == {"done": 5} and len(slow.written) <= 2


def test_a_durable_write_returns_once_it_and_every_write_before_it_are_written():
    slow = Slow()
    writer = RecordWriter(slow.open)
    writer.later(done=1)
    writer.later(done=2)
    returned = threading.Event()

    def commit() -> None:
        writer.now(committing=7)
        returned.set()

    threading.Thread(target=commit).start()
    assert not returned.wait(0.2)  # the write is held: so is the one who asked for it
    slow.go.set()
    assert returned.wait(10)
    assert slow.written[-1] == {"committing": 7} and {"done": 2} in slow.written
    writer.now(committed=7)  # not replaced by a progress write, nor replacing one
    writer.later(done=3)
    writer.close()
    assert slow.written[-2:] == [{"committed": 7}, {"done": 3}]


def test_a_failed_write_is_raised_at_the_next_call_and_a_failed_open_at_every_one():
    slow = Slow()
    slow.go.set()
    slow.fail = OSError("disk I/O error")
    writer = RecordWriter(slow.open)
    with pytest.raises(OSError, match="disk I/O"):
        writer.now(committing=1)
    writer.later(done=1)  # in the background: its failure waits for the next call
    with pytest.raises(OSError, match="disk I/O"):
        writer.close()

    def cannot_open() -> Any:
        raise RuntimeError("unable to open database file")

    writer = RecordWriter(cannot_open)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="unable to open"):
            writer.now(committing=1)
    writer.close()


def test_the_recorder_writes_the_crash_records_words_now_and_progress_later():
    now: list[dict[str, Any]] = []
    later: list[dict[str, Any]] = []
    recorder = Recorder(
        lambda **v: now.append(v), threading.Event(), threading.Event(), lambda **v: later.append(v)
    )

    def state(**values: Any) -> ExecutionProgress:
        base = {"phase": "apply", "statements_done": 1, "statements_total": 10, "rows_affected": 1}
        return ExecutionProgress(**(base | {"transaction": None} | values))

    recorder.progress(state())
    recorder.progress(state(statements_done=10, committing={"tx": 1}))
    recorder.progress(state(statements_done=10, committed={"tx": 1}))
    recorder.progress(state(statements_done=10, xa={"decision": "commit"}))
    recorder.progress(state(statements_done=10))
    assert [v["details"].get("committing") for v in now[:1]] == [{"tx": 1}]
    assert len(now) == 3 and "xa" in now[2]["details"]
    assert len(later) == 2 and all("committing" not in v["details"] for v in later)
