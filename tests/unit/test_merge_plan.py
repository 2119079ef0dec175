"""The merge apply's plan read in two goes (rollback/target/merge_plan.py): the steps without their `merge`
objects first, each row's object from the file later. Both must give what one whole parse of each line
gives, wherever the line's bytes lie in the file, whatever the strings hold; a line the writer did not
write as it does is read whole; a plan not written with --net is refused before anything runs."""

from __future__ import annotations

import json

import pytest

from rollback.target.merge_columns import MergeRefused
from rollback.target.merge_plan import CHUNK, MergePlan

STEP = {
    "file": "mysql-bin.000002",
    "pos": 2683540,
    "table": "`d`.`t`",
    "row": 3,
    "type": "update",
    "check": 'SELECT COUNT(*) FROM `d`.`t` WHERE `b`<=>\'x, "merge": {"kind": "update"\'',
    "expect": 1,
    "tx": 0,
    "gtid": None,
    "sql": "UPDATE `d`.`t` SET `b`='é, \"merge\": {' WHERE `id`=1;",
}


def _merge(n: int, kind: str = "update") -> dict:
    return {
        "kind": kind,
        "key": {"id": n},
        "where": f"`id`={n}",
        "columns": [
            {
                "name": "b",
                "before": f'ünïcode {n} \u2028 "merge": {{',
                "after": "x",
                "before_sql": f"'ü{n}'",
                "after_sql": "'x'",
                "matches_after": "`b`<=>'x'",
            }
        ],
        "row_matches": f"`id`<=>{n} AND `b`<=>'x'",
        "free_where": None,
        "insert_sql": None,
        "replace_sql": None,
        "delete_sql": None,
    }


def _write(tmp_path, lines: list[str]):
    path = tmp_path / "net.plan"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _read(path):
    source = MergePlan(path)
    plan = list(source.steps())
    return source, plan


def test_every_row_gets_the_merge_object_its_whole_line_holds(tmp_path):
    lines, wanted = [], []
    for n in range(2 * CHUNK + 7):  # rows read from the file in three chunks
        same = {"merge_same": True} if n % 3 else {}
        step = {**STEP, "pos": n, **same, "merge": _merge(n)}
        if n % 5 == 0:
            step = {"merge": _merge(n), **STEP, "pos": n, **same}  # not last: the line is read whole
        lines.append(json.dumps(step, ensure_ascii=n % 2 == 0) + "\n")
        if n % 7 == 0:
            lines.append("\n")  # blank lines are no steps
        wanted.append(step)
    path = _write(tmp_path, lines)
    source, plan = _read(path)
    assert [{k: v for k, v in s.items() if k not in ("merge", "merge_same")} for s in wanted] == plan
    assert [source.same(n, n + 1) for n in range(len(plan))] == [bool(n % 3) for n in range(len(plan))]
    assert source.same(1, 3) and not source.same(1, 4)
    assert len(source._held) == len(range(0, len(wanted), 5))  # only the lines read whole hold theirs
    source.prepare(plan)
    assert {step["table"] for step in plan} == {"d.t"}
    with open(path, "rb") as f:
        rows = list(source.rows(plan, f))
        assert [row.merge for row in source.rows(plan[5:9], f, 5)] == [s["merge"] for s in wanted[5:9]]
        assert list(source.rows(plan, f)) == rows  # a second pass reads the same
    assert [row.merge for row in rows] == [s["merge"] for s in wanted]
    assert [row.step["pos"] for row in rows] == list(range(len(wanted)))
    assert {row.table for row in rows} == {"`d`.`t`"}
    assert rows[3].restore == "UPDATE `d`.`t` SET `b` = 'ü3' WHERE `id`=3 AND (`b`<=>'x')"


def test_a_plan_not_written_with_net_is_refused_at_its_first_such_line(tmp_path):
    path = _write(
        tmp_path,
        [
            json.dumps({**STEP, "merge": _merge(1)}) + "\n",
            json.dumps({**STEP, "pos": 7}) + "\n",
            json.dumps({**STEP, "pos": 8, "merge": _merge(2, "upsert")}) + "\n",
        ],
    )
    source, plan = _read(path)
    with pytest.raises(MergeRefused, match=r"mysql-bin.000002:7 has no merge data"):
        source.prepare(plan)
    path = _write(tmp_path, [json.dumps({**STEP, "pos": 8, "merge": _merge(2, "upsert")}) + "\n"])
    source, plan = _read(path)
    with pytest.raises(MergeRefused, match=r"merge kind 'upsert'"):
        source.prepare(plan)
