"""Decoded row changes as plain records (JSON lines, text): what `decode` prints and the change log holds."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from rollback.binlog.columns import MISSING
from rollback.binlog.constants import ColumnType
from rollback.binlog.decode import RowsBatch
from rollback.binlog.json_binary import decode_json
from rollback.binlog.rows import JsonPartial, JsonText
from rollback.binlog.table_map import TableMap

BINARY_COLLATION = 63


def utc_text(timestamp: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))


def column_names(tmap: TableMap, names: tuple[str, ...] | None = None) -> tuple[str, ...]:
    names = names or tmap.column_names
    if names and len(names) == tmap.column_count:
        return names
    return tuple(f"@{i + 1}" for i in range(tmap.column_count))


def _bytes_kinds(tmap: TableMap) -> tuple[str, ...]:
    """How each column's bytes values read as JSON: "json", "hex" (geometry, vector, binary
    collations) or "text" (UTF-8 when it decodes). Worked out once per table map, not per value."""
    kinds = []
    charsets = tmap.charsets
    for index, real in enumerate(spec.real_type for spec in tmap.specs(None)):
        if real == ColumnType.JSON:
            kinds.append("json")
        elif real in (ColumnType.GEOMETRY, ColumnType.VECTOR):
            kinds.append("hex")
        elif (charsets[index] if charsets else None) == BINARY_COLLATION:
            kinds.append("hex")
        else:
            kinds.append("text")
    return tuple(kinds)


def _bytes_value(data: bytes, kind: str) -> Any:
    if kind == "json":
        return {"json": decode_json(data)}
    if kind == "text":
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return {"hex": data.hex()}


def json_value(value: Any, tmap: TableMap, index: int, kinds: tuple[str, ...] | None = None) -> Any:
    """A column value as JSON: exact (DECIMAL as a string), strings as text when they are text.
    `kinds`: the table's _bytes_kinds, when the caller has them."""
    if isinstance(value, JsonText):
        return {"json": str(value)}
    if isinstance(value, JsonPartial):
        return {"json_diff": [{"op": d.op, "path": d.path, "value": d.value} for d in value.diffs]}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return _bytes_value(bytes(value), (kinds or _bytes_kinds(tmap))[index])
    return repr(value)


def image(
    row: tuple, tmap: TableMap, names: tuple[str, ...], kinds: tuple[str, ...] | None = None
) -> dict[str, Any]:
    kinds = kinds or _bytes_kinds(tmap)
    out: dict[str, Any] = {}
    for i, v in enumerate(row):
        kind = type(v)
        if v is None or kind in _PLAIN:  # exact types: a JsonText (a str) goes the long way
            out[names[i]] = v
        elif kind is bytes:
            out[names[i]] = _bytes_value(v, kinds[i])
        elif kind is Decimal:
            out[names[i]] = str(v)
        elif v is not MISSING:
            out[names[i]] = json_value(v, tmap, i, kinds)
    return out


_PLAIN = (int, float, str, bool)


def batch_records(batch: RowsBatch, names: tuple[str, ...] | None = None) -> Iterator[dict[str, Any]]:
    tmap = batch.table
    cols = column_names(tmap, names)
    base: dict[str, Any] = {
        "file": batch.file,
        "pos": batch.pos,
        "end_pos": batch.end_pos,
        "gtid": batch.tx.gtid,
        "timestamp": utc_text(batch.timestamp),
        "server_id": batch.server_id,
        "thread_id": batch.tx.thread_id,
        "database": tmap.database,
        "table": tmap.table,
        "type": batch.kind,
    }
    kinds = _bytes_kinds(tmap)
    for index, row in enumerate(batch.rows):
        record = dict(base, row=index)
        if batch.kind == "update":
            record["before"] = image(row[0], tmap, cols, kinds)
            record["after"] = image(row[1], tmap, cols, kinds)
        elif batch.kind == "insert":
            record["after"] = image(row, tmap, cols, kinds)
        else:
            record["before"] = image(row, tmap, cols, kinds)
        yield record


def record_json(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def record_text(record: dict[str, Any]) -> str:
    head = (
        f"{record['file']}:{record['pos']}-{record['end_pos']} {record['timestamp']} "
        f"gtid={record['gtid'] or '-'} server={record['server_id']} "
        f"{record['type'].upper()} `{record['database']}`.`{record['table']}` row {record['row']}"
    )
    parts = [head]
    for key in ("before", "after"):
        if key in record:
            values = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in record[key].items())
            parts.append(f"  {key}: {values}")
    return "\n".join(parts)
