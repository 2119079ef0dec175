"""Net effects (--net): each row the range touches, from its image before the range to its image after.

A row updated ten times is one change, a row inserted then deleted inside the range none. Rows are
followed by their key (the schema's row key): an UPDATE that moves the key moves the row, and an
INSERT into a key the range deleted earlier joins that row (DELETE k ... INSERT k is one update, or
nothing when the images are equal). The reverse of a net change is one statement with the same
check as the full script's (rollback.invert): net insert -> DELETE, net delete -> INSERT, net update
-> UPDATE to the before image where the row is as the range left it.

The reverse statements run in an order where no statement meets a key another row still holds:
a row whose before image takes a unique key value that another row holds after the range runs after
that row's reverse. Where no such order exists (key values swapped between rows), NetRefused.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rollback.binlog.columns import MISSING
from rollback.errors import NetRefused
from rollback.records import bytes_kinds, column_members, column_names, image
from rollback.sql import TableRenderer

WAY_OUT = "generate the full script, without --net"


# Where a change was written: (file, pos, row of the rows event, transaction ordinal, gtid).
Where = tuple[str | None, int, int, int, str | None]


@dataclass(slots=True)
class NetRow:
    """One row's net change: `before` None = the range inserted it, `after` None = it deleted it."""

    table: str  # the quoted `db`.`t`
    before: tuple | None
    after: tuple | None
    seq: int = 0  # the order of the change that left it as the range left it
    where: Where = (None, 0, 0, 0, None)

    @property
    def kind(self) -> str:
        if self.before is None:
            return "insert"
        return "delete" if self.after is None else "update"


def _describe(table: str, where: Where) -> str:
    return f"table {table} at {where[0]}:{where[1]}"


@dataclass
class NetFold:
    """The net change of every row of one table, from its changes in binlog order."""

    table: str
    key: tuple[int, ...]  # the row key's columns (primary key, else the first NOT NULL unique key)
    live: dict[tuple, NetRow] = field(default_factory=dict)  # key after the change -> its row
    gone: dict[tuple, NetRow] = field(default_factory=dict)  # key it was deleted at -> its row
    settled: list[NetRow] = field(default_factory=list)  # deleted rows whose key another row took since

    def _key(self, row: Sequence[Any]) -> tuple:
        return tuple(row[i] for i in self.key)

    def add(self, kind: str, row: Any, seq: int, where: Where) -> None:
        if kind == "insert":
            self._insert(tuple(row), seq, where)
        elif kind == "delete":
            self._delete(tuple(row), seq, where)
        else:
            self._update(tuple(row[0]), tuple(row[1]), seq, where)

    def _refuse(self, where: Where, what: str) -> NetRefused:
        return NetRefused(f"{_describe(self.table, where)}: --net cannot follow the row: {what}; {WAY_OUT}")

    def _insert(self, after: tuple, seq: int, where: Where) -> None:
        key = self._key(after)
        if key in self.live:
            raise self._refuse(where, "an INSERT into a key the range's rows already hold")
        row = self.gone.pop(key, None)
        if row is None:
            row = NetRow(self.table, None, after)
        row.after, row.seq, row.where = after, seq, where
        self.live[key] = row

    def _delete(self, before: tuple, seq: int, where: Where) -> None:
        key = self._key(before)
        row = self.live.pop(key, None)
        if row is None:
            if key in self.gone:
                raise self._refuse(where, "a DELETE of a key the range had deleted already")
            row = NetRow(self.table, before, None)
        row.after, row.seq, row.where = None, seq, where
        if row.before is not None:  # inserted then deleted inside the range: nothing to undo
            self.gone[key] = row

    def _update(self, before: tuple, after: tuple, seq: int, where: Where) -> None:
        old, new = self._key(before), self._key(after)
        row = self.live.pop(old, None)
        if row is None:
            if old in self.gone:
                raise self._refuse(where, "an UPDATE of a key the range had deleted")
            row = NetRow(self.table, before, None)
        if new in self.live:
            raise self._refuse(where, "an UPDATE onto a key the range's rows already hold")
        taken = self.gone.pop(new, None)
        if taken is not None:  # the key of a row deleted earlier, taken by this one: both stay
            self.settled.append(taken)
        row.after, row.seq, row.where = after, seq, where
        self.live[new] = row

    def rows(self) -> list[NetRow]:
        """The rows whose image after the range differs from the one before it."""
        every = [*self.live.values(), *self.gone.values(), *self.settled]
        return [row for row in every if row.before != row.after]


def _loose(value: Any) -> Any:
    """A key value as a case- and trailing-space-insensitive collation may compare it: two rows
    whose values are equal this way may collide in a unique index (a false match only orders more)."""
    if isinstance(value, bytes | bytearray | memoryview):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(value)
    if isinstance(value, str):
        return value.rstrip(" ").casefold()
    return value


def _unique_values(image: Sequence[Any], uniques: Sequence[tuple[int, ...]]) -> Iterable[tuple[int, tuple]]:
    for number, columns in enumerate(uniques):
        values = tuple(image[i] for i in columns)
        if None not in values:  # NULLs never collide in a unique index
            yield number, tuple(_loose(v) for v in values)


