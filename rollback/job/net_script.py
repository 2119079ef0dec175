"""The script and plan of a --net job, from the partitions' part-N.net.pickle files.

Each partition wrote a record of each selected rows event, and its tables' changes folded per key as
far as the partition can (rollback.render.net.NetChains: a key's run of changes is one step), in
blocks after the records; a DELETE of a table the partition saw only deleted from came with its
decoded images instead (rollback/pipeline/partition.py). Here every record is read first. A table
the range only deletes from, each key once, needs no fold: each deleted row's net change is its
DELETE, and no row of it waits for another in the execution order; without a plan, its statements are
the plain script's, rendered in one call per rows event (NetChanges.settle). The other tables' steps
and images are folded per table in binlog order (rollback/render/net.py), put in an order that can
run, and written as one transaction block: one statement per row.
"""

from __future__ import annotations

import heapq
import json
import os
import pickle
from collections.abc import Callable, Sequence
from contextlib import ExitStack, closing
from dataclasses import dataclass, field, replace
from itertools import groupby, pairwise
from operator import itemgetter
from typing import IO, Any

from rollback.base.collector import collector_paused
from rollback.base.errors import NetRefused
from rollback.base.render_text import comment_line
from rollback.job.merge import Sink, copy_range
from rollback.pipeline.parts import BLOCK_END, RawImages, Summary, load_values, part_path
from rollback.render.net import NetFold, NetRenderer, NetRow, Where, execution_order
from rollback.render.net_local import Share
from rollback.render.sql import TableRenderer


@dataclass(slots=True)
class _Event:
    """One rows event's changes in a part file: a DELETE's images (size > 0) are decoded only when
    folded or rendered; the other changes are in the part file's steps (NetChains)."""

    table: str
    kind: str
    where: tuple[str | None, int, Sequence[int], int, str | None]  # file, pos, each row's number, tx, gtid
    seq: int  # its first row's place in the range's order
    path: str
    offset: int
    size: int  # of its images' pickle, at offset (0: none, the rows are in the steps)
    plain: tuple[int, int] | None  # a DELETE's plain statements after it (without a plan): bytes, count
    marshalled: bool | RawImages  # its images' encoding (parts.load_values)


@dataclass(slots=True)
class _Steps:
    """A block of one table's steps in a part file (rollback.render.net.NetChains)."""

    events: list[_Event]  # the part file's rows events, which the steps name by index
    path: str
    offset: int
    size: int
    marshalled: bool  # written by marshal, not pickle (parts.dump_values)
    raw: RawImages | None  # its images as the bytes they take in their rows events: what reads them


@dataclass(slots=True)
class _Keys:
    """The keys a partition's DELETEs of a table delete, in its data file (partition._write_net_keys):
    their count, and their least and greatest when none is there twice."""

    path: str
    offset: int
    size: int
    marshalled: bool
    count: int
    span: tuple[Any, Any] | None


@dataclass(slots=True)
class _Share:
    """A partition's share of the script (rollback/render/net_local.py), as its body record says."""

    path: str  # its data file
    segments: list[tuple[list[tuple[int, int]], int]]  # each: its pieces (offset, size), its statements
    shares: list[tuple[str, Share]]  # (the table's quoted name, what the share changes in it)


