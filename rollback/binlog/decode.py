"""From framed events to decoded events and row changes, with the stream state made explicit.

`StreamState` is everything a position in a binlog depends on: the FORMAT_DESCRIPTION facts,
the table maps in force, and the transaction context. A partition of a file starts from a
StreamState (the planner builds it) and decoding is a pure function of (state, bytes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rollback.base import hotpath
from rollback.base.errors import BinlogFormatError, RangeError, SchemaMismatch, UnsupportedEvent
from rollback.binlog import events as ev
from rollback.binlog.columns import MISSING, ColumnSpec
from rollback.binlog.constants import ColumnType, EventType
from rollback.binlog.payload import (
    TransactionPayload,
    decode_query_compressed,
    decode_transaction_payload,
    payload_events,
)
from rollback.binlog.reader import FormatFacts, RawEvent, iter_events, scan_headers, without_checksum
from rollback.binlog.rowdecoder import RowDecoder, get_row_decoder
from rollback.binlog.rows import (
    PRE_GA_ROWS_TYPES,
    ROWS_EVENT_TYPES,
    UPDATE,
    RowsEvent,
    decode_partial_pairs,
    decode_partial_pairs_part,
    decode_rows_event,
)
from rollback.binlog.table_map import TableMap, decode_table_map

DECODERS: dict[int, ev.Decoder] = {
    **ev.SMALL_EVENT_DECODERS,
    EventType.TABLE_MAP: decode_table_map,
    EventType.TRANSACTION_PAYLOAD: decode_transaction_payload,
    EventType.QUERY_COMPRESSED: decode_query_compressed,
    **{t: decode_rows_event for t in ROWS_EVENT_TYPES},
}

__all__ = [
    "MISSING",
    "DECODERS",
    "StreamState",
    "TxContext",
    "RowsBatch",
    "decode_stream",
]


@dataclass(slots=True)
class TxContext:
    """The transaction a row change belongs to."""

    gtid: str | None = None
    begin_pos: int | None = None  # position of the GTID (or BEGIN) event that opened it
    timestamp: int = 0
    server_id: int = 0
    thread_id: int | None = None
    database: str | None = None
    rows_query: str | None = None  # ROWS_QUERY / ANNOTATE_ROWS text of the current statement
    open: bool = False  # between BEGIN and COMMIT/XID

    def to_dict(self) -> dict[str, Any]:
        return {
            "gtid": self.gtid,
            "begin_pos": self.begin_pos,
            "timestamp": self.timestamp,
            "server_id": self.server_id,
            "thread_id": self.thread_id,
            "database": self.database,
            "rows_query": self.rows_query,
            "open": self.open,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TxContext:
        return cls(**d)


@dataclass(slots=True)
class StreamState:
    facts: FormatFacts
    table_maps: dict[int, TableMap] = field(default_factory=dict)
    tx: TxContext = field(default_factory=TxContext)
    path: str | None = None
    # Where the stream is: the current file name (ROTATE may change it in relay logs or spools).
    file_name: str | None = None
    # How many times the table maps in force were cleared (a transaction's end, a FORMAT_DESCRIPTION):
    # a reader that keeps table maps of its own (the planner) clears them when this moves.
    clears: int = 0


@dataclass(slots=True)
class DecodedEvent:
    raw: RawEvent
    event: Any  # the dataclass of its type; RowsEvent for rows events
    outer_pos: int  # the position in the file (of the TRANSACTION_PAYLOAD for inner events)
    outer_end: int


@dataclass(slots=True)
class RowsBatch:
    """All rows of one rows event, decoded, with where they came from."""

    file: str | None
    pos: int
    end_pos: int
    kind: str
    table: TableMap
    tx: TxContext
    timestamp: int
    server_id: int
    rows: list  # tuples (insert/delete) or (before, after) pairs (update)
    statement_end: bool
    first_row: int = 0  # the index in the event of rows[0] (rows_batches: a part of the event)


def decode_stream(
    buf: memoryview | bytes,
    state: StreamState,
    start: int,
    end: int,
    verify: bool = True,
) -> Iterator[DecodedEvent]:
    """Decode events in buf[start:end], updating `state` as the server would; inner events of
    TRANSACTION_PAYLOAD are yielded inline (their positions are the payload's)."""
    buf = memoryview(buf) if not isinstance(buf, memoryview) else buf
    for raw in iter_events(buf, state.facts, start, end, state.path, verify):
        yield from _decode_one(raw, state, raw.pos, raw.end)


def decode_event(raw: RawEvent, state: StreamState) -> Iterator[DecodedEvent]:
    """Decode one framed top-level event (and the events inside a TRANSACTION_PAYLOAD), updating
    `state`: what a planner calls on the events that change the state, skipping rows events."""
    return _decode_one(raw, state, raw.pos, raw.end)


def _decode_one(raw: RawEvent, state: StreamState, outer_pos: int, outer_end: int) -> Iterator[DecodedEvent]:
    type_code = raw.type_code
    decoder = DECODERS.get(type_code)
    if decoder is None:
        if type_code in PRE_GA_ROWS_TYPES:
            raise UnsupportedEvent(state.path, raw.pos, f"pre-GA row event type {type_code} (MySQL 5.1 beta)")
        if state.tx.open:
            raise BinlogFormatError(
                state.path,
                raw.pos,
                f"unknown event type {type_code} inside a transaction that may hold row changes",
            )
        yield DecodedEvent(raw, ev.Ignored(type_code), outer_pos, outer_end)
        return
    try:
        event = decoder(raw, state.facts)
    except BinlogFormatError as exc:
        if exc.path is None:
            raise type(exc)(
                state.path, exc.offset if exc.offset is not None else raw.pos, exc.reason
            ) from None
        raise
    _advance(state, raw, event)
    if isinstance(event, TransactionPayload):
        inner_facts = without_checksum(state.facts)
        inner_state_facts, state.facts = state.facts, inner_facts
        try:
            for inner in payload_events(event, inner_facts, state.path):
                yield from _decode_one(inner, state, outer_pos, outer_end)
        except BinlogFormatError as exc:
            raise BinlogFormatError(
                state.path,
                outer_pos,
                f"inside TRANSACTION_PAYLOAD at inner offset {exc.offset}: {exc.reason}",
            ) from None
        finally:
            state.facts = inner_state_facts
        return
    yield DecodedEvent(raw, event, outer_pos, outer_end)


def _advance(state: StreamState, raw: RawEvent, event: Any) -> None:
    """Apply an event to the stream state: table maps and transaction boundaries."""
    tx = state.tx
    if isinstance(event, TableMap):
        state.table_maps[event.table_id] = event
    elif isinstance(event, RowsEvent):
        pass
    elif isinstance(event, ev.Gtid | ev.MariaGtid):
        # A MySQL GTID precedes the BEGIN that opens the row data; a MariaDB GTID replaces BEGIN.
        state.tx = TxContext(
            gtid=event.text,
            begin_pos=raw.pos,
            timestamp=raw.timestamp,
            server_id=raw.server_id,
            open=isinstance(event, ev.MariaGtid) and not event.standalone,
            thread_id=event.thread_id if isinstance(event, ev.MariaGtid) else None,
        )
    elif isinstance(event, ev.Query):
        kind = event.kind
        if kind == "BEGIN":
            if not tx.gtid or tx.open:
                state.tx = TxContext(gtid=tx.gtid if not tx.open else None, begin_pos=raw.pos, open=True)
            state.tx.open = True
            state.tx.timestamp = raw.timestamp
            state.tx.server_id = raw.server_id
            state.tx.thread_id = event.thread_id
            state.tx.database = event.database
        elif kind in ("COMMIT", "ROLLBACK") or (kind == "XA" and "XA PREPARE" not in event.sql.upper()):
            end_transaction(state)
        elif kind == "DDL":
            state.tx.thread_id = event.thread_id
            end_transaction(state)
    elif isinstance(event, ev.Xid):
        end_transaction(state)
    elif isinstance(event, ev.RowsQuery):
        tx.rows_query = event.sql
    elif isinstance(event, ev.FormatDescription):
        if raw.pos > 4 or state.facts != event.facts:
            state.facts = event.facts
        clear_table_maps(state)
    elif isinstance(event, ev.Rotate):
        state.file_name = event.next_file


def end_transaction(state: StreamState) -> None:
    """COMMIT, XID, ROLLBACK or DDL: the transaction is closed and its table maps are no longer in force."""
    state.tx.open = False
    clear_table_maps(state)


def clear_table_maps(state: StreamState) -> None:
    state.table_maps.clear()
    state.clears += 1


UnsignedFor = Callable[[TableMap], tuple[bool, ...] | None]
SpecsFor = Callable[[TableMap], tuple[ColumnSpec, ...] | None]

# Old temporal types (pre-5.6 layout). MariaDB writes TIME(n)/DATETIME(n)/TIMESTAMP(n) with n > 0 in
# its 'hires' layout under these same codes and *without* metadata (mysql56_temporal_format=OFF, the
# default before 10.1): their width depends on n, which only the schema knows.
_OLD_TEMPORAL: dict[int, str] = {
    ColumnType.TIME: "TIME",
    ColumnType.DATETIME: "DATETIME",
    ColumnType.TIMESTAMP: "TIMESTAMP",
}


def _schema_hint(facts: FormatFacts, tmap: TableMap, specs: tuple[ColumnSpec, ...]) -> str | None:
    """Why rows that do not decode may need the schema: MariaDB 'hires' temporal columns."""
    if not facts.is_mariadb:
        return None
    suspects = [
        f"column {i + 1} ({_OLD_TEMPORAL[spec.type]})"
        for i, spec in enumerate(specs)
        if spec.type in _OLD_TEMPORAL and not spec.meta
    ]
    if not suspects:
        return None
    return (
        f"{', '.join(suspects)} uses MariaDB's old temporal type code, which is also written for the "
        "fractional 'hires' TIME(n)/DATETIME(n)/TIMESTAMP(n) without recording n: "
        "the table schema is needed to decode these rows (--schema-file)"
    )


_SpecsKey = tuple[bytes, tuple[int, ...], tuple[bool, ...] | None]
_SPECS: dict[_SpecsKey, tuple[ColumnSpec, ...]] = {}
_DECODERS: dict[tuple[_SpecsKey, int, Any], RowDecoder] = {}


def _table_specs(
    tmap: TableMap, unsigned: tuple[bool, ...] | None
) -> tuple[_SpecsKey, tuple[ColumnSpec, ...]]:
    """tmap.specs(unsigned), built once per table signature (a rows event is decoded thousands of
    times), with the signature: a key cheaper to hash than the specs."""
    key = (tmap.column_types, tmap.column_meta, tmap.unsigned or unsigned)
    specs = _SPECS.get(key)
    if specs is None:
        if len(_SPECS) >= 4096:
            _SPECS.clear()
        specs = _SPECS[key] = tmap.specs(unsigned)
    return key, specs


def _row_decoder(key: _SpecsKey | None, specs: tuple[ColumnSpec, ...], present: int) -> RowDecoder:
    """get_row_decoder, cached by the table signature when there is one."""
    if key is None:
        return get_row_decoder(specs, present)
    cache_key = (key, present, hotpath.CORE)
    decoder = _DECODERS.get(cache_key)
    if decoder is None:
        if len(_DECODERS) >= 4096:
            _DECODERS.clear()
        decoder = _DECODERS[cache_key] = get_row_decoder(specs, present)
    return decoder


def rows_batch(
    decoded: DecodedEvent,
    event: RowsEvent,
    state: StreamState,
    unsigned_for: UnsignedFor | None = None,
    specs_for: SpecsFor | None = None,
    decimal_text: bool = False,
) -> RowsBatch:
    """Decode the rows of a rows event with the table map in force.

    ``unsigned_for`` supplies signedness from a schema when the binlog has none; ``specs_for`` supplies
    whole column specs (a schema that knows what the binlog cannot say, such as the precision of a
    MariaDB 'hires' TIMESTAMP(n)), or None to use the table map's. ``decimal_text``: see
    RowDecoder.decode_rows (only for rows that go to the compiled statement renderer and change-log
    encoder alone).
    """
    raw = decoded.raw
    tmap, key, specs = _event_specs(decoded, event, state, unsigned_for, specs_for)
    try:
        before = _row_decoder(key, specs, event.present)
        data = bytes(event.rows)
        if event.partial:
            rows: list = decode_partial_pairs(
                specs, data, before, _row_decoder(key, specs, event.present_after)
            )
        elif event.kind == UPDATE:
            rows = before.decode_pairs(
                data, 0, len(data), _row_decoder(key, specs, event.present_after), decimal_text
            )
        else:
            rows = before.decode_rows(data, 0, len(data), decimal_text)
    except BinlogFormatError as exc:
        raise _located(exc, decoded, state, tmap, specs, specs_for) from None
    return RowsBatch(
        state.file_name,
        decoded.outer_pos,
        decoded.outer_end,
        event.kind,
        tmap,
        state.tx,
        raw.timestamp,
        raw.server_id,
        rows,
        event.statement_end,
    )


def _event_specs(
    decoded: DecodedEvent,
    event: RowsEvent,
    state: StreamState,
    unsigned_for: UnsignedFor | None,
    specs_for: SpecsFor | None,
) -> tuple[TableMap, _SpecsKey | None, tuple[ColumnSpec, ...]]:
    """The table map in force for a rows event, its signature (None with a schema's specs) and specs."""
    tmap = state.table_maps.get(event.table_id)
    if tmap is None:
        raise BinlogFormatError(
            state.path, decoded.outer_pos, f"rows event for table id {event.table_id} without TABLE_MAP"
        )
    if tmap.column_count != event.column_count:
        raise BinlogFormatError(
            state.path,
            decoded.outer_pos,
            f"rows event has {event.column_count} columns but TABLE_MAP of {tmap.qualified_name} has {tmap.column_count}",
        )
    specs = specs_for(tmap) if specs_for else None
    key = None
    if specs is None:
        key, specs = _table_specs(
            tmap, unsigned_for(tmap) if unsigned_for and tmap.unsigned is None else None
        )
    elif len(specs) != tmap.column_count:
        raise SchemaMismatch(
            f"the schema of {tmap.qualified_name} has {len(specs)} columns, its TABLE_MAP has {tmap.column_count}"
        )
    return tmap, key, specs


def _located(
    exc: BinlogFormatError,
    decoded: DecodedEvent,
    state: StreamState,
    tmap: TableMap,
    specs: tuple[ColumnSpec, ...],
    specs_for: SpecsFor | None,
) -> BinlogFormatError:
    """A row decoder's error, located at the event, naming the table (and why the schema may help)."""
    reason = f"rows of {tmap.qualified_name}: {exc.reason}"
    hint = _schema_hint(state.facts, tmap, specs) if specs_for is None else None
    return BinlogFormatError(state.path, decoded.outer_pos, f"{reason}; {hint}" if hint else reason)


# Rows decoded at a time by rows_batches: a rows event of millions of tiny rows (a few bytes of
# file each, through a compressed payload) never becomes one list of them.
ROWS_PER_BATCH = 10_000


def rows_batches(
    decoded: DecodedEvent,
    event: RowsEvent,
    state: StreamState,
    unsigned_for: UnsignedFor | None = None,
    specs_for: SpecsFor | None = None,
    decimal_text: bool = False,
    limit: int | None = None,
) -> Iterator[RowsBatch]:
    """rows_batch's rows, `limit` at a time (each batch's `first_row` says where it starts); an
    event without rows gives one empty batch. A row that does not decode raises when its part is
    reached, after the parts before it were given. `limit` defaults to ROWS_PER_BATCH."""
    limit = limit or ROWS_PER_BATCH
    tmap, key, specs = _event_specs(decoded, event, state, unsigned_for, specs_for)
    raw = decoded.raw
    data = bytes(event.rows)
    try:
        before = _row_decoder(key, specs, event.present)
        after = _row_decoder(key, specs, event.present_after)
    except BinlogFormatError as exc:
        raise _located(exc, decoded, state, tmap, specs, specs_for) from None
    pos = first = 0
    while True:
        try:
            if event.partial:
                rows, pos = decode_partial_pairs_part(specs, data, pos, limit, before, after)
            elif event.kind == UPDATE:
                rows, pos = before.decode_pairs_part(data, pos, len(data), after, limit, decimal_text)
            else:
                rows, pos = before.decode_rows_part(data, pos, len(data), limit, decimal_text)
        except BinlogFormatError as exc:
            raise _located(exc, decoded, state, tmap, specs, specs_for) from None
        done = pos >= len(data)
        yield RowsBatch(
            state.file_name,
            decoded.outer_pos,
            decoded.outer_end,
            event.kind,
            tmap,
            state.tx,
            raw.timestamp,
            raw.server_id,
            rows,
            event.statement_end and done,
            first,
        )
        if done:
            return
        first += len(rows)


def full_images_decoder(
    decoded: DecodedEvent,
    event: RowsEvent,
    state: StreamState,
    unsigned_for: UnsignedFor | None = None,
    specs_for: SpecsFor | None = None,
    updates: bool = False,
) -> tuple[RowDecoder, bytes] | None:
    """(the row decoder of a WRITE_ROWS or DELETE_ROWS event's images, its rows' bytes) when the images
    carry every column and the compiled core decodes them (the decoder's `layout`), else None: what
    FullImages.script_images writes statements from, as rows_batches would decode them. The decoder
    reads the bytes again where they are read later (it pickles as its specs). `updates`: an
    UPDATE_ROWS event's too, where both its images carry every column (its rows' bytes: each row's
    before image then its after image, both read by that decoder)."""
    full = (1 << event.column_count) - 1
    if (
        event.partial
        or event.present != full
        or (event.kind == UPDATE and (not updates or event.present_after != full))
    ):
        return None
    _tmap, key, specs = _event_specs(decoded, event, state, unsigned_for, specs_for)
    try:
        decoder = _row_decoder(key, specs, event.present)
    except BinlogFormatError:
        return None  # rows_batches raises it, located
    return None if decoder.layout is None else (decoder, bytes(event.rows))


def state_at(
    buf: memoryview | bytes, facts: FormatFacts, position: int, path: str | None = None
) -> StreamState:
    """The stream state in force at `position` of a file, found by decoding events from the start
    (rows are not decoded). Raises RangeError when `position` is not an event boundary."""
    state = StreamState(facts, path=path, file_name=path.rsplit("/", 1)[-1] if path else None)
    if position <= 4:
        return state
    check_boundary(buf, facts, position, path)
    for _ in decode_stream(buf, state, 4, position, verify=False):
        pass
    return state


def check_boundary(
    buf: memoryview | bytes, facts: FormatFacts, position: int, path: str | None = None
) -> None:
    """Raise RangeError unless `position` is where an event starts (or the file ends)."""
    boundary = 4
    for pos, _type, length, _ts in scan_headers(memoryview(buf), facts, 4, len(buf), path):
        if pos + length > position:
            break
        boundary = pos + length
    if boundary != position:
        raise RangeError(
            f"{path or 'binlog'}: position {position} is not an event boundary (the event before ends at {boundary})"
        )
