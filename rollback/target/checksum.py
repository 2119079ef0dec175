"""Table checksums: a record of what tables hold, taken before a change, compared after a rollback.

A checksum file holds, per table, its columns, its key (primary key, else a unique key over NOT NULL
columns, else none) and one short digest per row, keyed by the row's key values. Values are read as
the server's text protocol writes them (the session in UTC, utf8mb4), so two servers of the same
family agree on equal data. A comparison names the first differing key, not just "differs".
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from rollback.base.errors import RollbackError, SourceError
from rollback.base.identifiers import quote_ident, quote_table

FORMAT = "mysql-rollback-checksum/1"
ROW_DIGEST_HEX = 16  # 64 bits per row: a collision inside one table is not a practical concern


class ChecksumError(RollbackError):
    """A checksum file that cannot be read, or a table that cannot be checksummed."""


def split_table(name: str) -> tuple[str, str]:
    database, dot, table = name.partition(".")
    if not dot or not database or not table:
        raise ChecksumError(f"{name!r}: give tables as DATABASE.TABLE")
    return database, table


def _row_digest(values: tuple[Any, ...]) -> str:
    h = hashlib.sha256()
    for value in values:
        if value is None:
            h.update(b"\x00")
            continue
        data = value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogateescape")
        h.update(b"\x01" + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()[:ROW_DIGEST_HEX]


def _text(value: Any) -> Any:
    """A key value as JSON can hold it (binary keys as hex)."""
    return "0x" + value.hex() if isinstance(value, bytes) else value


def _key_columns(cur: Any, database: str, table: str, nullable: dict[str, bool]) -> list[str]:
    cur.execute(
        "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
        "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND NON_UNIQUE = 0 "
        "ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX",
        (database, table),
    )
    keys: dict[str, list[str]] = {}
    for index, column in cur.fetchall():
        keys.setdefault(index, []).append(column)
    for columns in keys.values():
        if not any(nullable.get(c, True) for c in columns):
            return columns
    return []


@dataclass
class TableChecksum:
    name: str
    columns: list[str]
    key: list[str]
    rows: dict[str, str] = field(default_factory=dict)  # key JSON -> digest, in key order (keyed tables)
    digests: Counter[str] = field(default_factory=Counter)  # digest -> count (tables without a key)

    @property
    def row_count(self) -> int:
        return len(self.rows) if self.key else sum(self.digests.values())

    @property
    def digest(self) -> str:
        h = hashlib.sha256(json.dumps([self.columns, self.key]).encode())
        items = sorted(self.rows.items()) if self.key else sorted(self.digests.items())
        for a, b in items:
            h.update(f"{a}\x00{b}\n".encode())
        return h.hexdigest()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "columns": self.columns,
            "key": self.key,
            "row_count": self.row_count,
            "digest": self.digest,
        }
        if self.key:
            out["rows"] = self.rows
        else:
            out["digests"] = dict(sorted(self.digests.items()))
        return out

    @classmethod
    def from_dict(cls, name: str, data: dict[str, Any]) -> TableChecksum:
        try:
            table = cls(name, list(data["columns"]), list(data["key"]))
            if table.key:
                table.rows = {str(k): str(v) for k, v in data["rows"].items()}
            else:
                table.digests = Counter({str(k): int(v) for k, v in data["digests"].items()})
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ChecksumError(f"table {name}: not a checksum record ({exc})") from None
        return table


def take_table(conn: Any, name: str) -> TableChecksum:
    """Checksum one table on an open connection (inside its current transaction, if any)."""
    import pymysql.cursors

    database, table = split_table(name)
    with conn.cursor() as cur:
        cur.execute(
            "SELECT COLUMN_NAME, IS_NULLABLE = 'YES' FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (database, table),
        )
        found = cur.fetchall()
        if not found:
            raise ChecksumError(f"table {name} does not exist on the server")
        columns = [str(c) for c, _ in found]
        nullable = {str(c): bool(n) for c, n in found}
        key = _key_columns(cur, database, table, nullable)
    result = TableChecksum(name, columns, key)
    at = [columns.index(k) for k in key]
    select = ", ".join(quote_ident(c) for c in columns)
    # The text protocol's own rendering of each value: decoders switched off for this cursor.
    saved = conn.decoders
    conn.decoders = {}
    try:
        with conn.cursor(pymysql.cursors.SSCursor) as cur:
            order = f" ORDER BY {', '.join(quote_ident(k) for k in key)}" if key else ""
            cur.execute(f"SELECT {select} FROM {quote_table(database, table)}{order}")
            for row in cur:
                digest = _row_digest(row)
                if key:
                    result.rows[json.dumps([_text(row[i]) for i in at], ensure_ascii=False)] = digest
                else:
                    result.digests[digest] += 1
    finally:
        conn.decoders = saved
    return result


def prepare_session(conn: Any) -> None:
    with conn.cursor() as cur:
        cur.execute("SET NAMES utf8mb4")
        cur.execute("SET time_zone = '+00:00'")


def take_tables(conn: Any, tables: list[str]) -> dict[str, TableChecksum]:
    """Checksums of these tables on an open connection (inside its current transaction, if any)."""
    prepare_session(conn)
    return {name: take_table(conn, name) for name in tables}


def take_from_server(conn: Any, tables: list[str]) -> dict[str, TableChecksum]:
    """take_tables, with a server error as one line."""
    import pymysql.cursors

    try:
        return take_tables(conn, tables)
    except pymysql.err.MySQLError as exc:
        raise SourceError(f"cannot checksum: {exc.args[-1] if exc.args else exc}") from None


def document(tables: dict[str, TableChecksum], server: str = "") -> dict[str, Any]:
    """The checksum document `mysql-rollback checksum` writes."""
    return {
        "format": FORMAT,
        "server": server,
        "taken_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "tables": {name: table.to_dict() for name, table in tables.items()},
    }


def tables_of_database(conn: Any, database: str) -> list[str]:
    with conn.cursor() as cur:
        cur.execute(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
            "AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME",
            (database,),
        )
        return [f"{database}.{name}" for (name,) in cur.fetchall()]


def load(path: str) -> dict[str, TableChecksum]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ChecksumError(f"{path}: cannot read the checksum file ({' '.join(str(exc).split())})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("tables"), dict):
        raise ChecksumError(f"{path}: not a checksum file of mysql-rollback checksum ({FORMAT})")
    return {name: TableChecksum.from_dict(name, t) for name, t in data["tables"].items()}


@dataclass
class Verdict:
    table: str
    status: str  # restored | differs | not in expected | not verified
    rows_expected: int | None = None
    rows_found: int | None = None
    first_difference: dict[str, Any] | None = None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "restored"

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "")}

    def line(self) -> str:
        if self.ok:
            return f"{self.table}: restored ({self.rows_found} rows)"
        detail = self.reason
        diff = self.first_difference
        if diff and "key" in diff:
            key = ", ".join(f"{k}={v}" for k, v in diff["key"].items())
            detail += f"; first: the row {key} is {diff['kind']}"
        return f"{self.table}: {self.status}" + (f" ({detail})" if detail else "")


def compare(expected: TableChecksum, found: TableChecksum) -> Verdict:
    verdict = Verdict(expected.name, "restored", expected.row_count, found.row_count)
    if expected.columns != found.columns:
        verdict.status = "differs"
        verdict.reason = f"columns were {expected.columns}, are {found.columns}"
        return verdict
    if expected.digest == found.digest:
        return verdict
    verdict.status = "differs"
    if expected.key:
        # in the expected table's key order, then rows that should not be there in the found order
        differences = [
            (key, "missing" if key not in found.rows else "changed")
            for key, digest in expected.rows.items()
            if found.rows.get(key) != digest
        ] + [(key, "unexpected") for key in found.rows if key not in expected.rows]
        key, kind = differences[0]
        verdict.first_difference = {
            "kind": kind,
            "key": dict(zip(expected.key, json.loads(key), strict=True)),
        }
        verdict.reason = f"{len(differences)} row(s) differ"
    else:
        missing = expected.digests - found.digests
        extra = found.digests - expected.digests
        verdict.reason = (
            f"no key: {sum(missing.values())} expected row(s) missing, {sum(extra.values())} unexpected"
        )
    return verdict
