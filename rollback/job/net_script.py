"""The script and plan of a --net job, from the partitions' part-N.net.pickle files.

Each partition wrote its selected row changes as decoded images (rollback/pipeline/partition.py);
here they are folded per table in binlog order, partition after partition (rollback/render/net.py), put in
an order that can run, and written as one transaction block: one statement per row.
"""

from __future__ import annotations

import json
import os
import pickle
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from rollback.base.render_text import comment_line
from rollback.job.merge import Sink, copy_range
from rollback.pipeline.parts import BLOCK_END, Summary, part_path
from rollback.render.net import NetFold, NetRenderer, NetRow, execution_order
from rollback.render.sql import TableRenderer


@dataclass
class NetChanges:
    folds: dict[str, NetFold] = field(default_factory=dict)  # quoted table -> its rows' net changes
    renderers: dict[str, NetRenderer] = field(default_factory=dict)
    seq: int = 0

    def read(self, path: str) -> None:
        tables: dict[int, tuple[NetFold, str]] = {}
        with open(path, "rb") as f:
            for item in _items(f):
                if item[0] == "table":
                    _, number, (tmap, schema, flavour, full_where) = item
                    renderer = TableRenderer(tmap, schema, flavour, full_where)
                    name = renderer.table
                    if name not in self.folds:
                        self.renderers[name] = NetRenderer(renderer)
                        self.folds[name] = NetFold(name, schema.row_key)
                    tables[number] = (self.folds[name], name)
                    continue
                _, number, (kind, rows, file, pos, numbers), tx, gtid = item
                self.seq = tables[number][0].add_rows(kind, rows, self.seq, file, pos, numbers, tx, gtid)

    def ordered(self) -> list[NetRow]:
        rows = [row for fold in self.folds.values() for row in fold.rows()]
        return execution_order(rows, {name: r.unique_keys for name, r in self.renderers.items()})


def _items(f: Any) -> Iterator[Any]:
    while True:
        try:
            yield pickle.load(f)
        except EOFError:
            return


def net_changes(out_dir: str, summaries: list[Summary]) -> NetChanges:
    changes = NetChanges()
    for summary in summaries:  # partition order: binlog order
        if summary.net_changes:
            changes.read(part_path(out_dir, summary.index, "net.pickle"))
    return changes


def plan_line(
    row: NetRow, table: str, kind: str, check: str | None, expect: int, sql: str, merge: dict[str, Any]
) -> str:
    """`table` as every plan line names it (`db.t`, TableMap.qualified_name): the execution finds the
    table's triggers, cascades and engine by that name."""
    file, pos, number, _tx, _gtid = row.where
    line = {
        "file": file,
        "pos": pos,
        "table": table,
        "row": number,
        "type": kind,
        "check": check,
        "expect": expect,
        "tx": 0,  # one transaction: net changes belong to no single transaction of the range
        "gtid": None,
        "sql": sql,
        "merge": merge,
    }
    return json.dumps(line, ensure_ascii=False)


def write_body(changes: NetChanges, out_dir: str, with_plan: bool) -> tuple[str, str, int]:
    """The statements (and plan lines) into two files of `out_dir`: (script path, plan path, statements)."""
    script_path = os.path.join(out_dir, "net.sql")
    plan_path = os.path.join(out_dir, "net.plan.jsonl")
    count = 0
    with open(script_path, "wb") as script, open(plan_path, "w", encoding="utf-8") as plan:
        for (table, kind), run in groupby(changes.ordered(), key=lambda row: (row.table, row.kind)):
            renderer = changes.renderers[table]
            if not with_plan and (full := renderer.renderer.full_images()) is not None:
                # a run of one table's rows of one kind: its statements in one call of the full-image
                # functions (which render an event's rows newest first: hence reversed)
                rows = list(run)
                images = [_image(row, kind) for row in reversed(rows)]
                data, written, _longest = full.script(kind, images, False)
                script.write(data)
                count += written
                continue
            for row in run:
                statement = renderer.statement(row, with_plan)
                if statement is None:
                    continue
                count += 1
                script.write(statement.sql.encode("utf-8") + b"\n")
                if with_plan:
                    plan.write(
                        plan_line(
                            row,
                            renderer.renderer.tmap.qualified_name,
                            statement.kind,
                            statement.check,
                            statement.expect,
                            statement.sql,
                            statement.merge,
                        )
                        + "\n"
                    )
    return script_path, plan_path, count


def _image(row: NetRow, kind: str) -> Any:
    """What the full-image functions reverse for a net change of `kind` (the change of the range)."""
    if kind == "update":
        return (row.before, row.after)
    return row.after if kind == "insert" else row.before


def write_net(header: str, body: tuple[str, str, int], script_out: Sink, plan_out: Sink | None) -> None:
    script_path, plan_path, count = body
    script_out.write(header.encode("utf-8"))
    if not count:
        note = "net effect of the range (--net): its changes cancel out, nothing to undo"
        script_out.write((comment_line(note) + "\n").encode("utf-8"))
    else:
        note = f"net effect of the range (--net): {count} row(s), one statement per row, in an order that can run"
        script_out.write((comment_line(note) + "\nBEGIN;\n").encode("utf-8"))
        with open(script_path, "rb") as f:
            copy_range(f, script_out, 0, os.fstat(f.fileno()).st_size)
        script_out.write(BLOCK_END.encode("utf-8"))
    if plan_out is not None:
        with open(plan_path, "rb") as f:
            copy_range(f, plan_out, 0, os.fstat(f.fileno()).st_size)
