"""Dependent rows: a row that a selected change and a later, excluded change both touched.

Undoing the selected change rewrites the row as it was before it, over what the excluded change
wrote after it: the rollback would overwrite a change the user chose to keep. The job reports
those rows (the execution's per-statement check refuses them at apply time too, since the row is no
longer as the selected change left it).

Rows are told apart by the table's row key as `holdback.py` does (primary key, else the first unique
NOT NULL key; an UPDATE touches its old and new key). A table without a row key cannot tell its
rows apart: an excluded change after a selected one on such a table is reported for the table.

Each partition keeps, per (table, key), the earliest selected change and the latest excluded one,
and writes them to `part-N.keys.jsonl`; the driver merges the partitions' files (`dependents`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from rollback.pipeline.holdback import Position, change_keys

DEPENDENTS_KEPT = 1000  # dependent rows listed in the report (the count is exact)
NO_KEY = "(no primary or unique NOT NULL key: rows cannot be told apart)"

# (table, key) -> (position, where: {gtid, file, pos, key}) of the first selected / last excluded change
Seen = dict[tuple[str, str | None], tuple[Position, dict[str, Any]]]


def _shown(image: Sequence[Any], key: Sequence[int], names: Sequence[str]) -> str:
    parts = []
    for i in key:
        value = image[i]
        if isinstance(value, bytes | bytearray):
            value = bytes(value).decode("utf-8", "replace")
        parts.append(f"{names[i]}={value!r}" if value is not None else f"{names[i]}=NULL")
    return ", ".join(parts) or NO_KEY


class DependencyKeys:
    """What one partition saw: the first selected and the last excluded change of each row."""

    def __init__(self) -> None:
        self.selected: Seen = {}
        self.excluded: Seen = {}

    def add(
        self,
        selected: bool,
        table: str,
        kind: str,
        rows: Iterable[Any],
        key: Sequence[int],
        names: Sequence[str],
        at: tuple[int, int, int],
        where: dict[str, Any],
    ) -> None:
        seen = self.selected if selected else self.excluded
        for index, row in enumerate(rows):
            pos = (*at, index)
            image = row[0] if kind == "update" else row
            for k in change_keys(kind, row, key) if key else [None]:
                known = seen.get((table, k))
                if known is None or (pos < known[0] if selected else pos > known[0]):
                    seen[(table, k)] = (pos, {**where, "key": _shown(image, key, names)})

    @property
    def found(self) -> bool:
        return bool(self.selected or self.excluded)

    def lines(self) -> Iterator[str]:
        for mark, seen in (("s", self.selected), ("x", self.excluded)):
            for (table, k), (pos, where) in seen.items():
                yield json.dumps([mark, table, k, list(pos), where], ensure_ascii=False)


def merge_lines(lines: Iterable[str], selected: Seen, excluded: Seen) -> None:
    """Fold one partition's lines into the job's first-selected / last-excluded maps."""
    for line in lines:
        mark, table, k, p, where = json.loads(line)
        pos: Position = (p[0], p[1], p[2], p[3])
        seen = selected if mark == "s" else excluded
        known = seen.get((table, k))
        if known is None or (pos < known[0] if mark == "s" else pos > known[0]):
            seen[(table, k)] = (pos, where)


def dependents(selected: Seen, excluded: Seen) -> list[dict[str, Any]]:
    """The rows an excluded change touched after a selected one, in binlog order of the selected change."""
    out = []
    keyless = {table for table, k in [*selected, *excluded] if k is None}
    for (table, k), (pos, where) in selected.items():
        if table in keyless:
            continue
        later = excluded.get((table, k))
        if later is not None and later[0] > pos:
            out.append((pos, _item(table, where, later[1])))
    for table in sorted(keyless):
        first = min(
            ((p, w) for (t, _k), (p, w) in selected.items() if t == table), default=None, key=lambda x: x[0]
        )
        last = max(
            ((p, w) for (t, _k), (p, w) in excluded.items() if t == table), default=None, key=lambda x: x[0]
        )
        if first is not None and last is not None and last[0] > first[0]:
            out.append((first[0], _item(table, {**first[1], "key": NO_KEY}, {**last[1], "key": NO_KEY})))
    out.sort(key=lambda item: item[0])
    return [item for _pos, item in out]


def _item(table: str, selected: dict[str, Any], excluded: dict[str, Any]) -> dict[str, Any]:
    return {
        "table": table,
        "key": selected["key"],
        "selected": {k: selected[k] for k in ("gtid", "file", "pos")},
        "excluded": {k: excluded[k] for k in ("gtid", "file", "pos")},
    }


def describe(item: dict[str, Any]) -> str:
    """One line: which row, which selected change, which later excluded change."""
    s, x = item["selected"], item["excluded"]
    return (
        f"{item['table']} ({item['key']}): selected transaction gtid={s['gtid'] or '-'} at {s['file']}:{s['pos']} "
        f"is followed by excluded transaction gtid={x['gtid'] or '-'} at {x['file']}:{x['pos']}"
    )
