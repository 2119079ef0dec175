"""Multi-row statements for the script (`--rows-per-statement N`): the one-row statements of one rows
event, as either hot path rendered them, joined where the result does exactly what they did.

- Re-inserts of whole rows (the reverse of a DELETE): `INSERT INTO t (...) VALUES (a), (b), ...;`.
  The server inserts them in that order and refuses the statement whole on a duplicate key, as it
  would have refused the first failing one-row statement.
- Deletes by key (the reverse of an INSERT on a table with a key): `DELETE FROM t WHERE (k=1) OR
  (k=2) ...;`. Each part names one row by its key, so the statement deletes exactly those rows.

- Updates by key (join_updates): `UPDATE t SET a=CASE WHEN (k=1) THEN 5 WHEN (k=2) THEN 6 ELSE a
  END, ... WHERE (k=1) OR (k=2);`, when no row of the statement sets a column of a unique index
  (every column, when the schema source does not say which) to a value another row of it holds
  before (compared coarsely: case, accents and trailing spaces ignored), so that no order the
  server takes the rows in can meet a duplicate the index would refuse, and the key the rows are
  found by is not set. Only columns whose literals mean the same as a CASE result join (see
  TableRenderer.joinable_update_columns); a row setting another one, or a literal with another
  charset's introducer, stays one row a statement.

Everything else stays one row per statement: deletes that identify a row by all its columns (`LIMIT
1`: a keyless table may hold that row twice), and re-inserts of partial images.

Only the script changes: the plan keeps one check and one statement per row, so `--execute` and
`verify` check every row as before. The text is joined after rendering, from both hot paths' bytes,
so the two stay byte-identical.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rollback.render.sql import TableRenderer

MAX_STATEMENT_BYTES = 1 << 20  # a joined statement stays far below any max_allowed_packet (16 MiB by default)
_LINE_END = b";"


def join_statements(
    data: bytes, rows_per_statement: int, insert_head: bytes, delete_head: bytes
) -> tuple[bytes, int]:
    """(the event's script text with runs of joinable statements joined, its longest statement's
    bytes). `data` is one statement a line; `insert_head` ends with "VALUES (", `delete_head` with
    "WHERE "."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out: list[bytes] = []
    run: list[bytes] = []  # the parts of the statement being joined
    run_kind = b""
    run_bytes = 0

    def flush() -> None:
        nonlocal run, run_kind, run_bytes
        if run:
            if run_kind == b"insert":
                out.append(insert_head + b"), (".join(run) + b");")
            else:
                out.append(delete_head + b" OR ".join(run) + b";")
        run, run_kind, run_bytes = [], b"", 0

    for line in lines:
        kind, part = _part(line, insert_head, delete_head)
        if kind is None:
            flush()
            out.append(line)
            continue
        if kind != run_kind or len(run) >= rows_per_statement or run_bytes + len(part) > MAX_STATEMENT_BYTES:
            flush()
            run_kind = kind
        run.append(part)
        run_bytes += len(part) + 4
    flush()
    longest = max((len(line) for line in out), default=0)
    return b"".join(line + b"\n" for line in out), longest


def _part(line: bytes, insert_head: bytes, delete_head: bytes) -> tuple[bytes | None, bytes]:
    """What a one-row statement contributes to a joined one: ("insert", its values) or ("delete",
    its WHERE in parentheses); (None, b"") when it does not join."""
    if not line.endswith(_LINE_END):
        return None, b""
    if insert_head and line.startswith(insert_head) and line.endswith(b");"):
        return b"insert", line[len(insert_head) : -2]
    if delete_head and line.startswith(delete_head) and not line.endswith(b" LIMIT 1;"):
        return b"delete", b"(" + line[len(delete_head) : -1] + b")"
    return None, b""


def join_updates(
    renderer: TableRenderer, changes: Iterable[tuple[Sequence[Any], Sequence[Any]]], rows_per_statement: int
) -> tuple[bytes, int, int]:
    """(script text, longest statement's bytes, rows changed) of one rows event's UPDATEs, each
    (set image, where image) in script order: runs of joinable ones joined, the others as
    TableRenderer.update writes them."""
    joinable = renderer.joinable_update_columns()
    out: list[str] = []
    run: list[tuple[list[tuple[int, str]], str]] = []
    before: dict[int, set[Any]] = {}  # per column, the values rows of the run hold before it
    after: dict[int, set[Any]] = {}  # and the values it gives them
    wheres: set[str] = set()
    rows = 0

    def flush() -> None:
        if len(run) == 1:
            out.append(renderer.update_text(*run[0]))
        elif run:
            out.append(_joined_update(renderer, run))
        run.clear()
        before.clear()
        after.clear()
        wheres.clear()

    for set_image, where_image in changes:
        sets = renderer.update_sets(set_image, where_image)
        if not sets:
            continue
        rows += 1
        where = renderer.where(where_image)
        if not joinable or any(i not in joinable or not _plain(text) for i, text in sets):
            flush()
            out.append(renderer.update_text(sets, where))
            continue
        unique = renderer.unique_columns
        watched = [i for i, _ in sets if unique is None or i in unique]
        old = {i: _coarse(where_image[i]) for i in watched}
        new = {i: _coarse(set_image[i]) for i in watched}
        meets = any(
            (new[i] is not None and new[i] in before.get(i, ()))
            or (old[i] is not None and old[i] in after.get(i, ()))
            for i in new
        )
        if meets or where in wheres or len(run) >= rows_per_statement:
            flush()
        run.append((sets, where))
        wheres.add(where)
        for i in new:
            before.setdefault(i, set()).add(old[i])
            after.setdefault(i, set()).add(new[i])
    flush()
    data = "".join(sql + "\n" for sql in out).encode("utf-8")
    longest = max((len(sql.encode("utf-8")) for sql in out), default=0)
    return data, longest, rows


def _joined_update(renderer: TableRenderer, run: list[tuple[list[tuple[int, str]], str]]) -> str:
    names = renderer._names  # noqa: SLF001
    columns = sorted({i for sets, _ in run for i, _ in sets})
    assignments = []
    for i in columns:
        whens = "".join(f" WHEN ({where}) THEN {text}" for sets, where in run for j, text in sets if j == i)
        assignments.append(f"{names[i]}=CASE{whens} ELSE {names[i]} END")
    condition = " OR ".join(f"({where})" for _, where in run)
    return f"UPDATE {renderer.table} SET {', '.join(assignments)} WHERE {condition};"


def _plain(literal: str) -> bool:
    """A literal whose meaning does not hang on its charset: no introducer but the script's own
    charset's or binary's."""
    return not literal.startswith("_") or literal.startswith(
        ("_utf8mb4 ", "_utf8mb4'", "_binary ", "_binary'")
    )


def _coarse(value: Any) -> Any:
    """A value as a unique key could see it, coarsely: text without case, accents or trailing
    spaces (any collation's equal values map to one key here, and some unequal ones too: a false
    meeting only cuts a run); numbers by value; None (NULL) meets nothing."""
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        value = bytes(value).decode("utf-8", "replace")
    if isinstance(value, str):
        text = unicodedata.normalize("NFKD", value)
        return "".join(c for c in text if not unicodedata.combining(c)).casefold().rstrip(" ")
    if isinstance(value, float | int | Decimal):
        return value
    return repr(value)
