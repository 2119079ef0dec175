"""Compiled row decoders: seed events, generated tables, NULL/present bitmaps, bad input.

Seed rows were transcribed from the seed documents 001 (int_table WRITE/UPDATE/DELETE, number_table and
time_table WRITE) and 003 (MySQL 8.0.22 Write_rows). The rows part of each event body starts
after table id (6), flags (2), the v2 extra-info length (2), the width and the present
bitmap(s); the 4-byte CRC32 after the rows must be left alone (``end``).
"""

from __future__ import annotations

import pickle
import time
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollback.base.errors import BinlogFormatError
from rollback.binlog.columns import MISSING, ColumnSpec, parse_column_metadata
from rollback.binlog.constants import ColumnType as T
from rollback.binlog.rowdecoder import RowDecoder, get_row_decoder
from tests.support.columns import Kind, encode_datetime2, kinds, unhex
from tests.support.examples import examples

# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def same(got: object, expected: object) -> bool:
    """Equal, of the same type, and for Decimal with the same digits and exponent."""
    if type(got) is not type(expected):
        return False
    if isinstance(expected, Decimal):
        return got.as_tuple() == expected.as_tuple()  # type: ignore[union-attr]
    return got == expected


def same_row(got: tuple, expected: tuple) -> bool:
    return len(got) == len(expected) and all(
        (g is e) if e is MISSING or e is None else same(g, e) for g, e in zip(got, expected, strict=True)
    )


def encode_image(values: list[bytes | None], padding: bool = True) -> bytes:
    """NULL bitmap over the present columns (unused high bits set, as the server leaves them
    when ``padding``), then the stored values of the non-NULL ones."""
    nbits = len(values)
    bitmap = sum(1 << k for k, v in enumerate(values) if v is None)
    nbytes = (nbits + 7) // 8
    if padding:
        bitmap |= ((1 << (nbytes * 8)) - 1) ^ ((1 << nbits) - 1)
    return bitmap.to_bytes(nbytes, "little") + b"".join(v for v in values if v is not None)


def int_specs(n: int) -> tuple[ColumnSpec, ...]:
    return tuple(ColumnSpec(T.LONG) for _ in range(n))


# ---------------------------------------------------------------------------------------------
# Seed events
# ---------------------------------------------------------------------------------------------

INT_TABLE = (
    ColumnSpec(T.TINY),
    ColumnSpec(T.SHORT),
    ColumnSpec(T.INT24),
    ColumnSpec(T.LONG),
    ColumnSpec(T.LONGLONG),
    ColumnSpec(T.TINY),
)


def test_seed_int_table_write_rows() -> None:
    body = unhex(
        "64 00 00 00 00 00 01 00 02 00 06 ff c0 01 0b 00 6f 00 00 57 04 00 00 67 2b 00 00 00 00 00 00 01"
    )
    event = body + unhex("10 7e 17 50")  # CRC32
    decoder = get_row_decoder(INT_TABLE, event[11])
    assert decoder.decode_rows(event, 12, len(event) - 4) == [(1, 11, 111, 1111, 11111, 1)]


def test_seed_int_table_update_rows() -> None:
    event = unhex(
        "64 00 00 00 00 00 01 00 02 00 06 ff ff"
        " c0 01 0b 00 6f 00 00 57 04 00 00 67 2b 00 00 00 00 00 00 01"
        " c0 01 16 00 de 00 00 57 04 00 00 67 2b 00 00 00 00 00 00 01"
        " 16 a3 de bb"
    )
    before = get_row_decoder(INT_TABLE, event[11])
    after = get_row_decoder(INT_TABLE, event[12])
    assert before.decode_pairs(event, 13, len(event) - 4, after) == [
        ((1, 11, 111, 1111, 11111, 1), (1, 22, 222, 1111, 11111, 1))
    ]


