"""The row changes of local binlog files as records, for `mysql-rollback decode`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rollback.binlog.decode import check_boundary, decode_stream, rows_batches, state_at
from rollback.binlog.reader import BinlogFile
from rollback.binlog.rows import RowsEvent
from rollback.errors import RangeError
from rollback.records import batch_records
from rollback.request import FIRST_EVENT, check_positions


@contextmanager
def file_records(
    files: list[str], start_position: int | None, stop_position: int | None, verify: bool = True
) -> Iterator[Iterator[dict[str, Any]]]:
    """Every row change of the range, as records, in binlog order. Every file is opened and both
    positions checked on entry: bad input fails before any record is given."""
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
        yield _records(ranges, verify)
    finally:
        for binlog in binlogs:
            binlog.close()


def _records(ranges: list[tuple[BinlogFile, Any, int, int]], verify: bool) -> Iterator[dict[str, Any]]:
    for binlog, state, start, stop in ranges:
        for decoded in decode_stream(binlog.buf, state, start, stop, verify=verify):
            if isinstance(decoded.event, RowsEvent):
                for batch in rows_batches(decoded, decoded.event, state):
                    yield from batch_records(batch)