def execution_order(rows: list[NetRow], uniques: dict[str, list[tuple[int, ...]]]) -> list[NetRow]:
    """The rows' reverse statements in an order that can run: newest change first, except that a row
    whose before image takes a unique value another row holds after the range comes after that row.
    `uniques`: per table, the columns of its primary key and NOT NULL unique keys. NetRefused on a cycle."""
    holders: dict[tuple[str, int, tuple], int] = {}  # (table, key number, values) -> row holding it after
    for index, row in enumerate(rows):
        if row.after is not None:
            for number, values in _unique_values(row.after, uniques[row.table]):
                holders[(row.table, number, values)] = index
    waits = [0] * len(rows)
    freed_by: list[list[int]] = [[] for _ in rows]
    for index, row in enumerate(rows):
        if row.before is None:
            continue
        blockers = {
            holders[found]
            for number, values in _unique_values(row.before, uniques[row.table])
            if (found := (row.table, number, values)) in holders
        }
        blockers.discard(index)
        waits[index] = len(blockers)
        for blocker in blockers:
            freed_by[blocker].append(index)
    ready = [(-row.seq, index) for index, row in enumerate(rows) if not waits[index]]
    heapq.heapify(ready)
    order: list[NetRow] = []
    while ready:
        _seq, index = heapq.heappop(ready)
        order.append(rows[index])
        for waiting in freed_by[index]:
            waits[waiting] -= 1
            if not waits[waiting]:
                heapq.heappush(ready, (-rows[waiting].seq, waiting))
    if len(order) < len(rows):
        stuck = max((row for index, row in enumerate(rows) if waits[index]), key=lambda r: r.seq)
        raise NetRefused(
            f"{_describe(stuck.table, stuck.where)}: no order of the net statements can be executed "
            f"(rows of the table exchange key values inside the range); {WAY_OUT}"
        )
    return order


@dataclass(slots=True)
class NetStatement:
    kind: str  # the net change: insert | update | delete
    sql: str
    check: str | None
    expect: int
    merge: dict[str, Any]


class NetRenderer:
    """A table's net statements, checks and the plan line's `merge` object (docs/execution.md)."""

    def __init__(self, renderer: TableRenderer):
        self.renderer = renderer
        tmap = renderer.tmap
        schema = renderer.schema
        self.names = column_names(tmap, renderer.schema_names)
        columns = schema.columns if schema is not None else None
        self.members = column_members(tmap, columns)
        self.kinds = bytes_kinds(tmap)
        self.key = schema.row_key if schema is not None else ()
        keys = [schema.primary_key, *schema.unique_keys] if schema is not None else []
        self.uniques = [k for i, k in enumerate(keys) if k and k not in keys[:i]]
        hidden = {i for i, c in enumerate(columns or ()) if c.hidden}
        self.shown = [i for i in range(len(renderer.columns)) if i not in hidden]

    def _json(self, row: Sequence[Any]) -> dict[str, Any]:
        return image(tuple(row), self.renderer.tmap, self.names, self.members, self.kinds)

    def _key_where(self, row: Sequence[Any], key: tuple[int, ...]) -> str:
        cols = self.renderer.columns
        return " AND ".join(
            f"{cols[i].name}={self.renderer._key_literal(i)(row[i])}"
            if row[i] is not None
            else f"{cols[i].name} IS NULL"
            for i in key
        )

    def _matches(self, index: int, value: Any) -> str:
        column = self.renderer.columns[index]
        return column.null if value is None else column.exact + column.where(value)

    def statement(self, row: NetRow) -> NetStatement | None:
        """The reverse of one net change; None when it sets nothing (only columns no statement sets)."""
        r = self.renderer
        before, after = row.before, row.after
        kind = row.kind
        present = after if after is not None else before
        assert present is not None
        values = self._json(present)
        check: str | None
        merge: dict[str, Any] = {
            "kind": kind,
            "key": {self.names[i]: values[self.names[i]] for i in self.key},
            "where": r.where(present),
            "columns": [],
            "row_matches": None,
            "free_where": None,
            "insert_sql": None,
            "replace_sql": None,
            "delete_sql": None,
        }
        if kind == "update":
            assert before is not None and after is not None
            sql = r.update(before, after)
            if sql is None:
                return None
            changed = [i for i in self.shown if r.columns[i].writable and before[i] != after[i]]
            check, expect = r.exists(after), 1
        elif kind == "insert":
            assert after is not None
            sql = r.delete(after)
            changed = self.shown
            check, expect = r.exists(after), 1
            merge["delete_sql"] = sql
        else:
            assert before is not None
            sql = r.insert(before)
            changed = self.shown
            check, expect = r.key_exists(before), 0
            merge["free_where"] = " OR ".join(f"({self._key_where(before, k)})" for k in self.uniques)
            merge["insert_sql"] = sql
            merge["replace_sql"] = "REPLACE" + sql[len("INSERT") :]
        olds = self._json(before) if before is not None else {}
        news = values if after is not None else {}
        merge["columns"] = [
            {
                "name": self.names[i],
                "before": olds.get(self.names[i]) if before is not None else None,
                "after": news.get(self.names[i]) if after is not None else None,
                "before_sql": r.literal(i, before[i]) if before is not None else None,
                "after_sql": r.literal(i, after[i]) if after is not None else None,
                "matches_after": self._matches(i, after[i]) if after is not None else None,
            }
            for i in changed
        ]
        if after is not None:
            merge["row_matches"] = r.exists(after)[len(r.check_head) :]
        return NetStatement(kind, sql, check, expect, merge)


def complete(row: Any, kind: str) -> bool:
    """Whether a change's images hold every column (net changes are built from full images only)."""
    if kind == "update":
        return MISSING not in row[0] and MISSING not in row[1]
    return MISSING not in row
