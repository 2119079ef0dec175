"""The strict apply reads a --net plan without its lines' `merge` objects (rollback/target/execute.py
read_plan(merge_data=False)): every other key as the whole line's parse gives it, whatever the merge object
or the strings hold, and the whole line where the merge object is not where the writer puts it."""

from __future__ import annotations

import json

from rollback.target.execute import _without_merge_data, read_plan

STEP = {
    "file": "mysql-bin.000002",
    "pos": 2683540,
    "table": "d.t",
    "row": 3,
    "type": "update",
    "check": "SELECT COUNT(*) FROM `d`.`t` WHERE `merge`<=>_binary 0x6d AND `b`<=>'x, \"merge\": {'",
    "expect": 1,
    "tx": 0,
    "gtid": None,
    "sql": 'UPDATE `d`.`t` SET `b`=\'a, "merge": {"kind": 1}}\' WHERE `merge`=_binary 0x6d;',
}
MERGE = {
    "kind": "update",
    "key": {"id": 1, "merge": {"hex": "6d"}},  # a key column named merge, its value an object: a nested match
    "where": "`merge`=_binary 0x6d",
    "columns": [{"name": "b", "before": 'a, "merge": {', "after": "x", "matches_after": "`b`<=>'x'"}],
    "row_matches": None,
    "free_where": None,
    "insert_sql": None,
    "replace_sql": None,
    "delete_sql": None,
}


def _plan(tmp_path, *steps):
    path = tmp_path / "plan.jsonl"
    path.write_text("".join(json.dumps(step) + "\n" for step in steps), encoding="utf-8")
    return path


def test_the_strict_apply_reads_a_net_line_without_its_merge_object(tmp_path):
    path = _plan(tmp_path, {**STEP, "merge": MERGE}, STEP)
    assert _without_merge_data(path.read_bytes().splitlines()[0]) == STEP  # not parsed at all
    assert list(read_plan(path, merge_data=False)) == [STEP, STEP]
    assert list(read_plan(path)) == [{**STEP, "merge": MERGE}, STEP]


def test_a_line_whose_merge_object_is_not_last_is_read_whole(tmp_path):
    first = {"merge": MERGE, **STEP}
    not_last = {key: value for key, value in STEP.items() if key != "sql"} | {"merge": MERGE, "sql": "X;"}
    path = _plan(tmp_path, first, not_last)
    assert list(read_plan(path, merge_data=False)) == [first, not_last]
