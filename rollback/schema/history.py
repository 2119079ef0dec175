"""Schema history: each table's definition at every position of a range, rebuilt from an anchor.

The anchor is the table as a schema source describes it at the end (a live server's
information_schema now, or a DDL file). The DDL the binlog holds between the range's first event
and the anchor (QUERY events, read by rollback.schema.operations) is undone from the end backwards: an
ADD COLUMN removes the column again, a RENAME COLUMN or RENAME TABLE takes the old name back, a
MODIFY/CHANGE takes the old name back and forgets the old type (the table map carries it), a
CREATE TABLE ends the table's past. Where a DDL alone cannot say what the table was before it (a
DROP COLUMN or a FIRST/AFTER move: where was the column?), the table map of the rows written
before it settles the place when exactly one place fits its column types; otherwise that
definition is unknown and a rows event that needs it is refused, naming the DDL.

Every column of every definition remembers its name at the anchor (None: dropped later), which is
what `--ddl keep` maps old row images to today's columns by.

Where the binlog read holds the table's CREATE TABLE (in the range, after it, or in the range's first
file before it), the history is also built forward from it, exactly as the server ran each DDL: each
column's whole definition (charset, default, comment: what a MODIFY back needs) and the table's keys
by the names the server gave them. The definitions walked back from the anchor are completed from it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from rollback.base.identifiers import quote_ident
from rollback.binlog.table_map import TableMap
from rollback.schema.ddl import ddl_targets, shorten
from rollback.schema.operations import (
    AddColumn,
    AddKey,
    AlterTable,
    CreateTable,
    DropColumn,
    DropDatabase,
    DropKey,
    DropTable,
    KeepColumns,
    ModifyColumn,
    Position,
    RenameColumn,
    RenameTable,
    TableName,
    TableOp,
    TableOptions,
    TruncateTable,
    Unparsed,
    named_key,
    parse_ddl_ops,
    server_key_name,
    split_commas,
)
from rollback.schema.tables import _COMPATIBLE, Column, TableSchema


@lru_cache(maxsize=4096)
def _ops(sql: str, db: str) -> tuple[TableOp, ...]:
    """parse_ddl_ops, once per statement (a history reads each DDL once per table it follows)."""
    return tuple(parse_ddl_ops(sql, db))


At = tuple[int, int]  # (file index in the range's order, position); DDL after the range sort after it
BEFORE_RANGE: At = (-1, 0)
PRE_RANGE = -2  # the file index of DDL read before the range (in its first file): before BEFORE_RANGE
RANGE_START: At = (-1, 1)  # after every DDL before the range, before every position in it
FORWARD_START: At = (-3, 0)  # a forward history's first epoch (before its CREATE TABLE)


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


MAX_CANDIDATES = 256  # definitions followed at once while the table maps have not settled a column's place


@dataclass(slots=True)
class _Path:
    """One candidate past of the table, walked backwards: its state now and the epochs found so far."""

    name: TableName
    schema: TableSchema | None
    today: list[str | None]
    problem: str
    epochs: list[Epoch] = field(default_factory=list)


def build_timeline(
    seen: TableName, seen_at: At, anchor: Anchor, ddl: list[DdlEvent], maps_between: MapsOf
) -> Timeline:
    """The timeline of the table that rows events name `seen` at `seen_at`.

    A DROP COLUMN or a FIRST/AFTER move, undone, could have been at any place: each place is a
    candidate past, and the table maps of each epoch keep the candidates whose definition agrees with
    them (count, types, and names when FULL metadata has them). An epoch whose surviving candidates
    disagree is unknown, naming the DDL that left the doubt."""
    parsed = [(event, list(_ops(event.sql, event.db))) for event in ddl]
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
    paths = [_Path(end_name, schema, today, problem)]
    doubt = ""  # the last DDL that left more than one candidate
    for event, ops in reversed(parsed):
        grown: list[_Path] = []
        for path in paths:
            current = path.name
            mine = [op for op in ops if _concerns(op, current)]
            unparsed = [op for op in ops if isinstance(op, Unparsed)]
            if unparsed and ddl_targets(event.sql, event.db).touches(*current):
                path.epochs.append(
                    Epoch(
                        event.at,
                        event.where,
                        event.sql,
                        current,
                        path.schema,
                        path.today,
                        path.problem,
                        list(ops),
                    )
                )
                reason = unparsed[0].reason
                path.schema, path.today = None, []
                path.problem = f"DDL at {event.where} the schema history cannot read ({reason}): {shorten(event.sql, 120)}"
                grown.append(path)
                continue
            if not mine:
                grown.append(path)
                continue
            path.epochs.append(
                Epoch(event.at, event.where, event.sql, current, path.schema, path.today, path.problem, mine)
            )
            states = [(current, path.schema, path.today, path.problem)]
            for op in reversed(mine):
                states = [after for state in states for after in _undo(op, *state, event)]
            for state_name, state_schema, state_today, state_problem in states:
                grown.append(_Path(state_name, state_schema, state_today, state_problem, list(path.epochs)))
        if len(grown) > len(paths):
            doubt = f"DDL at {event.where}: {shorten(event.sql, 100)}"
        paths = (_agreeing(grown, maps_between) or [_lost(grown[0], doubt)]) if len(grown) > 1 else grown
        if len(paths) > MAX_CANDIDATES:
            paths = paths[:1]
            paths[0].schema, paths[0].today = None, []
            paths[0].problem = f"too many possible definitions before the {doubt}"
    for path in paths:
        path.epochs.append(Epoch(BEFORE_RANGE, "", "", path.name, path.schema, path.today, path.problem))
    if len(paths) > 1:
        paths = _agreeing(paths, maps_between) or [_lost(paths[0], doubt)]
    for path in paths:
        path.epochs.reverse()
    return Timeline(end_name, _settled(paths, doubt), found)


def _lost(path: _Path, doubt: str) -> _Path:
    """No candidate agrees with the table maps: the definitions from the doubt back are unknown."""
    why = f"no definition before the {doubt} agrees with the table maps; give it with --schema-file"
    epochs = [*path.epochs[:-1], replace(path.epochs[-1], schema=None, today=[], problem=why)]
    return _Path(path.name, None, [], why, epochs)


def _agreeing(paths: list[_Path], maps_between: MapsOf) -> list[_Path]:
    """The candidates whose newest-found epoch (the last appended, walking backwards) agrees with the
    table maps written while it applied; the epochs found before were checked when they were found."""
    kept = []
    for path in paths:
        if not path.epochs:
            kept.append(path)
            continue
        epoch = path.epochs[-1]
        hi = path.epochs[-2].start if len(path.epochs) > 1 else (1 << 30, 0)
        schema = epoch.schema
        if schema is None or all(
            _agrees(schema.columns, tmap) for tmap in maps_between(epoch.name, epoch.start, hi)
        ):
            kept.append(path)
    return kept


def _settled(paths: list[_Path], doubt: str) -> list[Epoch]:
    """One epoch list: where the surviving candidates disagree, the definition is unknown."""
    epochs = paths[0].epochs
    if len(paths) == 1:
        return epochs
    out = []
    for index, epoch in enumerate(epochs):
        shapes = {_shape(p.epochs[index]) for p in paths}
        if len(shapes) == 1:
            out.append(epoch)
            continue
        out.append(
            replace(
                epoch,
                schema=None,
                today=[],
                problem=f"the table maps do not tell where a column was before the {doubt}; give the "
                "definition as of the incident with --schema-file",
            )
        )
    return out


def _shape(epoch: Epoch) -> tuple[Any, ...]:
    if epoch.schema is None:
        return (epoch.problem,)
    return tuple((c.name.lower(), c.data_type) for c in epoch.schema.columns) + tuple(epoch.today)


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


def _copy(schema: TableSchema) -> TableSchema:
    keys = dict(schema.keys) if schema.keys is not None else None
    options = dict(schema.options) if schema.options is not None else None
    return replace(
        schema,
        columns=[replace(c) for c in schema.columns],
        unique_keys=list(schema.unique_keys),
        keys=keys,
        options=options,
    )


def _index(schema: TableSchema, name: str) -> int | None:
    for i, column in enumerate(schema.columns):
        if column.name.lower() == name.lower():
            return i
    return None


State = tuple[TableName, TableSchema | None, list[str | None], str]


def _undo(
    op: TableOp,
    name: TableName,
    schema: TableSchema | None,
    today: list[str | None],
    problem: str,
    event: DdlEvent,
) -> list[State]:
    """The table as it may have been before `op` (name, definition, today's names, why unknown): one
    state, or one per place a dropped or moved column may have had."""
    if isinstance(op, RenameTable):
        if _same(op.new, name):
            old = (op.old[0] or name[0], op.old[1])
            if schema is not None:
                schema = replace(_copy(schema), database=old[0], table=old[1])
            return [(old, schema, today, problem)]
        return [(name, schema, today, problem)]
    if isinstance(op, CreateTable):
        return [(name, None, [], "")]  # before its CREATE the table did not exist
    if isinstance(op, DropTable | DropDatabase):
        return [(name, None, [], f"dropped at {event.where}: its definition before that is not known")]
    if isinstance(op, TruncateTable) or schema is None:
        return [(name, schema, today, problem)]
    assert isinstance(op, AlterTable)
    states: list[tuple[TableSchema, list[str | None]]] = [(_copy(schema), list(today))]
    for action in reversed(op.actions):
        if isinstance(action, KeepColumns | AddKey | DropKey | TableOptions):
            continue  # columns' names, order and types stay (keys, options: followed forward)
        following: list[tuple[TableSchema, list[str | None]]] = []
        for current, names in states:
            if isinstance(action, AddColumn | RenameColumn | ModifyColumn):
                wanted = action.column.name if isinstance(action, AddColumn | ModifyColumn) else action.new
                i = _index(current, wanted)
                if i is None:
                    why = f"column `{wanted}` of the DDL at {event.where} is not in the definition after it"
                    return [(name, None, [], why)]
                if isinstance(action, AddColumn):
                    _remove(current, i)
                    del names[i]
                    following.append((current, names))
                elif isinstance(action, RenameColumn):
                    current.columns[i].name = action.old
                    following.append((current, names))
                else:
                    column = current.columns[i]
                    column.name = action.old
                    column.data_type = column.column_type = ""  # its type before: the table map says
                    column.definition = ""
                    column.unsure_sign = f"DDL at {event.where} ({shorten(event.sql, 100)})"
                    if action.position is None:
                        following.append((current, names))
                        continue
                    was = names[i]
                    _remove(current, i)
                    del names[i]
                    following.extend(_everywhere(current, names, column, was))
            else:
                assert isinstance(action, DropColumn)
                following.extend(_everywhere(current, names, Column(action.name), None))
        states = following
    return [(name, s, t, problem) for s, t in states]


def _everywhere(
    schema: TableSchema, today: list[str | None], column: Column, was: str | None
) -> list[tuple[TableSchema, list[str | None]]]:
    """`column` at every place among the others: the candidates the table maps choose from."""
    out = []
    for index in range(len(schema.columns) + 1):
        trial = _copy(schema)
        _insert(trial, index, replace(column))
        names = list(today)
        names.insert(index, was)
        out.append((trial, names))
    return out


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


def _agrees(columns: list[Column], tmap: TableMap) -> bool:
    if len(columns) != tmap.column_count:
        return False
    if tmap.column_names and [c.name.lower() for c in columns] != [n.lower() for n in tmap.column_names]:
        return False
    real = tmap.real_types
    for i, column in enumerate(columns):
        allowed = _COMPATIBLE.get(column.data_type)
        if allowed is not None and real[i] not in allowed:
            return False
    return True


def fill_from_creates(timeline: Timeline, ddl: list[DdlEvent]) -> None:
    """What the backward walk cannot know, from the history built forward from a CREATE TABLE of the
    same table in the DDL (exact: the statements the server ran), where one covers it: definitions it
    left unknown, and of the known ones each column's full definition (default, charset, comment: what
    a MODIFY back needs) and the table's keys. `ddl` may start before the range (`PRE_RANGE`)."""
    anchor_names = (
        {c.name.lower() for c in timeline.anchor_schema.columns} if timeline.anchor_schema else set()
    )
    for index, event in enumerate(ddl):
        if not any(isinstance(op, CreateTable) for op in _ops(event.sql, event.db)):
            continue
        forward = forward_timeline(index, ddl)
        if forward is None:
            continue
        for epoch in timeline.epochs:
            found = forward.at(max(epoch.start, RANGE_START))
            if found.schema is None or found.start == FORWARD_START or found.name != epoch.name:
                continue
            if epoch.schema is not None:
                _complete(epoch.schema, found.schema)
                continue
            if not epoch.problem or forward.epochs[-1].problem:
                continue  # (a forward history that ends unknown cannot say today's names)
            if timeline.anchor_schema is not None and not all(
                name is None or name.lower() in anchor_names for name in found.today
            ):
                continue  # the forward history does not end as the anchor's table: no lineage to follow
            epoch.schema = _copy(found.schema)
            epoch.today = list(found.today)
            epoch.problem = ""


