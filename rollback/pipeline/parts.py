"""A partition's part files and the Summary it gives back: the contract between a partition and the merge.

part-NNNNNN.sql          its statements in the script's order (see partition.py)
part-NNNNNN.plan.jsonl   the execution plan's lines, in the script's order
part-NNNNNN.changes.jsonl  the decoded row changes, in binlog order (when the job wants them)
part-NNNNNN.irreversible.jsonl  row changes the binlog's images cannot restore, in binlog order
part-NNNNNN.queries.json the original statements (ROWS_QUERY / ANNOTATE_ROWS) of the pieces
part-NNNNNN.net.pickle   --net: the selected row changes' keys and decoded images, in binlog order (net_script.py);
                         the images as marshal where they allow it (dump_values), a DELETE's
                         images from the compiled core as the binlog's bytes (RawImages)
"""

from __future__ import annotations

import marshal
import os
import pickle
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rollback.base import errors, hotpath
from rollback.base.errors import BinlogFormatError, RollbackError
from rollback.base.render_text import comment_line


def marshal_safe(values: Any) -> bool:
    """Whether `values` (lists and tuples, nested) holds only None, bool, int, float, str and bytes,
    each of exactly that type: what marshal writes and reads back as the same values of the same types
    (a bytearray would come back as bytes, a subclass of str is refused). The compiled core's
    marshal_safe is its twin."""
    kind = type(values)
    if kind is list or kind is tuple:
        return all(marshal_safe(item) for item in values)
    return values is None or kind in _MARSHAL_EXACT


_MARSHAL_EXACT = frozenset({int, str, bytes, float, bool})


def dump_values(values: Any) -> tuple[bytes, bool]:
    """--net's decoded images for part-N.net.pickle: (their bytes, whether marshal wrote them). marshal
    writes and reads rows of plain values several times faster than pickle; any other value (a
    Decimal, a JSON partial update) goes through pickle."""
    core = hotpath.CORE
    if core.marshal_safe(values) if core is not None else marshal_safe(values):
        return marshal.dumps(values), True
    return pickle.dumps(values, protocol=pickle.HIGHEST_PROTOCOL), False


@dataclass(frozen=True, slots=True)
class RawImages:
    """Images kept as the rows event's bytes, with the row decoder that reads them (it pickles as
    its specs): decoded only where they are read."""

    decoder: Any  # rollback.binlog.rowdecoder.RowDecoder
    decimal_text: bool

    def rows(self, data: bytes) -> list[Any]:
        rows: list[Any] = self.decoder.decode_rows_part(data, 0, len(data), -1, self.decimal_text)[0]
        return rows


def load_values(data: bytes, encoding: bool | RawImages) -> Any:
    """What dump_values wrote (`encoding`: whether by marshal), or the rows of RawImages' bytes."""
    if isinstance(encoding, RawImages):
        return encoding.rows(data)
    return marshal.loads(data) if encoding else pickle.loads(data)


PARTIAL_NOTE = "note: filters selected only part of this transaction's changes"


@dataclass
class Piece:
    """The part of a transaction block that crosses a partition boundary, as seen in one partition."""

    ordinal: int
    file: str
    first_pos: int
    end_pos: int | None  # where its last event in this partition ends (None: none here)
    statements: int
    events: int  # rows events of the block in this partition
    selected: int  # of those, the ones the filters selected
    queries: int
    first_query: str | None
    last_query: str | None
    closed: bool  # the block ends in this partition
    tx: dict[str, Any]  # its transaction context when it closed (or at the partition's end)
    script_bytes: int = 0  # its statements' bytes at its end of the part's script
    # rows of selected statements taken / left by the row picks (--where, --include/--exclude-query)
    rows_picked: int = 0
    rows_dropped: int = 0
    left_out: list[str] = field(default_factory=list)  # what the table and type filters left out of it


