"""The thread-id filter over corpus binlogs of real MySQL sessions (no server needed)."""

from __future__ import annotations

import json

import pytest

from rollback import Filters, Options, RangeSpec, generate
from rollback.base.errors import EmptyRange

MYSQL_57 = "osheroff__mysql-binlog-connector-java/src/test/resources/mysql-bin.checksum-crc32"  # vendored
MYSQL_57_LONG = "GoDannyLai__binlog_rollback/tmp/mysql-bin.000008"  # the extended corpus only


def _thread_changes(rng: RangeSpec, thread: int, tmp_path, empty: bool = False) -> list[dict]:
    changes = tmp_path / "changes.jsonl"
    if empty:  # selecting nothing is an error unless allowed
        with pytest.raises(EmptyRange, match=f"filters: thread {thread}; the files hold [0-9]+ rows event"):
            generate(
                rng,
                Filters(thread_id=thread),
                Options(mode="changes", engine="local"),
                tmp_path / "script.sql",
            )
    report = generate(
        rng,
        Filters(thread_id=thread),
        Options(mode="changes", engine="local", allow_empty=empty),
        tmp_path / "script.sql",
        changes_path=changes,
    )
    records = [json.loads(line) for line in changes.read_text().splitlines()]
    assert len(records) == sum(report.counts.values())
    assert {r["thread_id"] for r in records} <= {thread}
    return records


@pytest.mark.parametrize(("thread", "rows"), [(9, 28), (18, 15), (4, 0)])
def test_thread_id_selects_the_transactions_of_one_mysql_session(corpus_dir, tmp_path, thread, rows):
    # 60 row transactions of eight sessions: threads 9 and 18 wrote 28 and 15 of the 63 row changes.
    rng = RangeSpec([str(corpus_dir / MYSQL_57)])
    assert len(_thread_changes(rng, thread, tmp_path, empty=not rows)) == rows


@pytest.mark.extended
@pytest.mark.parametrize(("thread", "rows"), [(21, 1087), (22, 0)])
def test_thread_id_selects_the_transactions_of_one_session_in_a_long_mysql_binlog(
    extended_corpus, tmp_path, thread, rows
):
    # Between the CREATE TABLE (ends at 806) and the first ALTER (at 374474): 1087 row changes of thread 21.
    rng = RangeSpec([str(extended_corpus.path(MYSQL_57_LONG))], 806, 374474)
    assert len(_thread_changes(rng, thread, tmp_path, empty=not rows)) == rows


def test_exclude_thread_id_leaves_out_the_transactions_of_those_sessions(corpus_dir, tmp_path):
    rng = RangeSpec([str(corpus_dir / MYSQL_57)])
    changes = tmp_path / "changes.jsonl"
    report = generate(
        rng,
        Filters(exclude_thread_ids={9, 18}),
        Options(mode="changes", engine="local"),
        tmp_path / "script.sql",
        changes_path=changes,
    )
    records = [json.loads(line) for line in changes.read_text().splitlines()]
    assert len(records) == sum(report.counts.values()) == 63 - 28 - 15
    assert {r["thread_id"] for r in records}.isdisjoint({9, 18})
