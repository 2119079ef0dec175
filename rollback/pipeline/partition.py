"""The partition function: one byte range of a binlog -> its part of the script, plan and change log.

Given a `Partition` descriptor (plan.py) and the job's `JobSpec`, it decodes the range, inverts
(flashback) or forwards (`sql`) every selected row change, renders it, and writes in the job's
output directory:

    part-NNNNNN.sql          its statements in the script's order. A transaction block that opens
                             and closes inside the partition is complete (comment, BEGIN, statements,
                             COMMIT). The pieces of blocks that cross the partition's start (head)
                             or end (tail) are bare statements at the file's two ends; the merger
                             writes their comment, BEGIN and COMMIT, which need every piece's counts.
                             Flashback order: tail piece, blocks newest first, head piece;
                             forward order: head piece, blocks, tail piece. Within a block the
                             reverse statements run newest row first.
    part-NNNNNN.plan.jsonl   the execution plan's lines, in the script's order
    part-NNNNNN.changes.jsonl  the decoded row changes, in binlog order (when the job wants them)
    part-NNNNNN.irreversible.jsonl  row changes the binlog's images cannot restore, in binlog order
    part-NNNNNN.queries.json the original statements (ROWS_QUERY / ANNOTATE_ROWS) of the pieces

It returns a `Summary`: counts, DDL seen, warnings, the first irreversible change, the first error;
never the rows. The local engine and the Spark engine both run exactly this function.
"""

from __future__ import annotations

import heapq
import json
import pickle
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import IO, Any

from rollback.base import hotpath
from rollback.base.collector import collector_paused
from rollback.base.errors import NetRefused, RollbackError, SchemaMismatch, UnsupportedEvent
from rollback.base.render_text import comment_line
from rollback.binlog import events as ev
from rollback.binlog.columns import MISSING
from rollback.binlog.constants import ColumnType
from rollback.binlog.decode import (
    ROWS_PER_BATCH,
    DecodedEvent,
    RowsBatch,
    SpecsFor,
    StreamState,
    TxContext,
    decode_stream,
    full_images_decoder,
    rows_batch,
    rows_batches,
)
from rollback.binlog.rows import JsonPartial, RowsEvent
from rollback.binlog.table_map import TableMap
from rollback.pipeline.dependencies import DependencyKeys
from rollback.pipeline.file_copy import WRITE_BYTES
from rollback.pipeline.holdback import HELD_REASON, HoldBack, Taints, dump_taints
from rollback.pipeline.parts import (
    BLOCK_END,
    Piece,
    RawImages,
    Summary,
    block_header,
    comment,
    dump_values,
    encode_error,
    part_path,
)
from rollback.pipeline.plan import Partition, SchemaKey, schema_key
from rollback.pipeline.plan_lines import PlanLines
from rollback.pipeline.savepoints import VoidSet
from rollback.pipeline.selection import Selection
from rollback.pipeline.spill import SpillBuffer
from rollback.pipeline.storage import ByteRange
from rollback.render.change_lines import ChangeLineCache
from rollback.render.invert import Irreversible, Reverse, forward_row, invert_row, invert_rows
from rollback.render.net import NetChains, read_step_images, row_keys
from rollback.render.net import complete as net_complete
from rollback.render.net_local import (
    Item,
    Share,
    chained_rows,
    key_span,
    render_run,
    write_segment,
)
from rollback.render.sql import TableRenderer, decimal_literal
from rollback.render.statement_batches import join_statements, join_updates
from rollback.request.spec import Filters, GtidFilter
from rollback.schema.ddl import ddl_targets
from rollback.schema.tables import TableSchema, legacy_temporal_specs

# (bytes done, events done) within the partition; called now and then while it runs.
PartitionProgress = Callable[[int, int], None]

PROGRESS_STEP = 1 << 20  # report at least every this many bytes
# --net: the records a partition holds before it writes them to part-N.net.pickle, as one pickle
NET_RECORDS_HELD = 4096
# --net: the steps (NetChains) a partition holds before it writes them out, a memory bound (a key
# changed again after that starts a new step: more for the driver to fold, the same result)
NET_STEPS_HELD = 1 << 16

_NO_FOREIGN_KEY_CHECKS = 0x2  # a rows event's flag: its statement ran with foreign_key_checks=0


@dataclass
class JobSpec:
    """What every partition of a job needs besides its descriptor: small and picklable."""

    out_dir: str
    filters: Filters
    mode: str = "flashback"  # flashback | forward | changes (the change log only: nothing rendered)
    full_where: bool = False
    rows_per_statement: int = 1  # the script's joined statements (rollback/render/statement_batches.py)
    verify_checksums: bool = True
    gtid: GtidFilter | None = None
    since: float | None = None
    until: float | None = None
    # Per table-map signature: its schema, None (the binlog names no columns and no source knows the
    # table), or the message of the SchemaMismatch its schema raised. Resolved once, in the driver.
    schemas: dict[SchemaKey, TableSchema | str | None] = field(default_factory=dict)
    changes: bool = False  # write the change log
    plan_lines: bool = True  # write the execution plan (and render the checks it runs)
    # --allow-partial: hold back the newer changes of rows whose older change is irreversible
    # (holdback.py), knowing what the partitions before found (`taints`).
    hold: bool = False
    taints: Taints = field(default_factory=dict)
    # Note the row keys of selected and excluded changes (dependencies.py): when the job picks
    # transactions or rows inside the range.
    track_dependencies: bool = False
    # --ddl keep | reverse (rollback.job.ddl_modes): per signature, the schema of each schema epoch
    # (from the epoch's first (file index, position)), and the inverse DDL a reverse writes in place
    # of each DDL of the range.
    epochs: dict[SchemaKey, list[tuple[tuple[int, int], TableSchema | str | None]]] = field(
        default_factory=dict
    )
    inverse_ddl: dict[tuple[int, int], str] = field(default_factory=dict)
    # --net: the selected row changes are not rendered but written as decoded images
    # (part-N.net.pickle) for the driver, which folds a table's changes of the whole range (net_script.py)
    net: bool = False


class _Block:
    """A transaction block as this partition sees it."""

    __slots__ = (
        "ordinal",
        "tx",
        "first_pos",
        "end_pos",
        "moved",
        "continued",
        "first_chunk",
        "statements",
        "queries",
        "events",
        "selected",
        "tables",
        "first_rows",
        "picked",
        "dropped",
        "left_out",
    )

    def __init__(self, ordinal: int, tx: TxContext, first_pos: int, first_chunk: int, continued: bool):
        self.ordinal = ordinal
        self.tx = tx
        self.first_pos = first_pos
        self.end_pos = first_pos
        self.moved = False  # end_pos set in this partition
        self.continued = continued  # opened in an earlier partition
        self.first_chunk = first_chunk
        self.statements = 0
        self.queries: list[str] = []
        self.events = 0
        self.selected = 0
        self.tables: set[str] = set()  # the tables its statements change
        self.first_rows: tuple[str | None, int] | None = None  # (file, pos) of its first rendered rows event
        self.picked = 0  # rows taken by the row picks
        self.dropped = 0  # rows of the transaction's selected tables the picks left out
        self.left_out: set[str] = set()  # what the table and type filters left out of it (db.t, db.t (kind))

    @property
    def where(self) -> dict[str, Any]:
        return {"gtid": self.tx.gtid, "pos": self.first_pos}


