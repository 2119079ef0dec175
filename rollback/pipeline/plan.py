"""PartitionPlan a job: a range of binlog files -> ordered partitions that each decode on their own.

A partition is a byte range (file, start, end) cut at an event boundary once it holds about the
target size. It may start anywhere, even inside a transaction of millions of rows after one
TABLE_MAP: its descriptor carries the stream state in force at its start (the FORMAT_DESCRIPTION
facts, the TABLE_MAP events as raw bytes, the transaction context) and the transaction block the
job had open there, so the worker needs nothing from any other partition.

To know that state the planner frames every event of the file up to the range end but decodes
only the small ones that change it (GTID, QUERY, TABLE_MAP, XID, ROWS_QUERY, FORMAT_DESCRIPTION,
ROTATE, and what a TRANSACTION_PAYLOAD holds); rows events are skipped by their headers.

Transaction blocks. The job groups the reverse statements of one transaction into a block (a
BEGIN ... COMMIT of the script). A block opens at the first rows event of a transaction and
closes at its XID / COMMIT / ROLLBACK (or at the next rows event of another transaction, or at the
end of the file's range). Every block gets an ordinal in the order blocks open; the planner counts
them the same way the workers do, so each partition knows the ordinal of the block open at its
start and of the next block it opens, and plan lines name their transaction without a global pass.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from rollback.base import errors, hotpath
from rollback.base.errors import (
    BinlogFormatError,
    RangeError,
    RollbackError,
    SavepointError,
    UndecidedTransaction,
)
from rollback.base.identifiers import quote_ident
from rollback.binlog import events as ev
from rollback.binlog.constants import EventType
from rollback.binlog.decode import (
    DECODERS,
    StreamState,
    TxContext,
    check_boundary,
    decode_event,
    end_transaction,
)
from rollback.binlog.reader import (
    EVENT_HEADER,
    BinlogFile,
    FormatFacts,
    RawEvent,
    iter_events,
    skip_run,
    without_checksum,
)
from rollback.binlog.rows import ROWS_EVENT_TYPES, RowsEvent
from rollback.binlog.table_map import TableMap, decode_table_map
from rollback.pipeline import storage
from rollback.pipeline.order import FileTrail, check_order, identity
from rollback.pipeline.savepoints import (
    SavepointTracker,
    Undo,
    Void,
    XaEvent,
    merged,
    overlapping,
    xa_event,
    xa_outcomes,
)
from rollback.request.spec import FIRST_EVENT, RangeSpec, check_positions

TARGET_BYTES = 64 << 20  # default partition size, and the largest a job picks by itself
MIN_PARTITION_BYTES = 1 << 20  # the smallest a job picks by itself: below it, fixed costs dominate
# Partitions per Spark slot (core): the scheduler hands them out as slots free up, so a partition
# that costs more than its bytes say (an update-heavy one) delays the job by a fraction of its
# share, not by all of it.
PARTITIONS_PER_SLOT = 4
# A range of several files and at least this many bytes is planned one process per file (per core):
# below it, starting the processes costs more than the header walk they share.
PARALLEL_PLAN_BYTES = 512 << 20

SchemaKey = tuple[str, str, bytes, tuple[int, ...]]


def schema_key(tmap: TableMap) -> SchemaKey:
    """What a table's schema is resolved for (as SchemaResolver caches it)."""
    return (tmap.database, tmap.table, tmap.column_types, tmap.column_meta)


@dataclass(slots=True)
class OpenBlock:
    """The transaction block open at a partition's start."""

    ordinal: int
    first_pos: int
    # Its transaction context when the stream has already moved on to another transaction (no
    # COMMIT came between them); None when it is the stream's current transaction.
    tx: dict[str, Any] | None = None


