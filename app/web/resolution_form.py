"""The three-way view's resolution controls after a merge conflict check: the stored resolutions
document shown as the form's choices, and the form read back into a document.

The form names a conflicting row by its place in the check's conflict list (`row-3`, its columns
`row-3-col-0`), a table by `table-<i>` in the order of `tables()`, "all remaining" by `default`; the
document names them by table and key, as the engine matches them."""

from __future__ import annotations

from typing import Any

CHOICES = {
    "keep_now": "keep now",
    "take_before": "take pre-incident",
    "take_before_where_unchanged": "pre-incident where unchanged",
}
ROW_CHOICES = {**CHOICES, "column": "per column"}
COLUMN_CHOICES = {"keep_now": "keep now", "take_before": "take pre-incident"}


def tables(conflicts: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(str(c.get("table")) for c in conflicts))


def _row_entry(document: dict[str, Any], conflict: dict[str, Any]) -> dict[str, Any] | None:
    for entry in document.get("rows") or []:
        if entry.get("table") == conflict.get("table") and entry.get("key") == conflict.get("key"):
            return dict(entry)
    return None


def view_rows(conflicts: list[dict[str, Any]], document: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Each conflict with the choice the document makes for it (row entry, else none: the table's or
    the default applies) and, for a per-column choice, each column's."""
    document = document or {}
    out = []
    for i, conflict in enumerate(conflicts):
        entry = _row_entry(document, conflict) or {}
        columns = entry.get("columns") or {}
        out.append(
            {
                "index": i,
                "conflict": conflict,
                "choice": entry.get("choice") or "",
                "column_choices": [columns.get(c.get("name"), "") for c in conflict.get("columns") or []],
            }
        )
    return out


def document_from_form(data: dict[str, Any], conflicts: list[dict[str, Any]]) -> dict[str, Any]:
    """The resolutions document the form describes (checked by the engine when stored)."""
    names = tables(conflicts)
    document: dict[str, Any] = {"version": 1, "default": _choice(data.get("default"), CHOICES)}
    document["tables"] = {
        name: choice
        for i, name in enumerate(names)
        if (choice := _choice(data.get(f"table-{i}"), CHOICES)) is not None
    }
    rows = []
    for i, conflict in enumerate(conflicts):
        choice = _choice(data.get(f"row-{i}"), ROW_CHOICES if conflict.get("kind") == "update" else CHOICES)
        if choice is None:
            continue
        entry: dict[str, Any] = {"table": conflict.get("table"), "key": conflict.get("key"), "choice": choice}
        if choice == "column":
            entry["columns"] = {
                str(column.get("name")): _choice(data.get(f"row-{i}-col-{j}"), COLUMN_CHOICES) or "keep_now"
                for j, column in enumerate(conflict.get("columns") or [])
            }
        rows.append(entry)
    document["rows"] = rows
    return document


def _choice(value: Any, allowed: dict[str, str]) -> str | None:
    return value if isinstance(value, str) and value in allowed else None


def resolution_name(value: Any) -> str:
    """A conflict record's `resolution` in a word: the choice (a `column` choice is an object), or
    "unresolved"."""
    if isinstance(value, dict):
        return str(value.get("choice") or "unresolved")
    return str(value) if value else "unresolved"


def by_resolution(conflicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(conflicts, key=lambda c: resolution_name(c.get("resolution")))