def test_seed_int_table_delete_rows() -> None:
    event = unhex(
        "64 00 00 00 00 00 01 00 02 00 06 ff c0 01 16 00 de 00 00 57 04 00 00 67 2b 00 00 00 00 00 00 01"
        " 10 7e 17 50"
    )
    assert get_row_decoder(INT_TABLE, 0xFF).decode_rows(event, 12, len(event) - 4) == [
        (1, 22, 222, 1111, 11111, 1)
    ]


def test_seed_number_table_write_rows() -> None:
    types = unhex("01 02 09 03 08 f6 04 05 10")
    specs = tuple(
        ColumnSpec(t, m)
        for t, m in zip(types, parse_column_metadata(types, unhex("190a 04 08 0500")), strict=True)
    )
    event = unhex(
        "5d 00 00 00 00 00 01 00 02 00 09 ff ff 00 fe 02 ea ff de 00 00 52 f7 ff ff ce 56 00 00 00 00 00 00"
        " 80 00 7b 07 56 b5 b3 06 b0 8a 28 00 33 33 f6 42 cd cc cc cc cc cc 5e 40 06 5e 6d 11 fa"
    )
    (row,) = get_row_decoder(specs, 0xFFFF).decode_rows(event, 13, len(event) - 4)
    assert same_row(
        row,
        (2, -22, 222, -2222, 22222, Decimal("123123123123.1122330000"), 123.09999847412109, 123.2, 0b00110),
    )


def test_seed_time_table_write_rows() -> None:
    types = unhex("0a 12 12 11 11 13 13 0d 0d")
    specs = tuple(
        ColumnSpec(t, m)
        for t, m in zip(types, parse_column_metadata(types, unhex("00 03 00 04 00 05")), strict=True)
    )
    event = unhex(
        "4e 00 00 00 00 00 01 00 02 00 09 ff ff 00 fe 8e c3 0f 99 9e 5c 9d 80 99 9e 5c 9d 80 04 60"
        " 5a 31 d9 b8 5a 31 d9 b8 04 59 80 9d 80 80 9d 80 00 00 00 75 75 7e da 55 ce"
    )
    rows = get_row_decoder(specs, 0xFFFF).decode_rows(event, 13, len(event) - 4)
    # The seed's server ran at UTC+8 and displays 09:54 for the TIMESTAMP columns; the stored
    # instant 1513216440 is 01:54 UTC. DATETIME(3) shows '.112' (3 digits, see test_columns).
    assert rows == [
        (
            "2017-12-14",
            "2017-12-14 09:54:00",
            "2017-12-14 09:54:00.112",
            "2017-12-14 01:54:00",
            "2017-12-14 01:54:00.1113",
            "09:54:00",
            "09:54:00.00000",
            2017,
            2017,
        )
    ]


def test_seed_mysql_8_0_22_write_rows_with_a_null_date() -> None:
    specs = tuple(
        ColumnSpec(t, m)
        for t, m in zip(b"\x03\x0f\x0a", parse_column_metadata(b"\x03\x0f\x0a", unhex("50 00")), strict=True)
    )
    event = unhex("8c 00 00 00 00 00 01 00 02 00 03 ff 04 01 00 00 00 05 61 70 70 6c 65 12 82 25 e0")
    decoder = get_row_decoder(specs, event[11])
    assert decoder.decode_rows(event, 12, len(event) - 4) == [(1, b"apple", None)]
    assert decoder.decode(event, 12, len(event) - 4) == ((1, b"apple", None), len(event) - 4)


# ---------------------------------------------------------------------------------------------
# Generated tables
# ---------------------------------------------------------------------------------------------


@st.composite
def tables(draw: st.DrawFn, max_columns: int = 12) -> tuple[list[Kind], int]:
    columns = draw(st.lists(kinds(), min_size=1, max_size=max_columns))
    everything = (1 << len(columns)) - 1
    present = draw(st.one_of(st.just(everything), st.integers(0, everything)))
    return columns, present


