"""The job page's view of the change log: pages of row changes filtered by table, type and
transaction and searched, UPDATEs column by column, and one row's history across the range.

The change log (JSON lines, rollback.render.records) is read only through app.services.artifacts. An
unfiltered page seeks straight to its lines; a filtered one scans the log in chunks of whole lines,
looks for the filter's most telling byte string with bytes.find (the change log's own spelling of a
table, a type, a GTID, a key column's value), parses only the lines around a hit, and stops as soon
as the page is full (plus one line to know that another page follows).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.services import artifacts

PAGE_ROWS = 50
HISTORY_VERSIONS = 500  # versions of one row shown; the page says when there are more
TYPES = ("insert", "update", "delete")


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass(frozen=True)
class ChangeFilter:
    table: str = ""  # db.table
    type: str = ""  # insert | update | delete
    gtid: str = ""  # one transaction, by its GTID
    q: str = ""  # text anywhere in the change (values, names, positions)

    @property
    def active(self) -> bool:
        return bool(self.table or self.type or self.gtid or self.q)

    def needles(self) -> list[bytes]:
        """Byte strings every matching line contains (the change log's own spelling of them)."""
        out: list[bytes] = []
        if self.table:
            database, _, table = self.table.partition(".")
            out.append(b'"database":' + _json(database) + b',"table":' + _json(table) + b",")
        if self.type:
            out.append(b'"type":' + _json(self.type))
        if self.gtid:
            out.append(b'"gtid":' + _json(self.gtid) + b",")
        return out

    def matches(self, line: bytes, needles: list[bytes], query: str) -> bool:
        if not all(n in line for n in needles):
            return False
        return not query or query in line.decode("utf-8", "replace").lower()

    def query_string(self, **override: Any) -> str:
        from urllib.parse import urlencode

        values = {"table": self.table, "type": self.type, "gtid": self.gtid, "q": self.q} | override
        return urlencode({k: v for k, v in values.items() if v})


@dataclass
class Change:
    """One row change with its images laid out column by column."""

    record: dict[str, Any]
    columns: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # UPDATE: columns whose value the change altered

    @classmethod
    def of(cls, record: dict[str, Any]) -> Change:
        before, after = record.get("before") or {}, record.get("after") or {}
        columns = list(dict.fromkeys([*before, *after]))
        changed = (
            [c for c in columns if c in before and c in after and before[c] != after[c]]
            if record.get("type") == "update"
            else []
        )
        return cls(record, columns, changed)

    @property
    def table(self) -> str:
        return f"{self.record.get('database')}.{self.record.get('table')}"


@dataclass
class ChangePage:
    changes: list[Change]
    page: int
    has_next: bool
    total: int | None  # all changes of an unfiltered view; None when filtered (not counted)
    first: int  # 1-based number of the page's first change in its view


def _hits(path: Path, needles: Callable[[], list[bytes]], lower: bool = False) -> Iterator[bytes]:
    """The lines of the log holding any of `needles()` (asked again after every line found, so that
    a caller may look for more as it learns), in order; `lower`: look in the ASCII-lower-cased line."""
    for chunk in artifacts.page_chunks(path, 0, artifacts.line_count(path)):
        hay = chunk.lower() if lower else chunk
        pos = 0
        while True:
            found = [at for needle in needles() if (at := hay.find(needle, pos)) >= 0]
            if not found:
                break
            at = min(found)
            start = chunk.rfind(b"\n", 0, at) + 1
            end = chunk.find(b"\n", at)
            end = len(chunk) if end < 0 else end + 1
            yield chunk[start:end]
            pos = end


def change_page(path: Path, flt: ChangeFilter, page: int, size: int = PAGE_ROWS) -> ChangePage:
    page = max(page, 1)
    start = (page - 1) * size
    if not flt.active:
        total = artifacts.line_count(path)
        lines = list(artifacts.iter_lines(path, start, size))
        return ChangePage(
            [Change.of(json.loads(x)) for x in lines], page, start + size < total, total, start + 1
        )
    needles, query = flt.needles(), flt.q.lower()
    # the GTID (one transaction) is the rarest string; a search in ASCII is found in the lower-cased
    # bytes; a search with other characters is checked on each line of the table and type's hits
    if flt.gtid or not query or not query.isascii():
        key, lower = (needles[-1:] if flt.gtid else needles[:1]) or [b"\n"], False
    else:
        key, lower = [query.encode()], True
    found: list[Change] = []
    seen = 0
    has_next = False
    for line in _hits(path, lambda: key, lower):
        if not flt.matches(line, needles, query):
            continue
        if seen >= start + size:
            has_next = True
            break
        if seen >= start:
            found.append(Change.of(json.loads(line)))
        seen += 1
    return ChangePage(found, page, has_next, None, start + 1)


@dataclass
class Version:
    """The row after one change (None: deleted), with the change that made it."""

    change: dict[str, Any] | None  # None: the row as it was before the range (the first change's before)
    image: dict[str, Any] | None
    changed: list[str]


@dataclass
class History:
    table: str
    key: dict[str, Any]
    versions: list[Version]
    columns: list[str]
    truncated: bool = False


def _has_key(image: dict[str, Any] | None, key: dict[str, Any]) -> bool:
    return image is not None and all(c in image and image[c] == v for c, v in key.items())


def row_history(path: Path, table: str, key: dict[str, Any]) -> History:
    """Every version of the row with `key` (column -> value) in `table`, oldest to newest, following
    an UPDATE that changes the key to the row's new key."""
    database, _, name = table.partition(".")
    needle = b'"database":' + _json(database) + b',"table":' + _json(name) + b","
    tracked = [dict(key)]
    versions: list[Version] = []
    truncated = False
    first = next(iter(key))

    def spelled() -> list[bytes]:  # the first key column with each tracked value, as the images spell it
        return [_json(first) + b":" + _json(k[first]) for k in tracked]

    for line in _hits(path, spelled):
        if needle not in line:
            continue
        record = json.loads(line)
        before, after = record.get("before"), record.get("after")
        if not any(_has_key(before, k) or _has_key(after, k) for k in tracked):
            continue
        if len(versions) >= HISTORY_VERSIONS:
            truncated = True
            break
        if not versions and before is not None:
            versions.append(Version(None, before, []))
        previous = versions[-1].image if versions else None
        if record.get("type") == "update" and after is not None:
            moved = {c: after.get(c) for c in key}
            if moved not in tracked:
                tracked.append(moved)
        image = after if record.get("type") != "delete" else None
        changed = (
            [c for c in image if previous is None or previous.get(c) != image.get(c)]
            if image is not None
            else []
        )
        versions.append(Version(record, image, changed))
    columns: list[str] = []
    for version in versions:
        for c in version.image or {}:
            if c not in columns:
                columns.append(c)
    return History(table, key, versions, columns, truncated)