def _complete(schema: TableSchema, exact: TableSchema) -> None:
    """`schema` (walked back from the anchor) completed from `exact` (built forward) when both are the
    same columns in the same order, with no type they disagree on."""
    if [c.name.lower() for c in schema.columns] != [c.name.lower() for c in exact.columns]:
        return
    pairs = list(zip(schema.columns, exact.columns, strict=True))
    if any(
        mine.data_type and theirs.data_type and mine.data_type != theirs.data_type for mine, theirs in pairs
    ):
        return
    for mine, theirs in pairs:
        if not mine.definition and theirs.definition:
            mine.definition = theirs.definition
        if not mine.data_type and theirs.data_type:
            mine.data_type, mine.column_type = theirs.data_type, theirs.column_type
            mine.unsigned, mine.nullable, mine.charset = theirs.unsigned, theirs.nullable, theirs.charset
            mine.unsure_sign = ""
    if schema.keys is None and exact.keys is not None:
        schema.keys = dict(exact.keys)
    if schema.options is None and exact.options is not None:
        schema.options = dict(exact.options)


# ---- forward, from a CREATE TABLE the binlog holds --------------------------------------------------


def forward_timeline(created: int, ddl: list[DdlEvent]) -> Timeline | None:
    """The timeline of the table that DDL `created` (a CREATE TABLE with its columns) made, applying the
    DDL after it forward: exact where a DDL alone says what the table became (no table map needed).
    None when that statement is no such CREATE TABLE."""
    event = ddl[created]
    ops = list(_ops(event.sql, event.db))
    create = next((op for op in ops if isinstance(op, CreateTable) and op.columns is not None), None)
    if create is None or create.columns is None:
        return None
    name = create.table
    schema: TableSchema | None = TableSchema(
        name[0],
        name[1],
        [replace(c) for c in create.columns],
        create.primary_key,
        list(create.unique_keys),
        source="ddl",
        keys=dict(create.keys) if create.keys is not None else None,
        options=dict(create.options),
    )
    ids = list(range(len(create.columns)))
    next_id = len(ids)
    epochs = [
        Epoch(FORWARD_START, "", "", name, None),
        Epoch(event.at, event.where, event.sql, name, schema, [], "", list(ops)),
    ]
    id_lists = [[], list(ids)]
    problem = ""
    for later in ddl[created + 1 :]:
        ops = list(_ops(later.sql, later.db))
        unparsed = [op for op in ops if isinstance(op, Unparsed)]
        if unparsed and ddl_targets(later.sql, later.db).touches(*name):
            problem = f"DDL at {later.where} the schema history cannot read ({unparsed[0].reason}): {shorten(later.sql, 120)}"
            epochs.append(Epoch(later.at, later.where, later.sql, name, None, [], problem, list(ops)))
            id_lists.append([])
            break
        mine = [op for op in ops if _concerns(op, name)]
        if not mine or schema is None:
            continue
        for op in mine:
            if schema is None:
                break
            if isinstance(op, RenameTable) and _same(op.old, name):
                name = (op.new[0] or name[0], op.new[1])
                schema = replace(_copy(schema), database=name[0], table=name[1])
            elif isinstance(op, DropTable | DropDatabase | CreateTable):
                schema, ids = None, []
            elif isinstance(op, AlterTable):
                schema, ids, next_id, problem = _apply(op, schema, ids, next_id, later)
        epochs.append(Epoch(later.at, later.where, later.sql, name, schema, [], problem, mine))
        id_lists.append(list(ids))
        if schema is None:
            break
    # Today's name of each column: its name in the last definition (the anchor is the table after it).
    final = (
        {i: c.name for i, c in zip(id_lists[-1], epochs[-1].schema.columns, strict=True)}
        if epochs[-1].schema
        else {}
    )
    for epoch, column_ids in zip(epochs, id_lists, strict=True):
        epoch.today = [final.get(i) for i in column_ids]
    return Timeline(name, epochs, epochs[-1].schema)


