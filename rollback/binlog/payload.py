"""Containers of other events: MySQL's TRANSACTION_PAYLOAD (zstd) and MariaDB's QUERY_COMPRESSED.

TRANSACTION_PAYLOAD body: a list of (field type, field length, value) triples, each a
length-encoded integer — 1 payload size, 2 compression type (0 zstd, 255 none), 3
uncompressed size, 0 end of header — then the payload: complete events (v4 headers, no
checksums) that decode as if they stood inline.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import zstandard

from rollback.binlog.constants import EventType
from rollback.binlog.events import Query, decode_query
from rollback.binlog.packed import read_lenenc
from rollback.binlog.reader import FormatFacts, RawEvent
from rollback.binlog.rows import mariadb_uncompress
from rollback.errors import BinlogFormatError

COMPRESSION_ZSTD = 0
COMPRESSION_NONE = 255
# An uncompressed payload larger than this is refused rather than inflated (MySQL caps transactions at 4 GiB
# by binlog_transaction_compression limits; a bigger claim is corruption).
MAX_PAYLOAD = 1 << 32


@dataclass(slots=True)
class TransactionPayload:
    compression: int
    uncompressed_size: int
    events: bytes  # the inner events, uncompressed


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
    if compression in (None, COMPRESSION_ZSTD):
        try:
            limit = uncompressed if uncompressed is not None else 0
            if limit > MAX_PAYLOAD:
                raise BinlogFormatError(
                    None, raw.pos, f"TRANSACTION_PAYLOAD claims {limit} uncompressed bytes"
                )
            # MySQL's frames do not always record their content size: inflate as a stream, and never
            # more than the declared size (plus one byte, to notice a payload that holds more).
            bound = limit or MAX_PAYLOAD
            chunks = []
            total = 0
            with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(bytes(data))) as reader:
                while total <= bound:
                    chunk = reader.read(min(bound + 1 - total, 1 << 20))
                    if not chunk:
                        break
                    chunks.append(chunk)
                    total += len(chunk)
            events = b"".join(chunks)
            if len(events) > bound:
                raise BinlogFormatError(None, raw.pos, "TRANSACTION_PAYLOAD inflates past its declared size")
        except zstandard.ZstdError as exc:
            raise BinlogFormatError(
                None, raw.pos, f"TRANSACTION_PAYLOAD does not decompress: {exc}"
            ) from None
    elif compression == COMPRESSION_NONE:
        events = bytes(data)
    else:
        raise BinlogFormatError(
            None, raw.pos, f"TRANSACTION_PAYLOAD compression type {compression} is unknown"
        )
    if uncompressed is not None and len(events) != uncompressed:
        raise BinlogFormatError(
            None, raw.pos, f"TRANSACTION_PAYLOAD inflates to {len(events)} bytes, header says {uncompressed}"
        )
    return TransactionPayload(compression or 0, len(events), events)


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
