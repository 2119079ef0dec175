"""A partition's share of a --net script (rollback/render/net_local.py): its runs rendered from images
that are decoded rows or the bytes they take in their rows events; and those bytes read where the
share and the driver's fold need them (rollback/render/net.py: read_images, read_step_images)."""

from __future__ import annotations

from typing import Any

from rollback.render.net import DELETE, INSERT, MOVE, UPDATE, NetFold, read_images, read_step_images
from rollback.render.net_local import render_run


class _Raw:
    """Reads images of two bytes each: a row of one value, the first byte modulo 100 (so that two
    images of other bytes can hold equal values, as 0.0 and -0.0 do)."""

    decoder = None
    decimal_text = False

    def __init__(self) -> None:
        self.reads: list[bytes] = []

    def rows(self, data: bytes) -> list[tuple[int]]:
        self.reads.append(data)
        return [(data[i] % 100,) for i in range(0, len(data), 2)]


class _Full:
    """Writes a statement per image it is given (the full-image functions' script)."""

    def script(self, kind: str, images: list[Any], forward: bool) -> tuple[bytes, int, int]:
        text = "".join(f"{kind} {image!r}\n" for image in reversed(images))
        return text.encode(), len(images), 0


def test_an_update_whose_images_read_as_equal_values_is_left_out():
    raw = _Raw()
    pairs = [(b"\x01a", b"\x65b"), (b"\x02a", b"\x03a"), ((7,), b"\x07z")]
    data, written = render_run(_Full(), raw, "update", pairs)
    assert written == 1 and data == b"update ((2,), (3,))\n"
    assert raw.reads == [b"\x01a\x65b\x02a\x03a\x07z"]  # every image read at once


def test_rows_decoded_and_images_as_bytes_are_read_in_their_order():
    raw = _Raw()
    assert read_images([b"\x05.", (9,), b"\x06."], raw) == [(5,), (9,), (6,)]
    assert render_run(_Full(), raw, "update", [((1,), b"\x02.")]) == (b"update ((1,), (2,))\n", 1)
    assert read_images([(1,), (2,)], raw) == [(1,), (2,)] and len(raw.reads) == 2


def test_steps_holding_images_as_bytes_are_decoded_in_place():
    raw = _Raw()
    steps = [
        [INSERT, 1, None, 0, 0, b"\x01.", 0, 0],
        [UPDATE, 2, b"\x02.", 0, 1, (3,), 1, 0],
        [MOVE, None, (b"\x04.", b"\x05."), 1, 1, None, 1, 1],
        [DELETE, 6, b"\x06.", 2, 0, None, 2, 0],
    ]
    read_step_images(steps, raw)
    assert [(step[2], step[5]) for step in steps] == [
        (None, (1,)),
        ((2,), (3,)),
        (((4,), (5,)), None),
        ((6,), None),
    ]
    assert raw.reads == [b"\x01.\x02.\x04.\x05.\x06."]


def test_the_drivers_fold_reads_only_the_images_its_net_rows_keep():
    """Two partitions' steps holding images as bytes: key 1 inserted, then deleted; key 2 updated in
    both; key 7 moved to 8. The fold reads the moved pair at once (its keys), and of the rest only the
    images of key 2's net change, at its end, in one read."""
    raw = _Raw()
    first = [[INSERT, 1, None, 0, 0, b"\x01.", 0, 0], [UPDATE, 2, b"\x02.", 0, 1, b"\x03.", 0, 1]]
    second = [
        [UPDATE, 2, b"\x03.", 1, 0, b"\x04.", 1, 0],
        [DELETE, 1, b"\x01.", 1, 1, None, 1, 1],
        [MOVE, None, (b"\x07.", b"\x08."), 1, 2, None, 1, 2],
    ]
    fold = NetFold("t", (0,))
    for steps in (first, second):
        fold.add_steps(steps, lambda event, row: (event * 10 + row, ("f", 4, row, 0, None)), raw)
    assert raw.reads == [b"\x07.\x08."]
    assert [(row.before, row.after) for row in fold.rows()] == [((2,), (4,)), ((7,), (8,))]
    assert raw.reads[1:] == [b"\x02.\x04."]


def test_steps_another_reader_reads_are_read_when_folded():
    """Steps whose images another reader reads than the table's first: read as they are folded."""
    first, other = _Raw(), _Raw()
    fold = NetFold("t", (0,))
    fold.add_steps(
        [[INSERT, 1, None, 0, 0, b"\x01.", 0, 0]], lambda event, row: (row, ("f", 4, row, 0, None)), first
    )
    fold.add_steps(
        [[UPDATE, 2, b"\x02.", 1, 0, b"\x03.", 1, 0]], lambda event, row: (9, ("f", 4, row, 0, None)), other
    )
    assert other.reads == [b"\x02.\x03."] and not first.reads  # in one read
    assert [(row.before, row.after) for row in fold.rows()] == [(None, (1,)), ((2,), (3,))]
    assert first.reads == [b"\x01."]