def _apply(
    op: AlterTable, schema: TableSchema, ids: list[int], next_id: int, event: DdlEvent
) -> tuple[TableSchema | None, list[int], int, str]:
    """The table after `op` (column ids follow the columns), or None with why."""
    schema = _copy(schema)
    ids = list(ids)
    for action in op.actions:
        if isinstance(action, AddKey | DropKey):
            _apply_key(schema, action)
            continue
        if isinstance(action, TableOptions):
            _apply_options(schema, action)
            continue
        if isinstance(action, KeepColumns):
            if action.column:  # ALTER COLUMN c SET/DROP DEFAULT: its definition is no longer the DDL's
                i = _index(schema, action.column)
                if i is not None:
                    schema.columns[i].definition = ""
            continue
        if isinstance(action, AddColumn):
            at = _position_index(schema, action.position)
            if at is None:
                return (
                    None,
                    [],
                    next_id,
                    f"ADD COLUMN at {event.where}: no column `{action.position.after}` to add after",
                )
            _insert(schema, at, replace(action.column))
            ids.insert(at, next_id)
            next_id += 1
            continue
        old = action.name if isinstance(action, DropColumn) else action.old
        i = _index(schema, old)
        if i is None:
            return None, [], next_id, f"DDL at {event.where} names a column `{old}` the table does not have"
        if isinstance(action, DropColumn):
            _keys_without(schema, old)
        elif isinstance(action, RenameColumn) or action.column.name.lower() != old.lower():
            _keys_renaming(
                schema, old, action.new if isinstance(action, RenameColumn) else action.column.name
            )
        if isinstance(action, DropColumn):
            _remove(schema, i)
            del ids[i]
        elif isinstance(action, RenameColumn):
            schema.columns[i].name = action.new
        elif isinstance(action, ModifyColumn):
            column_id = ids[i]
            if action.position is None:
                schema.columns[i] = replace(action.column)
                continue
            _remove(schema, i)
            del ids[i]
            at = _position_index(schema, action.position)
            if at is None:
                return (
                    None,
                    [],
                    next_id,
                    f"CHANGE/MODIFY at {event.where}: no column `{action.position.after}`",
                )
            _insert(schema, at, replace(action.column))
            ids.insert(at, column_id)
    return schema, ids, next_id, ""


