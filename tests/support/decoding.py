"""Every event of a stream with its rows decoded: what the decoder tests walk (the engine decodes
rows where it selects them, in the partition)."""

from __future__ import annotations

from collections.abc import Iterator

from rollback.binlog.decode import (
    DecodedEvent,
    RowsBatch,
    SpecsFor,
    StreamState,
    UnsignedFor,
    decode_stream,
    rows_batch,
)
from rollback.binlog.rows import RowsEvent


def iter_row_batches(
    buf: memoryview | bytes,
    state: StreamState,
    start: int,
    end: int,
    unsigned_for: UnsignedFor | None = None,
    verify: bool = True,
    specs_for: SpecsFor | None = None,
) -> Iterator[tuple[DecodedEvent, RowsBatch | None]]:
    """Every decoded event, with its rows decoded when it is a rows event (None otherwise)."""
    for decoded in decode_stream(buf, state, start, end, verify):
        event = decoded.event
        if not isinstance(event, RowsEvent):
            yield decoded, None
            continue
        yield decoded, rows_batch(decoded, event, state, unsigned_for, specs_for)
