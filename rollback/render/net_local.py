"""--net without a plan: a partition's share of the script, written where the partition alone can know it.

The driver (rollback/job/net_script.py) folds every table's changes over the whole range, orders the
net rows and writes them. Where no key a partition changes is changed in another partition (nor
twice in the partition's own steps), the fold of the range gives each of the partition's keys the
net change of its one step; and where no row's reverse waits for another's (execution_order: a table
whose only unique key is its row key, or whose rows the range only inserts), the order is the
newest change first, across tables. The partition's rows then come, in the script, together and in
that order: the partition writes them (a segment of its share, one for each time it hands its
steps over) and says, for each table, the span of the keys it changed and the kinds of its net
changes. The driver takes the shares when every partition wrote one and no two spans of a table
meet, and folds the steps otherwise: the same script either way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import Any

from rollback.base import hotpath
from rollback.render.net import INSERT, MOVE, read_images


@dataclass(frozen=True, slots=True)
class Share:
    """What a segment of a partition's share changes in one table: the span of the keys (least,
    greatest) and the kinds of the net changes among them."""

    table: int  # its number in the part file
    span: tuple[Any, Any]
    inserts: bool
    updates: bool
    deletes: bool


# A change in the partition's order: (its rows event's number in the part file, its row there).
Place = tuple[int, int]
# A net row of a segment: (the place of its last change, the table's number, its kind, its image as
# the full-image functions reverse it); or a rows event whose statements are already written:
# (its place, the table's number, "once", (offset, size, count) in the part's data file).
Item = tuple[Place, int, str, Any]


def chained_rows(number: int, steps: Sequence[list[Any]]) -> tuple[list[Item], Share | None] | None:
    """The net rows of one table's steps (rollback.render.net.NetChains) when each key has one step
    and none moves its key (the caller checked that no key is in two of them): what NetFold.add_steps
    and rows() give for them, with the span of the steps' keys. None where a step moves a key, or
    the keys do not order together. The compiled core's net_rows runs the loop where it is built."""
    items: list[Item] = []
    keys: list[Any] = []
    core = hotpath.CORE
    kinds = (
        core.net_rows(number, steps, items, keys)
        if core is not None
        else net_rows(number, steps, items, keys)
    )
    if kinds is None:
        return None
    if not keys:
        return items, None
    span = key_span(keys)
    if span is None:
        return None
    return items, Share(number, span, *kinds)


def net_rows(
    number: int, steps: Sequence[list[Any]], items: list[Item], keys: list[Any]
) -> tuple[bool, bool, bool] | None:
    """The compiled core's net_rows, in Python: each step's key onto `keys`, its net row (if any) onto
    `items`; whether any net row is an INSERT, an UPDATE, a DELETE; None at a step moving a key."""
    inserts = updates = deletes = False
    for kind, key, before, _event, _row, after, last_event, last in steps:
        if kind == MOVE:
            return None
        keys.append(key)
        if kind == INSERT:
            before = None
        if before is None:
            if after is None:  # inserted then deleted inside the range: nothing to undo
                continue
            items.append(((last_event, last), number, "insert", after))
            inserts = True
        elif after is None:
            items.append(((last_event, last), number, "delete", before))
            deletes = True
        elif before != after:
            items.append(((last_event, last), number, "update", (before, after)))
            updates = True
    return inserts, updates, deletes


def key_span(keys: Sequence[Any]) -> tuple[Any, Any] | None:
    """The least and greatest of keys; None where they do not order together."""
    try:
        return min(keys), max(keys)
    except TypeError:
        return None


def write_segment(
    items: list[Item],
    render: Callable[[int, str, list[Any]], tuple[bytes, int]],
    write: Callable[[bytes], int],
) -> tuple[list[tuple[int, int]], int]:
    """The segment's statements, newest change first: each run of one table's net rows of one kind in
    one call of `render(number, kind, images)` (render_run: the table's full-image functions, which
    write a run newest first: the images go oldest first), each written by `write` (it returns where
    in the data file); the rows events already written are pieces as they are. Returns the pieces
    (offset, size) in order, and the statements' count."""
    items.sort(key=itemgetter(0), reverse=True)
    pieces: list[tuple[int, int]] = []
    count = 0
    for (number, kind), run in groupby(items, key=itemgetter(1, 2)):
        if kind == "once":
            for _place, _number, _kind, (offset, size, written) in run:
                pieces.append((offset, size))
                count += written
            continue
        images = [item[3] for item in run]
        images.reverse()
        data, written = render(number, kind, images)
        if written:
            pieces.append((write(data), len(data)))
            count += written
    return pieces, count


def render_run(full: Any, raw: Any, kind: str, images: list[Any]) -> tuple[bytes, int]:
    """A run's statements by the table's full-image functions (`full`), its images decoded rows or, where
    its steps hold them so, the bytes they take in their rows events, read by `raw` (parts.RawImages):
    INSERTs' and DELETEs' straight from the bytes (script_images), an UPDATE's decoded first, and left
    out where the decoded images are equal (two encodings of one value: the fold compares values)."""
    if raw is not None and kind != "update" and all(type(image) is bytes for image in images):
        data = b"".join(images)
        try:
            script, written, _longest, end = full.script_images(
                raw.decoder.layout, data, 0, len(data), -1, kind, False, raw.decimal_text
            )
            if end == len(data):
                return script, written
        except Exception:  # noqa: BLE001 - decoded below, as the general path reads them
            pass
    if raw is not None and kind == "update":
        read = read_images([image for pair in images for image in pair], raw)
        images = [pair for pair in zip(read[0::2], read[1::2], strict=True) if pair[0] != pair[1]]
    elif raw is not None:
        images = read_images(images, raw)
    data, written, _longest = full.script(kind, images, False)
    return data, written
