"""Decoded row changes as plain records (JSON lines, text): what `decode` prints and the change log holds."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
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


Members = dict[int, tuple[str, tuple[str, ...]]]  # column index -> ("enum" | "set", its members)


def column_members(tmap: TableMap, columns: Sequence[Any] | None = None) -> Members:
    """The members of each ENUM and SET column: from the table map's FULL metadata, else from the
    schema's columns (objects with enum_values / set_values, rollback.schema.tables.Column)."""
    found: Members = {}
    real = [spec.real_type for spec in tmap.specs(None)]
    for index, kind in enumerate(real):
        if kind not in (ColumnType.ENUM, ColumnType.SET):
            continue
        name = "enum" if kind == ColumnType.ENUM else "set"
        logged = (tmap.enum_values if name == "enum" else tmap.set_values).get(index)
        if logged is not None:
            found[index] = (name, tuple(v.decode("utf-8", "replace") for v in logged))
        elif columns is not None and index < len(columns):
            members = getattr(columns[index], f"{name}_values", None)
            if members:
                found[index] = (name, tuple(members))
    return found


def member_text(kind: str, members: tuple[str, ...], value: int) -> str | int:
    """An ENUM index (1-based; 0 is the '' error value) or a SET bit mask as the server prints it;
    a number outside the members stays a number (the definition does not describe it)."""
    if kind == "enum":
        if value == 0:
            return ""
        return members[value - 1] if 0 < value <= len(members) else value
    if value < 0 or value >> len(members):
        return value
    return ",".join(m for i, m in enumerate(members) if value >> i & 1)


def bytes_kinds(tmap: TableMap) -> tuple[str, ...]:
    """How each column's bytes values read as JSON: "json", "hex" (geometry, vector, binary
    collations) or "text" (UTF-8 when it decodes). Worked out once per table map, not per value."""
    kinds = []
    charsets = tmap.charsets
    for index, spec in enumerate(tmap.specs(None)):
        if spec.real_type == ColumnType.JSON:
            kinds.append("json")
        elif spec.real_type in (ColumnType.GEOMETRY, ColumnType.VECTOR):
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


def json_value(
    value: Any,
    tmap: TableMap,
    index: int,
    members: Members | None = None,
    kinds: tuple[str, ...] | None = None,
) -> Any:
    """A column value as JSON: exact (DECIMAL as a string), strings as text when they are text,
    ENUM and SET as their members' text when `members` knows them. `kinds`: the table's
    bytes_kinds, when the caller has them."""
    if members and index in members and isinstance(value, int) and not isinstance(value, bool):
        kind, names = members[index]
        return member_text(kind, names, value)
    if isinstance(value, JsonText):
        return {"json": str(value)}
    if isinstance(value, JsonPartial):
        return {"json_diff": [{"op": d.op, "path": d.path, "value": d.value} for d in value.diffs]}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return _bytes_value(bytes(value), (kinds or bytes_kinds(tmap))[index])
    return repr(value)


_PLAIN = (int, float, str, bool)


def image(
    row: tuple,
    tmap: TableMap,
    names: tuple[str, ...],
    members: Members | None = None,
    kinds: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    kinds = kinds or bytes_kinds(tmap)
    out: dict[str, Any] = {}
    for i, v in enumerate(row):
        kind = type(v)
        if members and i in members:
            if v is not MISSING:
                out[names[i]] = json_value(v, tmap, i, members, kinds)
        elif v is None or kind in _PLAIN:  # exact types: a JsonText (a str) goes the long way
            out[names[i]] = v
        elif kind is bytes:
            out[names[i]] = _bytes_value(v, kinds[i])
        elif kind is Decimal:
            out[names[i]] = str(v)
        elif v is not MISSING:
            out[names[i]] = json_value(v, tmap, i, members, kinds)
    return out


def record_head(batch: RowsBatch) -> dict[str, Any]:
    """What every record of one rows event shares: where and when it was written, its table, its kind."""
    return {
        "file": batch.file,
        "pos": batch.pos,
        "end_pos": batch.end_pos,
        "gtid": batch.tx.gtid,
        "timestamp": utc_text(batch.timestamp),
        "server_id": batch.server_id,
        "thread_id": batch.tx.thread_id,
        "database": batch.table.database,
        "table": batch.table.table,
        "type": batch.kind,
    }


def batch_records(
    batch: RowsBatch, names: tuple[str, ...] | None = None, columns: Sequence[Any] | None = None
) -> Iterator[dict[str, Any]]:
    """The records of one rows event; `columns` (the schema's) name ENUM and SET members the table
    map does not carry."""
    tmap = batch.table
    cols = column_names(tmap, names)
    members = column_members(tmap, columns)
    kinds = bytes_kinds(tmap)
    base = record_head(batch)
    for index, row in enumerate(batch.rows, batch.first_row):
        record = dict(base, row=index)
        if batch.kind == "update":
            record["before"] = image(row[0], tmap, cols, members, kinds)
            record["after"] = image(row[1], tmap, cols, members, kinds)
        elif batch.kind == "insert":
            record["after"] = image(row, tmap, cols, members, kinds)
        else:
            record["before"] = image(row, tmap, cols, members, kinds)
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
