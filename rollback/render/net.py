"""Net effects (--net): each row the range touches, from its image before the range to its image after.

A row updated ten times is one change, a row inserted then deleted inside the range none. Rows are
followed by their key (the schema's row key): an UPDATE that moves the key moves the row, and an
INSERT into a key the range deleted earlier joins that row (DELETE k ... INSERT k is one update, or
nothing when the images are equal). The reverse of a net change is one statement with the same
check as the full script's (rollback.render.invert): net insert -> DELETE, net delete -> INSERT, net update
-> UPDATE to the before image where the row is as the range left it.

The reverse statements run in an order where no statement meets a key another row still holds:
a row whose before image takes a unique key value that another row holds after the range runs after
that row's reverse. Where no such order exists (key values swapped between rows), NetRefused.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from operator import itemgetter
from typing import Any

from rollback.base import hotpath
from rollback.base.errors import NetRefused
from rollback.binlog.columns import MISSING
from rollback.binlog.constants import ColumnType as T
from rollback.render.records import bytes_kinds, column_members, column_names, image
from rollback.render.sql import FullImageStatements, TableRenderer

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


# A step of NetChains: [kind, key, before, event, row, after, last event, last row]
INSERT, UPDATE, DELETE, MOVE = range(4)
_TAKEN = "an INSERT into a key the range's rows already hold"
_DELETED = {
    UPDATE: "an UPDATE of a key the range had deleted",
    DELETE: "a DELETE of a key the range had deleted already",
}


def read_images(images: list[Any], raw: Any) -> list[Any]:
    """`images` with those that are bytes (the bytes an image takes in its rows event) read by `raw`
    (parts.RawImages), in one read of them all; the others (decoded rows, None) as they are."""
    data = b"".join(image for image in images if type(image) is bytes)
    if not data:
        return images
    rows = iter(raw.rows(data))
    return [next(rows) if type(image) is bytes else image for image in images]


def read_step_images(steps: list[list[Any]], raw: Any) -> None:
    """Steps (NetChains) whose images are bytes, read in place by `raw` in one read: their before and
    after images, a moved key's pair."""
    held = [image for step in steps for image in (step[2] if step[0] == MOVE else (step[2], step[5]))]
    read = iter(read_images(held, raw))
    for step in steps:
        if step[0] == MOVE:
            step[2] = (next(read), next(read))
        else:
            step[2], step[5] = next(read), next(read)


def _describe(table: str, where: Where) -> str:
    return f"table {table} at {where[0]}:{where[1]}"


