"""The conflict check's rows seen three ways: before the incident and after it (the change log's
images of the original change) and now on the target (read by key through the engine).

The change log is read only through app.services.artifacts' readers; a conflict names its change by
(file, pos, row), the same triple the change log's records carry."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from app.services import artifacts
from rollback import rows_now

SHOWN = 200  # conflicting rows shown three ways; the count of all of them is always given
_POS = re.compile(rb'"pos":(\d+),')


def _originals(
    changes: Path, wanted: set[tuple[str | None, int, int]]
) -> dict[tuple[Any, ...], dict[str, Any]]:
    positions = {pos for _, pos, _ in wanted}
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    for line in artifacts.iter_lines(changes, 0, artifacts.line_count(changes)):
        match = _POS.search(line)
        if match is None or int(match.group(1)) not in positions:
            continue
        record = json.loads(line)
        key = (record.get("file"), record.get("pos"), record.get("row"))
        if key in wanted:
            found[key] = record
            if len(found) == len(wanted):
                break
    return found


def _differs(a: Any, b: Any) -> bool:
    """Values compared as the server prints them (the change log keeps numbers as numbers)."""
    if a is None or b is None:
        return (a is None) != (b is None)
    return str(a) != str(b)


def three_way(changes_path: str | None, dsn: str, conflicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per conflicting row (the first SHOWN): the original change's before and after
    images, the row now on the target, and the columns where now differs from after."""
    shown = [c for c in conflicts[:SHOWN] if c.get("row") is not None]
    if not shown or not changes_path:
        return []
    wanted = {(c.get("file"), int(c["pos"]), int(c["row"])) for c in shown}
    originals = _originals(Path(changes_path), wanted)
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for conflict in shown:
        record = originals.get((conflict.get("file"), conflict.get("pos"), conflict.get("row")))
        if record is not None:
            pairs.append((conflict, record))
    lookups: list[tuple[str, dict[str, Any]]] = [
        (
            f"{r['database']}.{r['table']}",
            (r.get("before") if r.get("type") == "delete" else r.get("after")) or {},
        )
        for _, r in pairs
    ]
    now = rows_now(dsn, lookups) if lookups else []
    out = []
    for (conflict, record), found in zip(pairs, now, strict=False):
        before, after = record.get("before"), record.get("after")
        columns = list(dict.fromkeys([*(before or {}), *(after or {}), *(found.row or {})]))
        expected = after or {}
        changed = (
            [c for c in columns if _differs(expected.get(c), found.row.get(c))]
            if found.row is not None and after is not None
            else []
        )
        out.append(
            {
                "table": found.table,
                "file": conflict.get("file"),
                "pos": conflict.get("pos"),
                "row": conflict.get("row"),
                "type": record.get("type"),
                "gtid": record.get("gtid"),
                "timestamp": record.get("timestamp"),
                "reason": conflict.get("reason"),
                "key": found.key,
                "columns": columns,
                "before": before,
                "after": after,
                "now": found.row,
                "changed_since": changed,
                "note": found.note,
            }
        )
    return out