@st.composite
def images(draw: st.DrawFn, columns: list[Kind], present: int) -> tuple[bytes, tuple]:
    """One row image and the row it must decode to."""
    stored: list[bytes | None] = []
    row: list[object] = []
    for i, kind in enumerate(columns):
        if not present >> i & 1:
            row.append(MISSING)
            continue
        value = draw(st.one_of(st.none(), kind.values))
        if value is None:
            stored.append(None)
            row.append(None)
        else:
            stored.append(value[0])
            row.append(value[1])
    return encode_image(stored, padding=draw(st.booleans())), tuple(row)


@st.composite
def table_with_rows(draw: st.DrawFn) -> tuple[tuple[ColumnSpec, ...], int, list[tuple[bytes, tuple]]]:
    columns, present = draw(tables())
    rows = draw(st.lists(images(columns, present), min_size=1, max_size=4))
    return tuple(k.spec for k in columns), present, rows


@settings(max_examples=examples(300), deadline=None)
@given(table_with_rows())
def test_rows_decode_to_what_was_stored(
    case: tuple[tuple[ColumnSpec, ...], int, list[tuple[bytes, tuple]]],
) -> None:
    specs, present, rows = case
    decoder = get_row_decoder(specs, present | ~((1 << len(specs)) - 1) & 0xFFFF)  # padded bitmap
    if present == 0:
        assert decoder.decode_rows(b"", 0, 0) == []
        return
    buf = b"".join(image for image, _ in rows)
    decoded = decoder.decode_rows(buf + b"\xff\xee\xdd\xcc", 0, len(buf))
    assert len(decoded) == len(rows)
    for got, (_, expected) in zip(decoded, rows, strict=True):
        assert same_row(got, expected), (got, expected)
    pos = 0
    for image, expected in rows:
        got, pos_after = decoder.decode(buf, pos, len(buf))
        assert same_row(got, expected)
        pos += len(image)
        assert pos_after == pos


@settings(max_examples=examples(150), deadline=None)
@given(st.data())
def test_update_pairs_with_different_before_and_after_columns(data: st.DataObject) -> None:
    columns, before_present = data.draw(tables(max_columns=8))
    everything = (1 << len(columns)) - 1
    after_present = data.draw(st.integers(1, everything))
    if not before_present:
        before_present = everything
    pairs = data.draw(
        st.lists(
            st.tuples(images(columns, before_present), images(columns, after_present)), min_size=1, max_size=3
        )
    )
    specs = tuple(k.spec for k in columns)
    buf = b"".join(b + a for (b, _), (a, _) in pairs)
    before = get_row_decoder(specs, before_present)
    after = get_row_decoder(specs, after_present)
    decoded = before.decode_pairs(buf, 0, len(buf), after)
    assert len(decoded) == len(pairs)
    for (got_b, got_a), ((_, want_b), (_, want_a)) in zip(decoded, pairs, strict=True):
        assert same_row(got_b, want_b)
        assert same_row(got_a, want_a)


@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_any_truncation_raises_naming_the_column_that_runs_over(data: st.DataObject) -> None:
    columns, present = data.draw(tables())
    if not present:
        present = 1
    image, _ = data.draw(images(columns, present))
    specs = tuple(k.spec for k in columns)
    cut = data.draw(st.integers(0, len(image) - 1))
    decoder = get_row_decoder(specs, present)
    trailing = data.draw(st.binary(min_size=0, max_size=8))
    with pytest.raises(BinlogFormatError) as err:
        decoder.decode(image[:cut] + trailing, 0, cut)
    reason = err.value.reason
    assert "runs past the event end" in reason
    # Which column holds byte ``cut``?
    cols = [i for i in range(len(specs)) if present >> i & 1]
    nbytes = (len(cols) + 7) // 8
    if cut < nbytes:
        assert "NULL bitmap" in reason
    else:
        nulls = int.from_bytes(image[:nbytes], "little")
        pos = nbytes
        for k, col in enumerate(cols):
            if nulls >> k & 1:
                continue
            stored = _stored_length(specs[col], image, pos)
            if pos + stored > cut:
                assert f"table column {col + 1} " in reason
                assert err.value.offset == pos
                break
            pos += stored
    if cut:  # an empty body is no rows, not a truncated one
        with pytest.raises(BinlogFormatError):
            decoder.decode_rows(image[:cut] + trailing, 0, cut)


