"""Containers of other events: MySQL's TRANSACTION_PAYLOAD (zstd) and MariaDB's QUERY_COMPRESSED.

TRANSACTION_PAYLOAD body: a list of (field type, field length, value) triples, each a
length-encoded integer — 1 payload size, 2 compression type (0 zstd, 255 none), 3
uncompressed size, 0 end of header — then the payload: complete events (v4 headers, no
checksums) that decode as if they stood inline.

The inner events are inflated one at a time (`payload_events`), never the whole payload at once:
a payload's memory is its largest inner event. Before anything is inflated, the size the payload
declares is held to what its compressed bytes can honestly hold (ZSTD_MAX_RATIO) and to MAX_PAYLOAD.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import zstandard

from rollback.base.errors import BinlogFormatError
from rollback.binlog.constants import EventType
from rollback.binlog.events import Query, decode_query
from rollback.binlog.packed import read_lenenc
from rollback.binlog.reader import EVENT_HEADER, MAX_EVENT_LENGTH, FormatFacts, RawEvent, iter_events
from rollback.binlog.rows import mariadb_uncompress

COMPRESSION_ZSTD = 0
COMPRESSION_NONE = 255
# An uncompressed payload larger than this is refused rather than inflated (MySQL caps transactions at 4 GiB
# by binlog_transaction_compression limits; a bigger claim is corruption).
MAX_PAYLOAD = 1 << 32
# The most a zstd frame can inflate per compressed byte: its densest block is an RLE block, 3 bytes of
# header and 1 byte of content standing for at most 128 KiB (the largest block). A payload that
# declares more than this per byte it holds is not zstd output, whatever it inflates to.
ZSTD_MAX_RATIO = (128 << 10) // 4
# Inflated bytes are read from the stream in steps of at most this much (a truncated stream fails before
# the memory its header promised is committed).
_STEP = 1 << 20


@dataclass(slots=True)
class TransactionPayload:
    compression: int
    uncompressed_size: int  # as declared (or, when the header has none, the most the payload can hold)
    declared: bool  # whether the header declared the uncompressed size
    data: memoryview  # the payload as stored (compressed, or not)


def decode_transaction_payload(raw: RawEvent, facts: FormatFacts) -> TransactionPayload:
    body = raw.body
    # The fields start right after the common header. (MySQL's FDE lists 40 as this type's post-header
    # length, but the server's own reader skips nothing: the corpus files decode only from offset 0.)
    pos = 0
    size = compression = uncompressed = None
    try:
        while pos < len(body):
            field, pos = read_lenenc(body, pos)
            if field == 0:
                break
            length, pos = read_lenenc(body, pos)
            value, _ = read_lenenc(body, pos)
            pos += length
            if field == 1:
                size = value
            elif field == 2:
                compression = value
            elif field == 3:
                uncompressed = value
    except BinlogFormatError as exc:
        raise BinlogFormatError(
            None, raw.pos, f"TRANSACTION_PAYLOAD header malformed: {exc.reason}"
        ) from None
    data = body[pos:]
    if size is not None and size != len(data):
        raise BinlogFormatError(None, raw.pos, f"TRANSACTION_PAYLOAD says {size} bytes, holds {len(data)}")
    if compression is None:
        compression = COMPRESSION_ZSTD
    if compression == COMPRESSION_NONE:
        honest = len(data)
    elif compression == COMPRESSION_ZSTD:
        honest = min(len(data) * ZSTD_MAX_RATIO, MAX_PAYLOAD)
    else:
        raise BinlogFormatError(
            None, raw.pos, f"TRANSACTION_PAYLOAD compression type {compression} is unknown"
        )
    if uncompressed is not None and uncompressed > honest:
        limit = "the 4 GiB limit" if uncompressed > MAX_PAYLOAD else f"what its {len(data)} bytes can hold"
        raise BinlogFormatError(
            None, raw.pos, f"TRANSACTION_PAYLOAD claims {uncompressed} uncompressed bytes, more than {limit}"
        )
    return TransactionPayload(
        compression, honest if uncompressed is None else uncompressed, uncompressed is not None, data
    )


def payload_events(payload: TransactionPayload, facts: FormatFacts, path: str | None) -> Iterator[RawEvent]:
    """The inner events of a payload (positions relative to its inflated start), inflated one at a
    time. `facts` are the inner events' (no checksums). Errors carry the inner offset."""
    if payload.compression == COMPRESSION_NONE:
        yield from iter_events(payload.data, facts, 0, len(payload.data), path)
        return
    header_len = facts.header_len
    limit = payload.uncompressed_size
    pos = 0
    try:
        with zstandard.ZstdDecompressor().stream_reader(payload.data) as reader:
            while True:
                head = bytearray()
                if not _read(reader, head, header_len):
                    break
                if len(head) < header_len:
                    raise BinlogFormatError(
                        path, pos, f"truncated event header ({len(head)} of {header_len} bytes)"
                    )
                timestamp, type_code, server_id, length, next_pos, flags = EVENT_HEADER.unpack_from(head)
                if length < header_len:
                    raise BinlogFormatError(path, pos, f"event length {length} is smaller than its header")
                if length > MAX_EVENT_LENGTH or pos + length > limit:
                    raise BinlogFormatError(
                        path, pos, f"event length {length} runs past the payload's {limit} bytes"
                    )
                if _read(reader, head, length - header_len) < length - header_len:
                    raise BinlogFormatError(
                        path, pos, f"truncated event: length {length}, the payload ends after {len(head)}"
                    )
                yield RawEvent(
                    pos,
                    timestamp,
                    type_code,
                    server_id,
                    length,
                    next_pos,
                    flags,
                    memoryview(head),
                    header_len,
                    0,
                )
                pos += length
    except zstandard.ZstdError as exc:
        raise BinlogFormatError(path, pos, f"TRANSACTION_PAYLOAD does not decompress: {exc}") from None
    if payload.declared and pos != limit:
        raise BinlogFormatError(
            path, pos, f"TRANSACTION_PAYLOAD inflates to {pos} bytes, header says {limit}"
        )


def _read(reader: zstandard.ZstdDecompressionReader, out: bytearray, size: int) -> int:
    """Append `size` inflated bytes to `out` (fewer where the stream ends), read in steps of at most
    _STEP; returns how many."""
    done = 0
    while done < size:
        chunk = reader.read(min(size - done, _STEP))
        if not chunk:
            break
        out += chunk
        done += len(chunk)
    return done


def decode_query_compressed(raw: RawEvent, facts: FormatFacts) -> Query:
    """MariaDB QUERY_COMPRESSED: a QUERY event whose SQL text is zlib-compressed with MariaDB's header."""
    query = decode_query(raw, facts)
    body = raw.body
    # Locate the SQL text again: it starts after the status block and the database name.
    post = facts.post_header_len(EventType.QUERY_COMPRESSED, facts.post_header_len(EventType.QUERY, 13))
    status_len = int.from_bytes(body[11:13], "little")
    db_len = body[8]
    start = post + status_len + db_len + 1
    query.sql = mariadb_uncompress(body[start:], raw.pos).decode("utf-8", "replace")
    return query
