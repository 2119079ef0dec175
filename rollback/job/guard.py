"""The DDL guard: DDL inside a range that the row changes to undo cannot account for."""

from __future__ import annotations

import re
from typing import Any

from rollback.base.errors import DDLInRange
from rollback.schema.ddl import DdlTargets, created_table

Position = tuple[int, int]  # (partition index, position in its file)


def ddl_hits(ddl: list[dict[str, Any]], changed: Any) -> list[tuple[dict[str, Any], set[str]]]:
    """Each DDL with the changed tables whose columns, rows or existence it may change."""
    hits = []
    for item in ddl:
        targets = DdlTargets.from_dict(item["affects"])
        tables = {t for t in changed if targets.touches(*t.split(".", 1))}
        hits.append((item, tables))
    return hits


def refuse_schema_change_mid_range(
    hits: list[tuple[dict[str, Any], set[str]]],
    ddl_at: list[Position],
    changed: dict[str, Position],
    stop_at: Position | None,
) -> None:
    """A DDL on a table the range changed before it stops the job where it stands (before an error
    at `stop_at`: the DDL may be its cause)."""
    for (item, tables), at in zip(hits, ddl_at, strict=True):
        if stop_at is not None and at >= stop_at:
            break
        under = sorted(t for t in tables if changed[t] < at)
        if under:
            raise DDLInRange(
                f"DDL on {under[0]} inside the range at {item['file']}:{item['pos']}: {item['sql'][:200]} — "
                "the table's schema changes mid-range; split the range at this position, or --ddl keep (today's "
                "schema) or --ddl reverse (undo the DDL too)"
            )


def refuse_selected_ddl(hits: list[tuple[dict[str, Any], set[str]]]) -> None:
    """A DDL the range selects, before the table's changes: its effect (rows a TRUNCATE or DROP
    removed, rows a CREATE ... SELECT wrote, an ALTER) is not in the row changes to undo."""
    for item, tables in hits:
        if tables and item["selected"]:
            raise DDLInRange(
                f"DDL on {min(tables)} inside the range at {item['file']}:{item['pos']}: {item['sql'][:200]} "
                "— a rollback of row changes cannot undo it; start the range after this position, or --ddl reverse "
                "(undo the DDL too) or --ddl keep (leave it)"
            )


# After leading comments; the server runs what a versioned comment (/*!100000 ... */, /*M!...) holds.
_ROWS_GONE = re.compile(
    r"^\s*(?:/\*M?!\d*\s*|/\*.*?\*/\s*)*(TRUNCATE|DROP\s+(?:TEMPORARY\s+)?(?:TABLES?|DATABASE|SCHEMA))\b",
    re.I | re.S,
)


def refuse_row_loss_under_keep(
    hits: list[tuple[dict[str, Any], set[str]]],
    ddl_at: list[Position],
    changed: dict[str, Position],
    mode: str,
) -> None:
    """--ddl keep | reverse: the table's definitions follow the DDL (the schema history), but a TRUNCATE
    or DROP after changes to the table removed rows no row change can bring back."""
    for (item, tables), at in zip(hits, ddl_at, strict=True):
        under = sorted(t for t in tables if changed[t] < at)
        found = _ROWS_GONE.match(item["sql"])
        if under and found:
            raise DDLInRange(
                f"--ddl {mode}: {found.group(1).upper()} of {under[0]} inside the range at {item['file']}:{item['pos']}: "
                f"{item['sql'][:200]} — the rows it removed are not in the binlog; end the range before it"
            )


def lost_rows(hits: list[tuple[dict[str, Any], set[str]]]) -> list[dict[str, Any]]:
    """TRUNCATE, DROP TABLE and DROP DATABASE the range selects that touch no table it changes: they
    destroyed rows without row events, which no rollback of this range brings back (a DDL on a changed
    table is the other guards' business; so is every DDL under --ddl reverse). A table the range created
    and never wrote loses nothing. Each as {file, pos, sql, tables}."""
    found = []
    created: set[str] = set()
    for item, tables in hits:
        affects = item["affects"]
        made = created_table(item["sql"], item["db"])
        if made is not None:
            created.add(made)
        gone = _ROWS_GONE.match(item["sql"])
        if tables or not item["selected"] or gone is None or "TEMPORARY" in gone.group(1).upper():
            continue
        if affects["tables"] and not affects["databases"] and set(affects["tables"]) <= created:
            continue
        named = affects["tables"] + [f"{db}.*" for db in affects["databases"]] + affects["names"]
        found.append({"file": item["file"], "pos": item["pos"], "sql": item["sql"], "tables": named})
    return found


def refuse_lost_rows(lost: list[dict[str, Any]]) -> None:
    if lost:
        first = lost[0]
        raise DDLInRange(
            f"{len(lost)} statement(s) in the range destroyed rows without row events, which no rollback of "
            f"this range can bring back; first at {first['file']}:{first['pos']}: {first['sql'][:200]} "
            f"(tables: {', '.join(first['tables']) or 'unknown'}) — --accept-lost-rows writes the rollback of "
            "the row changes anyway and lists them in the header"
        )
