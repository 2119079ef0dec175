"""The words `flashback --execute --merge` says on a terminal (rollback/cli/summary.py)."""

from __future__ import annotations

from rollback.cli.summary import merge_conflict_lines, text_lines
from rollback.target.execute import ExecutionResult

ENGINE = {"name": "local", "reason": "small range", "partitions": 1}
CONFLICT = {
    "table": "db.t",
    "kind": "update",
    "file": "mysql-bin.000001",
    "pos": 400,
    "key": {"id": 2},
    "columns": [
        {"name": "a", "before": 2, "after": 102, "now": 7, "changed_since": True},
        {"name": "b", "before": "y", "after": "y!", "now": "y!", "changed_since": False},
    ],
    "now_present": True,
    "resolution": None,
}


def _result(**merge):
    result = ExecutionResult(dry_run=False, committed=True, statements=5, rows_affected=5)
    result.merge = {
        "restored": 4,
        "kept_later_changes": 3,
        "resolved": {"keep_now": 0, "take_before": 0, "take_before_where_unchanged": 0, "column": 0},
        "unresolved": 0,
        **merge,
    }
    return result


def test_a_merge_says_what_it_restored_kept_and_resolved():
    result = _result(
        resolved={"keep_now": 1, "take_before": 0, "take_before_where_unchanged": 0, "column": 0}
    )
    result.conflicts = [{**CONFLICT, "resolution": "keep_now"}]
    lines = text_lines(result.to_dict(), [], ENGINE)
    assert lines[1:] == [
        "mysql-rollback: merge: restored 4 row(s) the incident changed, keeping later changes to other "
        "columns in 3 of them",
        "mysql-rollback: 1 conflict(s) (changed since the incident): 1 keep_now resolved",
        '  db.t {"id": 2} (net update): keep_now',
        "mysql-rollback: committed on the target (5 statement(s))",
    ]


def test_a_column_resolution_is_said_per_column():
    result = _result(
        resolved={"keep_now": 0, "take_before": 0, "take_before_where_unchanged": 0, "column": 1}
    )
    result.conflicts = [{**CONFLICT, "resolution": {"choice": "column", "columns": {"a": "take_before"}}}]
    assert '  db.t {"id": 2} (net update): column: a take_before' in text_lines(result.to_dict(), [], ENGINE)


def test_unresolved_conflicts_are_listed_with_their_three_versions():
    result = _result(unresolved=1)
    result.conflicts = [CONFLICT]
    assert merge_conflict_lines(result) == [
        'mysql-rollback: conflict: db.t {"id": 2} (net update), at mysql-bin.000001:400',
        "  a: before 2, after 102, now 7 (changed since)",
        '  b: before "y", after "y!", now "y!"',
    ]
    assert merge_conflict_lines(ExecutionResult(dry_run=True)) == []  # not a merge: nothing more to say