def _without(batch: RowsBatch, columns: tuple[int, ...]) -> RowsBatch:
    """The batch with `columns` MISSING in every image (--ddl keep: dropped since; never written)."""

    def blank(image: Any) -> tuple:
        values = list(image)
        for i in columns:
            values[i] = MISSING
        return tuple(values)

    if batch.kind == "update":
        rows = [(blank(before), blank(after)) for before, after in batch.rows]
    else:
        rows = [blank(image) for image in batch.rows]
    return replace(batch, rows=rows)


def _table_map_specs(_tmap: TableMap) -> None:
    """The table map's own specs decode the rows, and the schema settled that (no "schema needed" hint)."""
    return None


def _fixed_unsigned(unsigned: tuple[bool, ...] | None) -> Callable[[TableMap], tuple[bool, ...] | None]:
    return lambda _tmap: unsigned


class _Run:
    def __init__(self, job: JobSpec, part: Partition, progress: PartitionProgress | None):
        self.job = job
        self.part = part
        self.progress = progress
        self.summary = Summary(part.index, bytes=part.size, events=part.events)
        self.counts: Counter[tuple[str, str]] = Counter()
        self.changed_tables: set[str] = set()
        self.row_images: set[str] = set()
        self.renderers: dict[tuple[Any, ...], TableRenderer] = {}
        self.legacy_specs: dict[tuple[Any, ...], SpecsFor] = {}  # see _specs_for
        self.dropped: dict[int, tuple[int, ...]] = {}  # renderer id -> columns dropped since (--ddl keep)
        self.next_block = part.next_block
        self.selection = Selection(job.filters, job.gtid, job.since, job.until)
        self.rendered = SpillBuffer(job.out_dir, newest_first=job.mode == "flashback")
        # (kind, first chunk, end chunk, header) in binlog order; kind head | block | tail
        self.entries: list[tuple[str, int, int, str]] = []
        self.head: _Block | None = None
        self.tail: _Block | None = None
        self.head_closed = False
        self.statements = 0
        self.changes_out: IO[bytes] | None = None
        self.change_lines = ChangeLineCache()
        self.irreversible_out: IO[str] | None = None
        self.at = part.start  # the event being read
        self.hold = HoldBack(job.taints) if job.hold and job.mode == "flashback" else None
        self.first_change: dict[str, int] = {}
        self.largest_bytes = 0
        self.contents: Counter[tuple[str, str]] = Counter()
        # the LARGEST_KEPT complete blocks with the most statements: (statements, -ordinal, facts)
        self.largest: list[tuple[int, int, dict[str, Any]]] = []
        self.deps = DependencyKeys() if job.track_dependencies else None
        self.kept_index: list[int] | None = None  # see _pick_rows
        self.decimals_as_text: dict[int, bool] = {}  # renderer id -> see _decimals_as_text
        self.event_logged = False  # the rows event being read has been counted as selected
        self.event_picked = 0  # rows of the rows event being read that _pick_rows took
        self.net_out: IO[bytes] | None = None
        self.net_data: IO[bytes] | None = None  # part-N.net.data: the bytes net_out's records point into
        self.net_data_size = 0
        self.net_tables: dict[int, int] = {}  # renderer id -> its number in part-N.net.pickle
        self.net_changed: set[int] = set()  # renderer ids of tables with changes other than DELETEs
        self.net_chains: dict[int, NetChains] = {}  # table number in part-N.net.pickle -> its steps
        self.net_events = 0  # rows events written to part-N.net.pickle
        self.net_decoders: dict[RawImages, int] = {}  # decoders of raw images -> their number there
        # table number -> the keys of the rows its DELETEs delete, while the partition sees it only
        # deleted from (written after the records, in one piece: see _write_net_keys)
        self.net_keys: dict[int, list[Any]] = {}
        self.net_records: list[tuple[Any, ...]] = []  # for part-N.net.pickle (_net_put)
        # --net without a plan: the partition's share of the script (rollback/render/net_local.py),
        # a segment each time it hands its steps over; None once it cannot be written here
        self.net_renderers: dict[int, TableRenderer] = {}  # table number -> its renderer
        self.net_segments: list[tuple[list[tuple[int, int]], int]] | None = [] if not job.plan_lines else None
        self.net_shares: list[Share] = []
        self.net_once: list[Item] = []  # the segment's DELETEs written with their statements
        self.net_once_tables: set[int] = set()
        self.net_key_spans: dict[int, tuple[Any, Any] | None] = {}  # see _net_key_span
        self.net_hand_over_due = False  # half the steps NET_STEPS_HELD bounds are held: hand them over
        # --net: the tables whose steps hold images as bytes (_net_from_images) -> the decoder that reads
        # them; and the tables whose steps hold decoded images, which stay so (_net_decoded)
        self.net_raw: dict[int, RawImages] = {}
        self.net_decoded: set[int] = set()

    def _known_schema(self, tmap: TableMap) -> TableSchema | None:
        schema = self.job.schemas.get(schema_key(tmap))
        return schema if isinstance(schema, TableSchema) else None

    def _left_out(
        self, current: _Block, decoded: DecodedEvent, event: RowsEvent, state: StreamState, counted: bool
    ) -> None:
        """A rows event the picks leave out: counted against its transaction (`counted`: the
        transaction is selected) and its keys noted for the dependency check."""
        if self.deps is None and not counted:
            return
        tmap = state.table_maps[event.table_id]
        schema = self._known_schema(tmap)
        unsigned = _fixed_unsigned(schema.unsigned if schema else None)
        for batch in rows_batches(
            decoded, event, state, unsigned, self._specs_for(tmap, schema, unsigned, state)
        ):
            if counted:
                current.dropped += len(batch.rows)
            self._note_keys(False, current, batch, schema, decoded.raw.pos)

    def _specs_for(
        self,
        tmap: TableMap,
        schema: TableSchema | None,
        unsigned_for: Callable[[TableMap], tuple[bool, ...] | None],
        state: StreamState,
    ) -> SpecsFor:
        """The specs a table's rows decode with: with its MariaDB 'hires' columns' precision from the
        schema (legacy_temporal_specs: refused when the schema does not say), else the table map's."""
        key = (id(schema), tmap.column_types, tmap.column_meta)
        if key not in self.legacy_specs:
            unsigned = None if tmap.unsigned is not None else unsigned_for(tmap)
            try:
                specs = legacy_temporal_specs(tmap, schema, unsigned, state.facts.is_mariadb)
            except SchemaMismatch:
                known = self.job.schemas.get(schema_key(tmap))
                if isinstance(known, str):  # no schema because it disagrees: that is the reason to give
                    raise SchemaMismatch(known) from None
                raise
            self.legacy_specs[key] = _table_map_specs if specs is None else (lambda _tmap: specs)
        return self.legacy_specs[key]

    def _note_keys(
        self,
        selected: bool,
        current: _Block,
        batch: RowsBatch,
        schema: TableSchema | None,
        inner: int,
        rows: list[Any] | None = None,
    ) -> None:
        """Note the keys of the batch's rows (or of `rows`, some of them) for the dependency check."""
        if self.deps is None or schema is None:
            return
        self.deps.add(
            selected,
            batch.table.qualified_name.lower(),
            batch.kind,
            batch.rows if rows is None else rows,
            schema.row_key,
            schema.names,
            (self.part.file_index, batch.pos, inner),
            {**current.where, "file": self.part.file_label},
        )

    def _pick_rows(
        self, current: _Block, batch: RowsBatch, schema: TableSchema | None, inner: int
    ) -> RowsBatch | None:
        """The rows of a selected statement that --where takes (None: none); notes keys and counts.
        When it leaves some out (or the batch is a later part of its event), `kept_index` maps the
        kept rows to their index in the event; the batch's `first_row` becomes the number of the
        event's rows taken before it (the change log numbers the rows it takes)."""
        self.kept_index = None
        event_first = batch.first_row
        selection = self.selection
        if selection.predicate is not None:
            if schema is None:
                raise SchemaMismatch(
                    f"--where needs the columns of {batch.table.qualified_name}: the binlog carries no "
                    "column names; give the schema with --schema-dsn or --schema-file"
                )
            test = selection.row_test(schema)
            assert test is not None
            where = f"{self.part.file_label}:{batch.pos}"
            kept: list[Any] = []
            left: list[Any] = []
            kept_index: list[int] = []
            for index, row in enumerate(batch.rows, event_first):
                if selection.row_selected(test, batch.kind, row, where):
                    kept.append(row)
                    kept_index.append(index)
                else:
                    left.append(row)
            if left:
                self.kept_index = kept_index
                current.dropped += len(left)
                self._note_keys(False, current, batch, schema, inner, left)
                batch.rows = kept
            if not kept:
                return None
        if self.kept_index is None and event_first:  # a later part of the event
            self.kept_index = list(range(event_first, event_first + len(batch.rows)))
        batch.first_row = self.event_picked
        self.event_picked += len(batch.rows)
        current.picked += len(batch.rows)
        self._note_keys(True, current, batch, schema, inner)
        return batch

    def _schema_of(self, tmap: TableMap, pos: int) -> tuple[int, TableSchema | str | None]:
        """The schema a rows event at `pos` is decoded with: the job's for its table map, or under
        --ddl keep | reverse the one of its schema epoch (with the epoch's index)."""
        key = schema_key(tmap)
        epochs = self.job.epochs.get(key)
        if not epochs:
            return -1, self.job.schemas[key]
        at = (self.part.file_index, pos)
        chosen = 0
        for index, (start, _schema) in enumerate(epochs):
            if start <= at:
                chosen = index
        return chosen, epochs[chosen][1]

    def _renderer(self, tmap: TableMap, pos: int) -> TableRenderer | None:
        """The table's renderer; None (after noting the first SchemaMismatch) when its schema disagrees."""
        epoch, schema = self._schema_of(tmap, pos)
        key = (tmap.database, tmap.table, tmap.column_types, tmap.column_meta, tmap.column_names, epoch)
        renderer = self.renderers.get(key)
        if renderer is None:
            if isinstance(schema, str):
                self._changed(tmap.qualified_name.lower())
                if self.summary.mismatch is None:
                    self.summary.mismatch = encode_error(SchemaMismatch(schema))
                return None
            if schema is None:
                raise SchemaMismatch(
                    f"table {tmap.qualified_name} at position {pos}: the binlog carries no column names "
                    "(binlog_row_metadata is not FULL); give the schema with --schema-dsn or --schema-file"
                )
            if (schema.database, schema.table) != (tmap.database, tmap.table) and self.job.epochs:
                # --ddl keep: today's table, renamed since the binlog wrote it
                tmap = replace(tmap, database=schema.database, table=schema.table)
            renderer = TableRenderer(tmap, schema, self.part.flavour, self.job.full_where)
            self.renderers[key] = renderer
            dropped = tuple(i for i, c in enumerate(schema.columns) if c.dropped)
            if dropped:
                self.dropped[id(renderer)] = dropped
        return renderer

    def _decimals_as_text(self, renderer: TableRenderer | None) -> bool:
        """Whether the decoded rows of complete images (with `renderer`; any image in `changes`
        mode, None) go to the compiled statement renderer and the change log's encoder and nowhere
        else (the statements, with a plan their checks and plan lines, with a change log its lines;
        no --where, hold-back or dependency keys; every DECIMAL column rendered by decimal_literal,
        in the statements and in the checks): then DECIMAL values may come as the text both write
        for them, not as Decimals. (--net: the driver makes Decimals of the rows it writes, net.py.)"""
        ok = self.decimals_as_text.get(id(renderer))
        if ok is None:
            ok = (
                self.hold is None
                and self.deps is None
                and self.selection.predicate is None
                and hotpath.CORE is not None
                and (
                    renderer is None
                    or (
                        renderer.full_images() is not None
                        and len(renderer.columns) == len(renderer.tmap.column_types)
                        and all(
                            column.value is decimal_literal and column.where is decimal_literal
                            for code, column in zip(renderer.tmap.column_types, renderer.columns, strict=True)
                            if code == ColumnType.NEWDECIMAL
                        )
                    )
                )
            )
            self.decimals_as_text[id(renderer)] = ok
        return ok

    # -- the run
    def run(self) -> Summary:
        part = self.part
        job = self.job
        if job.changes:
            self.changes_out = open(
                part_path(job.out_dir, part.index, "changes.jsonl"), "wb", buffering=WRITE_BYTES
            )
        # --net: the collector off while the partition holds its steps (NetChains: a few objects per
        # changed row, none in a cycle, which it would walk again at every threshold they pass)
        with collector_paused(job.net):
            try:
                with ByteRange(part.location, part.start, part.end) as source:
                    self._read(source.buf)
                if self.next_block != part.end_block:
                    raise RuntimeError(
                        f"partition {part.index} ends before block {self.next_block}, "
                        f"the plan says {part.end_block}: the planner and the workers disagree"
                    )
                self._write()
                self._net_segment()
                self._write_net_body()
                self._write_net_steps()
                self._write_net_keys()
                self._write_taints()
                self._write_keys()
            finally:
                for f in (self.changes_out, self.irreversible_out, self.net_out, self.net_data):
                    if f is not None:
                        f.close()
                self.rendered.close()
        return self.finish_summary()

    def finish_summary(self) -> Summary:
        s = self.summary
        s.counts = dict(self.counts)
        s.changed_tables = sorted(self.changed_tables)
        s.first_change = self.first_change
        s.contents = dict(self.contents)
        s.row_images = sorted(self.row_images)
        s.next_block = self.next_block
        return s

    def _open_block(self, tx: TxContext, first_pos: int, continued: bool, ordinal: int) -> _Block:
        return _Block(ordinal, tx, first_pos, len(self.rendered), continued)

    def _read(self, buf: memoryview) -> None:
        part = self.part
        state = part.stream_state()
        summary = self.summary
        label = part.file_label
        if part.range_start and state.tx.open:
            summary.warnings.append(
                f"{label}:{part.start} is inside a transaction (opened at {state.tx.begin_pos}); "
                "its earlier changes are not in the range"
            )
        current: _Block | None = None
        if part.block is not None:
            tx = state.tx if part.block.tx is None else TxContext.from_dict(dict(part.block.tx))
            current = self._open_block(tx, part.block.first_pos, True, part.block.ordinal)
            self.head = current
        filters = self.job.filters
        types = filters.types
        changes_only = self.job.mode == "changes"
        progress = self.progress
        next_note = part.start + PROGRESS_STEP
        events_done = 0
        last_outer = -1
        voids = VoidSet(part.voids)
        open_after = state.tx.open
        for decoded in decode_stream(buf, state, part.start, part.end, self.job.verify_checksums):
            event = decoded.event
            # the state has taken this event in: whether a transaction was open before it
            tx_was_open, open_after = open_after, state.tx.open
            if decoded.outer_pos != last_outer:
                self.at = last_outer = decoded.outer_pos
                events_done += 1
                if progress is not None and decoded.outer_pos >= next_note:
                    progress(decoded.outer_pos - part.start, events_done - 1)
                    next_note = decoded.outer_pos + PROGRESS_STEP
            if isinstance(event, RowsEvent):
                if current is None or current.tx is not state.tx:
                    self._finish(current)
                    current = self._open_block(
                        state.tx, state.tx.begin_pos or decoded.outer_pos, False, self.next_block
                    )
                    self.next_block += 1
                    summary.last_tx = (state.tx.gtid, state.tx.timestamp)
                    summary.first_tx = summary.first_tx or summary.last_tx
                current.end_pos = decoded.outer_end
                current.moved = True
                if voids and voids.covers(decoded.outer_pos, decoded.raw.pos):
                    continue  # undone by a ROLLBACK TO SAVEPOINT: it never persisted
                tmap = state.table_maps.get(event.table_id)
                if tmap is None:
                    rows_batch(decoded, event, state)  # raises the precise error
                    continue
                current.events += 1
                self.contents[(tmap.qualified_name, event.kind)] += 1
                if not filters.table_selected(tmap):
                    current.left_out.add(tmap.qualified_name)
                    continue
                if types and event.kind not in types:
                    current.left_out.add(f"{tmap.qualified_name} ({event.kind})")
                    continue
                taken = self.selection.transaction(state.tx, label)
                if not taken or not self.selection.statement(state.tx, label):
                    self._left_out(current, decoded, event, state, taken)
                    continue
                if event.flags & _NO_FOREIGN_KEY_CHECKS and summary.no_fk_checks is None:
                    summary.no_fk_checks = {
                        "file": label,
                        "pos": decoded.outer_pos,
                        "table": tmap.qualified_name,
                    }
                full = (1 << event.column_count) - 1
                complete = event.present == full == event.present_after and not event.partial
                self.event_logged = False
                self.event_picked = 0
                if changes_only:
                    known = self._known_schema(tmap)
                    unsigned = _fixed_unsigned(known.unsigned if known else None)
                    for part_batch in rows_batches(
                        decoded,
                        event,
                        state,
                        unsigned,
                        self._specs_for(tmap, known, unsigned, state),
                        decimal_text=self._decimals_as_text(None),
                    ):
                        picked = self._pick_rows(current, part_batch, known, decoded.raw.pos)
                        if picked is not None:
                            self._log(current, picked, known, complete)
                    continue
                renderer = self._renderer(tmap, decoded.outer_pos)
                if renderer is None:
                    continue
                dropped = self.dropped.get(id(renderer))
                if dropped:
                    complete = False
                if complete and self._statements_from_images(current, decoded, event, state, tmap, renderer):
                    continue
                for part_batch in rows_batches(
                    decoded,
                    event,
                    state,
                    renderer.unsigned_of,
                    self._specs_for(tmap, renderer.schema, renderer.unsigned_of, state),
                    decimal_text=complete and self._decimals_as_text(renderer),
                ):
                    picked = self._pick_rows(current, part_batch, renderer.schema, decoded.raw.pos)
                    if picked is None:
                        continue
                    batch = picked if not dropped else _without(picked, dropped)
                    self._take(current, batch, renderer, complete, decoded.raw.pos)
            elif isinstance(event, ev.Xid) or (
                isinstance(event, ev.Query) and event.kind in ("COMMIT", "ROLLBACK")
            ):
                if current is not None:
                    current.end_pos = decoded.outer_end
                    current.moved = True
                self._finish(current)
                current = None
                if self.net_hand_over_due:
                    self._net_hand_over()
            elif isinstance(event, ev.Query) and event.kind == "DDL":
                inverse = self.job.inverse_ddl.get((part.file_index, decoded.outer_pos))
                if inverse is not None:
                    first = len(self.rendered)
                    note = f"inverse of the DDL at {label}:{decoded.outer_pos}: {event.sql}"
                    # The plan carries the DDL too, so that an execution sees it and refuses: DDL
                    # commits implicitly and cannot run inside the checked transaction. It names
                    # no table: no row of one is checked or verified.
                    step = PlanLines(label, decoded.outer_pos, None, 0, None)
                    self.rendered.add(
                        comment_line(note) + "\n" + inverse + "\n\n", step.forward("ddl", inverse) + "\n"
                    )
                    self.entries.append(("ddl", first, len(self.rendered), ""))
                summary.ddl.append(
                    {
                        "file": label,
                        "pos": decoded.outer_pos,
                        "sql": comment(event.sql)[:300],
                        "db": event.database,
                        # read from the whole statement: the text above is cut
                        "affects": ddl_targets(event.sql, event.database, tx_was_open).to_dict(),
                        # in the range's GTID or time selection (every DDL of a range by position)
                        "selected": self.selection.ddl(state.tx.gtid, decoded.raw.timestamp),
                    }
                )
        if current is not None:
            if part.range_end:
                summary.warnings.append(
                    f"{label}:{part.end} ends inside the transaction opened at {current.first_pos}; "
                    "its later changes are not in the range"
                )
                self._finish(current)
            elif current.continued:
                self.entries.append(("head", current.first_chunk, len(self.rendered), ""))
            else:
                self.tail = current
                self.entries.append(("tail", current.first_chunk, len(self.rendered), ""))
        if progress is not None:
            progress(part.size, part.events)

    def _log(
        self, current: _Block, batch: RowsBatch, schema: TableSchema | None, complete: bool = False
    ) -> None:
        """Account for a selected rows event and write its change log records."""
        table = batch.table.qualified_name
        self._changed(table.lower())
        rows = batch.rows
        kind = batch.kind
        self.counts[(table, kind)] += len(rows)
        self._event_selected(current, batch.tx.rows_query)
        if len(self.row_images) < 2:
            if complete:
                partial = False  # every column in the images' bitmaps: nothing can be MISSING
            else:
                images = (image for row in rows for image in row) if kind == "update" else rows
                partial = any(MISSING in image for image in images)
            self.row_images.add("partial (MINIMAL or NOBLOB)" if partial else "FULL")
        if self.changes_out is not None:
            names = schema.names if schema else None
            self.changes_out.write(
                self.change_lines.encoded(batch, names, schema.columns if schema else None)
            )

    def _event_selected(self, current: _Block, query: str | None) -> None:
        """The rows event being read counted as selected, once, whichever of its parts comes first; the
        original statement that wrote it (ROWS_QUERY / ANNOTATE_ROWS) kept with the block's."""
        if not self.event_logged:
            self.event_logged = True
            current.selected += 1
        if query and (not current.queries or current.queries[-1] != query):
            current.queries.append(query)

    def _statements_from_images(
        self,
        current: _Block,
        decoded: DecodedEvent,
        event: RowsEvent,
        state: StreamState,
        tmap: TableMap,
        renderer: TableRenderer,
    ) -> bool:
        """The statements of a WRITE_ROWS or DELETE_ROWS event of complete images written by the
        compiled core straight from the images' bytes, when nothing but the script needs the rows
        (no plan, change log, picks, --where or hold-back): what rows_batches, _pick_rows and _take
        would do with them, without a Python value per column; with --net, the DELETEs
        _net_deletes_from_images takes. False: not done here."""
        job = self.job
        forward = job.mode == "forward"
        if (
            job.plan_lines
            or self.hold is not None
            or self.deps is not None
            or self.changes_out is not None
            or self.selection.predicate is not None
        ):
            return False
        script_images = getattr(renderer.full_images(), "script_images", None)
        if script_images is None:
            return False
        net_deletes = job.net and self._net_deletes_taken(event, renderer)
        if job.net and not net_deletes and not self._net_images_taken(renderer):
            return False
        unsigned = renderer.unsigned_of
        found = full_images_decoder(
            decoded,
            event,
            state,
            unsigned,
            self._specs_for(tmap, renderer.schema, unsigned, state),
            updates=job.net,
        )
        if found is None:
            return False
        decoder, data = found
        decimal_text = self._decimals_as_text(renderer)
        if net_deletes:
            return self._net_deletes_from_images(
                current, decoded, state, tmap, renderer, (script_images, decoder, data), decimal_text
            )
        if job.net:
            return self._net_from_images(
                current, decoded, event, state, renderer, decoder, data, decimal_text
            )
        layout = decoder.layout
        parts: list[tuple[bytes, int, int]] = []
        pos = 0
        try:
            while True:  # ROWS_PER_BATCH rows at a time, as rows_batches decodes them
                script, count, longest, pos = script_images(
                    layout, data, pos, len(data), ROWS_PER_BATCH, event.kind, forward, decimal_text
                )
                parts.append((script, count, longest))
                if pos >= len(data):
                    break
        except Exception:  # noqa: BLE001 - nothing was written: the general path decides, as ever
            return False  # (rows_batches decodes them, or raises the located error)
        table = tmap.qualified_name
        where = RowsBatch(
            state.file_name, decoded.outer_pos, decoded.outer_end, event.kind, tmap, state.tx, 0, 0, [], False
        )
        self._selected_from_images(current, state, table)
        for script, count, longest in parts:
            self._picked(current, table, event.kind, count)
            if count:
                if job.rows_per_statement > 1:
                    script, longest = join_statements(
                        script, job.rows_per_statement, *renderer.joinable_heads()
                    )
                self._note_largest(longest, where, table)
                self.rendered.add_encoded(script, b"")
                self._counted(current, where, table, count)
        return True

    def _selected_from_images(self, current: _Block, state: StreamState, table: str) -> None:
        """What _log and _pick_rows note of a selected rows event of complete images taken from their
        bytes (its rows are counted a part at a time: _picked)."""
        self.kept_index = None
        self._changed(table.lower())
        self._event_selected(current, state.tx.rows_query)
        if len(self.row_images) < 2:
            self.row_images.add("FULL")

    def _picked(self, current: _Block, table: str, kind: str, count: int) -> None:
        self.counts[(table, kind)] += count
        self.event_picked += count
        current.picked += count

    def _net_deletes_taken(self, event: RowsEvent, renderer: TableRenderer) -> bool:
        """--net: whether _net_deletes_from_images takes the event: a DELETE_ROWS event of a table with
        a row key that the partition saw changed by nothing else yet, with the compiled core."""
        schema = renderer.schema
        return (
            event.kind == "delete"
            and id(renderer) not in self.net_changed
            and schema is not None
            and bool(schema.row_key)
            and hotpath.CORE is not None
        )

    def _net_images_taken(self, renderer: TableRenderer) -> bool:
        """--net: whether _net_from_images may take a rows event of the table: one with a row key, with
        the compiled core, whose chains hold no decoded image (_net_decoded)."""
        schema = renderer.schema
        return (
            schema is not None
            and bool(schema.row_key)
            and hotpath.CORE is not None
            and self.net_tables.get(id(renderer)) not in self.net_decoded
        )

    def _net_from_images(
        self,
        current: _Block,
        decoded: DecodedEvent,
        event: RowsEvent,
        state: StreamState,
        renderer: TableRenderer,
        decoder: Any,
        data: bytes,
        decimal_text: bool,
    ) -> bool:
        """--net: a rows event of complete images put in its table's chains as _net puts it, without a
        Python value per column: each image stays the bytes it takes in the event, only its key read
        (image_rows checks every value as the decoder reads it). The table's steps then hold those
        bytes, decoded where they are read: rendering the partition's share (RawImages), or by the
        driver. False: not done here (nothing noted), the general path decodes the rows."""
        schema = renderer.schema
        core = hotpath.CORE
        assert schema is not None and core is not None
        number = self.net_tables.get(id(renderer))
        raw = RawImages(decoder, decimal_text)
        if not data or (number is not None and self.net_raw.get(number, raw) != raw):
            return False  # (a table's images as bytes are read by one decoder)
        try:
            keys, images, end = core.image_rows(
                decoder.layout, data, 0, len(data), schema.row_key, decimal_text
            )
        except Exception:  # noqa: BLE001 - nothing was taken: the general path decodes them, or raises
            return False  # the located error
        kind = event.kind
        if end != len(data) or (kind == "update" and len(images) % 2):
            return False
        count = len(images) // 2 if kind == "update" else len(images)
        table = renderer.tmap.qualified_name
        self._selected_from_images(current, state, table)
        self._picked(current, table, kind, count)
        number = self._net_table(renderer, schema)
        self.net_raw[number] = raw
        if kind != "delete":
            self.net_changed.add(id(renderer))
            self.net_keys.pop(number, None)
        chains = self.net_chains.get(number)
        if chains is None:
            chains = self.net_chains[number] = NetChains(schema.row_key)
        chains.add_images(kind, keys, images, self.net_events)
        change = (kind, state.file_name or self.part.file_label, decoded.outer_pos, range(count))
        self._net_record(current, number, change, None, b"", None, False)
        return True

    def _net_decoded(self, number: int) -> None:
        """--net: a table whose chains hold images as bytes (_net_from_images) meets rows decoded by the
        general path: the images it holds are decoded too, so that its steps compare images of one
        kind, and its later rows events take the general path."""
        self.net_decoded.add(number)
        raw = self.net_raw.pop(number, None)
        chains = self.net_chains.get(number)
        if raw is not None and chains is not None:
            read_step_images(chains.steps, raw)

    def _net_deletes_from_images(
        self,
        current: _Block,
        decoded: DecodedEvent,
        state: StreamState,
        tmap: TableMap,
        renderer: TableRenderer,
        images: tuple[Any, Any, bytes],
        decimal_text: bool,
    ) -> bool:
        """--net: a DELETE_ROWS event _net_deletes_taken takes, written as _net writes it (a record per
        ROWS_PER_BATCH rows, with the rows' keys and their plain statements) from the images' bytes by
        the compiled core, as the plain script's are (`images`: the table's script_images, the row
        decoder and the rows' bytes, as _statements_from_images found them). Its images stay
        those bytes, with the decoder: the driver decodes them only if it folds the table after all (a
        table the range only deletes from, each key once, needs no fold). False: not done here
        (nothing written)."""
        script_images, decoder, data = images
        schema = renderer.schema
        core = hotpath.CORE
        assert schema is not None and core is not None
        if not data:
            return False
        layout = decoder.layout
        parts: list[tuple[bytes, int, list[Any], bytes]] = []
        pos = 0
        try:
            while pos < len(data):  # ROWS_PER_BATCH rows at a time, as rows_batches decodes them
                script, count, _longest, end = script_images(
                    layout, data, pos, len(data), ROWS_PER_BATCH, "delete", False, decimal_text
                )
                keys, keys_end = core.image_keys(
                    layout, data, pos, len(data), ROWS_PER_BATCH, schema.row_key, decimal_text
                )
                if keys_end != end or len(keys) != count:
                    return False
                parts.append((script, count, keys, data[pos:end]))
                pos = end
        except Exception:  # noqa: BLE001 - nothing was written: the general path decodes them, or raises
            return False  # the located error
        table = tmap.qualified_name
        self._selected_from_images(current, state, table)
        number = self._net_table(renderer, schema)
        encoding = self._net_decoder(decoder, decimal_text)
        first = 0
        for script, count, keys, raw in parts:
            self._picked(current, table, "delete", count)
            numbers = range(first, first + count)
            first += count
            change = ("delete", state.file_name or self.part.file_label, decoded.outer_pos, numbers)
            self._net_record(current, number, change, keys, raw, (script, count), encoding)
        return True

    def _take(
        self, current: _Block, batch: RowsBatch, renderer: TableRenderer, complete: bool, inner: int
    ) -> None:
        self._log(current, batch, renderer.schema, complete)
        if self.job.net:
            self._net(current, batch, renderer, complete)
            return
        table = batch.table.qualified_name
        rows = batch.rows
        kind = batch.kind
        script: list[str] = []
        plan: list[str] = []
        with_plan = self.job.plan_lines
        full = renderer.full_images() if complete and self.hold is None else None
        lines = (
            PlanLines(batch.file, batch.pos, table, current.ordinal, current.tx.gtid) if with_plan else None
        )
        if full is not None:
            # Every column in both images: nothing is irreversible; the statements and their checks
            # (with a plan) come from the table's full-image renderer in one pass.
            forward = self.job.mode == "forward"
            if lines is None:
                data, count, longest = full.script(kind, rows, forward)
                plan_data = b""
            else:
                data, count, longest, plan_data = full.plan(kind, rows, forward, lines, self.kept_index)
            if count:
                if self.job.rows_per_statement > 1 and kind == "update" and not forward:
                    pairs = ((before, after) for before, after in reversed(rows))
                    data, longest, _rows = join_updates(renderer, pairs, self.job.rows_per_statement)
                elif self.job.rows_per_statement > 1:
                    data, longest = join_statements(
                        data, self.job.rows_per_statement, *renderer.joinable_heads()
                    )
                self._note_largest(longest, batch, table)
                self.rendered.add_encoded(data, plan_data)
                self._counted(current, batch, table, count)
            return
        if self.job.mode == "forward":
            for index, row in enumerate(rows):
                if kind == "update" and any(isinstance(v, JsonPartial) for v in row[1]):
                    # Only the diff is logged and the old document is not: the new one is unknown.
                    # Not an irreversible change that --allow-partial could list: the change itself
                    # cannot be written, so the forward script would not be the binlog's.
                    number = index if self.kept_index is None else self.kept_index[index]
                    raise UnsupportedEvent(
                        self.part.file_label,
                        batch.pos,
                        f"row {number} of {table}: a partial JSON update whose before image does not hold "
                        "the document (binlog_row_image=MINIMAL) cannot be written as forward SQL",
                    )
                sql = forward_row(renderer, kind, row)
                if sql is not None:
                    script.append(sql)
                    if lines is not None:
                        plan.append(lines.forward(kind, sql))
        else:
            if self.hold is None:
                results = list(invert_rows(renderer, kind, rows, with_plan))  # newest row first
            else:
                results = self._invert_holding_back(batch, renderer, inner, with_plan)
            if self.kept_index is not None:  # rows of the event, as the plan and the lists number them
                kept_index = self.kept_index
                results = [(kept_index[index], result) for index, result in results]
            for index, result in reversed(results):
                if isinstance(result, Irreversible):
                    self._irreversible(
                        {
                            "file": batch.file,
                            "pos": batch.pos,
                            "table": table,
                            "row": index,
                            "type": result.kind,
                            "missing": list(result.missing),
                            "reason": result.reason,
                        }
                    )
            for index, result in results:
                if isinstance(result, Reverse):
                    script.append(result.sql)
                    if lines is not None:
                        plan.append(
                            lines.reverse(index, result.kind, result.check, result.expect, result.sql)
                        )
        if script and self.job.rows_per_statement > 1:
            data, longest = join_statements(
                ("\n".join(script) + "\n").encode("utf-8"),
                self.job.rows_per_statement,
                *renderer.joinable_heads(),
            )
            self._note_largest(longest, batch, table)
            self.rendered.add_encoded(data, ("\n".join(plan) + "\n" if plan else "").encode("utf-8"))
            self._counted(current, batch, table, len(script))
        elif script:
            text = "\n".join(script) + "\n"
            self._largest(script, text, batch, table)
            self.rendered.add(text, "\n".join(plan) + "\n" if plan else "")
            self._counted(current, batch, table, len(script))

    def _net(self, current: _Block, batch: RowsBatch, renderer: TableRenderer, complete: bool) -> None:
        """--net: the batch's decoded images into part-N.net.pickle, in binlog order."""
        schema = renderer.schema
        where = f"table {renderer.table} at {batch.file or self.part.file_label}:{batch.pos}"
        if schema is None or not schema.row_key:
            raise NetRefused(
                f"{where}: --net follows rows by their key, and the table has no primary key nor NOT NULL "
                "unique key; generate the full script, without --net"
            )
        if not complete and not all(net_complete(row, batch.kind) for row in batch.rows):
            raise NetRefused(
                f"{where}: the row images leave columns out (binlog_row_image is not FULL), and --net needs "
                "every column of a row; generate the full script, without --net"
            )
        number = self._net_table(renderer, schema)
        if number in self.net_raw:
            self._net_decoded(number)
        rows = batch.rows
        first = batch.first_row
        numbers: Sequence[int] = self.kept_index or range(first, first + len(rows))
        change = (batch.kind, batch.file or self.part.file_label, batch.pos, numbers)
        # A DELETE of a table the partition saw changed by nothing else yet writes its images after its
        # record, as a pickle of their own, and its rows' keys: a table the range only deletes from, each
        # key once, needs no fold, and without a plan its statements are the plain script's, rendered
        # here after the images; the driver decodes the images only if it folds the table after all.
        # Every other change goes to its table's steps (NetChains), written after the records.
        if batch.kind != "delete":
            self.net_changed.add(id(renderer))
            self.net_keys.pop(number, None)
        elif id(renderer) not in self.net_changed and not self.job.plan_lines:
            # (the driver folds a table changed otherwise, and every change for a plan)
            full = renderer.full_images()
            if full is not None:
                images, marshalled = dump_values(rows)
                statements, written, _longest = full.script("delete", rows, False)
                keys = row_keys(rows, schema.row_key)
                self._net_record(current, number, change, keys, images, (statements, written), marshalled)
                return
        chains = self.net_chains.get(number)
        if chains is None:
            chains = self.net_chains[number] = NetChains(schema.row_key)
        chains.add(batch.kind, rows, self.net_events)
        self._net_record(current, number, change, None, b"", None, False)

    def _net_table(self, renderer: TableRenderer, schema: TableSchema) -> int:
        """The table's number in part-N.net.pickle (the file and the table's record written first)."""
        out = self.net_out
        if out is None:
            out = self.net_out = open(part_path(self.job.out_dir, self.part.index, "net.pickle"), "wb")
            path = part_path(self.job.out_dir, self.part.index, "net.data")
            self.net_data = open(path, "wb", buffering=WRITE_BYTES)
        number = self.net_tables.get(id(renderer))
        if number is None:
            number = self.net_tables[id(renderer)] = len(self.net_tables)
            self.net_renderers[number] = renderer
            facts = (renderer.tmap, schema, self.part.flavour, self.job.full_where)
            self._net_put(("table", number, facts))
        return number

    def _net_decoder(self, decoder: Any, decimal_text: bool) -> tuple[str, int]:
        """The reference ("raw", its number) the records of RawImages images carry; the decoder is
        written once, in its own record before the first (a pickle of its specs each time would
        cost more than the images' decoding saves)."""
        raw = RawImages(decoder, decimal_text)
        number = self.net_decoders.get(raw)
        if number is None:
            number = self.net_decoders[raw] = len(self.net_decoders)
            self._net_put(("decoder", number, raw))
        return ("raw", number)

    def _net_record(
        self,
        current: _Block,
        number: int,
        change: tuple[str, str | None, int, Sequence[int]],
        keys: list[Any] | None,
        images: bytes,
        statements: tuple[bytes, int] | None,
        encoding: bool | tuple[str, int],
    ) -> None:
        """A rows event's record in part-N.net.pickle: for a DELETE of a table seen only deleted from,
        its rows' keys, and where part-N.net.data holds its images (`encoding`: whether by marshal, or
        _net_decoder's reference) and then its plain statements."""
        data = self.net_data
        assert data is not None
        plain = (len(statements[0]), statements[1]) if statements is not None else None
        at = self.net_data_size
        self._net_put(
            ("rows", number, change, current.ordinal, current.tx.gtid, at, len(images), plain, encoding)
        )
        if keys is not None:
            self.net_keys.setdefault(number, []).extend(keys)
        data.write(images)
        self.net_data_size += len(images)
        if statements is not None:
            if self.net_segments is not None:
                piece = (self.net_data_size, len(statements[0]), statements[1])
                self.net_once.append(((self.net_events, 0), number, "once", piece))
                self.net_once_tables.add(number)
            data.write(statements[0])
            self.net_data_size += len(statements[0])
        self.net_events += 1
        self.summary.net_changes += len(change[3])
        held = sum(len(c.steps) for c in self.net_chains.values())
        if held >= NET_STEPS_HELD:
            self._net_hand_over()
        elif held >= NET_STEPS_HELD // 2:
            self.net_hand_over_due = True  # at the transaction's end (a segment of whole transactions)

    def _net_hand_over(self) -> None:
        """--net: the steps held so far written out (and, without a plan, their segment of the
        partition's share), which bounds the memory the partition holds."""
        self.net_hand_over_due = False
        self._net_segment()
        self._write_net_steps()

    def _net_segment(self) -> None:
        """--net without a plan: the segment of the partition's share whose steps are about to be handed
        over (rollback/render/net_local.py), written into part-N.net.data; or, where it cannot be
        written here, no share at all (the driver folds the steps): a table without full-image
        functions, two of its renderers, a key in two steps or a step moving a key."""
        if self.net_segments is None or self.net_data is None:
            return
        items = self.net_once
        self.net_once = []
        shares: list[Share] = []
        names: set[str] = set()
        for renderer in self.net_renderers.values():
            if renderer.full_images() is None or renderer.table in names:
                self.net_segments = None
                return
            names.add(renderer.table)
        for number, chains in self.net_chains.items():
            if len(chains.steps) != len(chains.open):  # a key in two steps, or a key moved
                self.net_segments = None
                return
            found = chained_rows(number, chains.steps)
            if found is None:
                self.net_segments = None
                return
            rows, share = found
            items.extend(rows)
            if share is not None:
                shares.append(share)
        if not items:
            self.net_shares.extend(shares)
            return
        data = self.net_data

        def write(statements: bytes) -> int:
            at = self.net_data_size
            data.write(statements)
            self.net_data_size += len(statements)
            return at

        def render(number: int, kind: str, images: list[Any]) -> tuple[bytes, int]:
            return render_run(
                self.net_renderers[number].full_images(), self.net_raw.get(number), kind, images
            )

        self.net_segments.append(write_segment(items, render, write))
        self.net_shares.extend(shares)

    def _write_net_body(self) -> None:
        """--net without a plan: the partition's share of the script, when it could be written here
        (_net_segment), as a record ("body", its segments, each table's shares): the tables only
        deleted from have one share each, their keys each once in the partition."""
        if self.net_segments is None or self.net_out is None:
            return
        if not self.net_once_tables.isdisjoint(self.net_chains):  # deleted from, then changed otherwise
            return
        shares = list(self.net_shares)
        for number in self.net_once_tables:
            span = self._net_key_span(number)
            if span is None:
                return
            shares.append(Share(number, span, False, False, True))
        self._net_put(("body", self.net_segments, shares))

    def _net_key_span(self, number: int) -> tuple[Any, Any] | None:
        """The least and greatest key a table only deleted from deletes, when none is deleted twice."""
        if number not in self.net_key_spans:
            keys = self.net_keys.get(number, [])
            unique = len(set(keys)) == len(keys)
            self.net_key_spans[number] = key_span(keys) if keys and unique else None
        return self.net_key_spans[number]

    def _write_net_steps(self) -> None:
        """Each table's steps so far (NetChains) into part-N.net.data, and a record naming the table and
        where they are into part-N.net.pickle: the driver reads them only for a table it folds."""
        into = self.net_data
        if into is None:
            return
        for number, chains in self.net_chains.items():
            steps = chains.flush()
            if steps:
                data, marshalled = dump_values(steps)
                raw = self.net_raw.get(number)  # its images as bytes: the decoder that reads them
                images = self._net_decoder(raw.decoder, raw.decimal_text) if raw is not None else None
                self._net_put(("steps", number, self.net_data_size, len(data), marshalled, images))
                into.write(data)
                self.net_data_size += len(data)

    def _write_net_keys(self) -> None:
        """The keys of each table the partition saw only deleted from, one piece a table in
        part-N.net.data and a record saying where into part-N.net.pickle, with their count and, when
        no key is there twice, their least and greatest: the driver checks that the range deletes
        each key once, and reads the keys only where the partitions' spans of keys meet."""
        into = self.net_data
        if into is None:
            return
        for number, keys in self.net_keys.items():
            data, marshalled = dump_values(keys)
            span = self._net_key_span(number)  # None: the driver reads them all
            at = self.net_data_size
            self._net_put(("keys", number, at, len(data), marshalled, len(keys), span))
            into.write(data)
            self.net_data_size += len(data)
        self.net_keys.clear()
        self._net_flush()

    def _net_put(self, record: tuple[Any, ...]) -> None:
        """A record for part-N.net.pickle: they are written NET_RECORDS_HELD at a time, as one pickle
        of their list (the driver's load of each record alone cost it more than the fold of them)."""
        self.net_records.append(record)
        if len(self.net_records) >= NET_RECORDS_HELD:
            self._net_flush()

    def _net_flush(self) -> None:
        if self.net_records and self.net_out is not None:
            pickle.dump(self.net_records, self.net_out, protocol=pickle.HIGHEST_PROTOCOL)
            self.net_records = []

    def _counted(self, block: _Block, batch: RowsBatch, table: str, statements: int) -> None:
        block.statements += statements
        self.statements += statements
        block.tables.add(table)
        if block.first_rows is None:
            block.first_rows = (batch.file or self.part.file_label, batch.pos)

    def _largest(self, script: list[str], text: str, batch: RowsBatch, table: str) -> None:
        """Note the event's longest statement if it is the longest yet (a statement over the target's
        max_allowed_packet fails halfway through a script run): lengths of text already built."""
        size = len(max(script, key=len))
        if size * 4 <= self.largest_bytes:
            return  # UTF-8 takes at most 4 bytes per character: no statement of this event is longer
        if not text.isascii():
            size = max(len(sql.encode("utf-8")) for sql in script)
        self._note_largest(size, batch, table)

    def _note_largest(self, size: int, batch: RowsBatch, table: str) -> None:
        """`size`: the bytes of the event's longest statement."""
        if size > self.largest_bytes:
            self.largest_bytes = size
            self.summary.largest_statement = {
                "bytes": size,
                "table": table,
                "file": batch.file or self.part.file_label,
                "pos": batch.pos,
            }

    def _invert_holding_back(
        self, batch: RowsBatch, renderer: TableRenderer, inner: int, checks: bool
    ) -> list[tuple[int, Reverse | Irreversible]]:
        """invert_rows' results (newest row first), with the changes of rows whose older change is
        irreversible held back (as Irreversible, nothing missing), in binlog order."""
        hold = self.hold
        assert hold is not None
        table = batch.table.qualified_name.lower()
        key = renderer.schema.row_key if renderer.schema is not None else ()
        kind = batch.kind
        base = (self.part.file_index, batch.pos, inner)
        results: list[tuple[int, Reverse | Irreversible]] = []
        for index, row in enumerate(batch.rows):
            at = (*base, batch.first_row + index)
            if hold.held(table, kind, row, key, at):
                results.append((index, Irreversible(kind, (), HELD_REASON)))
                continue
            result = invert_row(renderer, kind, row, checks)
            if isinstance(result, Irreversible):
                hold.irreversible(table, kind, row, key, at)
            if result is not None:
                results.append((index, result))
        results.reverse()
        return results

    def _write_taints(self) -> None:
        if self.hold is None or not self.hold.found:
            return
        with open(part_path(self.job.out_dir, self.part.index, "taints.jsonl"), "w", encoding="utf-8") as f:
            for line in dump_taints(self.hold.found):
                f.write(line + "\n")
        self.summary.taints = len(self.hold.found)

    def _write_keys(self) -> None:
        if self.deps is None or not self.deps.found:
            return
        with open(part_path(self.job.out_dir, self.part.index, "keys.jsonl"), "w", encoding="utf-8") as f:
            for line in self.deps.lines():
                f.write(line + "\n")
        self.summary.dependency_keys = True

    def _changed(self, table: str) -> None:
        if table not in self.first_change:
            self.first_change[table] = self.at
            self.changed_tables.add(table)

    def _irreversible(self, item: dict[str, Any]) -> None:
        summary = self.summary
        if self.irreversible_out is None:
            path = part_path(self.job.out_dir, self.part.index, "irreversible.jsonl")
            self.irreversible_out = open(path, "w", encoding="utf-8")
        self.irreversible_out.write(json.dumps(item, ensure_ascii=False) + "\n")
        summary.irreversible += 1
        if summary.first_irreversible is None:
            summary.first_irreversible = item

    def _finish(self, block: _Block | None) -> None:
        if block is None:
            return
        end = len(self.rendered)
        if block.continued:
            self.head_closed = True
            self.entries.append(("head", block.first_chunk, end, ""))
            return
        if not block.statements:
            return
        if block.left_out:
            self.summary.filter_splits.append(
                {**block.where, "file": self.part.file_label, "left_out": sorted(block.left_out)}
            )
        if block.picked and block.dropped:
            self.summary.partial_picks.append(
                {
                    **block.where,
                    "file": self.part.file_label,
                    "picked": block.picked,
                    "dropped": block.dropped,
                }
            )
        header = block_header(
            block.tx.to_dict(),
            self.part.file_label,
            block.first_pos,
            block.end_pos,
            block.selected < block.events or bool(block.picked and block.dropped),
            block.queries,
        )
        self.entries.append(("block", block.first_chunk, end, header))
        self.summary.transactions += 1
        threads = self.summary.threads
        threads[block.tx.thread_id] = threads.get(block.tx.thread_id, 0) + 1
        entry = (block.statements, -block.ordinal, _block_facts(block))
        if len(self.largest) < LARGEST_KEPT:
            heapq.heappush(self.largest, entry)
        elif entry[:2] > self.largest[0][:2]:
            heapq.heapreplace(self.largest, entry)

    # -- output
    def _write(self) -> None:
        part = self.part
        out_dir = self.job.out_dir
        newest_first = self.job.mode == "flashback"
        entries = list(reversed(self.entries)) if newest_first else self.entries
        sizes: dict[str, int] = {}
        order: list[int] = []  # the chunks in the script's order
        with open(part_path(out_dir, part.index, "sql"), "wb", buffering=WRITE_BYTES) as script_out:
            for kind, first, end, header in entries:
                began = script_out.tell()
                if header:
                    script_out.write(header.encode("utf-8"))
                chunks = range(end - 1, first - 1, -1) if newest_first else range(first, end)
                self.rendered.write_script(chunks, script_out)
                order.extend(chunks)
                if header:
                    script_out.write(BLOCK_END.encode("utf-8"))
                sizes[kind] = script_out.tell() - began
            self.summary.script_bytes = script_out.tell()
        with open(part_path(out_dir, part.index, "plan.jsonl"), "wb", buffering=0) as plan_out:
            self.rendered.write_plan(order, plan_out)
        self.summary.statements = self.statements
        self.summary.head = self._piece(self.head, self.head_closed, sizes.get("head", 0))
        self.summary.tail = self._piece(self.tail, False, sizes.get("tail", 0))
        # the pieces of crossing blocks always: their statements add up with other partitions' pieces
        pieces = [_block_facts(b) for b in (self.head, self.tail) if b is not None and b.statements]
        self.summary.largest_blocks = [facts for *_, facts in sorted(self.largest, reverse=True)] + pieces
        if self.head is not None or self.tail is not None:
            with open(part_path(out_dir, part.index, "queries.json"), "w", encoding="utf-8") as f:
                json.dump(
                    {
                        "head": self.head.queries if self.head else [],
                        "tail": self.tail.queries if self.tail else [],
                    },
                    f,
                    ensure_ascii=False,
                )

    def _piece(self, block: _Block | None, closed: bool, script_bytes: int) -> Piece | None:
        if block is None:
            return None
        return Piece(
            ordinal=block.ordinal,
            file=self.part.file_label,
            first_pos=block.first_pos,
            end_pos=block.end_pos if block.moved else None,
            statements=block.statements,
            events=block.events,
            selected=block.selected,
            queries=len(block.queries),
            first_query=block.queries[0] if block.queries else None,
            last_query=block.queries[-1] if block.queries else None,
            closed=closed,
            tx=block.tx.to_dict(),
            script_bytes=script_bytes,
            rows_picked=block.picked,
            rows_dropped=block.dropped,
            left_out=sorted(block.left_out),
        )


LARGEST_KEPT = 10  # the largest transactions a job lists


def _block_facts(block: _Block) -> dict[str, Any]:
    file, pos = block.first_rows or (None, block.first_pos)
    return {
        "tx": block.ordinal,
        "gtid": block.tx.gtid,
        "file": file,
        "position": pos,
        "statements": block.statements,
        "tables": sorted(block.tables),
    }


def run_partition(job: JobSpec, part: Partition, progress: PartitionProgress | None = None) -> Summary:
    """Run one partition; an error the user should see comes back in `Summary.error` (with what the
    partition saw before it: the job decides which of several partitions' errors comes first)."""
    started, cpu = time.monotonic(), time.process_time()
    run = _Run(job, part, progress)
    try:
        summary = run.run()
    except RollbackError as exc:
        summary = run.finish_summary()
        summary.error = encode_error(exc)
        summary.error_pos = run.at
    summary.started, summary.seconds = started, time.monotonic() - started
    summary.cpu = time.process_time() - cpu
    return summary