@dataclass
class NetChanges:
    folds: dict[str, NetFold] = field(default_factory=dict)  # quoted table -> its rows' net changes
    renderers: dict[str, NetRenderer] = field(default_factory=dict)
    seq: int = 0
    events: list[_Event] = field(default_factory=list)  # binlog order
    # per table, in binlog order: its DELETEs' images (_Event) and its blocks of steps (_Steps)
    changes: dict[str, list[_Event | _Steps]] = field(default_factory=dict)
    # tables the range only deletes from -> the keys it deletes, a piece a partition
    deleted: dict[str, list[_Keys]] = field(default_factory=dict)
    # the rows events of those tables, each key deleted once, rendered as they come (see settle)
    once: list[_Event] = field(default_factory=list)
    _files: dict[str, int] = field(default_factory=dict)  # part file -> its descriptor, read by images()
    parts: int = 0  # part files read
    bodies: list[_Share] = field(default_factory=list)  # the partitions' shares of the script, in order
    facts: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)  # table -> each partition's facts

    def read(self, path: str, data: str) -> None:
        """A part file's records: its tables, its rows events (their images left in the part's data
        file, `data`) and its blocks of steps (left there too)."""
        tables: dict[int, str] = {}
        decoders: dict[int, RawImages] = {}
        events: list[_Event] = []
        self.parts += 1
        with open(path, "rb") as f:
            while True:
                try:
                    items = pickle.load(f)  # a list of records (partition._net_put)
                except EOFError:
                    break
                for item in items:
                    self._record(item, tables, decoders, events, data)

    def _record(
        self,
        item: tuple[Any, ...],
        tables: dict[int, str],
        decoders: dict[int, RawImages],
        events: list[_Event],
        data: str,
    ) -> None:
        if item[0] == "table":
            _, number, (tmap, schema, flavour, full_where) = item
            renderer = TableRenderer(tmap, schema, flavour, full_where)
            name = renderer.table
            self.facts.setdefault(name, []).append(_table_facts(item[2]))
            if name not in self.folds:
                self.renderers[name] = NetRenderer(renderer)
                self.folds[name] = NetFold(name, schema.row_key)
                self.deleted[name] = []
                self.changes[name] = []
            tables[number] = name
            return
        if item[0] == "decoder":
            decoders[item[1]] = item[2]
            return
        if item[0] == "steps":
            _, number, offset, size, marshalled, images = item
            raw = decoders[images[1]] if images is not None else None
            self.changes[tables[number]].append(_Steps(events, data, offset, size, marshalled, raw))
            return
        if item[0] == "body":  # the partition's share of the script, after every table's record
            _, segments, shares = item
            self.bodies.append(_Share(data, segments, [(tables[share.table], share) for share in shares]))
            return
        if item[0] == "keys":  # after its table's records: the keys its DELETEs delete
            _, number, offset, size, marshalled, count, span = item
            deleted = self.deleted.get(tables[number])
            if deleted is not None:
                deleted.append(_Keys(data, offset, size, marshalled, count, span))
            return
        _, number, (kind, file, pos, numbers), tx, gtid, offset, size, plain, marshalled = item
        name = tables[number]
        if type(marshalled) is tuple:  # images as the binlog's bytes (parts.RawImages)
            marshalled = decoders[marshalled[1]]
        where = (file, pos, numbers, tx, gtid)
        event = _Event(name, kind, where, self.seq, data, offset, size, plain, marshalled)
        self.events.append(event)
        events.append(event)
        if size:
            self.changes[name].append(event)
        self.seq += len(numbers)
        deleted = self.deleted.get(name)
        if deleted is None:
            return
        if plain is None:  # not a DELETE, or its statements are not there
            del self.deleted[name]

    def shared(self, plan_path: str) -> Body | None:
        """The script's body from the partitions' shares (rollback/render/net_local.py), when every
        partition wrote one, every table has the same facts in each, no two shares' spans of keys of a
        table meet, and no row's reverse waits for another's (execution_order): a table whose only
        unique key is its row key, or that has only net INSERTs; a key compared loosely (a
        case-insensitive string) also with no net INSERTs beside its net DELETEs. None: fold."""
        if not self.parts or len(self.bodies) != self.parts:
            return None
        per_table: dict[str, list[Share]] = {}
        for body in self.bodies:
            for name, share in body.shares:
                per_table.setdefault(name, []).append(share)
        for name, shares in per_table.items():
            facts = self.facts[name]
            if any(other != facts[0] for other in facts[1:]):
                return None
            try:
                spans = sorted(share.span for share in shares)
                if not all(a[1] < b[0] for a, b in pairwise(spans)):
                    return None
            except TypeError:  # keys of values that do not order together
                return None
            uniques = self.renderers[name].unique_keys
            inserts = any(share.inserts for share in shares)
            deletes = any(share.deletes for share in shares)
            if (deletes or any(share.updates for share in shares)) and len(uniques) != 1:
                return None
            if inserts and deletes and uniques[0][1]:  # 'a' deleted, 'A' inserted: one waits
                return None
        pieces = [
            (body.path, offset, size)
            for body in reversed(self.bodies)
            for segment, _count in reversed(body.segments)
            for offset, size in segment
        ]
        count = sum(count for body in self.bodies for _pieces, count in body.segments)
        return pieces, plan_path, count

    def settle(self) -> None:
        """Fold the changes of every table but those the range only deletes from, each key once, whose
        plain statements the partitions wrote (no plan, and the table has full-image functions):
        write_body copies those. Where folds refuse, the refusal of the change first in the range is
        raised, as a fold change by change in binlog order would."""
        plain = {name for name, pieces in self.deleted.items() if self._once(pieces)}
        self.deleted.clear()
        self.once = [event for event in self.events if event.table in plain]
        refused: list[tuple[int, NetRefused]] = []
        for name, changes in self.changes.items():
            if name in plain:
                continue
            fold = self.folds[name]
            try:
                for item in changes:
                    if isinstance(item, _Event):
                        self._fold(item)
                    else:
                        fold.add_steps(self.steps(item), _where_of(item.events), item.raw)
            except NetRefused as error:
                refused.append((fold.refused_seq, error))
        if refused:
            raise min(refused, key=itemgetter(0))[1]

    def _once(self, pieces: list[_Keys]) -> bool:
        """Whether no key is in these pieces twice: where each piece has none twice and their spans
        do not meet, without reading them."""
        spans = [piece.span for piece in pieces if piece.span is not None]
        if len(spans) == len(pieces):
            try:
                if all(a[1] < b[0] for a, b in pairwise(sorted(spans))):
                    return True
            except TypeError:  # spans of values that do not order together: read the keys
                pass
        seen: set[Any] = set()
        for piece in pieces:
            seen.update(load_values(self._read_at(piece.path, piece.size, piece.offset), piece.marshalled))
        return len(seen) == sum(piece.count for piece in pieces)

    def _fold(self, event: _Event) -> None:
        file, pos, numbers, tx, gtid = event.where
        rows = self.images(event)
        self.folds[event.table].add_rows(event.kind, rows, event.seq, file, pos, numbers, tx, gtid)

    def steps(self, block: _Steps) -> list[list[Any]]:
        steps: list[list[Any]] = load_values(
            self._read_at(block.path, block.size, block.offset), block.marshalled
        )
        return steps

    def _read(self, event: _Event, size: int, offset: int) -> bytes:
        return self._read_at(event.path, size, offset)

    def _read_at(self, path: str, size: int, offset: int) -> bytes:
        fd = self._files.get(path)
        if fd is None:
            fd = self._files[path] = os.open(path, os.O_RDONLY)
        return os.pread(fd, size, offset)

    def images(self, event: _Event) -> list[Any]:
        rows: list[Any] = load_values(self._read(event, event.size, event.offset), event.marshalled)
        return rows

    def statements(self, event: _Event) -> tuple[tuple[str, int, int], int]:
        """Where a DELETE's plain statements are (the partition wrote them after its images): (path,
        offset, size), and their count."""
        assert event.plain is not None
        size, count = event.plain
        return (event.path, event.offset + event.size, size), count

    def close(self) -> None:
        for fd in self._files.values():
            os.close(fd)
        self._files.clear()

    def ordered(self) -> list[NetRow | _Event]:
        """The folded rows in an order that can run, and among them the rows events settle kept, newest
        first: their rows neither wait for a row nor hold a value one waits for (only rows of the
        same table can), so each comes where the order of every row would put it."""
        rows = [row for fold in self.folds.values() for row in fold.rows()]
        order = execution_order(rows, {name: r.unique_keys for name, r in self.renderers.items()})
        items: list[NetRow | _Event] = list(order)
        if not self.once:
            return items
        once: list[NetRow | _Event] = list(reversed(self.once))
        return list(heapq.merge(items, once, key=_newest))


