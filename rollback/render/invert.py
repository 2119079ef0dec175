"""Row change -> its reverse (pure). Knows the row-image rules and refuses what cannot be restored.

INSERT becomes DELETE, DELETE becomes INSERT, UPDATE becomes UPDATE setting the before image
where the row is identified by its after image. Under MINIMAL images a column absent from an
UPDATE's after image was not changed, so the row's current value is the before image's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from rollback.binlog.columns import MISSING
from rollback.render.sql import TableRenderer


@dataclass(slots=True)
class Reverse:
    """One reverse statement with the check that proves the row is still as the binlog left it."""

    sql: str
    check: str | None  # a COUNT(*) query run just before the statement
    expect: int  # what the check must return: 1 (row present as left) or 0 (key free)
    kind: str  # the original change: insert | update | delete


@dataclass(slots=True)
class Irreversible:
    kind: str
    missing: tuple[str, ...]  # names of the columns whose old values the binlog does not hold
    reason: str


def _missing(renderer: TableRenderer, image: Sequence[Any], needed: Sequence[int]) -> tuple[str, ...]:
    return tuple(renderer.columns[i].name.strip("`") for i in needed if image[i] is MISSING)


def current_image(before: Sequence[Any], after: Sequence[Any]) -> tuple:
    """The row as the UPDATE left it: the after image, and the before image where the after image is silent."""
    return tuple(b if a is MISSING else a for b, a in zip(before, after, strict=True))


def invert_row(
    renderer: TableRenderer, kind: str, row: Any, checks: bool = True
) -> Reverse | Irreversible | None:
    """The reverse of one row change; None when there is nothing to undo (an UPDATE that changed nothing).
    Without `checks` the Reverse carries no check query (nothing will execute it)."""
    if kind == "insert":
        after = row
        if not renderer.keyed and any(v is MISSING for v in after):
            return Irreversible(
                kind, _missing(renderer, after, range(len(after))), "row cannot be identified"
            )
        if renderer.keyed and any(after[i] is MISSING for i in renderer.key):
            return Irreversible(kind, _missing(renderer, after, renderer.key), "key columns not in the image")
        return Reverse(renderer.delete(after), renderer.exists(after) if checks else None, 1, kind)
    if kind == "delete":
        before = row
        if MISSING in before:
            writable = [i for i, c in enumerate(renderer.columns) if c.writable]
            missing = _missing(renderer, before, writable)
            if missing:
                return Irreversible(
                    kind, missing, "the deleted row's columns are not all in the before image"
                )
        check = renderer.key_exists(before) if checks else None
        return Reverse(renderer.insert(before), check, 0, kind)
    before, after = row
    if MISSING not in before and MISSING not in after:  # full images: nothing lost, the row is `after`
        current = after if type(after) is tuple else tuple(after)
        sql = renderer.update(before, current)
        if sql is None:
            return None
        return Reverse(sql, renderer.exists(current) if checks else None, 1, kind)
    changed = [i for i, v in enumerate(after) if v is not MISSING and renderer.columns[i].writable]
    lost = tuple(
        renderer.columns[i].name.strip("`")
        for i in changed
        if before[i] is MISSING and after[i] is not MISSING
    )
    if lost:
        return Irreversible(kind, lost, "the old values of changed columns are not in the before image")
    current = current_image(before, after)
    if not renderer.keyed and any(v is MISSING for v in current):
        return Irreversible(
            kind, _missing(renderer, current, range(len(current))), "row cannot be identified"
        )
    sql = renderer.update(before, current)
    if sql is None:
        return None
    return Reverse(sql, renderer.exists(current) if checks else None, 1, kind)


def invert_rows(
    renderer: TableRenderer, kind: str, rows: list, checks: bool = True
) -> Iterator[tuple[int, Reverse | Irreversible]]:
    """Reverses of an event's rows, newest (last) row first, with each row's index in the event."""
    for index in range(len(rows) - 1, -1, -1):
        result = invert_row(renderer, kind, rows[index], checks)
        if result is not None:
            yield index, result


def forward_row(renderer: TableRenderer, kind: str, row: Any) -> str | None:
    """The change as it happened (the `sql` command): INSERT, DELETE, or UPDATE to the after image."""
    if kind == "insert":
        return renderer.insert(row)
    if kind == "delete":
        return renderer.delete(row)
    before, after = row
    return renderer.update(current_image(before, after), before)