class NetFold:
    """The net change of every row of one table, from its changes in binlog order."""

    def __init__(self, table: str, key: tuple[int, ...]):
        self.table = table
        # the row key's columns (primary key, else the first NOT NULL unique key): a value for one
        # column, a tuple for several
        self._key = itemgetter(*key)
        self.live: dict[Any, NetRow] = {}  # key after the change -> its row
        self.gone: dict[Any, NetRow] = {}  # key it was deleted at -> its row
        self.settled: list[NetRow] = []  # deleted rows whose key another row took since
        self.refused_seq = 0  # the change the fold refused at (NetRefused): its place in the range's order
        # what reads the images steps hold as the bytes they take in their rows events (parts.RawImages):
        # the fold compares keys only, so they are read at its end, and only those its net rows keep
        self.raw: Any = None

    def add(self, kind: str, row: Any, seq: int, where: Where) -> None:
        file, pos, number, tx, gtid = where
        self.add_rows(kind, [row], seq, file, pos, [number], tx, gtid)

    def add_rows(
        self,
        kind: str,
        rows: list[Any],
        seq: int,
        file: str | None,
        pos: int,
        numbers: Sequence[int],
        tx: int,
        gtid: str | None,
    ) -> int:
        """The changes of one rows event (`numbers`: each row's number in it), the first numbered
        `seq` in the range's order; returns the number after the last."""
        key, live = self._key, self.live
        gone, table = self.gone, self.table
        if kind == "delete":
            for change, number in zip(rows, numbers, strict=True):
                where = (file, pos, number, tx, gtid)
                before = change if type(change) is tuple else tuple(change)
                old = key(before)
                row = live.pop(old, None)
                if row is None:
                    if old in gone:
                        raise self._refuse(where, _DELETED[DELETE], seq)
                    gone[old] = NetRow(table, before, None, seq, where)
                else:
                    row.after, row.seq, row.where = None, seq, where
                    if row.before is not None:  # inserted then deleted inside the range: nothing to undo
                        gone[old] = row
                seq += 1
            return seq
        if kind == "insert":
            for change, number in zip(rows, numbers, strict=True):
                where = (file, pos, number, tx, gtid)
                after = change if type(change) is tuple else tuple(change)
                new = key(after)
                if new in live:
                    raise self._refuse(where, _TAKEN, seq)
                row = gone.pop(new, None) if gone else None
                if row is None:
                    live[new] = NetRow(table, None, after, seq, where)
                else:  # a key the range deleted: its row again
                    row.after, row.seq, row.where = after, seq, where
                    live[new] = row
                seq += 1
            return seq
        for change, number in zip(rows, numbers, strict=True):  # updates
            where = (file, pos, number, tx, gtid)
            before, after = change
            if type(before) is not tuple:
                before, after = tuple(before), tuple(after)
            old, new = key(before), key(after)
            row = live.pop(old, None)
            if row is None or old != new:
                row = self._moved(row, old, new, before, where, seq)
            row.after, row.seq, row.where = after, seq, where
            live[new] = row
            seq += 1
        return seq

    def _refuse(self, where: Where, what: str, seq: int) -> NetRefused:
        self.refused_seq = seq
        return NetRefused(f"{_describe(self.table, where)}: --net cannot follow the row: {what}; {WAY_OUT}")

    def _moved(self, row: NetRow | None, old: Any, new: Any, before: tuple, where: Where, seq: int) -> NetRow:
        """An UPDATE of a row the range has not touched yet, or one that moves its key."""
        if row is None:
            if old in self.gone:
                raise self._refuse(where, _DELETED[UPDATE], seq)
            row = NetRow(self.table, before, None)
        if old != new:
            if new in self.live:
                raise self._refuse(where, "an UPDATE onto a key the range's rows already hold", seq)
            taken = self.gone.pop(new, None)
            if taken is not None:  # the key of a row deleted earlier, taken by this one: both stay
                self.settled.append(taken)
        return row

    def add_steps(self, steps: list[list[Any]], where_of: Any, raw: Any = None) -> None:
        """A partition's steps of this table (NetChains), in the order of their first changes;
        `where_of(event, row)`: the change's (seq, where). Each step is applied where its first change
        came: the later changes of its key in the partition are valid after it whatever the rows
        before, and no other change of the partition meets its key. `raw`: what reads the images
        the steps hold as bytes (kept so until rows(); read now if it reads them otherwise than the
        reader of the table's other steps)."""
        if raw is not None:
            if self.raw is None:
                self.raw = raw
            # a moved key's pair is read now (its keys are read from its images), every image if
            # another reader reads these steps
            read_step_images(steps if raw != self.raw else [s for s in steps if s[0] == MOVE], raw)
        live, gone, table = self.live, self.gone, self.table
        for kind, key, before, event, number, after, last_event, last in steps:
            if kind == MOVE:
                seq, where = where_of(event, number)
                file, pos, row_number, tx, gtid = where
                self.add_rows("update", [before], seq, file, pos, [row_number], tx, gtid)
                continue
            row = live.pop(key, None)
            if kind == INSERT:
                if row is not None:
                    seq, where = where_of(event, number)
                    raise self._refuse(where, _TAKEN, seq)
                row = gone.pop(key, None) if gone else None
                if row is None:
                    if after is None:  # inserted then deleted inside the range: nothing to undo
                        continue
                    row = NetRow(table, None, None)
            elif row is None:
                if key in gone:
                    seq, where = where_of(event, number)
                    raise self._refuse(where, _DELETED[kind], seq)
                row = NetRow(table, before, None)
            row.after = after
            row.seq, row.where = where_of(last_event, last)
            if after is not None:
                live[key] = row
            elif row.before is not None:
                gone[key] = row

    def rows(self) -> list[NetRow]:
        """The rows whose image after the range differs from the one before it: the rows there after
        the range, then those deleted, each in the order of their last changes (add_steps applies a
        step at its first change), then those whose key another row took."""
        every = [
            *sorted(self.live.values(), key=_seq),
            *sorted(self.gone.values(), key=_seq),
            *self.settled,
        ]
        if self.raw is not None:
            read = iter(read_images([image for row in every for image in (row.before, row.after)], self.raw))
            for row in every:
                row.before, row.after = next(read), next(read)
        return [row for row in every if row.before != row.after]


