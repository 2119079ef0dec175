"""With --allow-partial, a row is never left worse than the incident left it.

When an older change to a row cannot be undone (a DELETE under MINIMAL images), undoing a newer
change to the same row makes things worse: undoing the re-INSERT of its key deletes the new row and
the old one cannot come back. So once a change to a row is irreversible, every newer change to that
row is held back (listed, not undone).

Rows are told apart by the table's row key (its primary key, or first unique NOT NULL key). A
change touches the keys of its images: an UPDATE that changes the key touches both the old and the
new key, so the row is followed where it moves. Key values compare loosely (text without case,
accents and trailing spaces, as the common collations do): two keys the server might hold equal are
the same row here, which can only hold back more. A change whose key is not in its images, or a
table without a row key, cannot be told apart from the table's other rows: an irreversible change
there holds back every newer change of the table.

A partition holds back what follows the "taints" it finds itself; what earlier partitions found comes
in `JobSpec.taints`. The driver re-runs the partitions that had not seen every taint before them until
nothing new is found (flashback.py), so a split job writes exactly the bytes of an unsplit one.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from rollback.binlog.columns import MISSING
from rollback.render.invert import current_image

HELD_REASON = "an older change to this row cannot be restored"

# (file index, position of the rows event, position inside a TRANSACTION_PAYLOAD, row index)
Position = tuple[int, int, int, int]
# (db.table in lower case, the row's key as text; None: every row of the table)
TaintKey = tuple[str, str | None]
Taints = dict[TaintKey, Position]


def _loose(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        try:
            value = data.decode("utf-8")
        except UnicodeDecodeError:
            return data.lower().rstrip(b" ")
    if isinstance(value, str):
        decomposed = unicodedata.normalize("NFKD", value)
        return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold().rstrip(" ")
    return value


def row_key(image: Sequence[Any], key: Sequence[int]) -> str | None:
    """The row's identity in an image; None when the table has no key or a key column is missing."""
    if not key or any(image[i] is MISSING for i in key):
        return None
    return repr(tuple(_loose(image[i]) for i in key))


def change_keys(kind: str, row: Any, key: Sequence[int]) -> list[str | None]:
    """The keys a row change touches: the image's, and for an UPDATE the old and the new."""
    if kind != "update":
        return [row_key(row, key)]
    before, after = row
    old = row_key(before, key)
    new = row_key(current_image(before, after), key)
    return [old] if new == old else [old, new]


class HoldBack:
    """The taints a partition knows while it reads: checks a change, and taints what it touches."""

    def __init__(self, seeds: Taints):
        self.taints: Taints = dict(seeds)
        self.tables = {table for table, _key in seeds}  # tables with any taint
        self.found: Taints = {}  # what this partition tainted (written for the driver)

    def watches(self, table: str) -> bool:
        return table in self.tables

    def held(self, table: str, kind: str, row: Any, key: Sequence[int], at: Position) -> bool:
        """Whether an older change to this row is irreversible; if so the change taints its keys too."""
        if table not in self.tables:
            return False
        taints = self.taints
        whole = taints.get((table, None))
        if whole is not None and whole < at:
            return True
        keys = change_keys(kind, row, key)
        if None in keys:  # cannot tell this row from the table's others: any older taint holds it
            older = any(pos < at for (t, _k), pos in taints.items() if t == table)
        else:
            older = any(taints.get((table, k), at) < at for k in keys)
        if older:
            self._taint(table, keys, at)
        return older

    def irreversible(self, table: str, kind: str, row: Any, key: Sequence[int], at: Position) -> None:
        self._taint(table, change_keys(kind, row, key), at)

    def _taint(self, table: str, keys: Iterable[str | None], at: Position) -> None:
        self.tables.add(table)
        for k in keys:
            known = self.taints.get((table, k))
            if known is None or at < known:
                self.taints[(table, k)] = at
                self.found[(table, k)] = at


def dump_taints(taints: Taints) -> Iterator[str]:
    for (table, key), pos in taints.items():
        yield json.dumps([table, key, list(pos)], ensure_ascii=False)


def load_taints(lines: Iterable[str]) -> Taints:
    out: Taints = {}
    for line in lines:
        table, key, pos = json.loads(line)
        at = (pos[0], pos[1], pos[2], pos[3])
        known = out.get((table, key))
        if known is None or at < known:
            out[(table, key)] = at
    return out


def merge_taints(into: Taints, more: Taints) -> None:
    for k, pos in more.items():
        known = into.get(k)
        if known is None or pos < known:
            into[k] = pos


def taints_before(taints: Taints, file_index: int, start: int, tables: Iterable[str]) -> Taints:
    """The taints found before a partition's start, on the tables it changes: what it must know."""
    wanted = set(tables)
    return {k: pos for k, pos in taints.items() if k[0] in wanted and (pos[0], pos[1]) < (file_index, start)}
