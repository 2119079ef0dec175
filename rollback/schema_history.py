"""Schema history: each table's definition at every position of a range, rebuilt from an anchor.

The anchor is the table as a schema source describes it at the end (a live server's
information_schema now, or a DDL file). The DDL the binlog holds between the range's first event
and the anchor (QUERY events, read by rollback.ddl_parse) is undone from the end backwards: an
ADD COLUMN removes the column again, a RENAME COLUMN or RENAME TABLE takes the old name back, a
MODIFY/CHANGE takes the old name back and forgets the old type (the table map carries it), a
CREATE TABLE ends the table's past. Where a DDL alone cannot say what the table was before it (a
DROP COLUMN or a FIRST/AFTER move: where was the column?), the table map of the rows written
before it settles the place when exactly one place fits its column types; otherwise that
definition is unknown and a rows event that needs it is refused, naming the DDL.

Every column of every definition remembers its name at the anchor (None: dropped later), which is
what `--ddl keep` maps old row images to today's columns by.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from rollback.binlog.table_map import TableMap
from rollback.ddl import ddl_targets, shorten
from rollback.ddl_parse import (
    AddColumn,
    AlterTable,
    CreateTable,
    DropColumn,
    DropDatabase,
    DropTable,
    KeepColumns,
    ModifyColumn,
    RenameColumn,
    RenameTable,
    TableName,
    TableOp,
    TruncateTable,
    Unparsed,
    parse_ddl_ops,
)
from rollback.schema import _COMPATIBLE, Column, TableSchema

At = tuple[int, int]  # (file index in the range's order, position); DDL after the range sort after it
BEFORE_RANGE: At = (-1, 0)


@dataclass(frozen=True, slots=True)
class DdlEvent:
    at: At
    where: str  # file:pos
    sql: str
    db: str


@dataclass(slots=True)
class Epoch:
    """One definition of a table and the positions it applied to: from `start` (the DDL that
    began it; BEFORE_RANGE for the first) up to the next epoch's start."""

    start: At
    where: str  # "" for the first epoch, else the DDL's file:pos
    ddl: str  # that DDL's text ("" for the first)
    name: TableName
    schema: TableSchema | None  # None: the table did not exist, or its definition is unknown (`problem`)
    today: list[str | None] = field(default_factory=list)  # per column: its name at the anchor, or None
    problem: str = ""
    ops: list[TableOp] = field(default_factory=list)  # what the DDL that began this epoch did

    @property
    def exists(self) -> bool:
        return self.schema is not None or bool(self.problem)

    def describe(self) -> str:
        if self.schema is None:
            return self.problem or "(no such table)"
        cols = ", ".join(f"{c.name} {c.data_type or '?'}" for c in self.schema.columns)
        return f"{self.name[0]}.{self.name[1]}({cols})"


@dataclass(slots=True)
class Timeline:
    """A table's definitions in binlog order; `anchor` is its name at the end."""

    anchor: TableName
    epochs: list[Epoch]
    anchor_schema: TableSchema | None = None

    def at(self, where: At) -> Epoch:
        found = self.epochs[0]
        for epoch in self.epochs:
            if epoch.start <= where:
                found = epoch
        return found

    def to_dict(self) -> dict[str, Any]:
        out = []
        for index, epoch in enumerate(self.epochs):
            until = self.epochs[index + 1].where if index + 1 < len(self.epochs) else "the anchor"
            out.append(
                {
                    "from": epoch.where or "the range's start",
                    "until": until,
                    "table": f"{epoch.name[0]}.{epoch.name[1]}",
                    "definition": epoch.describe(),
                    "ddl": shorten(epoch.ddl, 160) if epoch.ddl else "",
                }
            )
        return {"table": f"{self.anchor[0]}.{self.anchor[1]}", "epochs": out}


class HistoryError(Exception):
    """A DDL the history cannot read on a table it needs (message names it and its position)."""


Anchor = Callable[[str, str], TableSchema | None]
MapsOf = Callable[[TableName, At, At], list[TableMap]]  # a table's maps between two positions


