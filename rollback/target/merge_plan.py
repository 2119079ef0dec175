"""A --net plan for the merge apply (rollback/target/merge_columns.py): its steps read as the strict apply reads
them, without their `merge` objects, and each step's place in the plan file; the rows of a batch (their
`merge` objects parsed, their queries built) read from the file when the apply needs them, never all at
once. Held for the whole run, the parsed `merge` objects were most of the merge apply's memory (3.1 GB at
1M rows against 0.6 GB for the strict apply of the same plan).
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from rollback.target.merge_columns import MergeRefused, Row, plain_name, quoted_name, refusal, row_of

MERGE_KEY = b', "merge": '
_HEAD = MERGE_KEY + b'{"kind": "'
_KIND = len(_HEAD)
_KINDS = (b'update"', b'insert"', b'delete"')  # the kinds merge_columns.refusal accepts
# every key the strict apply reads: a line whose cut leaves one out is read whole
STRICT_KEYS = frozenset({"file", "pos", "table", "row", "type", "check", "expect", "tx", "gtid", "sql"})
CHUNK = 256  # steps read from the file at once


SAME_KEY = b', "merge_same": true'  # the writer puts it right before the merge object (net_script.plan_line)


def cut(line: bytes) -> tuple[dict[str, Any], int] | None:
    """A --net plan line's step without its `merge` object (the writer puts it last) nor `merge_same`,
    parsed from the bytes before them, and where that object starts in the line: None unless the first
    `, "merge": {` is the top-level key's and every key the strict apply reads comes before it (_before)."""
    at = line.find(MERGE_KEY + b"{")
    step = _before(line, at) if at >= 0 else None
    return None if step is None else (step, at + len(MERGE_KEY))


def _before(line: bytes, at: int) -> dict[str, Any] | None:
    """The step the bytes before `at` hold, if `at` is a top-level key's (a cut anywhere deeper leaves a brace
    open; inside a string every quote is escaped) and they hold every key the strict apply reads; without
    a `merge_same` right before `at` (an eleventh key would double the memory of each step's dict)."""
    end = at - len(SAME_KEY) if line.startswith(SAME_KEY, at - len(SAME_KEY)) else at
    try:
        step = orjson.loads(line[:end] + b"}")
    except orjson.JSONDecodeError:
        return None
    return step if isinstance(step, dict) and STRICT_KEYS <= step.keys() else None


def _whole(line: bytes) -> Any:
    """A line parsed whole: orjson, or json for what orjson refuses (an integer past 64 bits, NaN, a lone
    surrogate); None for a blank line."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        if not line.strip():
            return None
        return json.loads(line.decode("utf-8"))


class MergePlan:
    """Where each step's `merge` object is: its line's start and end in the file and the object's start in
    the line, or the object itself for a line read whole (its `merge` not last, or not of a known kind)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._starts = array("q")
        self._ends = array("q")
        self._at = array("l")  # -1: the line was read whole, its object is in _held
        self._same = bytearray()  # 1: the line's merge_same is true
        self._held: dict[int, Any] = {}
        self._refused: str | None = None  # the first line's that has no merge data (merge_columns.refusal)
        self._tables: list[tuple[str, str]] = []  # each table as a step names it (db.t) and quoted
        self._table_of = array("l")  # each step's, an index of _tables
        self._known: dict[str, int] = {}  # a table as the plan names it -> its index in _tables

    def steps(self) -> Iterator[dict[str, Any]]:
        """The plan's steps, every key but `merge`, in order (blank lines skipped)."""
        offset = 0
        with open(self.path, "rb") as f:
            for line in f:
                start, offset = offset, offset + len(line)
                at = line.find(_HEAD)
                step = _before(line, at) if at >= 0 and line[at + _KIND : at + _KIND + 7] in _KINDS else None
                if step is not None:
                    self._same.append(line.startswith(SAME_KEY, at - len(SAME_KEY)))
                    at += len(MERGE_KEY)
                else:
                    step, at = _whole(line), -1
                    if step is None:
                        continue
                    merge = step.pop("merge", None) if isinstance(step, dict) else None
                    self._same.append(isinstance(step, dict) and step.pop("merge_same", None) is True)
                    self._held[len(self._at)] = merge
                    if self._refused is None:
                        self._refused = refusal(step, merge)
                self._starts.append(start)
                self._ends.append(offset)
                self._at.append(at)
                yield step

    @property
    def refused(self) -> str | None:
        """Why the plan cannot be merged, from the lines read so far (None: nothing yet)."""
        return self._refused

    def prepare(self, plan: list[dict[str, Any]]) -> None:
        """Refuse a plan not written with --net (MergeRefused: one line), then name each step's table db.t
        from here on, as a full plan names it (the checks of the target's side effects read it)."""
        if self._refused is not None:
            raise MergeRefused(self._refused)
        for step in plan:
            self.name(step)

    def name(self, step: dict[str, Any]) -> None:
        """The next step's table named db.t (prepare, a step at a time: a streamed apply names each as it
        reads it)."""
        named = str(step.get("table"))
        n = self._known.get(named)
        if n is None:
            n = self._known[named] = len(self._tables)
            self._tables.append((plain_name(named), quoted_name(named)))
        self._table_of.append(n)
        step["table"] = self._tables[n][0]

    def same(self, start: int, stop: int) -> bool:
        """Whether every line from `start` to `stop` says merge_same (rollback/job/net_script.py plan_line)."""
        return self._same.find(0, start, stop) < 0

    def rows(self, steps: list[dict[str, Any]], f: BinaryIO, start: int = 0) -> Iterator[Row]:
        """The row (merge_columns.Row) of each of `steps`, the plan's steps from the `start`-th on, in plan
        order, its `merge` object read from the plan file `f` then."""
        starts, ends, ats, held = self._starts, self._ends, self._at, self._held
        tables, table_of = self._tables, self._table_of
        stop = start + len(steps)
        for first in range(start, stop, CHUNK):
            last = min(first + CHUNK, stop)
            base = starts[first]
            f.seek(base)
            data = f.read(ends[last - 1] - base)
            for n in range(first, last):
                at, step = ats[n], steps[n - start]
                if at < 0:
                    merge = held[n]  # refused by prepare unless as it must be
                else:
                    merge = _merge(step, data[starts[n] - base : ends[n] - base], at)
                yield row_of(step, merge, tables[table_of[n]][1])


def _merge(step: dict[str, Any], line: bytes, at: int) -> dict[str, Any]:
    """The `merge` object of a line cut at `at` (the last key: the line's closing brace follows it; else the
    line is read whole)."""
    try:
        merge = orjson.loads(line.rstrip()[at:-1])
    except orjson.JSONDecodeError:
        whole = _whole(line)
        merge = whole.get("merge") if isinstance(whole, dict) else None
    refused = refusal(step, merge)
    if refused is not None:
        raise MergeRefused(refused)
    return merge  # type: ignore[no-any-return]
