"""The merge: a job's part files become its script, plan and change log.

Partitions write their parts (rollback/pipeline/partition.py); the merge writes the header, then
the parts, newest partition first for a flashback, in order otherwise, and writes the comment,
BEGIN and COMMIT of the transactions whose pieces lie in several partitions.
"""

from __future__ import annotations

import codecs
import io
import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

from rollback.pipeline.file_copy import copy_in_kernel
from rollback.pipeline.parts import BLOCK_END, Piece, Summary, block_header, part_path


class Sink(Protocol):
    def write(self, data: bytes, /) -> int: ...


class BinaryTo:
    """Bytes written to a text stream (the merge writes bytes; `run` callers pass text streams)."""

    def __init__(self, out: IO[str]):
        self.out = out
        self.decoder = codecs.getincrementaldecoder("utf-8")()

    def write(self, data: bytes) -> int:
        return self.out.write(self.decoder.decode(data))


@dataclass
class Span:
    """A transaction block whose pieces lie in consecutive partitions (oldest first)."""

    pieces: list[tuple[int, Piece]] = field(default_factory=list)  # (partition index, piece)

    @property
    def statements(self) -> int:
        return sum(p.statements for _, p in self.pieces)

    def header(self, out_dir: str) -> str:
        first = self.pieces[0][1]
        last = self.pieces[-1][1]
        end_pos = next(
            (p.end_pos for _, p in reversed(self.pieces) if p.end_pos is not None), first.first_pos
        )
        partial = sum(p.selected for _, p in self.pieces) < sum(p.events for _, p in self.pieces)
        partial = partial or self.partial_pick is not None
        return block_header(last.tx, first.file, first.first_pos, end_pos, partial, self._queries(out_dir))

    @property
    def partial_pick(self) -> dict[str, Any] | None:
        """{gtid, file, pos, picked, dropped} when the row picks took some of its rows and left others."""
        picked = sum(p.rows_picked for _, p in self.pieces)
        dropped = sum(p.rows_dropped for _, p in self.pieces)
        if not (picked and dropped):
            return None
        first = self.pieces[0][1]
        return {
            "gtid": first.tx.get("gtid"),
            "pos": first.first_pos,
            "file": first.file,
            "picked": picked,
            "dropped": dropped,
        }

    @property
    def filter_split(self) -> dict[str, Any] | None:
        """{gtid, file, pos, left_out} when the table and type filters took part of it and left the rest."""
        left = sorted({name for _, p in self.pieces for name in p.left_out})
        if not (left and self.statements):
            return None
        first = self.pieces[0][1]
        return {"gtid": first.tx.get("gtid"), "pos": first.first_pos, "file": first.file, "left_out": left}

    def _queries(self, out_dir: str) -> Iterator[str]:
        last: str | None = None
        for position, (index, piece) in enumerate(self.pieces):
            if not piece.queries:
                continue
            with open(part_path(out_dir, index, "queries.json"), encoding="utf-8") as f:
                queries = json.load(f)["tail" if position == 0 else "head"]
            for query in queries:
                if query != last:
                    yield query
                last = query


def spans(summaries: list[Summary]) -> tuple[dict[int, Span], dict[int, Span]]:
    """The crossing blocks, by the partition of their head pieces and of their tail pieces."""
    heads: dict[int, Span] = {}
    tails: dict[int, Span] = {}
    open_span: Span | None = None
    for summary in summaries:
        if summary.head is not None:
            if open_span is None:
                raise RuntimeError(f"partition {summary.index} continues a transaction no partition opened")
            open_span.pieces.append((summary.index, summary.head))
            heads[summary.index] = open_span
            if summary.head.closed:
                open_span = None
        if summary.tail is not None:
            open_span = Span([(summary.index, summary.tail)])
            tails[summary.index] = open_span
    if open_span is not None:
        raise RuntimeError("a transaction crossing partitions was never closed")
    return heads, tails


def closed_spans(summaries: list[Summary]) -> int:
    """How many crossing transactions with statements close in these partitions."""
    heads, _tails = spans(summaries)
    return sum(1 for index, span in heads.items() if span.pieces[-1][0] == index and span.statements)


def partial_picks(summaries: list[Summary]) -> list[dict[str, Any]]:
    """Every transaction of which the row picks took some rows and left others, in binlog order."""
    return _taken_in_part(summaries, "partial_pick", "partial_picks")


def filter_splits(summaries: list[Summary]) -> list[dict[str, Any]]:
    """Every transaction of which the table and type filters took some rows events and left others."""
    return _taken_in_part(summaries, "filter_split", "filter_splits")


