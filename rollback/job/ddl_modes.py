"""`--ddl keep` and `--ddl reverse`: the schema each rows event is decoded and written with, and
the inverse DDL a reverse puts back at its place.

The job gives the DDL in the range (the planner's) and after it up to the schema source (the
binlog read after the range), and the table maps the range wrote, one per signature and schema
epoch. For every table the range changed, rollback.schema.history rebuilds its timeline from the
schema source (the anchor, at the end); then each (table map, position) gets:

- the definition valid at its position, checked against the map (count and types always, names
  when FULL metadata has them: a difference is a SchemaMismatch naming both);
- with `keep`, that definition mapped to today's table by column lineage: today's names and
  table name, a column dropped since marked `dropped` (never written or compared, reported), a
  column whose type changed since accepted only when today's type holds every old value;
- with `reverse`, that definition as it was (the inverse DDL after it in the script puts the table
  back as it was when the statements run). The inverse of each DDL is built from the definitions
  before it (columns and keys exactly as the binlog's DDL gave them); a DROP TABLE of a table that
  was empty is undone by its CREATE TABLE and the DDL on it since, as the server ran them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from rollback.base.errors import DDLInRange, SchemaMismatch
from rollback.binlog.constants import ColumnType as T
from rollback.binlog.table_map import TableMap
from rollback.pipeline.plan import PartitionPlan, SchemaKey, schema_key
from rollback.render.sql import quote_ident
from rollback.schema.ddl import shorten
from rollback.schema.history import (
    PRE_RANGE,
    At,
    DdlEvent,
    Epoch,
    Timeline,
    build_timeline,
    fill_from_creates,
    forward_timeline,
)
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
    RenameColumn,
    RenameTable,
    TableName,
    TableOp,
    TableOptions,
    TruncateTable,
    parse_ddl_ops,
    server_key_name,
)
from rollback.schema.tables import _COMPATIBLE, Column, SchemaSource, TableSchema, check_schema

# per signature: (epoch start, schema or refusal message) in binlog order; the partition picks the
# last one that starts at or before a rows event
EpochSchemas = dict[SchemaKey, list[tuple[At, TableSchema | str | None]]]
AFTER_RANGE = 1 << 20  # the file index DDL read after the range sorts at


@dataclass
class DdlPlan:
    timelines: list[Timeline] = field(default_factory=list)
    schemas: EpochSchemas = field(default_factory=dict)
    inverse: dict[tuple[int, int], str] = field(default_factory=dict)  # (file index, pos) -> inverse DDL
    notes: list[str] = field(default_factory=list)


def ddl_events(plan: PartitionPlan, later: list[tuple[str, str, str, int]]) -> list[DdlEvent]:
    """The DDL in the range (the planner's) and after it (sql, db, file, pos), in log order."""
    events = [DdlEvent((fi, pos), f"{label}:{pos}", sql, db or "") for fi, pos, label, sql, db in plan.ddl]
    for k, (sql, db, file, pos) in enumerate(later):
        events.append(DdlEvent((AFTER_RANGE + k, pos), f"{file}:{pos}", sql, db))
    return events


@dataclass
class BeforeRange:
    """The range's first file before the range: its DDL (at file index PRE_RANGE) and the tables its
    rows events wrote (position, db, table): where a table's history can start forward from its CREATE."""

    ddl: list[DdlEvent] = field(default_factory=list)
    maps: list[tuple[At, str, str]] = field(default_factory=list)

    @classmethod
    def read(cls, ddl: list[tuple[str, str, str, int]], maps: list[tuple[str, str, int]]) -> BeforeRange:
        """From (sql, db, file, pos) and (db, table, pos) in log order."""
        return cls(
            [DdlEvent((PRE_RANGE, pos), f"{file}:{pos}", sql, db) for sql, db, file, pos in ddl],
            [((PRE_RANGE, pos), db, table) for db, table, pos in maps],
        )


def plan_ddl(
    mode: str,
    plan: PartitionPlan,
    events: list[DdlEvent],
    source: SchemaSource | None,
    selected: Any,
    before: BeforeRange | None = None,
) -> DdlPlan:
    """Timelines and per-epoch schemas of the selected tables; refusals of what `mode` cannot do."""
    before = before or BeforeRange()
    known = [*before.ddl, *events]  # what a history built forward from a CREATE TABLE may start from
    out = DdlPlan()
    maps: dict[tuple[str, str], list[tuple[At, TableMap]]] = {}
    for fi, pos, tmap in plan.map_epochs:
        if selected(tmap):
            maps.setdefault((tmap.database.lower(), tmap.table.lower()), []).append(((fi, pos), tmap))

    def anchor(db: str, table: str) -> TableSchema | None:
        return source.lookup(db, table) if source is not None else None

    def maps_between(name: tuple[str, str], lo: At, hi: At) -> list[TableMap]:
        return [tmap for at, tmap in maps.get(name, []) if lo <= at < hi]

    by_anchor: dict[tuple[str, str], Timeline] = {}
    for name, seen in maps.items():
        timeline = build_timeline(name, seen[0][0], anchor, events, maps_between)
        fill_from_creates(timeline, known)
        timeline = by_anchor.setdefault(timeline.anchor, timeline)
        for at, tmap in seen:
            epoch = timeline.at(at)
            _fill_from_map(epoch, tmap)
            out.schemas.setdefault(schema_key(tmap), []).append(
                (at, _epoch_schema(mode, timeline, epoch, tmap, at))
            )
    in_range = {(fi, pos) for fi, pos, _label, _sql, _db in plan.ddl}  # where the range's DDL are
    if mode == "reverse":
        _ddl_only_tables(in_range, events, known, anchor, maps_between, selected, by_anchor)
    out.timelines = [t for t in by_anchor.values() if len(t.epochs) > 1]
    for key in out.schemas:
        out.schemas[key].sort(key=lambda item: item[0])
    if mode == "reverse":
        written = [
            ((fi, pos), tmap.database.lower(), tmap.table.lower()) for fi, pos, tmap in plan.map_epochs
        ]
        recreate = _recreations(in_range, known, [*before.maps, *written])
        for timeline in out.timelines:
            _inverse(timeline, out.inverse, in_range, recreate)
    return out


class _Named:
    """A table name where the filters expect a table map (Filters.table_selected)."""

    def __init__(self, name: TableName) -> None:
        self.database, self.table = name


def _op_tables(op: TableOp) -> list[TableName]:
    if isinstance(op, RenameTable):
        return [op.old]
    if isinstance(op, CreateTable | DropTable | TruncateTable | AlterTable):
        return [op.table]
    return []


def _ddl_only_tables(
    in_range: set[At],
    events: list[DdlEvent],
    known: list[DdlEvent],
    anchor: Any,
    maps_between: Any,
    selected: Any,
    by_anchor: dict[tuple[str, str], Timeline],
) -> None:
    """`--ddl reverse` returns the selected tables' schema to the range's start: a table the range only
    altered, created or dropped (no row of it changed) gets its timeline too, so its DDL is undone."""
    for event in events:
        if event.at not in in_range:
            continue
        for op in parse_ddl_ops(event.sql, event.db):
            for name in _op_tables(op):
                name = (name[0] or event.db.lower(), name[1])
                covered = any(
                    any(e.name == name and e.start <= event.at for e in t.epochs) for t in by_anchor.values()
                )
                if covered or not selected(_Named(name)):
                    continue
                seen_at = (event.at[0], event.at[1] - 1)  # just before it: the DDL itself is after
                timeline = build_timeline(name, seen_at, anchor, events, maps_between)
                fill_from_creates(timeline, known)
                by_anchor.setdefault(timeline.anchor, timeline)


def _recreations(
    in_range: set[At], known: list[DdlEvent], written: list[tuple[At, str, str]]
) -> dict[At, list[str]]:
    """Per DROP TABLE in the range: the statements that create the table again as it was when
    dropped, where the binlog read holds its CREATE TABLE, every DDL on it since is about it alone, and
    no rows event wrote it between the two (it was empty): that CREATE and those DDL, as the server ran
    them."""
    by_at = {event.at: event for event in known}
    out: dict[At, list[str]] = {}
    for index, event in enumerate(known):
        create = next((op for op in parse_ddl_ops(event.sql, event.db) if isinstance(op, CreateTable)), None)
        if create is None or create.replace:
            continue
        forward = forward_timeline(index, known)
        if forward is None or len(forward.epochs) < 3:
            continue
        drop, chain = forward.epochs[-1], forward.epochs[1:-1]
        if drop.schema is not None or drop.problem or drop.start not in in_range:
            continue
        if not any(isinstance(op, DropTable) for op in drop.ops):
            continue
        names = {e.name for e in chain}
        if any(e.schema is None or e.problem for e in chain):
            continue
        if any(event.at < at < drop.start and (db, table) in names for at, db, table in written):
            continue
        statements = []
        for epoch in chain:
            ran = by_at[epoch.start]
            ops = parse_ddl_ops(ran.sql, ran.db)
            if len(ops) != len(epoch.ops) or any(isinstance(op, DropDatabase) for op in ops):
                break  # a statement about other tables too: not replayed alone
            use = f"USE {quote_ident(ran.db)};\n" if ran.db else ""
            statements.append(f"{use}{ran.sql.strip().rstrip(';')};")
        else:
            out[drop.start] = statements
    return out


_INT_NAMES: dict[int, str] = {
    T.TINY: "tinyint",
    T.SHORT: "smallint",
    T.INT24: "mediumint",
    T.LONG: "int",
    T.LONGLONG: "bigint",
}


# Type names a table-map type code can only be (the description and the check of a forgotten type).
_ONLY_NAME: dict[int, str] = {
    T.DATE: "date",
    T.NEWDATE: "date",
    T.DATETIME2: "datetime",
    T.TIMESTAMP2: "timestamp",
    T.TIME2: "time",
    T.YEAR: "year",
    T.NEWDECIMAL: "decimal",
    T.DOUBLE: "double",
    T.FLOAT: "float",
    T.BIT: "bit",
    T.JSON: "json",
    T.VARCHAR: "varchar",
}


def _fill_from_map(epoch: Epoch, tmap: TableMap) -> None:
    """Columns whose type the history forgot (a MODIFY undone, a dropped column): the table map's type;
    integers completely (a reverse MODIFY can write them back), others by name only."""
    if epoch.schema is None or len(epoch.schema.columns) != tmap.column_count:
        return
    real = tmap.real_types
    for i, column in enumerate(epoch.schema.columns):
        if column.unsure_sign and tmap.unsigned is not None:
            column.unsigned, column.unsure_sign = tmap.unsigned[i], ""
        if column.data_type:
            continue
        name = _INT_NAMES.get(real[i])
        if name is not None:
            column.data_type = name
            column.column_type = name + (" unsigned" if column.unsigned else "")
            column.nullable = tmap.nullable[i]
        elif real[i] in _ONLY_NAME:
            column.data_type = _ONLY_NAME[real[i]]


def _epoch_schema(
    mode: str, timeline: Timeline, epoch: Epoch, tmap: TableMap, at: At
) -> TableSchema | str | None:
    where = f"{tmap.qualified_name} at position {at[1]}"
    if epoch.schema is None:
        return f"table {where}: {epoch.problem or 'the schema history has no definition of it there'}"
    schema = replace(epoch.schema, columns=[replace(c) for c in epoch.schema.columns])
    if tmap.column_names:
        mine = [c.name.lower() for c in schema.columns]
        theirs = [n.lower() for n in tmap.column_names]
        if mine != theirs:
            return (
                f"table {where}: the binlog names the columns {', '.join(tmap.column_names)}, the schema history "
                f"{', '.join(c.name for c in schema.columns)} (a DDL the history missed?)"
            )
    real = tmap.real_types
    for i, column in enumerate(schema.columns):
        if column.unsure_sign and real[i] in _INT_RANK:
            return (
                f"table {where}: whether column `{column.name}` was signed before the {column.unsure_sign} "
                "is not in the binlog (its table maps carry no signedness: binlog_row_metadata=MINIMAL or FULL "
                "would); give the definition as of the incident with --schema-file"
            )
    try:
        check_schema(schema, tmap, at[1])
    except SchemaMismatch as exc:
        return str(exc)
    if mode != "keep":
        return schema
    return _keep(timeline, epoch, schema, tmap, where)


_INT_RANK: dict[int, int] = {T.TINY: 1, T.SHORT: 2, T.INT24: 3, T.LONG: 4, T.LONGLONG: 5}
_INT_OF = {
    "tinyint": 1,
    "bool": 1,
    "boolean": 1,
    "smallint": 2,
    "mediumint": 3,
    "int": 4,
    "integer": 4,
    "bigint": 5,
}
_TEXT = {T.VARCHAR, T.VAR_STRING, T.STRING, T.BLOB}


def _keep(
    timeline: Timeline, epoch: Epoch, schema: TableSchema, tmap: TableMap, where: str
) -> TableSchema | str:
    """The definition at `epoch` written as today's table: today's names, dropped columns marked."""
    today = timeline.anchor_schema
    if today is None:
        return f"table {where} no longer exists: --ddl keep has no table to write its rows to"
    index_today = {c.name.lower(): j for j, c in enumerate(today.columns)}
    specs = tmap.specs(schema.unsigned)
    columns: list[Column] = []
    mapped: dict[int, int] = {}  # today's index -> this epoch's
    for i, column in enumerate(schema.columns):
        name = epoch.today[i] if i < len(epoch.today) else None
        if name is None:
            columns.append(replace(column, generated=True, dropped=True))
            continue
        j = index_today[name.lower()]
        now = today.columns[j]
        why = _lossy(specs[i].real_type, specs[i].length, column.unsigned, now, column.charset)
        if why:
            return (
                f"table {where}: column `{column.name}` (today `{now.name}` {now.column_type or now.data_type}) "
                f"{why}; --ddl keep converts a changed type only when no value can be lost"
            )
        columns.append(replace(now, unsigned=column.unsigned if now.data_type == "" else now.unsigned))
        mapped[j] = i

    def key_of(key: tuple[int, ...]) -> tuple[int, ...] | None:
        return tuple(mapped[j] for j in key) if key and all(j in mapped for j in key) else None

    return TableSchema(
        today.database,
        today.table,
        columns,
        key_of(today.primary_key) or (),
        [k for k in map(key_of, today.unique_keys) if k is not None],
        source=schema.source,
    )


_TEXT_TYPES = frozenset(
    {"varchar", "char", "varbinary", "binary", "tinytext", "text", "mediumtext", "longtext"}
    | {"tinyblob", "blob", "mediumblob", "longblob"}
)


def _lossy(real: int, length: int, unsigned: bool, now: Column, charset: str | None = None) -> str:
    """Why today's column cannot hold every value of the old type ("" when it can): integers widen
    (never to unsigned from signed; to signed from unsigned only to a wider type), strings lengthen in
    the same character set (or into utf8mb4), any other type stays in its family."""
    if not now.data_type:
        return ""  # today's type unknown to the source: kept as the binlog wrote it
    old_rank = _INT_RANK.get(real)
    if old_rank is not None:
        new_rank = _INT_OF.get(now.data_type)
        if new_rank is None:
            return f"was an integer and is {now.data_type} today"
        if not unsigned and now.unsigned:
            return "was signed and is unsigned today"
        if new_rank < old_rank or (unsigned and not now.unsigned and new_rank == old_rank):
            return "was a wider integer type"
        return ""
    if real in _TEXT:
        if now.data_type not in _TEXT_TYPES:
            return f"was a string and is {now.data_type} today"
        if charset and now.charset and charset != now.charset and now.charset != "utf8mb4":
            return f"was in {charset} and is in {now.charset} today"
        width = _width(now.column_type)
        if width is not None and real in (T.VARCHAR, T.VAR_STRING) and length > width * 4:
            return f"held up to {length} bytes, more than {now.column_type} can"
        return ""
    allowed = _COMPATIBLE.get(now.data_type)
    if allowed is not None and real not in allowed:
        return f"was of type code {real} and is {now.data_type} today"
    return ""


def _width(column_type: str) -> int | None:
    if "(" not in column_type:
        return None
    inner = column_type.split("(", 1)[1].split(")", 1)[0]
    return int(inner) if inner.isdigit() else None


def dropped_columns(schemas: EpochSchemas) -> list[str]:
    """What --ddl keep cannot write: columns of old images dropped since (table.column)."""
    found: set[str] = set()
    for items in schemas.values():
        for _at, schema in items:
            if isinstance(schema, TableSchema):
                found.update(
                    f"{schema.database}.{schema.table}.{c.name}" for c in schema.columns if c.dropped
                )
    return sorted(found)


# ---- reverse ----------------------------------------------------------------------------------------


def _inverse(
    timeline: Timeline,
    inverse: dict[tuple[int, int], str],
    in_range: set[At],
    recreate: dict[At, list[str]],
) -> None:
    """The inverse of every DDL of the timeline inside the range; DDLInRange for an irreversible one."""
    for index, epoch in enumerate(timeline.epochs):
        if not epoch.where or epoch.start not in in_range:
            continue
        before = timeline.epochs[index - 1]
        statements = []
        for op in reversed(epoch.ops):
            sql, why = _inverse_op(op, before, epoch, recreate.get(epoch.start))
            if sql is None:
                raise DDLInRange(
                    f"--ddl reverse: DDL on {epoch.name[0]}.{epoch.name[1]} at {epoch.where} cannot be reversed "
                    f"({why}): {shorten(epoch.ddl, 160)} — start the range after it, or --ddl keep"
                )
            statements.append(sql)
        # One statement may concern several tables (RENAME TABLE a TO b, c TO d; DROP TABLE a, b).
        done = inverse.get(epoch.start)
        inverse[epoch.start] = "\n".join([*([done] if done else []), *statements])


def _table(name: tuple[str, str]) -> str:
    return f"{quote_ident(name[0])}.{quote_ident(name[1])}"


_NOT_READ = "not in the binlog read (no CREATE TABLE of the table before it in the range or its first file)"


def _inverse_op(
    op: TableOp, before: Epoch, after: Epoch, recreate: list[str] | None
) -> tuple[str | None, str]:
    """The statement that undoes `op` (the table `before` it, `after` it), or None and why not."""
    if isinstance(op, RenameTable):
        return f"RENAME TABLE {_table(after.name)} TO {_table(before.name)};", ""
    if isinstance(op, CreateTable):
        if op.replace:
            return None, "CREATE OR REPLACE TABLE: the table it replaced is not in the binlog"
        # (also CREATE ... LIKE and ... AS SELECT: the rows a CTAS wrote are undone before it)
        return f"DROP TABLE {_table(after.name)};", ""
    if isinstance(op, DropTable):
        if recreate is not None:
            return "\n".join(recreate), ""
        return None, (
            "DROP TABLE: the table had rows or its definition is " + _NOT_READ + "; only an empty table "
            "whose CREATE TABLE the binlog holds is created again"
        )
    if isinstance(op, TruncateTable):
        return None, "TRUNCATE: the table's rows are not in the binlog"
    if not isinstance(op, AlterTable):
        return None, f"{type(op).__name__}: not reversible"
    if before.schema is None:
        return None, f"the table's definition before it is not known ({before.problem or 'no history'})"
    parts = []
    for action in reversed(op.actions):
        part, why = _inverse_action(action, before.schema)
        if part is None:
            return None, why
        parts.append(part)
    return f"ALTER TABLE {_table(after.name)} {', '.join(parts)};", ""


def _inverse_action(action: Any, before: TableSchema) -> tuple[str | None, str]:
    if isinstance(action, AddColumn):
        return f"DROP COLUMN {quote_ident(action.column.name)}", ""
    if isinstance(action, RenameColumn):
        return f"RENAME COLUMN {quote_ident(action.new)} TO {quote_ident(action.old)}", ""
    if isinstance(action, ModifyColumn):
        old = _old_definition(before, action.old)
        if old is None:
            return None, f"MODIFY/CHANGE COLUMN `{action.old}`: its definition before it is {_NOT_READ}"
        return f"CHANGE COLUMN {quote_ident(action.column.name)} {old}", ""
    if isinstance(action, DropColumn):
        return None, f"DROP COLUMN `{action.name}`: the column's values are not in the binlog"
    if isinstance(action, AddKey):
        name = action.name
        if name is None and before.keys is not None:
            name = server_key_name(before.keys, action.first_column)
        if name is None:
            return (
                None,
                f"ADD {action.definition}: the name the server gave it depends on the keys before it, {_NOT_READ}",
            )
        return ("DROP PRIMARY KEY" if name == "primary" else f"DROP INDEX {quote_ident(name)}"), ""
    if isinstance(action, DropKey):
        definition = (before.keys or {}).get(action.name)
        if definition is None:
            what = "PRIMARY KEY" if action.name == "primary" else f"INDEX `{action.name}`"
            return None, f"DROP {what}: its definition is {_NOT_READ}"
        return f"ADD {definition}", ""
    if isinstance(action, TableOptions):
        return _inverse_options(action, before)
    assert isinstance(action, KeepColumns)
    return None, f"{action.what}: the schema history does not follow it, so what it replaced is not known"


def _inverse_options(action: TableOptions, before: TableSchema) -> tuple[str | None, str]:
    """The options as they were: known when the table's CREATE TABLE (or a later ALTER) named them;
    a character set comes back with the collation it had."""
    kinds = [kind for kind, _text in action.options]
    if {"charset", "collate"} & set(kinds):
        kinds = [k for k in kinds if k not in ("charset", "collate")] + ["charset", "collate"]
    old = before.options or {}
    parts = []
    for kind in kinds:
        if kind == "collate" and kind not in old and "charset" in old:
            continue  # the old character set brings its default collation back
        if kind == "auto_increment" or kind not in old:
            text = dict(action.options).get(kind) or kind.upper()
            return None, (
                f"{text}: the table's {kind.replace('_', ' ')} before it is not in the binlog read (its CREATE "
                "TABLE did not name it, or is not in the range or its first file)"
            )
        parts.append(old[kind])
    return ", ".join(parts), ""


def _old_definition(before: TableSchema, name: str) -> str | None:
    """A column's definition before a MODIFY/CHANGE, at its old place, exactly as the DDL that gave it
    (CREATE TABLE, ADD, an earlier MODIFY) wrote it, when the history holds that DDL."""
    columns = before.columns
    for i, column in enumerate(columns):
        if column.name.lower() == name.lower():
            if not column.definition:
                return None
            place = f"AFTER {quote_ident(columns[i - 1].name)}" if i else "FIRST"
            return f"{quote_ident(column.name)} {column.definition} {place}"
    return None
