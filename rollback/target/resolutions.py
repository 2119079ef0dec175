"""The resolutions document of a merge execution (issue 28): how each conflict the merge finds is settled.

    {"version": 1, "default": "keep_now", "tables": {"db.t": "take_before"},
     "rows": [{"table": "db.t", "key": {"id": 5}, "choice": "take_before_where_unchanged"},
              {"table": "db.t", "key": {"id": 6}, "choice": "column", "columns": {"a": "take_before"}}]}

A row's entry wins over its table's, which wins over the default; no default (null or absent) leaves the
other conflicts unresolved. Tables are named `db.t` as the conflict records name them; a row's key is
the conflict record's `key` (values as the change log writes them). An entry may match no conflict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from rollback.base.errors import RollbackError

KEEP_NOW = "keep_now"
TAKE_BEFORE = "take_before"
WHERE_UNCHANGED = "take_before_where_unchanged"
COLUMN = "column"
CONFLICT_CHOICES = (KEEP_NOW, TAKE_BEFORE, WHERE_UNCHANGED, COLUMN)
COLUMN_CHOICES = (KEEP_NOW, TAKE_BEFORE)
_TOP = {"version", "default", "tables", "rows"}
_ROW = {"table", "key", "choice", "columns"}


class ResolutionsError(RollbackError):
    """The resolutions document is not one this engine reads: one line naming the entry."""


def row_key(table: str, key: dict[str, Any]) -> tuple[str, bytes]:
    """A row as resolutions and conflicts name it: the table (case-insensitive) and its key's JSON."""
    return table.lower(), orjson.dumps(key, option=orjson.OPT_SORT_KEYS)


@dataclass(frozen=True)
class Choice:
    """What to do with one conflicting row: `choice`, and for `column` each column's choice."""

    choice: str
    columns: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> Any:
        return {"choice": COLUMN, "columns": self.columns} if self.choice == COLUMN else self.choice


@dataclass(frozen=True)
class Resolutions:
    default: str | None = None
    tables: dict[str, str] = field(default_factory=dict)  # lower-cased db.t -> choice
    rows: dict[tuple[str, bytes], Choice] = field(default_factory=dict)  # row_key -> choice
    entries: dict[tuple[str, bytes], str] = field(default_factory=dict)  # row_key -> "rows[i]", for errors

    def choice_for(self, table: str, key: dict[str, Any]) -> Choice | None:
        """The choice for a conflict on `table` (db.t) at `key`, or None (unresolved)."""
        found = self.rows.get(row_key(table, key))
        if found is not None:
            return found
        by_table = self.tables.get(table.lower(), self.default)
        return Choice(by_table) if by_table is not None else None


def _fail(where: str, what: str) -> ResolutionsError:
    return ResolutionsError(f"resolutions: {where}: {what}")


def _choice(where: str, value: Any, allowed: tuple[str, ...] = CONFLICT_CHOICES) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise _fail(where, f"unknown choice {value!r} (one of {', '.join(allowed)})")
    return value


def _table_name(where: str, value: Any) -> str:
    if not isinstance(value, str) or value.count(".") < 1 or not all(value.split(".", 1)):
        raise _fail(where, f"a table is named db.table, not {value!r}")
    return value.lower()


def parse_resolutions(doc: Any) -> Resolutions:
    """The document checked and read; ResolutionsError (one line naming the entry) for a bad one."""
    if not isinstance(doc, dict):
        raise _fail("the document", f"must be a JSON object, not {type(doc).__name__}")
    unknown = sorted(set(doc) - _TOP)
    if unknown:
        raise _fail("the document", f"unknown key {unknown[0]!r} (known: {', '.join(sorted(_TOP))})")
    if doc.get("version", 1) != 1:
        raise _fail("version", f"{doc.get('version')!r} is not a version this engine reads (1)")
    default = doc.get("default")
    if default is not None:
        default = _choice("default", default)
        if default == COLUMN:
            raise _fail("default", "'column' is a choice for one row (rows[...] with its columns)")
    tables_doc = doc.get("tables") or {}
    if not isinstance(tables_doc, dict):
        raise _fail("tables", "must be an object of db.table -> choice")
    tables: dict[str, str] = {}
    for name, value in tables_doc.items():
        where = f"tables[{name!r}]"
        table = _table_name(where, name)
        tables[table] = _choice(where, value)
        if value == COLUMN:
            raise _fail(where, "'column' is a choice for one row (rows[...] with its columns)")
    rows_doc = doc.get("rows") or []
    if not isinstance(rows_doc, list):
        raise _fail("rows", "must be a list of {table, key, choice}")
    rows: dict[tuple[str, bytes], Choice] = {}
    entries: dict[tuple[str, bytes], str] = {}
    for n, entry in enumerate(rows_doc):
        where = f"rows[{n}]"
        if not isinstance(entry, dict):
            raise _fail(where, "must be an object {table, key, choice}")
        extra = sorted(set(entry) - _ROW)
        if extra:
            raise _fail(where, f"unknown key {extra[0]!r} (known: {', '.join(sorted(_ROW))})")
        table = _table_name(f"{where}.table", entry.get("table"))
        key = entry.get("key")
        if not isinstance(key, dict) or not key:
            raise _fail(f"{where}.key", "must be the row's key as an object of column -> value")
        choice = _choice(f"{where}.choice", entry.get("choice"))
        columns_doc = entry.get("columns")
        columns: dict[str, str] = {}
        if choice == COLUMN:
            if not isinstance(columns_doc, dict) or not columns_doc:
                raise _fail(f"{where}.columns", "a 'column' choice needs an object of column -> choice")
            for column, value in columns_doc.items():
                columns[column] = _choice(f"{where}.columns[{column!r}]", value, COLUMN_CHOICES)
        elif columns_doc is not None:
            raise _fail(f"{where}.columns", f"only a 'column' choice takes columns (this one is {choice!r})")
        named = row_key(table, key)
        if named in rows:
            raise _fail(where, f"names the same row as {entries[named]}")
        rows[named] = Choice(choice, columns)
        entries[named] = where
    return Resolutions(default, tables, rows, entries)
