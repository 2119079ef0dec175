"""Undo one thread's transactions: on a real MySQL 8.0.31 binlog where two sessions (thread ids 10 and
11) interleave 523 row transactions, `--thread-id` selects exactly the rows events that mariadb-binlog,
a second implementation, attributes to that thread (the thread id of the BEGIN query before them).

The restore proof with checksums on the same file (replayed into the scratch MariaDB) is
tests/server/test_thread_undo_corpus.py."""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter

import pytest

from rollback import Filters, Options, RangeSpec, generate

FILE = "rust-us__mysql-cdc-rs/tests/events/8.0/folder/binlog.000693"
_AT = re.compile(r"^# at (\d+)$")
_QUERY = re.compile(r"^#\d{6} .*\tQuery\tthread_id=(\d+)\t")
_ROWS = re.compile(r"^#\d{6} .*\t(?:Write|Update|Delete)_rows: table id")
_COUNT = re.compile(r"^# Number of rows: (\d+)$")


def _rows_by_thread(path) -> dict[int, Counter]:
    """Per thread id: rows per rows event position, as mariadb-binlog prints them."""
    text = subprocess.run(
        ["mariadb-binlog", "--no-defaults", str(path)], capture_output=True, text=True, check=True
    ).stdout
    found: dict[int, Counter] = {}
    at = thread = event = None
    for line in text.splitlines():
        if m := _AT.match(line):
            at = int(m.group(1))
        elif m := _QUERY.match(line):
            thread = int(m.group(1))
        elif _ROWS.match(line):
            event = at
        elif (m := _COUNT.match(line)) and event is not None:
            assert thread is not None
            found.setdefault(thread, Counter())[event] += int(m.group(1))
            event = None
    return found


@pytest.mark.corpus
def test_thread_id_selects_exactly_the_rows_events_mariadb_binlog_gives_that_thread(corpus_dir, tmp_path):
    path = corpus_dir / FILE
    printed = _rows_by_thread(path)
    assert sorted(printed) == [10, 11] and all(len(events) > 100 for events in printed.values())
    ours: dict[int, Counter] = {}
    for thread in (10, 11):
        changes = tmp_path / f"thread-{thread}.jsonl"
        generate(
            RangeSpec(files=[str(path)]),
            Filters(thread_id=thread),
            Options(mode="changes", engine="local"),
            tmp_path / "script.sql",
            None,
            changes,
        )
        records = [json.loads(line) for line in changes.read_text().splitlines()]
        assert {r["thread_id"] for r in records} == {thread}
        ours[thread] = Counter(r["pos"] for r in records)
    assert ours == printed
