"""An execution's conflicts in words for the job page: how many, what became of them (skipped, or
the execution stopped and rolled back) and which rows, named by the statement's WHERE or, for a
re-insert, by its first column (normally the key)."""

from __future__ import annotations

from typing import Any

from app.web.resolution_form import resolution_name

NAMED = 3  # rows named in the cell; the Execute panel and the API list them all


def conflict_words(execution: Any) -> str:
    conflicts: list[dict[str, Any]] = execution.conflicts
    if not conflicts:
        return "none"
    n = len(conflicts)
    rows = "row" if n == 1 else "rows"
    merge = getattr(execution, "merge", False)
    if merge and execution.check:
        fate = f"{rows} to resolve in the three-way view"
    elif merge and execution.state == "succeeded":
        fate = f"{rows} resolved" + (" (dry run, rolled back)" if execution.dry_run else "")
    elif execution.check:
        fate = f"{rows} would be skipped"
    elif execution.on_conflict == "skip" and execution.skipped:
        fate = f"{rows} skipped, left as the target holds {'it' if n == 1 else 'them'}"
    elif execution.dry_run:
        fate = "the dry run stopped there"
    else:
        fate = "stopped there and rolled back" + (
            "" if execution.transactions_applied else ", nothing applied"
        )
    named = ", ".join(f"{c.get('table')} {_named(c, not execution.check)}" for c in conflicts[:NAMED])
    more = f" and {n - NAMED} more" if n > NAMED else ""
    return f"{n} conflict{'' if n == 1 else 's'}: {fate} ({named}{more})"


def _named(conflict: dict[str, Any], resolved: bool) -> str:
    """A merge conflict carries its key (and, `resolved`, the resolution applied); another names its
    row by its statement."""
    key = conflict.get("key")
    if isinstance(key, dict):
        named = ", ".join(f"{k}={v}" for k, v in key.items())
        resolution = conflict.get("resolution")
        return named + (f": {resolution_name(resolution)}" if resolution and resolved else "")
    return row_key(str(conflict.get("statement") or ""))


def row_key(statement: str) -> str:
    """id=5 from `... WHERE `id`=5`; id=5 from `INSERT INTO t (`id`, ...) VALUES (5, ...)`."""
    _, where, condition = statement.partition(" WHERE ")
    if where:
        text = " ".join(condition.rstrip().rstrip(";").split()).removesuffix(" LIMIT 1")
        text = text.replace("`", "")
        return text if len(text) <= 80 else text[:79] + "…"
    head, values, rest = statement.partition(") VALUES (")
    if not values or "(" not in head:
        return "(row not named)"
    column = head.split("(", 1)[1].split(",", 1)[0].strip().strip("`")
    return f"{column}={_first_literal(rest)}"


def _first_literal(values: str) -> str:
    """The first value of a VALUES list as written: a quoted string runs to its closing quote."""
    quoted = False
    i = 0
    while i < len(values):
        char = values[i]
        if quoted and char == "\\":
            i += 1
        elif char == "'":
            if quoted and values[i + 1 : i + 2] == "'":
                i += 1
            else:
                quoted = not quoted
        elif not quoted and char in ",)":
            break
        i += 1
    text = values[:i].strip()
    return text if len(text) <= 40 else text[:39] + "…"