def build_timeline(
    seen: TableName, seen_at: At, anchor: Anchor, ddl: list[DdlEvent], maps_between: MapsOf
) -> Timeline:
    """The timeline of the table that rows events name `seen` at `seen_at`."""
    parsed = [(event, parse_ddl_ops(event.sql, event.db)) for event in ddl]
    # Its name at the anchor: follow the renames after `seen_at`.
    name: TableName | None = seen
    for event, ops in parsed:
        if event.at <= seen_at:
            continue
        for op in ops:
            if name is None:
                break
            if isinstance(op, RenameTable) and _same(op.old, name):
                name = op.new
            elif (isinstance(op, DropTable) and _same(op.table, name)) or (
                isinstance(op, DropDatabase) and op.database == name[0]
            ):
                name = None
    end_name = name if name is not None else seen
    found = anchor(*end_name) if name is not None else None
    schema = _copy(found) if found is not None else None
    today: list[str | None] = [c.name for c in schema.columns] if schema is not None else []
    problem = "" if schema is not None else f"dropped after {_where(seen_at)}: no anchor describes it"
    epochs: list[Epoch] = []
    current = end_name
    for event, ops in reversed(parsed):
        mine = [op for op in ops if _concerns(op, current)]
        unparsed = [op for op in ops if isinstance(op, Unparsed)]
        if unparsed and ddl_targets(event.sql, event.db).touches(*current):
            epochs.append(Epoch(event.at, event.where, event.sql, current, schema, today, problem, list(ops)))
            schema, today = None, []
            problem = f"DDL at {event.where} the schema history cannot read ({unparsed[0].reason}): {shorten(event.sql, 120)}"
            continue
        if not mine:
            continue
        epochs.append(Epoch(event.at, event.where, event.sql, current, schema, today, problem, mine))
        lower_maps = _maps_before(maps_between, event, parsed, current)
        for op in reversed(mine):
            current, schema, today, problem = _undo(op, current, schema, today, problem, event, lower_maps)
    epochs.append(Epoch(BEFORE_RANGE, "", "", current, schema, today, problem))
    epochs.reverse()
    return Timeline(end_name, epochs, found)


def _where(at: At) -> str:
    return f"position {at[1]}"


def _same(a: TableName, b: TableName) -> bool:
    return a[1] == b[1] and a[0] in ("", b[0])


def _concerns(op: TableOp, name: TableName) -> bool:
    if isinstance(op, RenameTable):
        return _same(op.new, name) or _same(op.old, name)
    if isinstance(op, CreateTable | DropTable | TruncateTable | AlterTable):
        return _same(op.table, name)
    if isinstance(op, DropDatabase):
        return op.database == name[0]
    return False


def _maps_before(
    maps_between: MapsOf, event: DdlEvent, parsed: list[tuple[DdlEvent, list[TableOp]]], name: TableName
) -> Callable[[TableName], list[TableMap]]:
    """The table maps written under a name between the DDL before `event` on it and `event`."""
    lower = BEFORE_RANGE
    for other, ops in parsed:
        if other.at < event.at and any(_concerns(op, name) for op in ops):
            lower = other.at
    return lambda current: maps_between(current, lower, event.at)


def _copy(schema: TableSchema) -> TableSchema:
    return replace(schema, columns=[replace(c) for c in schema.columns], unique_keys=list(schema.unique_keys))


def _index(schema: TableSchema, name: str) -> int | None:
    for i, column in enumerate(schema.columns):
        if column.name.lower() == name.lower():
            return i
    return None