def _seq(row: NetRow) -> int:
    return row.seq


class NetChains:
    """One table's changes in one partition, each key's run of changes as one step (NetFold.add_steps).

    A step is [kind of its first change, key, that change's before image (UPDATE, DELETE), its event and
    row in the partition, the image after its last change (None: deleted), that change's event and row].
    A change that cannot follow its key's step (an INSERT where the step leaves the row, an UPDATE or
    DELETE where it leaves none) starts a new one: the fold refuses there, or takes the row as new, as it
    would change by change. An UPDATE moving the key is a step of its own (kind MOVE, before = the pair)
    and ends the steps of both keys. `flush` hands the steps over and starts afresh, which bounds what
    a partition holds: a key changed again after it starts a new step."""

    def __init__(self, key: tuple[int, ...]):
        self._columns = tuple(key)
        self._key = itemgetter(*key)
        self.open: dict[Any, list[Any]] = {}
        self.steps: list[list[Any]] = []
        self._core = hotpath.CORE  # the compiled core's net_chain, the same loop as add_pure's

    def add(self, kind: str, rows: list[Any], event: int) -> None:
        if self._core is not None:
            self._core.net_chain(self._columns, kind, rows, event, self.open, self.steps)
        else:
            self.add_pure(kind, rows, event)

    def add_images(self, kind: str, keys: list[Any], images: list[Any], event: int) -> None:
        """add's steps for a rows event given as its rows' keys and images (the compiled core's
        image_rows: each image the bytes it takes in the event; an UPDATE's keys and images alternate,
        before then after), the images kept as they are."""
        if self._core is not None:
            self._core.net_chain_keyed(kind, keys, images, event, self.open, self.steps)
        else:
            self.add_images_pure(kind, keys, images, event)

    def add_images_pure(self, kind: str, keys: list[Any], images: list[Any], event: int) -> None:
        steps, open_ = self.steps, self.open
        if kind == "update":
            for number in range(len(images) // 2):
                before, after = images[2 * number], images[2 * number + 1]
                k, moved = keys[2 * number], keys[2 * number + 1]
                if k != moved:
                    open_.pop(k, None)
                    open_.pop(moved, None)
                    steps.append([MOVE, None, (before, after), event, number, None, event, number])
                    continue
                step = open_.get(k)
                if step is None or step[5] is None:
                    step = open_[k] = [UPDATE, k, before, event, number, after, event, number]
                    steps.append(step)
                else:
                    step[5], step[6], step[7] = after, event, number
            return
        for number, (k, taken) in enumerate(zip(keys, images, strict=True)):
            step = open_.get(k)
            if kind == "insert":
                if step is None or step[5] is not None:
                    step = open_[k] = [INSERT, k, None, event, number, taken, event, number]
                    steps.append(step)
                else:
                    step[5], step[6], step[7] = taken, event, number
            elif step is None or step[5] is None:
                step = open_[k] = [DELETE, k, taken, event, number, None, event, number]
                steps.append(step)
            else:
                step[5], step[6], step[7] = None, event, number

    def add_pure(self, kind: str, rows: list[Any], event: int) -> None:
        key, steps = self._key, self.steps
        get = self.open.get
        open_ = self.open
        if kind == "insert":
            for number, after in enumerate(rows):
                if type(after) is not tuple:
                    after = tuple(after)
                k = key(after)
                step = get(k)
                if step is None or step[5] is not None:
                    step = open_[k] = [INSERT, k, None, event, number, after, event, number]
                    steps.append(step)
                else:
                    step[5], step[6], step[7] = after, event, number
        elif kind == "delete":
            for number, before in enumerate(rows):
                k = key(before)
                step = get(k)
                if step is None or step[5] is None:
                    if type(before) is not tuple:
                        before = tuple(before)
                    step = open_[k] = [DELETE, k, before, event, number, None, event, number]
                    steps.append(step)
                else:
                    step[5], step[6], step[7] = None, event, number
        else:
            for number, pair in enumerate(rows):
                before, after = pair
                k = key(before)
                if k != key(after):
                    open_.pop(k, None)
                    open_.pop(key(after), None)
                    steps.append([MOVE, None, pair, event, number, None, event, number])
                    continue
                if type(before) is not tuple:
                    before, after = tuple(before), tuple(after)
                step = get(k)
                if step is None or step[5] is None:
                    step = open_[k] = [UPDATE, k, before, event, number, after, event, number]
                    steps.append(step)
                else:
                    step[5], step[6], step[7] = after, event, number

    def flush(self) -> list[list[Any]]:
        steps = self.steps
        self.steps, self.open = [], {}
        return steps


_TEXT_TYPES = frozenset(
    {T.STRING, T.VARCHAR, T.VAR_STRING, T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB, T.JSON}
)


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


# A table's unique keys for execution_order: (columns, whether a column holds text)
UniqueKeys = list[tuple[tuple[int, ...], bool]]


def _key_values(get: Any, single: bool, loose: bool) -> Any:
    """A function giving a unique key's values in an image (as _loose compares them when the key
    holds text), None when one is NULL (NULLs never collide in a unique index)."""

    def values(image: Sequence[Any]) -> Any:
        found = get(image)
        if single:
            return found if found is None or not loose else _loose(found)
        if None in found:
            return None
        return tuple(_loose(v) for v in found) if loose else found

    return values


def execution_order(rows: list[NetRow], uniques: dict[str, UniqueKeys]) -> list[NetRow]:
    """The rows' reverse statements in an order that can run: newest change first, except that a row
    whose before image takes a unique value another row holds after the range comes after that row.
    `uniques`: per table, its primary key and NOT NULL unique keys. NetRefused on a cycle."""
    keys = {}
    for table, found in uniques.items():
        keys[table] = [
            (n, get, _key_values(get, len(columns) == 1, loose))
            for n, (columns, loose) in enumerate(found)
            for get in [itemgetter(*columns)]
        ]
    # A row that holds after the range the value it held before meets no other row there (none held it
    # then): only values that change are looked at. First those rows take after the range (inserted
    # rows, moved keys); without any, no row waits for another.
    holders: dict[tuple[str, int, Any], int] = {}  # (table, key number, values) -> row holding it after
    # (only a row with a before image looks values up: a table with none needs no holders)
    looking = {row.table for row in rows if row.before is not None}
    for index, row in enumerate(rows):
        before, after = row.before, row.after
        if after is None or row.table not in looking:
            continue
        for number, get, values_of in keys[row.table]:
            if before is not None and get(before) == get(after):
                continue
            values = values_of(after)
            if values is not None:
                holders[(row.table, number, values)] = index
    if not holders:
        return sorted(rows, key=lambda row: -row.seq)
    tables = {table for table, _number, _values in holders}
    wanted: list[tuple[int, int]] = []  # (row, the row holding a unique value its before image takes)
    for index, row in enumerate(rows):
        before, after = row.before, row.after
        if before is None or row.table not in tables:
            continue
        for number, get, values_of in keys[row.table]:
            if after is not None and get(before) == get(after):
                continue
            values = values_of(before)
            blocker = holders.get((row.table, number, values)) if values is not None else None
            if blocker is not None:
                wanted.append((index, blocker))
    waits = [0] * len(rows)
    freed_by: dict[int, list[int]] = {}
    for index, blocker in wanted:
        if blocker != index and index not in freed_by.get(blocker, ()):
            waits[index] += 1
            freed_by.setdefault(blocker, []).append(index)
    if not freed_by:
        return sorted(rows, key=lambda row: -row.seq)
    ready = [(-row.seq, index) for index, row in enumerate(rows) if not waits[index]]
    heapq.heapify(ready)
    order: list[NetRow] = []
    while ready:
        _seq, index = heapq.heappop(ready)
        order.append(rows[index])
        for waiting in freed_by.get(index, ()):
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
    # the statement, run only where its check finds the row as the range left it, writes what the merge's
    # write would there: it sets exactly the columns the merge restores (the table has no column the
    # server stamps on update, which the statement sets unchanged, and none hidden, which the merge leaves)
    merge_same: bool = False


class NetRenderer:
    """A table's net statements, checks and the plan line's `merge` object (docs/execution.md)."""

    def __init__(self, renderer: TableRenderer):
        self.renderer = renderer
        # the statements and checks: the table's full-image functions where it has them (the compiled
        # core's, the same text as the renderer's)
        self.ops: TableRenderer | FullImageStatements = renderer.full_images() or renderer
        tmap = renderer.tmap
        schema = renderer.schema
        self.names = column_names(tmap, renderer.schema_names)
        columns = schema.columns if schema is not None else None
        self.members = column_members(tmap, columns)
        self.kinds = bytes_kinds(tmap)
        self.key = schema.row_key if schema is not None else ()
        keys = [schema.primary_key, *schema.unique_keys] if schema is not None else []
        self.uniques = [k for i, k in enumerate(keys) if k and k not in keys[:i]]
        # For the order: those keys, and on its own each other column of a unique index (a nullable
        # one): two rows that collide in such an index collide in each of its columns, so ordering by
        # each column alone orders by the index (or more).
        known = {i for k in self.uniques for i in k}
        alone = [(i,) for i in sorted(schema.unique_columns or ()) if i not in known] if schema else []
        self.unique_keys: UniqueKeys = [
            (k, any(tmap.real_types[i] in _TEXT_TYPES for i in k)) for k in [*self.uniques, *alone]
        ]
        # DECIMAL values may come as their text (partition.py, _decimals_as_text): Decimals for the renderer
        self.decimals = [i for i, code in enumerate(tmap.real_types) if code == T.NEWDECIMAL]
        hidden = {i for i, c in enumerate(columns or ()) if c.hidden}
        self.shown = [i for i in range(len(renderer.columns)) if i not in hidden]
        self.merge_same = not hidden and not any(c.stamped for c in renderer.columns)

    def _decimal(self, image: tuple | None) -> tuple | None:
        if image is None or not any(type(image[i]) is str for i in self.decimals):
            return image
        values = list(image)
        for i in self.decimals:
            if type(values[i]) is str:
                values[i] = Decimal(values[i])
        return tuple(values)

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

    def statement(self, row: NetRow, plan: bool = True) -> NetStatement | None:
        """The reverse of one net change; None when it sets nothing (only columns no statement sets).
        Without `plan`, only its SQL (no check, no merge object: no plan is written)."""
        r, ops = self.renderer, self.ops
        before, after = row.before, row.after
        kind = row.kind
        if plan or ops is r:  # DECIMAL text only goes to the full-image functions (partition.py)
            before, after = self._decimal(before), self._decimal(after)
        if not plan:
            if before is None:
                assert after is not None
                sql: str | None = ops.delete(after)
            elif after is None:
                sql = ops.insert(before)
            else:
                sql = ops.update(before, after)
            return None if sql is None else NetStatement(kind, sql, None, 0, {})
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
            sql = ops.update(before, after)
            if sql is None:
                return None
            changed = [i for i in self.shown if r.columns[i].writable and before[i] != after[i]]
            check, expect = r.exists(after), 1
        elif kind == "insert":
            assert after is not None
            sql = ops.delete(after)
            changed = self.shown
            check, expect = r.exists(after), 1
            merge["delete_sql"] = sql
        else:
            assert before is not None
            sql = ops.insert(before)
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
        return NetStatement(kind, sql, check, expect, merge, self.merge_same)


def row_keys(rows: list[Any], key: tuple[int, ...]) -> list[Any]:
    """The row keys of a rows event's images (DELETEs': their before images), as NetFold compares them."""
    return list(map(itemgetter(*key), rows))


def complete(row: Any, kind: str) -> bool:
    """Whether a change's images hold every column (net changes are built from full images only)."""
    if kind == "update":
        return MISSING not in row[0] and MISSING not in row[1]
    return MISSING not in row