def _apply_options(schema: TableSchema, action: TableOptions) -> None:
    kinds = {kind for kind, _text in action.options}
    if kinds & {"charset", "collate"}:
        # a new table character set: a column definition that names none now means another
        for column in schema.columns:
            if not re.search(r"\b(?:CHARACTER\s+SET|COLLATE)\b", column.definition, re.IGNORECASE):
                column.definition = ""
    if schema.options is None:
        return
    for kind, text in action.options:
        schema.options[kind] = text
    # A character set alone brings its default collation; a collation alone may bring its character set.
    if "charset" in kinds and "collate" not in kinds:
        schema.options.pop("collate", None)
    if "collate" in kinds and "charset" not in kinds:
        schema.options.pop("charset", None)


def _apply_key(schema: TableSchema, action: AddKey | DropKey) -> None:
    keys = schema.keys
    if keys is None:
        return
    if isinstance(action, DropKey):
        if keys.pop(action.name, None) is None:
            schema.keys = None  # a key the history did not know of: its keys are not known
        return
    name = action.name or server_key_name(keys, action.first_column)
    keys[name] = action.definition if action.name else named_key(action.definition, name)


def _key_parts(definition: str) -> tuple[str, list[str], str] | None:
    """A key definition cut around its column list: (head, the columns' texts, tail)."""
    start = definition.find("(")
    depth = 0
    for i in range(start, len(definition)):
        depth += {"(": 1, ")": -1}.get(definition[i], 0)
        if depth == 0:
            inner = split_commas(definition[start + 1 : i])
            return definition[:start], [c.strip() for c in inner], definition[i + 1 :]
    return None