def _undo(
    op: TableOp,
    name: TableName,
    schema: TableSchema | None,
    today: list[str | None],
    problem: str,
    event: DdlEvent,
    maps_before: Callable[[TableName], list[TableMap]],
) -> tuple[TableName, TableSchema | None, list[str | None], str]:
    """The table as it was before `op` (its name, definition, today's names, why unknown)."""
    if isinstance(op, RenameTable):
        if _same(op.new, name):
            old = (op.old[0] or name[0], op.old[1])
            if schema is not None:
                schema = replace(_copy(schema), database=old[0], table=old[1])
            return old, schema, today, problem
        return name, schema, today, problem
    if isinstance(op, CreateTable):
        return name, None, [], ""  # before its CREATE the table did not exist
    if isinstance(op, DropTable | DropDatabase):
        return name, None, [], f"dropped at {event.where}: its definition before that is not known"
    if isinstance(op, TruncateTable) or schema is None:
        return name, schema, today, problem
    assert isinstance(op, AlterTable)
    schema = _copy(schema)
    today = list(today)
    for action in reversed(op.actions):
        if isinstance(action, KeepColumns):
            continue
        if isinstance(action, AddColumn):
            i = _index(schema, action.column.name)
            if i is None:
                return (
                    name,
                    None,
                    [],
                    f"column `{action.column.name}` added at {event.where} is not in the definition after it",
                )
            _remove(schema, i)
            del today[i]
        elif isinstance(action, RenameColumn):
            i = _index(schema, action.new)
            if i is None:
                return (
                    name,
                    None,
                    [],
                    f"column `{action.new}` renamed at {event.where} is not in the definition after it",
                )
            schema.columns[i].name = action.old
        elif isinstance(action, ModifyColumn):
            i = _index(schema, action.column.name)
            if i is None:
                return (
                    name,
                    None,
                    [],
                    f"column `{action.column.name}` changed at {event.where} is not in the definition after it",
                )
            column = schema.columns[i]
            column.name = action.old
            column.data_type = column.column_type = ""  # its type before: the table map says
            if action.position is not None:
                moved, was = column, today[i]
                _remove(schema, i)
                del today[i]
                placed = _place(schema, moved, maps_before(name))
                if placed is None:
                    return name, None, [], _unplaced(moved.name, "moved", event)
                _insert(schema, placed, moved)
                today.insert(placed, was)
        elif isinstance(action, DropColumn):
            lost = Column(action.name)
            placed = _place(schema, lost, maps_before(name))
            if placed is None:
                return name, None, [], _unplaced(action.name, "dropped", event)
            _insert(schema, placed, lost)
            today.insert(placed, None)
    return name, schema, today, problem


def _unplaced(column: str, what: str, event: DdlEvent) -> str:
    return (
        f"where column `{column}` was before it was {what} at {event.where} cannot be told from the table maps "
        f"({shorten(event.sql, 100)}); give the definition as of the incident with --schema-file"
    )


def _remove(schema: TableSchema, index: int) -> None:
    del schema.columns[index]
    shift = lambda key: tuple(k - (k > index) for k in key if k != index)  # noqa: E731
    schema.primary_key = shift(schema.primary_key) if index not in schema.primary_key else ()
    schema.unique_keys = [shift(k) for k in schema.unique_keys if index not in k]


def _insert(schema: TableSchema, index: int, column: Column) -> None:
    schema.columns.insert(index, column)
    shift = lambda key: tuple(k + (k >= index) for k in key)  # noqa: E731
    schema.primary_key = shift(schema.primary_key)
    schema.unique_keys = [shift(k) for k in schema.unique_keys]


def _place(schema: TableSchema, column: Column, maps: list[TableMap]) -> int | None:
    """Where `column` fits among the others so that every table map's types agree; None unless exactly
    one place does (or no map shows the table, and then no rows need the definition: the end)."""
    if not maps:
        return len(schema.columns)
    fits = []
    for index in range(len(schema.columns) + 1):
        trial = list(schema.columns)
        trial.insert(index, column)
        if all(_agrees(trial, tmap) for tmap in maps):
            fits.append(index)
    if len(fits) == 1:
        return fits[0]
    names = {tuple(n.lower() for n in tmap.column_names) for tmap in maps if tmap.column_names}
    for index in fits:  # FULL metadata names the columns: the place is where the name is
        order = tuple(
            [
                *(c.name.lower() for c in schema.columns[:index]),
                column.name.lower(),
                *(c.name.lower() for c in schema.columns[index:]),
            ]
        )
        if order in names:
            return index
    return None


def _agrees(columns: list[Column], tmap: TableMap) -> bool:
    if len(columns) != tmap.column_count:
        return False
    real = tmap.real_types
    for i, column in enumerate(columns):
        allowed = _COMPATIBLE.get(column.data_type)
        if allowed is not None and real[i] not in allowed:
            return False
    return True