def _stored_length(spec: ColumnSpec, image: bytes, pos: int) -> int:
    if spec.width is not None:
        return spec.width
    prefix = spec.meta if spec.type not in (T.VARCHAR, T.STRING) else (2 if spec.length > 255 else 1)
    return prefix + int.from_bytes(image[pos : pos + prefix], "little")


# ---------------------------------------------------------------------------------------------
# Bitmaps
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("width", [1, 7, 8, 9, 16, 17, 64, 65, 70])
def test_null_bitmap_is_exact_for_any_width(width: int) -> None:
    specs = int_specs(width)
    decoder = get_row_decoder(specs, (1 << width) - 1)
    patterns = [0, (1 << width) - 1, 0b1, 1 << (width - 1), int("10" * width, 2) & ((1 << width) - 1)]
    for nulls in patterns:
        values = [None if nulls >> i & 1 else (i * 1000 + 7).to_bytes(4, "little") for i in range(width)]
        row, end = decoder.decode(encode_image(values), 0)
        assert row == tuple(None if nulls >> i & 1 else i * 1000 + 7 for i in range(width))
        assert end == len(encode_image(values))


@pytest.mark.parametrize("width", [9, 17, 70])
def test_null_bits_count_present_columns_only(width: int) -> None:
    """MINIMAL images: bit k of the NULL bitmap belongs to the k-th *present* column."""
    specs = int_specs(width)
    present = int("110" * width, 2) & ((1 << width) - 1)
    cols = [i for i in range(width) if present >> i & 1]
    values = [None if k % 4 == 1 else col.to_bytes(4, "little") for k, col in enumerate(cols)]
    row, _ = get_row_decoder(specs, present).decode(encode_image(values), 0)
    expected = [MISSING] * width
    for k, col in enumerate(cols):
        expected[col] = None if k % 4 == 1 else col
    assert same_row(row, tuple(expected))


def test_4096_columns() -> None:
    width = 4096
    specs = tuple(ColumnSpec(T.TINY, 0, True) for _ in range(width))
    present = sum(1 << i for i in range(0, width, 3)) | 1 << (width - 2)
    cols = [i for i in range(width) if present >> i & 1]
    started = time.perf_counter()
    decoder = get_row_decoder(specs, present)
    assert time.perf_counter() - started < 30
    values = [None if k % 5 == 0 else bytes([col % 256]) for k, col in enumerate(cols)]
    image = encode_image(values)
    row, end = decoder.decode(image * 2, 0)
    assert end == len(image)
    expected: list[object] = [MISSING] * width
    for k, col in enumerate(cols):
        expected[col] = None if k % 5 == 0 else col % 256
    assert same_row(row, tuple(expected))
    assert decoder.decode_rows(image * 2, 0, len(image) * 2) == [row, row]


def test_present_bits_beyond_the_column_count_are_ignored() -> None:
    specs = int_specs(3)
    assert get_row_decoder(specs, 0xFF) is get_row_decoder(specs, 0b111)
    assert get_row_decoder(specs, 0b101).columns == (0, 2)


def test_image_without_columns() -> None:
    decoder = get_row_decoder(int_specs(2), 0)
    assert decoder.decode(b"", 0) == ((MISSING, MISSING), 0)
    assert decoder.decode_rows(b"abc", 3, 3) == []
    with pytest.raises(BinlogFormatError, match="no columns"):
        decoder.decode_rows(b"abc", 0, 3)


# ---------------------------------------------------------------------------------------------
# Bad input and unsupported types
# ---------------------------------------------------------------------------------------------


def test_length_prefix_pointing_past_the_end() -> None:
    specs = (ColumnSpec(T.LONG), ColumnSpec(T.VARCHAR, 80))
    image = encode_image([b"\x01\x00\x00\x00", b"\x09abc"])
    with pytest.raises(BinlogFormatError, match="table column 2 runs past the event end") as err:
        get_row_decoder(specs, 0b11).decode(image + b"\x00" * 20, 0, len(image))
    assert err.value.offset == 5