def _key_column(part: str) -> str:
    """The column a key part names (`b`, `b`(3), b(3) DESC -> b)."""
    name = part.split("(", 1)[0].split()[0] if part.strip() else ""
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def _keys_without(schema: TableSchema, column: str) -> None:
    """A column dropped: the server takes it out of every key, and drops a key left with none."""
    _rewrite_keys(schema, lambda columns: [c for c in columns if _key_column(c).lower() != column.lower()])


def _keys_renaming(schema: TableSchema, old: str, new: str) -> None:
    """A column renamed: the server renames it in every key."""
    quoted = quote_ident(new)
    _rewrite_keys(
        schema,
        lambda columns: [
            quoted + c[len(c.split("(", 1)[0].split()[0]) :] if _key_column(c).lower() == old.lower() else c
            for c in columns
        ],
    )


def _rewrite_keys(schema: TableSchema, rewrite: Callable[[list[str]], list[str]]) -> None:
    """Every key's column list through `rewrite`; a key left with no column is dropped, and keys whose
    definition cannot be read make the keys unknown (None)."""
    if schema.keys is None:
        return
    for name, definition in list(schema.keys.items()):
        parts = _key_parts(definition)
        if parts is None:
            schema.keys = None
            return
        head, columns, tail = parts
        kept = rewrite(columns)
        if not kept:
            del schema.keys[name]
        elif kept != columns:
            schema.keys[name] = f"{head}({', '.join(kept)}){tail}"


def _position_index(schema: TableSchema, position: Position) -> int | None:
    if position.first:
        return 0
    if position.after is None:
        return len(schema.columns)
    i = _index(schema, position.after)
    return None if i is None else i + 1