# A --net script's body: its pieces in order, each a range of a file (path, offset, size), and the
# plan's path and the statements' count (write_body).
Body = tuple[list[tuple[str, int, int]], str, int]


def net_body(out_dir: str, summaries: list[Summary], with_plan: bool) -> Body:
    """The partitions' shares of the script where they make it (NetChanges.shared, without a plan),
    or their changes folded and written (write_body), with the cyclic garbage collector off: the fold
    holds a few objects per row (its steps, images and rows), none in a cycle, which the collector
    would walk again at every threshold they pass (on the 1M-row bench file, half of the driver's
    CPU). They are freed by reference counting when the body is written."""
    with collector_paused():
        changes = net_changes(out_dir, summaries)
        try:
            body = None if with_plan else changes.shared(os.path.join(out_dir, "net.plan.jsonl"))
            if body is not None:
                changes.close()
                return body
            changes.settle()
        except BaseException:
            changes.close()
            raise
        return write_body(changes, out_dir, with_plan)


def net_changes(out_dir: str, summaries: list[Summary]) -> NetChanges:
    """Every part file's records read (NetChanges.read), in partition order: binlog order."""
    changes = NetChanges()
    try:
        for summary in summaries:
            if summary.net_changes:
                changes.read(
                    part_path(out_dir, summary.index, "net.pickle"),
                    part_path(out_dir, summary.index, "net.data"),
                )
    except BaseException:
        changes.close()
        raise
    return changes