@dataclass
class Summary:
    index: int
    bytes: int = 0
    events: int = 0
    statements: int = 0
    transactions: int = 0  # complete blocks with statements (pieces are counted by the merger)
    counts: dict[tuple[str, str], int] = field(default_factory=dict)  # (db.table, type) -> rows
    changed_tables: list[str] = field(default_factory=list)
    row_images: list[str] = field(default_factory=list)
    ddl: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    irreversible: int = 0
    first_irreversible: dict[str, Any] | None = None
    taints: int = 0  # rows (or tables) whose newer changes this partition found must be held back
    mismatch: dict[str, Any] | None = None  # the first SchemaMismatch, raised after the DDL check
    error: dict[str, Any] | None = None  # an error that fails the job
    error_pos: int | None = None  # the position of the event it stopped at
    first_change: dict[str, int] = field(default_factory=dict)  # db.table (lower case) -> position
    # What the partition holds, selected or not: rows events per (db.table, type), and the first and
    # last transaction with rows events as (gtid, timestamp). Said when the job selects nothing.
    contents: dict[tuple[str, str], int] = field(default_factory=dict)
    first_tx: tuple[str | None, int] | None = None
    last_tx: tuple[str | None, int] | None = None
    head: Piece | None = None
    tail: Piece | None = None
    script_bytes: int = 0
    seconds: float = 0.0
    # time.monotonic() when run_partition started it: one clock for every process of a machine, so the
    # partitions of a job on local slots line up in one timeline (bench/bench_parallel.py)
    started: float = 0.0
    cpu: float = 0.0  # CPU seconds of the process that ran it, while it ran (time.process_time())
    next_block: int = 0  # ordinal of the next block after this partition (the planner's, checked)
    # The first of the longest statements in binlog order: {bytes (UTF-8, as written), table, file, pos}.
    largest_statement: dict[str, Any] | None = None
    # Its largest complete transaction blocks and its crossing pieces, by statements:
    # {tx (the block's ordinal), gtid, file, position (of its first rows event), statements, tables}.
    largest_blocks: list[dict[str, Any]] = field(default_factory=list)
    # Transactions (closed in this partition) of which the row picks took some rows and left others:
    # {gtid, file, pos, picked, dropped}.
    partial_picks: list[dict[str, Any]] = field(default_factory=list)
    # transactions of which the table and type filters took some rows events and left others
    filter_splits: list[dict[str, Any]] = field(default_factory=list)
    dependency_keys: bool = False  # part-N.keys.jsonl written (dependencies.py)
    # The first selected rows event the server logged with foreign_key_checks=0: {file, pos, table}
    no_fk_checks: dict[str, Any] | None = None
    # selected transactions closed here per thread id (None: the binlog names no thread), for range_notes
    threads: dict[int | None, int] = field(default_factory=dict)
    net_changes: int = 0  # --net: the row changes written to part-N.net.pickle


def part_path(out_dir: str, index: int, suffix: str) -> str:
    return os.path.join(out_dir, f"part-{index:06d}.{suffix}")


def encode_error(exc: RollbackError) -> dict[str, Any]:
    data: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, BinlogFormatError):
        data.update(path=exc.path, offset=exc.offset, reason=exc.reason)
    return data


def decode_error(data: dict[str, Any]) -> Exception:
    """The error a partition reported, as the exception type it was (RuntimeError for bugs)."""
    cls = getattr(errors, data["type"], None)
    if not (isinstance(cls, type) and issubclass(cls, RollbackError)):
        return RuntimeError(data["message"])
    if issubclass(cls, BinlogFormatError):
        return cls(data["path"], data["offset"], data["reason"])
    return cls(data["message"])


def comment(text: str) -> str:
    """Text on one line, whitespace runs collapsed (DDL text in messages; script lines use comment_line)."""
    return " ".join(text.split()).replace("*/", "* /")


ORIGINAL_CHARS = 1000  # of an original statement, whitespace runs collapsed, on a block's comment line


def collapsed_prefix(text: str, size: int) -> str:
    """``" ".join(text.split())[:size]`` without splitting all of a long text (a multi-row INSERT of
    hundreds of KB): the collapsed form of a prefix of the text is a prefix of the collapsed whole, so
    a prefix long enough to give `size` characters (or the whole text) gives the same characters."""
    cut = size * 4
    while True:
        collapsed = " ".join(text[:cut].split())
        if len(collapsed) >= size or cut >= len(text):
            return collapsed[:size]
        cut *= 4


def block_header(
    tx: dict[str, Any], file: str, first_pos: int, end_pos: int, partial: bool, queries: Iterable[str]
) -> str:
    """The comment lines and BEGIN that open a transaction block of the script."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(tx["timestamp"])) if tx["timestamp"] else "-"
    thread = tx["thread_id"] if tx["thread_id"] is not None else "-"
    lines = [
        f"transaction gtid={tx['gtid'] or '-'} file={file} pos={first_pos}-{end_pos} "
        f"time={stamp} UTC server_id={tx['server_id']} thread={thread}"
    ]
    if partial:
        lines.append(PARTIAL_NOTE)
    for query in queries:
        lines.append(
            f"original: {collapsed_prefix(query, ORIGINAL_CHARS)}"
        )  # readable: whitespace runs collapsed
    return "".join(comment_line(line) + "\n" for line in lines) + "BEGIN;\n"


BLOCK_END = "COMMIT;\n\n"
