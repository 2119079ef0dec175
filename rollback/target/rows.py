"""Rows as they are now on a target, read by key: the third column of the conflict view (before the
incident, after it, now). Plain reads in the text protocol (values as the server prints them), no
locks, nothing changed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rollback.base.errors import SourceError
from rollback.base.identifiers import quote_ident, quote_table
from rollback.target.checksum import _key_columns, prepare_session
from rollback.target.execute import connect

MAX_ROWS = 1000  # reads per call: the conflict view shows the first ones, never a table scan per row


@dataclass(slots=True)
class RowNow:
    """One row looked up on the target: `key` (column -> value) and the row found, or None."""

    table: str
    key: dict[str, Any]
    row: dict[str, Any] | None
    note: str = ""  # why the row could not be looked up (no usable key, unnamed columns)

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "key": self.key, "row": self.row, "note": self.note}


def _sql_value(value: Any) -> Any:
    """A change log value (rollback.render.records.json_value) as a query parameter."""
    if isinstance(value, dict):
        if "hex" in value:
            return bytes.fromhex(value["hex"])
        if "json" in value:
            return value["json"]
    return value


def _text(value: Any) -> Any:
    """Text columns arrive as text; bytes only from binary columns, shown as the change log shows
    them (hex)."""
    return {"hex": value.hex()} if isinstance(value, bytes) else value


class _Table:
    def __init__(self, cur: Any, name: str):
        database, _, table = name.partition(".")
        cur.execute(
            "SELECT COLUMN_NAME, IS_NULLABLE = 'YES' FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (database, table),
        )
        found = cur.fetchall()
        self.name = name
        self.columns = [str(c) for c, _ in found]
        nullable = {str(c): bool(n) for c, n in found}
        self.key = _key_columns(cur, database, table, nullable) if found else []
        self.source = quote_table(database, table)


def rows_now(dsn: str, wanted: Iterable[tuple[str, dict[str, Any]]]) -> list[RowNow]:
    """For each (db.table, image) the row with the image's key (primary key, else a NOT NULL unique
    key, else every column of the image) as the target holds it now. At most MAX_ROWS lookups."""
    import pymysql

    conn = connect(dsn)
    try:
        prepare_session(conn)
        tables: dict[str, _Table] = {}
        out: list[RowNow] = []
        with conn.cursor() as cur:
            for n, (table, image) in enumerate(wanted):
                if n >= MAX_ROWS:
                    break
                if table not in tables:
                    tables[table] = _Table(cur, table)
                out.append(_lookup(conn, cur, tables[table], image))
        conn.rollback()
        return out
    except pymysql.err.MySQLError as exc:
        raise SourceError(
            f"cannot read the rows now on the target: {exc.args[-1] if exc.args else exc}"
        ) from None
    finally:
        conn.close()


def _lookup(conn: Any, cur: Any, table: _Table, image: dict[str, Any]) -> RowNow:
    if not table.columns:
        return RowNow(table.name, {}, None, "the table does not exist on the target")
    columns = table.key or [c for c in table.columns if c in image]
    if not columns or any(c not in image for c in columns):
        return RowNow(table.name, {}, None, "the change does not carry the columns that identify the row")
    key = {c: image[c] for c in columns}
    where = " AND ".join(f"{quote_ident(c)} <=> %s" for c in columns)
    saved = conn.decoders
    conn.decoders = {}  # the row's values as the server prints them, like the change log's text
    try:
        cur.execute(
            f"SELECT * FROM {table.source} WHERE {where} LIMIT 1",  # noqa: S608 - identifiers quoted
            [_sql_value(key[c]) for c in columns],
        )
        found = cur.fetchone()
    finally:
        conn.decoders = saved
    if found is None:
        return RowNow(table.name, key, None)
    names = [d[0] for d in cur.description]
    return RowNow(table.name, key, {n: _text(v) for n, v in zip(names, found, strict=True)})