def plan_line(
    row: NetRow,
    table: str,
    kind: str,
    check: str | None,
    expect: int,
    sql: str,
    merge: dict[str, Any],
    merge_same: bool = False,
) -> str:
    """`table` as every plan line names it (`db.t`, TableMap.qualified_name): the execution finds the
    table's triggers, cascades and engine by that name. `merge_same` (NetStatement.merge_same): the merge
    apply may send the statement, as the strict apply does, where its check finds the row as the range
    left it (rollback/target/execute.py), and read the `merge` object only where it does not."""
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
        **({"merge_same": True} if merge_same else {}),
        "merge": merge,
    }
    return json.dumps(line, ensure_ascii=False)


def write_body(changes: NetChanges, out_dir: str, with_plan: bool) -> Body:
    """The statements (and plan lines) written: the folded rows' into a file of `out_dir`, the plain
    statements of the tables only deleted from left where the partitions wrote them (write_net copies
    them from there, in the kernel where it can); the plan lines into another file."""
    script_path = os.path.join(out_dir, "net.sql")
    plan_path = os.path.join(out_dir, "net.plan.jsonl")
    count = 0
    pieces: list[tuple[str, int, int]] = []
    cut = 0  # the end of net.sql's last piece
    with open(script_path, "wb") as script, open(plan_path, "w", encoding="utf-8") as plan, closing(changes):
        for (table, kind, once), run in groupby(changes.ordered(), key=_run):
            renderer = changes.renderers[table]
            if once:  # rows events of a table only deleted from (NetChanges.settle): plain statements
                if script.tell() > cut:
                    pieces.append((script_path, cut, script.tell() - cut))
                    cut = script.tell()
                for event in run:
                    assert isinstance(event, _Event)
                    piece, written = changes.statements(event)
                    pieces.append(piece)
                    count += written
                continue
            rows = [row for row in run if isinstance(row, NetRow)]
            if not with_plan and (full := renderer.renderer.full_images()) is not None:
                # a run of one table's rows of one kind: its statements in one call of the full-image
                # functions (which render an event's rows newest first: hence reversed)
                images = [_image(row, kind) for row in reversed(rows)]
                data, written, _longest = full.script(kind, images, False)
                script.write(data)
                count += written
                continue
            for row in rows:
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
                            statement.merge_same,
                        )
                        + "\n"
                    )
        if script.tell() > cut:
            pieces.append((script_path, cut, script.tell() - cut))
    return pieces, plan_path, count


def _where_of(events: list[_Event]) -> Callable[[int, int], tuple[int, Where]]:
    """A step's change, named by its event's index in the part file and its row there: (seq, where)."""

    def where_of(index: int, row: int) -> tuple[int, Where]:
        event = events[index]
        file, pos, numbers, tx, gtid = event.where
        return event.seq + row, (file, pos, numbers[row], tx, gtid)

    return where_of


def _table_facts(facts: tuple[Any, ...]) -> tuple[Any, ...]:
    """A table record's facts (its map, schema, flavour, full_where) as they decide its statements:
    the map without its number in the binlog, flags and bytes."""
    tmap, schema, flavour, full_where = facts
    return replace(tmap, table_id=0, flags=0, raw=b""), schema, flavour, full_where


def _newest(item: NetRow | _Event) -> int:
    return -item.seq


def _run(item: NetRow | _Event) -> tuple[str, str, bool]:
    return item.table, item.kind, type(item) is _Event


def _image(row: NetRow, kind: str) -> Any:
    """What the full-image functions reverse for a net change of `kind` (the change of the range)."""
    if kind == "update":
        return (row.before, row.after)
    return row.after if kind == "insert" else row.before


def write_net(header: str, body: Body, script_out: Sink, plan_out: Sink | None) -> None:
    pieces, plan_path, count = body
    script_out.write(header.encode("utf-8"))
    if not count:
        note = "net effect of the range (--net): its changes cancel out, nothing to undo"
        script_out.write((comment_line(note) + "\n").encode("utf-8"))
    else:
        note = f"net effect of the range (--net): {count} row(s), one statement per row, in an order that can run"
        script_out.write((comment_line(note) + "\nBEGIN;\n").encode("utf-8"))
        with ExitStack() as stack:
            files: dict[str, IO[bytes]] = {}
            for path, offset, size in pieces:
                f = files.get(path)
                if f is None:
                    f = files[path] = stack.enter_context(open(path, "rb"))
                copy_range(f, script_out, offset, size)
        script_out.write(BLOCK_END.encode("utf-8"))
    if plan_out is not None:
        with open(plan_path, "rb") as f:
            copy_range(f, plan_out, 0, os.fstat(f.fileno()).st_size)