def _taken_in_part(summaries: list[Summary], crossing: str, inside: str) -> list[dict[str, Any]]:
    """A crossing transaction's item (`crossing`, on its span, once, where it closes) and each
    partition's own (`inside`), in binlog order."""
    heads, _tails = spans(summaries)
    found: list[dict[str, Any]] = []
    for summary in summaries:
        span = heads.get(summary.index)
        if span is not None and span.pieces[-1][0] == summary.index and getattr(span, crossing) is not None:
            found.append(getattr(span, crossing))
        found.extend(getattr(summary, inside))
    return found


def copy_range(src: IO[bytes], dst: Sink, start: int, length: int) -> None:
    if length > 0 and _copy_in_kernel(src, dst, start, length):
        return
    src.seek(start)
    while length > 0:
        data = src.read(min(length, 8 << 20))
        if not data:
            raise RuntimeError("a part file is shorter than its summary says")
        dst.write(data)
        length -= len(data)


def _copy_in_kernel(src: IO[bytes], dst: Sink, start: int, length: int) -> bool:
    """Copy with copy_file_range(2) when both ends are files: the bytes never pass through this
    process. False (nothing copied) when the system or the file systems do not offer it."""
    if not isinstance(dst, io.BufferedWriter):
        return False
    dst.flush()  # what is buffered goes first; the copy then writes at the descriptor's position
    return copy_in_kernel(src.fileno(), dst.fileno(), start, length)


def irreversible_items(out_dir: str, summaries: list[Summary]) -> Iterator[dict[str, Any]]:
    """The irreversible row changes the partitions listed, in binlog order."""
    for summary in summaries:
        if not summary.irreversible:
            continue
        with open(part_path(out_dir, summary.index, "irreversible.jsonl"), encoding="utf-8") as f:
            for line in f:
                yield json.loads(line)


def merge_parts(
    out_dir: str,
    summaries: list[Summary],
    header: str,
    newest_first: bool,
    script_out: Sink,
    plan_out: Sink | None,
    remove: bool = False,
) -> None:
    """The script (header, then every partition's part) and the plan, from the part files; with
    `remove`, each part's script and plan files are removed once copied, in a thread of its own
    while the next part is copied (freeing a file's blocks and pages is kernel work: about 15 ms
    per 100 MB of parts here)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mysql-rollback-merge-remove") as unlinks:

        def removed(path: str) -> None:
            if remove:
                unlinks.submit(_unlink, path)

        script_out.write(header.encode("utf-8"))
        heads, tails = spans(summaries)
        for summary in reversed(summaries) if newest_first else summaries:
            index = summary.index
            with open(part_path(out_dir, index, "sql"), "rb") as part:
                _copy_script_part(
                    part, summary, heads.get(index), tails.get(index), out_dir, newest_first, script_out
                )
            removed(part_path(out_dir, index, "sql"))
            if plan_out is not None:
                with open(part_path(out_dir, index, "plan.jsonl"), "rb") as part:
                    copy_range(part, plan_out, 0, os.fstat(part.fileno()).st_size)
                removed(part_path(out_dir, index, "plan.jsonl"))


def _copy_script_part(
    part: IO[bytes],
    summary: Summary,
    head_span: Span | None,
    tail_span: Span | None,
    out_dir: str,
    newest_first: bool,
    script_out: Sink,
) -> None:
    """One partition's script part into the script: its blocks between its head and tail pieces (the
    transactions it shares with its neighbours), with the block end or the span's header where a
    crossing transaction closes or opens."""
    head = summary.head.script_bytes if summary.head else 0
    tail = summary.tail.script_bytes if summary.tail else 0
    size = summary.script_bytes
    closes = head_span is not None and head_span.pieces[-1][0] == summary.index and head_span.statements
    if newest_first:  # tail piece, blocks, head piece
        copy_range(part, script_out, 0, tail)
        if tail_span is not None and tail_span.statements:
            script_out.write(BLOCK_END.encode())
        copy_range(part, script_out, tail, size - tail - head)
        if closes:
            assert head_span is not None
            script_out.write(head_span.header(out_dir).encode("utf-8"))
        copy_range(part, script_out, size - head, head)
    else:  # head piece, blocks, tail piece
        copy_range(part, script_out, 0, head)
        if closes:
            script_out.write(BLOCK_END.encode())
        copy_range(part, script_out, head, size - head - tail)
        if tail_span is not None and tail_span.statements:
            script_out.write(tail_span.header(out_dir).encode("utf-8"))
        copy_range(part, script_out, size - tail, tail)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass  # the job's directory is removed as a whole afterwards anyway


def change_parts(out_dir: str, summaries: list[Summary]) -> list[str]:
    return [part_path(out_dir, s.index, "changes.jsonl") for s in summaries]


def concatenate(parts: list[str], out: Sink) -> None:
    for part in parts:
        with open(part, "rb") as f:
            copy_range(f, out, 0, os.fstat(f.fileno()).st_size)
