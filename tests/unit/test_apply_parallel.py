"""How a parallel apply splits a plan (rollback/target/parallel.py's partition): the steps of one row
stay together and in order, a key an UPDATE moves joins its two rows, and tables a split could break
(another unique key, foreign keys, no primary key) stay whole."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rollback.target.execute import plan_lines, read_plan
from rollback.target.parallel import TableFacts, assign, partition
from rollback.target.plan_stream import Stopped


def insert(table: str, key: int) -> dict[str, Any]:
    return {
        "table": table,
        "check": f"SELECT COUNT(*) FROM `{table.replace('.', '`.`')}` WHERE `id`={key}",
        "expect": 0,
        "sql": f"INSERT INTO `{table.replace('.', '`.`')}` (`id`, `v`) VALUES ({key}, 1);",
    }


def update(table: str, key: int, new_key: int | None = None) -> dict[str, Any]:
    name = f"`{table.replace('.', '`.`')}`"
    sets = f"`id`={new_key}, `v`=2" if new_key is not None else "`v`=2"
    return {
        "table": table,
        "check": f"SELECT COUNT(*) FROM {name} WHERE `id`<=>{key} AND `v`<=>1",
        "expect": 1,
        "sql": f"UPDATE {name} SET {sets} WHERE `id`={key};",
    }


def delete(table: str, key: int) -> dict[str, Any]:
    name = f"`{table.replace('.', '`.`')}`"
    return {
        "table": table,
        "check": f"SELECT COUNT(*) FROM {name} WHERE `id`<=>{key} AND `v`<=>2",
        "expect": 1,
        "sql": f"DELETE FROM {name} WHERE `id`={key};",
    }


def facts(**extra: Any) -> TableFacts:
    return TableFacts(primary={t: ["`id`"] for t in ("d.t", "d.u", "d.p", "d.c")}, **extra)


def where(parts: list[list[dict[str, Any]]], step: dict[str, Any]) -> int:
    return next(n for n, part in enumerate(parts) if any(s is step for s in part))


def test_a_row_changed_twice_stays_on_one_partition_in_plan_order():
    plan = [update("d.t", k) for k in range(100)] + [delete("d.t", k) for k in range(0, 100, 7)]
    parts = partition(plan, 3, facts())
    assert sorted(len(p) for p in parts)[0] > 0  # every partition has work
    for step in plan[100:]:
        key = plan[100:].index(step) * 7
        assert where(parts, step) == where(parts, plan[key])
    for part in parts:  # each partition keeps the plan's order
        assert [plan.index(s) for s in part] == sorted(plan.index(s) for s in part)
    assert sum(len(p) for p in parts) == len(plan)


def test_a_key_an_update_moves_joins_both_rows():
    moved = update("d.t", 5, new_key=90)
    plan = [insert("d.t", 90), *[update("d.t", k) for k in range(10, 80)], moved, delete("d.t", 5)]
    parts = partition(plan, 4, facts())
    assert where(parts, plan[0]) == where(parts, moved) == where(parts, plan[-1])


def test_tables_a_split_could_break_stay_whole():
    plan = (
        [update("d.u", k) for k in range(50)]
        + [update("d.p", k) for k in range(50)]
        + [update("d.c", k) for k in range(50)]
        + [update("d.t", k) for k in range(200)]
        + [
            {**update("d.n", k), "sql": f"UPDATE `d`.`n` SET `v`=2 WHERE `id`={k} LIMIT 1;"}
            for k in range(50)
        ]
    )
    parts = partition(plan, 4, facts(other_unique={"d.u"}, related=[("d.c", "d.p")]))
    for table in ("d.u", "d.p", "d.n"):
        assert len({where(parts, s) for s in plan if s["table"] == table}) == 1, table
    assert {where(parts, s) for s in plan if s["table"] == "d.c"} == {
        where(parts, s) for s in plan if s["table"] == "d.p"
    }
    assert len({where(parts, s) for s in plan if s["table"] == "d.t"}) > 1  # the plain keyed table splits


def test_a_streamed_split_reads_each_partition_as_the_split_of_the_whole_plan(tmp_path):
    """assign over the plan's lines (a blank line among them, in no partition), then each partition
    read back by its lines (read_plan's `only`): the same steps, in the same order, as partition's
    split of the plan read whole; a plan that gained a line since it was split stops its reader."""
    plan = [update("d.t", k) for k in range(60)] + [delete("d.t", k) for k in range(0, 60, 7)]
    lines = [json.dumps(step) for step in plan]
    path = tmp_path / "plan.jsonl"
    path.write_text("\n".join(lines[:30] + [""] + lines[30:]) + "\n", encoding="utf-8")
    assigned = assign(plan_lines(path), 3, facts())
    assert len(assigned.homes) == len(plan) + 1 and assigned.homes[30] == -1
    whole = partition(plan, 3, facts())
    assert assigned.counts == [len(part) for part in whole]
    assert [list(read_plan(path, only=(assigned.homes, n))) for n in range(3)] == whole
    with open(path, "a", encoding="utf-8") as f:
        f.write(lines[0] + "\n")
    with pytest.raises(Stopped, match="more lines than when it was split"):
        list(read_plan(path, only=(assigned.homes, 0)))
