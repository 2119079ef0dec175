"""Multi-row statements for the script (`--rows-per-statement N`): the one-row statements of one rows
event, as either hot path rendered them, joined where the result does exactly what they did.

- Re-inserts of whole rows (the reverse of a DELETE): `INSERT INTO t (...) VALUES (a), (b), ...;`.
  The server inserts them in that order and refuses the statement whole on a duplicate key, as it
  would have refused the first failing one-row statement.
- Deletes by key (the reverse of an INSERT on a table with a key): `DELETE FROM t WHERE (k=1) OR
  (k=2) ...;`. Each part names one row by its key, so the statement deletes exactly those rows.

Everything else stays one row per statement: deletes that identify a row by all its columns (`LIMIT
1`: a keyless table may hold that row twice), re-inserts of partial images, and every UPDATE (rows
of one event may swap key or unique values, which one UPDATE cannot do in a safe order).

Only the script changes: the plan keeps one check and one statement per row, so `--execute` and
`verify` check every row as before. The text is joined after rendering, from both hot paths' bytes,
so the two stay byte-identical.
"""

from __future__ import annotations

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
