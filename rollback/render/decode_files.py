"""The row changes of local binlog files as records, for `mysql-rollback decode`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rollback.base.errors import RangeError
from rollback.binlog.decode import (
    SpecsFor,
    StreamState,
    check_boundary,
    decode_stream,
    rows_batches,
    state_at,
)
from rollback.binlog.reader import BinlogFile
from rollback.binlog.rows import RowsEvent
from rollback.render.records import batch_records
from rollback.request.spec import FIRST_EVENT, check_positions
from rollback.schema.tables import SchemaSource, legacy_temporal_specs


@contextmanager
def file_records(
    files: list[str],
    start_position: int | None,
    stop_position: int | None,
    verify: bool = True,
    schema: SchemaSource | None = None,
) -> Iterator[Iterator[dict[str, Any]]]:
    """Every row change of the range, as records, in binlog order. Every file is opened and both
    positions checked on entry: bad input fails before any record is given. `schema` gives the
    precision of the tables' MariaDB 'hires' temporal columns (see legacy_temporal_specs)."""
    last = len(files) - 1
    binlogs: list[BinlogFile] = []
    try:
        ranges = []
        for index, path in enumerate(files):
            binlog = BinlogFile(path)
            binlogs.append(binlog)
            first = index == 0 and start_position is not None
            start = start_position if first and start_position is not None else FIRST_EVENT
            stop = stop_position if index == last and stop_position is not None else binlog.size
            if start < FIRST_EVENT:
                raise RangeError(
                    f"{path}: start position {start} is inside the file header (events start at 4)"
                )
            check_positions(path, start, stop, binlog.size)
            if stop != binlog.size:
                check_boundary(binlog.buf, binlog.facts, stop, binlog.path)
            ranges.append((binlog, state_at(binlog.buf, binlog.facts, start, binlog.path), start, stop))
        yield _records(ranges, verify, schema)
    finally:
        for binlog in binlogs:
            binlog.close()


def _records(
    ranges: list[tuple[BinlogFile, Any, int, int]], verify: bool, schema: SchemaSource | None
) -> Iterator[dict[str, Any]]:
    for binlog, state, start, stop in ranges:
        for decoded in decode_stream(binlog.buf, state, start, stop, verify=verify):
            if isinstance(decoded.event, RowsEvent):
                specs_for = _specs_for(schema, state, decoded.event.table_id)
                for batch in rows_batches(decoded, decoded.event, state, specs_for=specs_for):
                    yield from batch_records(batch)


def _specs_for(schema: SchemaSource | None, state: StreamState, table_id: int) -> SpecsFor | None:
    """The specs of a table the schema describes (column for column) when they differ from its table
    map's; None leaves the table map's, and its "schema needed" hint where they do not decode."""
    tmap = state.table_maps.get(table_id)
    found = schema.lookup(tmap.database, tmap.table) if schema is not None and tmap is not None else None
    if tmap is None or found is None or len(found.columns) != tmap.column_count:
        return None
    specs = legacy_temporal_specs(tmap, found, None, state.facts.is_mariadb)
    return None if specs is None else (lambda _tmap: specs)