def test_blob_with_a_four_byte_length_past_the_end() -> None:
    specs = (ColumnSpec(T.BLOB, 4),)
    image = encode_image([(2**31).to_bytes(4, "little") + b"xyz"])
    with pytest.raises(BinlogFormatError, match="column 1 runs past"):
        get_row_decoder(specs, 1).decode(image, 0)


def test_blob_sizes_for_each_prefix() -> None:
    for prefix, size in ((1, 255), (2, 65535), (3, 70_000), (4, 70_000)):
        data = bytes(range(256)) * (size // 256) + bytes(size % 256)
        image = encode_image([size.to_bytes(prefix, "little") + data])
        assert get_row_decoder((ColumnSpec(T.BLOB, prefix),), 1).decode(image, 0) == ((data,), len(image))


def test_invalid_value_inside_a_row_names_the_column() -> None:
    specs = (ColumnSpec(T.LONG), ColumnSpec(T.DATETIME2, 0))
    bad = encode_datetime2(2024, 1, 1, 25, 0, 0, 0, 0)
    image = encode_image([b"\x01\x00\x00\x00", bad])
    with pytest.raises(BinlogFormatError, match="table column 2 holds an invalid value") as err:
        get_row_decoder(specs, 0b11).decode(image, 0)
    assert err.value.offset == 5


def test_update_pair_missing_its_after_image() -> None:
    before = get_row_decoder(int_specs(2), 0b11)
    image = encode_image([b"\x01\x00\x00\x00", b"\x02\x00\x00\x00"])
    with pytest.raises(BinlogFormatError, match="runs past the event end"):
        before.decode_pairs(image + b"\xaa\xbb\xcc\xdd", 0, len(image), before)


def test_old_decimal_is_refused_clearly_unless_null() -> None:
    specs = (ColumnSpec(T.LONG), ColumnSpec(T.DECIMAL))
    decoder = get_row_decoder(specs, 0b11)
    assert decoder.decode(encode_image([b"\x01\x00\x00\x00", None]), 0)[0] == (1, None)
    with pytest.raises(BinlogFormatError, match="table column 2: pre-5.0 DECIMAL"):
        decoder.decode(encode_image([b"\x01\x00\x00\x00", b"12.5"]), 0)


def test_end_is_clamped_to_the_buffer() -> None:
    specs = (ColumnSpec(T.VARCHAR, 80),)
    image = encode_image([b"\x05ab"])  # says 5 bytes, holds 2
    with pytest.raises(BinlogFormatError, match="column 1 runs past"):
        get_row_decoder(specs, 1).decode_rows(image, 0, len(image) + 100)


# ---------------------------------------------------------------------------------------------
# The decoder object
# ---------------------------------------------------------------------------------------------


def test_decoders_are_cached_per_signature() -> None:
    specs = (ColumnSpec(T.LONG), ColumnSpec(T.VARCHAR, 80))
    assert get_row_decoder(specs, 0b11) is get_row_decoder(tuple(specs), 0b11)
    assert get_row_decoder(specs, 0b11) is not get_row_decoder(specs, 0b01)
    assert isinstance(get_row_decoder(specs, 0b11), RowDecoder)
    assert "def _rows" in get_row_decoder(specs, 0b11).source


def test_decoder_pickles_to_the_cached_decoder() -> None:
    decoder = get_row_decoder((ColumnSpec(T.LONG),), 1)
    assert pickle.loads(pickle.dumps(decoder)) is decoder


def test_buffers_other_than_bytes_give_bytes_values() -> None:
    specs = (ColumnSpec(T.VARCHAR, 80), ColumnSpec(T.BLOB, 2))
    image = encode_image([b"\x03abc", b"\x02\x00de"])
    decoder = get_row_decoder(specs, 0b11)
    for buf in (memoryview(image), bytearray(image)):
        assert decoder.decode_rows(buf, 0, len(image)) == [(b"abc", b"de")]
        assert type(decoder.decode(buf, 0)[0][0]) is bytes