@dataclass(slots=True)
class Partition:
    """One unit of work: small, and serialisable with pickle or JSON (`to_dict`)."""

    index: int
    path: str  # as the user named it (error messages)
    location: str  # where a worker reads it: an absolute local path or a URL
    file_label: str  # the file's base name, as the script names it
    file_index: int
    start: int
    end: int
    events: int  # top-level events in [start, end)
    flavour: str  # mariadb | mysql (from the file's FORMAT_DESCRIPTION)
    facts: dict[str, Any]  # FormatFacts in force at `start`
    table_maps: list[tuple[int, bytes, bool]]  # (position, raw TABLE_MAP event, inside a payload)
    tx: dict[str, Any]  # TxContext at `start`
    file_name: str | None  # the stream's file name at `start` (ROTATE may change it)
    block: OpenBlock | None  # the transaction block open at `start`
    next_block: int  # ordinal of the next block this partition opens
    range_start: bool  # first partition of its file's range
    range_end: bool  # last partition of its file's range
    # Rows events a ROLLBACK TO SAVEPOINT (or ROLLBACK) undid, as disjoint spans (savepoints.py).
    voids: list[Void] = field(default_factory=list)
    # Ordinal of the next block after this partition, as the planner counted: the partition checks
    # that it counted the same when it ends.
    end_block: int = 0

    @property
    def size(self) -> int:
        return self.end - self.start

    def stream_state(self) -> StreamState:
        """The decoder state at `start`, rebuilt from the descriptor."""
        facts = FormatFacts.from_dict(self.facts)
        inner = without_checksum(facts)
        maps: dict[int, TableMap] = {}
        for pos, data, in_payload in self.table_maps:
            tmap = _decode_map(pos, data, inner if in_payload else facts, self.path)
            maps[tmap.table_id] = tmap
        return StreamState(facts, maps, TxContext.from_dict(dict(self.tx)), self.path, self.file_name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "path": self.path,
            "location": self.location,
            "file_label": self.file_label,
            "file_index": self.file_index,
            "start": self.start,
            "end": self.end,
            "events": self.events,
            "flavour": self.flavour,
            "facts": self.facts,
            "table_maps": [[pos, data.hex(), inner] for pos, data, inner in self.table_maps],
            "tx": self.tx,
            "file_name": self.file_name,
            "block": None
            if self.block is None
            else {"ordinal": self.block.ordinal, "first_pos": self.block.first_pos, "tx": self.block.tx},
            "next_block": self.next_block,
            "range_start": self.range_start,
            "range_end": self.range_end,
            "voids": [list(v) for v in self.voids],
            "end_block": self.end_block,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Partition:
        block = d["block"]
        return cls(
            d["index"],
            d["path"],
            d["location"],
            d["file_label"],
            d["file_index"],
            d["start"],
            d["end"],
            d["events"],
            d["flavour"],
            d["facts"],
            [(pos, bytes.fromhex(data), inner) for pos, data, inner in d["table_maps"]],
            d["tx"],
            d["file_name"],
            None if block is None else OpenBlock(block["ordinal"], block["first_pos"], block["tx"]),
            d["next_block"],
            d["range_start"],
            d["range_end"],
            [(a, b, c, e) for a, b, c, e in d.get("voids", [])],
            d.get("end_block", 0),
        )


def _raw_event(pos: int, data: bytes, facts: FormatFacts) -> RawEvent:
    timestamp, type_code, server_id, length, next_pos, flags = EVENT_HEADER.unpack_from(data, 0)
    return RawEvent(
        pos,
        timestamp,
        type_code,
        server_id,
        length,
        next_pos,
        flags,
        memoryview(data),
        facts.header_len,
        facts.checksum_len,
    )


def _decode_map(pos: int, data: bytes, facts: FormatFacts, path: str) -> TableMap:
    try:
        return decode_table_map(_raw_event(pos, data, facts), facts)
    except BinlogFormatError as exc:
        raise BinlogFormatError(path, exc.offset if exc.offset is not None else pos, exc.reason) from None


@dataclass
class PartitionPlan:
    partitions: list[Partition]
    bytes_total: int = 0
    events_total: int = 0
    server_version: str = ""
    # The TABLE_MAPs in force within the range, one per schema key, with where each was first seen.
    table_maps: dict[SchemaKey, tuple[TableMap, int]] = field(default_factory=dict)
    signatures: set[bytes] = field(default_factory=set)  # TABLE_MAP bodies after the table id, seen
    # DDL in the range: (file index, position, file label, statement, default database); after each,
    # the signatures are seen anew, so that `map_epochs` holds every (signature, schema epoch) once.
    ddl: list[tuple[int, int, str, str, str]] = field(default_factory=list)
    map_epochs: list[tuple[int, int, TableMap]] = field(default_factory=list)  # (file index, position, map)
    notes: list[str] = field(default_factory=list)  # what the planner found and the job reports (warnings)
    unchecked: list[str] = field(default_factory=list)  # files whose events carry no checksum
    times: list[int] = field(default_factory=list)  # first and last event timestamps of each file's range
    xa: list[XaEvent] = field(default_factory=list)  # the XA statements of the range, in log order


def _ends_transaction(event: Any) -> bool:
    return isinstance(event, ev.Xid) or (isinstance(event, ev.Query) and event.kind in ("COMMIT", "ROLLBACK"))


_TABLE_MAP = int(EventType.TABLE_MAP)
_XID = int(EventType.XID)
_ROWS_QUERY = frozenset({int(EventType.ROWS_QUERY), int(EventType.ANNOTATE_ROWS)})
_TRAIL_EVENTS = frozenset({ev.MariaGtid, ev.Gtid, ev.Rotate, ev.GtidList, ev.PreviousGtids})


class _FilePlanner:
    """Walks one file's range, cutting partitions and keeping the state a cut must carry.

    The state is decode.py's state machine (its decoders and state updates run on every event but
    rows events), with three shortcuts for the events every transaction repeats: a TABLE_MAP is kept
    as raw bytes and decoded once per table signature, an XID ends the transaction through the same
    `end_transaction`, and the text of a ROWS_QUERY / ANNOTATE_ROWS is decoded only if a cut needs it.
    """

    def __init__(
        self,
        plan: PartitionPlan,
        binlog: BinlogFile,
        path: str,
        file_index: int,
        target: int,
        ordinal: int,
        whole_transactions: bool = False,
    ):
        self.plan = plan
        # cut between transactions, unless one outgrows twice the target (--net: see plan_range)
        self.whole_transactions = whole_transactions
        self.binlog = binlog
        self.path = path
        self.location = path if not storage.is_local(path) else storage.local_path(path)
        self.label = os.path.basename(path)
        self.file_index = file_index
        self.target = max(1, target)
        self.ordinal = ordinal
        self.flavour = "mariadb" if binlog.facts.is_mariadb else "mysql"
        self.state = StreamState(binlog.facts, path=binlog.path, file_name=self.label)
        self.clears = self.state.clears  # the state's clears the planner's own table maps followed
        self.maps: dict[int, tuple[int, bytes, bool]] = {}  # table id -> (position, raw event, in a payload)
        self.block: OpenBlock | None = None
        self.block_tx: TxContext | None = None
        self.pending_query: tuple[TxContext, RawEvent] | None = None  # the last ROWS_QUERY, not decoded
        self.in_range = False
        self.savepoints = SavepointTracker()
        self.voids: list[Void] = []
        self.trail = FileTrail(self.label, identity(self.location, storage.is_local(path)))

    def advance(self, raw: RawEvent) -> None:
        """Apply one top-level event but a rows event (`_walk` counts those) to the state (and, in
        the range, to the open block)."""
        type_code = raw.type_code
        if type_code == _TABLE_MAP:
            self._table_map(raw, bytes(raw.data), False)
        elif type_code == _XID and len(raw.body) == 8:
            end_transaction(self.state)
            self._cleared()
            self.block, self.block_tx = None, None
        elif type_code in _ROWS_QUERY:
            pending = self.pending_query
            if pending is not None and pending[0] is not self.state.tx and pending[0] is self.block_tx:
                self._apply_query()
            self.pending_query = (self.state.tx, raw)
        else:
            if type_code == EventType.TRANSACTION_PAYLOAD:
                self._apply_query()  # its events may set the statement text themselves
            state = self.state
            was_open = state.tx.open
            for decoded in decode_event(raw, state):
                if state.clears != self.clears:
                    self._cleared()
                event = decoded.event
                if isinstance(event, TableMap):
                    self._table_map(decoded.raw, event.raw, decoded.raw is not raw)
                    continue
                if type(event) in _TRAIL_EVENTS:
                    self.trail.event(event, raw.pos + raw.length == self.binlog.size)
                if isinstance(event, ev.Query) and event.kind in ("SAVEPOINT", "ROLLBACK") and was_open:
                    self._savepoint(decoded.outer_pos, decoded.raw.pos, event)
                was_open = state.tx.open
                if not self.in_range:
                    continue
                if isinstance(event, ev.Query) and event.kind == "XA":
                    xa = xa_event(
                        self.file_index,
                        decoded.outer_pos,
                        self.label,
                        event.sql,
                        state.tx.gtid,
                        state.tx.begin_pos or decoded.outer_pos,
                    )
                    if xa is not None:
                        self.plan.xa.append(xa)
                if isinstance(event, ev.Query) and event.kind == "DDL":
                    self.plan.ddl.append(
                        (self.file_index, decoded.outer_pos, self.label, event.sql, event.database)
                    )
                    self.plan.signatures.clear()
                if isinstance(event, RowsEvent):
                    self._rows(decoded.outer_pos)
                elif _ends_transaction(event):
                    self.block, self.block_tx = None, None

    def _cleared(self) -> None:
        """The state cleared its table maps: so do the planner's (kept as raw bytes)."""
        self.maps.clear()
        self.state.table_maps.clear()
        self.clears = self.state.clears

    def _table_map(self, raw: RawEvent, data: bytes, in_payload: bool) -> None:
        facts = without_checksum(self.state.facts) if in_payload else self.state.facts
        post = facts.post_header_len(EventType.TABLE_MAP, 8)
        body = data[facts.header_len : len(data) - facts.checksum_len]
        table_id = int.from_bytes(body[:4] if post == 6 else body[:6], "little")
        self.maps[table_id] = (raw.pos, data, in_payload)
        if self.in_range:
            self._signature(body[post:], raw.pos, data, facts)

    def _signature(self, signature: bytes, pos: int, data: bytes, facts: FormatFacts) -> None:
        """Keep one decoded TABLE_MAP per table signature: the schemas the job must resolve."""
        if signature in self.plan.signatures:
            return
        tmap = _decode_map(pos, data, facts, self.binlog.path)
        self.plan.signatures.add(signature)
        self.plan.table_maps.setdefault(schema_key(tmap), (tmap, pos))
        self.plan.map_epochs.append((self.file_index, pos, tmap))

    def _apply_query(self) -> None:
        pending, self.pending_query = self.pending_query, None
        if pending is None:
            return
        tx, raw = pending
        if tx is self.state.tx or tx is self.block_tx:
            tx.rows_query = DECODERS[raw.type_code](raw, self.state.facts).sql

    def _savepoint(self, outer: int, inner: int, event: ev.Query) -> None:
        """A SAVEPOINT, ROLLBACK TO, RELEASE or ROLLBACK inside the open transaction."""
        tx = self.state.tx
        found = self.savepoints.query(tx, event.sql, event.kind, (outer, inner))
        # It matters only to rows of the range logged before it, in its transaction.
        has_rows = self.block is not None and self.block_tx is tx
        if isinstance(found, Undo):
            self.voids.append(found.void)
            if has_rows and found.rows_events:
                self._note_undo(outer, found, tx)
        elif found is not None and has_rows:
            raise SavepointError(
                f"{self.label}:{outer}: ROLLBACK TO {quote_ident(found)} names no SAVEPOINT logged in its "
                f"transaction (gtid {tx.gtid or '-'}, opened at {self.label}:{tx.begin_pos}): which of its "
                "row changes it undid cannot be told; leave this transaction out of the range"
            )

    def _note_undo(self, pos: int, undo: Undo, tx: TxContext) -> None:
        where = f"{self.label}:{pos}"
        if undo.savepoint is None:
            self.plan.notes.append(
                f"{where}: the transaction (gtid {tx.gtid or '-'}) ends in ROLLBACK: its "
                f"{undo.rows_events} rows event(s) never persisted and are left out"
            )
            return
        self.plan.notes.append(
            f"{where}: ROLLBACK TO {quote_ident(undo.savepoint)} undid the {undo.rows_events} rows event(s) "
            f"its transaction (gtid {tx.gtid or '-'}) logged after {self.label}:{undo.savepoint_pos}: "
            "they never persisted and are left out"
        )

    def _rows(self, pos: int, count: int = 1) -> None:
        """`count` rows events of the current transaction, the first at `pos`."""
        self.savepoints.rows_event(self.state.tx, count)
        if self.block is None or self.block_tx is not self.state.tx:
            self.block = OpenBlock(self.ordinal, self.state.tx.begin_pos or pos)
            self.block_tx = self.state.tx
            self.ordinal += 1

    def snapshot(self, start: int, range_start: bool) -> Partition:
        state = self.state
        self._apply_query()
        block = None
        if self.block is not None:
            tx = None if self.block_tx is state.tx or self.block_tx is None else self.block_tx.to_dict()
            block = OpenBlock(self.block.ordinal, self.block.first_pos, tx)
        return Partition(
            index=len(self.plan.partitions),
            path=self.path,
            location=self.location,
            file_label=self.label,
            file_index=self.file_index,
            start=start,
            end=start,
            events=0,
            flavour=self.flavour,
            facts=state.facts.to_dict(),
            table_maps=list(self.maps.values()),
            tx=state.tx.to_dict(),
            file_name=state.file_name,
            block=block,
            next_block=self.ordinal,
            range_start=range_start,
            range_end=False,
        )

    def run(self, start: int, stop: int) -> None:
        binlog = self.binlog
        if start > 4:
            check_boundary(binlog.buf, binlog.facts, start, binlog.path)
            self._walk(4, start, binlog.facts, None)
        if stop != binlog.size:
            check_boundary(binlog.buf, binlog.facts, stop, binlog.path)
        self.state.file_name = self.label
        self.in_range = True
        for pos, data, in_payload in self.maps.values():
            facts = without_checksum(self.state.facts) if in_payload else self.state.facts
            post = facts.post_header_len(EventType.TABLE_MAP, 8)
            self._signature(data[facts.header_len + post : len(data) - facts.checksum_len], pos, data, facts)
        frame = self.state.facts  # framing keeps the facts in force at the range start
        part, last = self._walk(start, stop, frame, self.snapshot(start, range_start=True))
        assert part is not None
        if last is not None:  # the first and last event times of the range (said when it selects nothing)
            first = int.from_bytes(binlog.buf[start : start + 4], "little")
            self.plan.times.extend(t for t in (first, last) if t)
        part.end = stop
        part.range_end = True
        self._emit(part)

    def _walk(
        self, pos: int, stop: int, frame: FormatFacts, part: Partition | None
    ) -> tuple[Partition | None, int | None]:
        """Apply the events of [pos, stop), framed with `frame`, to the state. In the range (`part`
        given) count them into `part` and cut a new partition once it holds the target size. Returns
        the last partition and the last event's timestamp (None: no event).

        Nine events in ten are rows events, which the planner only counts: a run of them is framed
        by `skip_run` (the compiled core's, or its pure-Python twin), up to where a cut may fall. It
        stops at any event it cannot frame, and `iter_events`, restarted there, raises the error."""
        binlog = self.binlog
        buf, path = binlog.buf, binlog.path
        skip = _skip_run()
        header_len, checksum_len = frame.header_len, frame.checksum_len
        target = self.target
        last: int | None = None
        while pos < stop:
            events = iter_events(buf, frame, pos, stop, path, verify=False)
            pos = stop  # unless a run of rows events moves the walk on (the loop restarts there)
            for event in events:
                end = event.pos + event.length
                more = 0
                if event.type_code in ROWS_EVENT_TYPES:
                    cut_at = stop  # where the run must hand back: a cut may fall after that event
                    if part is not None and _same_framing(self.state.facts, frame):
                        cut_at = part.start + target
                    end, more, stamp = skip(buf, end, stop, cut_at, header_len, checksum_len, _ROWS_KINDS)
                    if self.in_range:
                        self._rows(event.pos, 1 + more)
                    last = stamp if more else event.timestamp
                else:
                    self.advance(event)
                    last = event.timestamp
                if part is not None:
                    part.events += 1 + more
                    if (
                        end - part.start >= target
                        and end < stop
                        and _same_framing(self.state.facts, frame)
                        and (
                            not self.whole_transactions
                            or not self.state.tx.open
                            or end - part.start >= 2 * target
                        )
                    ):
                        part.end = end
                        self._emit(part)
                        part = self.snapshot(end, range_start=False)
                        binlog.release(end)  # a 5 GB file would otherwise end up resident in the driver
                if more:
                    pos = end
                    break
        return part, last

    def open_at_stop(self, stop: int) -> bool:
        """Whether the range stops inside a transaction with rows in the range (and the file goes on)."""
        return stop < self.binlog.size and self.block is not None and self.state.tx.open

    def look_ahead(self, binlog: BinlogFile, stop: int) -> None:
        """Read on from `stop` to the end of the open transaction: a ROLLBACK TO there undoes rows of
        the range. Only the events that may end it or name a savepoint are decoded."""
        state = self.state
        tx = state.tx
        skip = (*ROWS_EVENT_TYPES, *_ROWS_QUERY, _TABLE_MAP)
        for raw in iter_events(binlog.buf, state.facts, stop, binlog.size, binlog.path, verify=False):
            if raw.type_code in skip:
                continue
            if raw.type_code == _XID:
                return
            for decoded in decode_event(raw, state):
                event = decoded.event
                if state.tx is not tx:
                    return
                if isinstance(event, ev.Query) and event.kind in ("SAVEPOINT", "ROLLBACK"):
                    self._savepoint(decoded.outer_pos, decoded.raw.pos, event)
                if not state.tx.open:
                    return

    def attach_voids(self, first_partition: int) -> None:
        """Give each partition of this file the voids that overlap it."""
        voids = merged(self.voids)
        if not voids:
            return
        for part in self.plan.partitions[first_partition:]:
            part.voids = overlapping(voids, part.start, part.end)

    def _emit(self, part: Partition) -> None:
        part.end_block = self.ordinal
        self.plan.partitions.append(part)
        self.plan.events_total += part.events


_ROWS_KINDS = bytes(code in ROWS_EVENT_TYPES for code in range(256))  # skip_run's event types


def _skip_run() -> Any:
    """The walk over a run of rows events: the compiled core's, or its pure-Python twin."""
    core = hotpath.CORE
    return skip_run if core is None else core.skip_run


def _same_framing(a: FormatFacts, b: FormatFacts) -> bool:
    return a.header_len == b.header_len and a.checksum_len == b.checksum_len


def _look_ahead(planner: _FilePlanner, binlog: BinlogFile, path: str, stop: int) -> None:
    if storage.is_local(path):
        planner.look_ahead(binlog, stop)
        return
    whole = storage.open_for_planning(path)  # the planning view stopped at `stop`
    try:
        planner.look_ahead(whole, stop)
    finally:
        whole.close()


def range_bytes(rng: RangeSpec) -> int:
    """The bytes the range covers, from its bounds (start and stop positions, not whole files)."""
    total = 0
    last = len(rng.files) - 1
    for index, path in enumerate(rng.files):
        size = storage.size(path)
        start = rng.start_position if index == 0 and rng.start_position is not None else FIRST_EVENT
        stop = rng.stop_position if index == last and rng.stop_position is not None else size
        total += max(0, min(stop, size) - start)
    return total


def partition_target(range_bytes: int, slots: int) -> int:
    """The partition size for a range over `slots` parallel slots (1: in-process): about
    PARTITIONS_PER_SLOT partitions per slot, between MIN_PARTITION_BYTES and TARGET_BYTES."""
    if slots <= 1:
        return TARGET_BYTES
    wanted = -(-range_bytes // (PARTITIONS_PER_SLOT * slots))
    return max(MIN_PARTITION_BYTES, min(TARGET_BYTES, wanted))


def _plan_file(
    rng: RangeSpec, index: int, target_bytes: int, whole_transactions: bool = False
) -> tuple[PartitionPlan, int, FileTrail]:
    """One file's part of the range on its own: (its plan, the blocks it opened, its trail). Its
    partition indexes and block ordinals count from 0; `_append` moves them into place."""
    plan = PartitionPlan([])
    path = rng.files[index]
    last = len(rng.files) - 1
    stop_hint = rng.stop_position if index == last else None
    binlog = storage.open_for_planning(path, stop_hint)
    try:
        plan.server_version = binlog.facts.server_version
        if binlog.facts.checksum_len == 0:
            plan.unchecked.append(os.path.basename(path))
        start = rng.start_position if index == 0 and rng.start_position is not None else FIRST_EVENT
        stop = rng.stop_position if index == last and rng.stop_position is not None else binlog.size
        if start > binlog.size:
            raise RangeError(f"{path}: start position {start} is past the end of the file ({binlog.size})")
        check_positions(path, start, stop, binlog.size)
        plan.bytes_total += stop - start
        planner = _FilePlanner(plan, binlog, path, index, target_bytes, 0, whole_transactions)
        planner.run(start, stop)
        if planner.open_at_stop(stop):
            _look_ahead(planner, binlog, path, stop)
        planner.attach_voids(0)
        return plan, planner.ordinal, planner.trail
    finally:
        binlog.close()


def _plan_file_reporting(job: tuple[RangeSpec, int, int, bool]) -> tuple[Any, ...]:
    """_plan_file, with a RollbackError as data (its class name and arguments): the errors of this
    package take arguments that pickling an exception across processes does not keep."""
    try:
        return ("ok", *_plan_file(*job))
    except BinlogFormatError as exc:
        return ("error", type(exc).__name__, (exc.path, exc.offset, exc.reason))
    except RollbackError as exc:
        return ("error", type(exc).__name__, (str(exc),))


def _rebuilt(name: str, args: tuple[Any, ...]) -> Exception:
    cls = getattr(errors, name)
    return cls(*args)  # type: ignore[no-any-return]


def _append(plan: PartitionPlan, sub: PartitionPlan, ordinal: int) -> None:
    """A file's plan after the files before it: partitions renumbered, block ordinals moved on by
    the blocks those files opened (a transaction never crosses files)."""
    for part in sub.partitions:
        part.index = len(plan.partitions)
        part.next_block += ordinal
        part.end_block += ordinal
        if part.block is not None:
            part.block.ordinal += ordinal
        plan.partitions.append(part)
    plan.bytes_total += sub.bytes_total
    plan.events_total += sub.events_total
    plan.server_version = plan.server_version or sub.server_version
    for key, found in sub.table_maps.items():
        plan.table_maps.setdefault(key, found)
    plan.signatures |= sub.signatures
    plan.ddl.extend(sub.ddl)  # files come in log order, and so do their DDL and table-map epochs
    plan.map_epochs.extend(sub.map_epochs)
    plan.notes.extend(sub.notes)
    plan.unchecked.extend(sub.unchecked)
    plan.times.extend(sub.times)
    plan.xa.extend(sub.xa)


def plan_range(
    rng: RangeSpec, target_bytes: int = TARGET_BYTES, processes: int = 1, whole_transactions: bool = False
) -> PartitionPlan:
    """Resolve the files and positions of a range into ordered partitions of about `target_bytes`;
    with `processes` > 1 the files are planned at once in that many processes (each file's header
    walk is its own). `whole_transactions` (--net): a partition ends between transactions, unless one
    outgrows twice the target, so that the rows a transaction changes are more often one partition's
    alone (rollback/render/net_local.py)."""
    if not rng.files:
        raise RangeError("no binlog files in the range")
    for what, given in (("start", rng.start_position), ("stop", rng.stop_position)):
        if given is not None and given < FIRST_EVENT:
            where = rng.files[0] if what == "start" else rng.files[-1]
            raise RangeError(
                f"{where}: {what} position {given} is before the first event (events start at 4)"
            )
    jobs = [(rng, index, target_bytes, whole_transactions) for index in range(len(rng.files))]
    if processes > 1 and len(rng.files) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # spawn: a fresh interpreter per worker (this process may hold threads and a JVM gateway)
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(min(processes, len(jobs)), mp_context=context) as pool:
            planned = list(pool.map(_plan_file_reporting, jobs))
    else:
        planned = [_plan_file_reporting(job) for job in jobs]
    plan = PartitionPlan([])
    ordinal = 0
    trails: list[FileTrail] = []
    for outcome in planned:
        if outcome[0] == "error":
            raise _rebuilt(outcome[1], outcome[2])
        _, sub, blocks, trail = outcome
        _append(plan, sub, ordinal)
        ordinal += blocks
        trails.append(trail)
    plan.notes[:0] = check_order(trails)
    _settle_xa(plan)
    return plan


def _settle_xa(plan: PartitionPlan) -> None:
    """Only committed changes are undone: the rows of an XA transaction the range rolls back are voids
    of their partitions, and one whose XA COMMIT or XA ROLLBACK lies outside the range is refused."""
    voids, notes, undecided = xa_outcomes(plan.xa)
    if undecided:
        first = undecided[0]
        raise UndecidedTransaction(
            f"{len(undecided)} XA transaction(s) prepared in the range have no XA COMMIT or XA ROLLBACK in it; "
            f"first: {first.xid} (gtid {first.gtid or '-'}) at {first.label}:{first.begin}: whether its changes "
            "persisted is decided outside the range; extend the range to its outcome, or end it before "
            "the transaction"
        )
    for part in plan.partitions:
        spans = overlapping(voids.get(part.file_index, []), part.start, part.end)
        if spans:
            part.voids = merged(part.voids + spans)
    plan.notes.extend(notes)
