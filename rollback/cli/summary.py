"""What `flashback --execute` says when it is done: on a terminal, a few lines a person reads (rows
restored per table, rows skipped with their keys, committed or rolled back); off a terminal or with
`--json`, the one JSON line a script parses (the same facts, and the engine that wrote the plan)."""

from __future__ import annotations

import json
from collections import Counter
from typing import IO, Any

SHOWN_SKIPPED = 10  # skipped rows named one per line; the JSON lists them all
KEY_CHARS = 120  # of a skipped row's key (its statement's WHERE, or the statement)


def wants_text(stream: IO[str], json_asked: bool) -> bool:
    """Text for a person at a terminal, unless --json asked for the line a script reads."""
    if json_asked:
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def json_line(execution: dict[str, Any], engine: dict[str, Any]) -> str:
    return json.dumps({"execution": execution, "engine": engine})


def text_lines(execution: dict[str, Any], counts: list[dict[str, Any]], engine: dict[str, Any]) -> list[str]:
    """The result in words. `counts` are the script's row changes per table ({table, type, rows}): each is
    one reverse statement, so a table's restored rows are its changes less its skipped rows."""
    lines = [f"engine {engine['name']} ({engine['reason']}), {engine['partitions']} partition(s)"]
    if execution.get("merge") is not None:
        lines += _merge_lines(execution)
        return _ended(execution, lines)
    restored = execution["rows_affected"]
    skipped = Counter(str(c.get("table")) for c in execution["conflicts"])
    per_table = Counter[str]()
    for count in counts:
        per_table[count["table"]] += count["rows"]
    per_table.subtract(skipped)
    tables = {table: n for table, n in sorted(per_table.items()) if n > 0}
    verb = "would restore" if execution["dry_run"] else "restored"
    detail = ""
    if tables and sum(tables.values()) == restored:
        detail = ": " + ", ".join(f"{table} {n}" for table, n in tables.items())
    lines.append(f"{verb} {restored} row(s) in {len(tables)} table(s){detail}")
    if execution["conflicts"]:
        lines.append(
            f"skipped {len(execution['conflicts'])} row(s), left as the target holds them (--on-conflict skip):"
        )
        for conflict in execution["conflicts"][:SHOWN_SKIPPED]:
            lines.append(f"  {conflict['table']} {_key(conflict['statement'])}: {conflict['reason']}")
        if len(execution["conflicts"]) > SHOWN_SKIPPED:
            lines.append(f"  and {len(execution['conflicts']) - SHOWN_SKIPPED} more (--json lists them all)")
    return _ended(execution, lines)


def _ended(execution: dict[str, Any], lines: list[str]) -> list[str]:
    if execution["read_only_tables"]:
        lines.append(
            "checked only, not run (no transactions to roll back): "
            + ", ".join(execution["read_only_tables"])
        )
    if execution["dry_run"]:
        lines.append("rolled back: a dry run changes nothing (add --commit to apply)")
    elif execution["committed"]:
        lines.append(f"committed on the target ({execution['statements']} statement(s))")
    else:
        lines.append("rolled back: nothing was committed")
    return ["mysql-rollback: " + line if not line.startswith("  ") else line for line in lines]


def _merge_lines(execution: dict[str, Any]) -> list[str]:
    """A merge in words: rows restored, those whose later changes were kept, each conflict's resolution."""
    merge = execution["merge"]
    verb = "would restore" if execution["dry_run"] else "restored"
    kept = merge["kept_later_changes"]
    lines = [
        f"merge: {verb} {merge['restored']} row(s) the incident changed"
        + (f", keeping later changes to other columns in {kept} of them" if kept else "")
    ]
    resolved = {choice: n for choice, n in merge["resolved"].items() if n}
    conflicts = execution["conflicts"]
    if conflicts:
        by_choice = ", ".join(f"{n} {choice}" for choice, n in resolved.items())
        unresolved = f", {merge['unresolved']} unresolved" if merge["unresolved"] else ""
        lines.append(
            f"{len(conflicts)} conflict(s) (changed since the incident): {by_choice or 'none'} resolved{unresolved}"
        )
        for conflict in conflicts[:SHOWN_SKIPPED]:
            lines.append(f"  {_conflict_row(conflict)}: {_resolution(conflict['resolution'])}")
        if len(conflicts) > SHOWN_SKIPPED:
            lines.append(f"  and {len(conflicts) - SHOWN_SKIPPED} more (--json lists them all)")
    return lines


def _conflict_row(conflict: dict[str, Any]) -> str:
    return f"{conflict['table']} {json.dumps(conflict['key'])} (net {conflict['kind']})"


def _resolution(resolution: Any) -> str:
    if resolution is None:
        return "unresolved"
    if isinstance(resolution, dict):
        return "column: " + ", ".join(f"{c} {choice}" for c, choice in resolution["columns"].items())
    return str(resolution)


def merge_conflict_lines(result: Any) -> list[str]:
    """The unresolved conflicts of a merge that stopped, each column's three versions (before the incident,
    after it, now)."""
    if result is None or getattr(result, "merge", None) is None:
        return []
    lines = []
    unresolved = [c for c in result.conflicts if c["resolution"] is None]
    for conflict in unresolved[:SHOWN_SKIPPED]:
        lines.append(
            f"mysql-rollback: conflict: {_conflict_row(conflict)}, at {conflict['file']}:{conflict['pos']}"
        )
        for column in conflict["columns"]:
            mark = " (changed since)" if column["changed_since"] else ""
            lines.append(
                f"  {column['name']}: before {json.dumps(column['before'])}, after {json.dumps(column['after'])}, "
                f"now {json.dumps(column['now'])}{mark}"
            )
    if len(unresolved) > SHOWN_SKIPPED:
        lines.append(
            f"  and {len(unresolved) - SHOWN_SKIPPED} more conflict(s) (--json or --report lists them all)"
        )
    return lines


def _key(statement: str) -> str:
    """The row's key as the statement names it: its WHERE clause, else the statement itself."""
    _, where, condition = statement.partition(" WHERE ")
    text = f"WHERE {condition}" if where else statement
    text = " ".join(text.rstrip(";").split())
    return text if len(text) <= KEY_CHARS else text[: KEY_CHARS - 1] + "…"
