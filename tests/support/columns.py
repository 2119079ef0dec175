"""Independent encoders of column values and hypothesis strategies of column kinds.

Written from the server's layouts (not from the decoder code) so that decoding what they encode is
a real check; test_columns.py and test_rowdecoder.py share them.
"""

from __future__ import annotations

import datetime as dt
import struct
from dataclasses import dataclass
from decimal import Decimal

from hypothesis import strategies as st

from rollback.binlog.columns import (
    ColumnSpec,
)
from rollback.binlog.constants import ColumnType as T

# ---------------------------------------------------------------------------------------------
# Independent encoders (server layouts, written for the tests)
# ---------------------------------------------------------------------------------------------

DIG2BYTES = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4]
FRAC_BYTES = [0, 1, 1, 2, 2, 3, 3]
TIME_HIRES_BYTES = [3, 4, 4, 5, 5, 5, 6]
DATETIME_HIRES_BYTES = [5, 6, 6, 7, 7, 7, 8]


def unhex(text: str) -> bytes:
    return bytes.fromhex(text.replace("\n", " "))


def encode_decimal(unscaled: int, precision: int, scale: int) -> bytes:
    """decimal2bin: digit groups of 9 (leftover integer digits first, leftover fraction digits
    last), big-endian, every byte inverted when negative, then the top bit flipped."""
    digits = str(abs(unscaled)).rjust(precision, "0")
    int_digits, frac_digits = digits[: precision - scale], digits[precision - scale :]
    lead = len(int_digits) % 9
    groups = [int_digits[:lead]] if lead else []
    groups += [int_digits[i : i + 9] for i in range(lead, len(int_digits), 9)]
    groups += [frac_digits[i : i + 9] for i in range(0, len(frac_digits), 9)]
    out = bytearray(b"".join(int(g).to_bytes(DIG2BYTES[len(g)], "big") for g in groups))
    if unscaled < 0:
        out = bytearray(b ^ 0xFF for b in out)
    out[0] ^= 0x80
    return bytes(out)


def decimal_text(unscaled: int, scale: int) -> Decimal:
    sign = "-" if unscaled < 0 else ""
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    if not scale:
        return Decimal(sign + digits)
    return Decimal(f"{sign}{digits[:-scale]}.{digits[-scale:]}")


def truncate(usec: int, fsp: int) -> int:
    return usec - usec % 10 ** (6 - fsp)


def frac_text(usec: int, fsp: int) -> str:
    return "." + f"{usec:06d}"[:fsp] if fsp else ""


def frac_bytes(usec: int, fsp: int) -> bytes:
    """The fraction of the *2 types: 1/100 s in 1 byte, 1/10000 s in 2, usec in 3 (BE)."""
    n = FRAC_BYTES[fsp]
    unit = {0: 1, 1: 10_000, 2: 100, 3: 1}[n]
    return (usec // unit).to_bytes(n, "big") if n else b""


def encode_datetime2(y: int, mo: int, d: int, h: int, mi: int, s: int, usec: int, fsp: int) -> bytes:
    intpart = ((y * 13 + mo) << 5 | d) << 17 | h << 12 | mi << 6 | s
    return (intpart + 0x80_0000_0000).to_bytes(5, "big") + frac_bytes(usec, fsp)


def encode_time2(neg: bool, h: int, mi: int, s: int, usec: int, fsp: int) -> bytes:
    """my_time_packed_to_binary over MySQL's packed TIME, with C's shift and remainder."""
    packed = ((h << 12 | mi << 6 | s) << 24) + usec
    if neg:
        packed = -packed
    if fsp >= 5:
        return (packed + 0x8000_0000_0000).to_bytes(6, "big")
    intpart = packed >> 24  # arithmetic shift, as C does on the signed longlong
    frac = abs(packed) % (1 << 24) * (-1 if packed < 0 else 1)  # C remainder keeps the sign
    out = (intpart + 0x80_0000).to_bytes(3, "big")
    if fsp in (1, 2):
        out += (int(frac / 10_000) & 0xFF).to_bytes(1, "big")
    elif fsp in (3, 4):
        out += (int(frac / 100) & 0xFFFF).to_bytes(2, "big")
    return out


def utc_text(seconds: int) -> str:
    if seconds == 0:
        return "0000-00-00 00:00:00"
    moment = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds)
    return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} {moment:%H:%M:%S}"


def char_meta(length: int, real_type: int = T.STRING) -> int:
    """Field_string::do_save_field_metadata: bits 8-9 of the length go, inverted, into bits
    4-5 of the real-type byte."""
    return (real_type ^ ((length & 0x300) >> 4)) << 8 | length & 0xFF


# ---------------------------------------------------------------------------------------------
# Strategies: a column kind is a spec plus a strategy of (stored bytes, expected value)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    spec: ColumnSpec
    values: st.SearchStrategy[tuple[bytes, object]]


INT_WIDTHS = {T.TINY: 1, T.SHORT: 2, T.INT24: 3, T.LONG: 4, T.LONGLONG: 8}


@st.composite
def int_kinds(draw: st.DrawFn) -> Kind:
    code = draw(st.sampled_from(list(INT_WIDTHS)))
    unsigned = draw(st.booleans())
    n = INT_WIDTHS[code]
    lo, hi = (0, 2 ** (8 * n) - 1) if unsigned else (-(2 ** (8 * n - 1)), 2 ** (8 * n - 1) - 1)
    ints = st.one_of(st.sampled_from([lo, hi, 0, lo + 1, hi - 1]), st.integers(lo, hi))
    values = ints.map(lambda v: (v.to_bytes(n, "little", signed=not unsigned), v))
    return Kind(ColumnSpec(code, 0, unsigned), values)


@st.composite
def decimal_kinds(draw: st.DrawFn) -> Kind:
    precision, scale = draw(
        st.one_of(
            st.sampled_from([(65, 30), (4, 2), (10, 0), (1, 0), (1, 1), (9, 9), (18, 9), (30, 30), (65, 0)]),
            st.integers(1, 65).flatmap(lambda p: st.tuples(st.just(p), st.integers(0, min(p, 30)))),
        )
    )
    top = 10**precision - 1
    unscaled = st.one_of(st.sampled_from([0, top, -top, 1, -1]), st.integers(-top, top))
    values = unscaled.map(lambda u: (encode_decimal(u, precision, scale), decimal_text(u, scale)))
    return Kind(ColumnSpec(T.NEWDECIMAL, precision << 8 | scale), values)


def float_kind() -> Kind:
    floats = st.floats(width=32, allow_nan=False, allow_infinity=False)
    return Kind(ColumnSpec(T.FLOAT, 4), floats.map(lambda f: (struct.pack("<f", f), f)))


def double_kind() -> Kind:
    floats = st.floats(allow_nan=False, allow_infinity=False)
    return Kind(ColumnSpec(T.DOUBLE, 8), floats.map(lambda f: (struct.pack("<d", f), f)))


def year_kind() -> Kind:
    years = st.one_of(st.just(0), st.integers(1901, 2155))
    return Kind(ColumnSpec(T.YEAR), years.map(lambda y: (bytes([y - 1900 if y else 0]), y)))


@st.composite
def bit_kinds(draw: st.DrawFn) -> Kind:
    bits = draw(st.integers(1, 64))
    nbytes = (bits + 7) // 8
    ints = st.one_of(st.sampled_from([0, 2**bits - 1]), st.integers(0, 2**bits - 1))
    return Kind(
        ColumnSpec(T.BIT, (bits // 8) << 8 | bits % 8), ints.map(lambda v: (v.to_bytes(nbytes, "big"), v))
    )


@st.composite
def enum_set_kinds(draw: st.DrawFn) -> Kind:
    real_type = draw(st.sampled_from([T.ENUM, T.SET]))
    nbytes = draw(st.sampled_from([1, 2]) if real_type == T.ENUM else st.integers(1, 8))
    ints = st.one_of(st.just(2 ** (8 * nbytes) - 1), st.integers(0, 2 ** (8 * nbytes) - 1))
    values = ints.map(lambda v: (v.to_bytes(nbytes, "little"), v))
    return Kind(ColumnSpec(T.STRING, real_type << 8 | nbytes), values)


dates = st.tuples(st.integers(0, 9999), st.integers(0, 12), st.integers(0, 31))
times_of_day = st.tuples(st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
usecs = st.one_of(st.sampled_from([0, 999_999]), st.integers(0, 999_999))


def date_kind() -> Kind:
    def make(ymd: tuple[int, int, int]) -> tuple[bytes, str]:
        y, m, d = ymd
        return (y << 9 | m << 5 | d).to_bytes(3, "little"), f"{y:04d}-{m:02d}-{d:02d}"

    return Kind(ColumnSpec(T.DATE), dates.map(make))


def datetime_kind() -> Kind:
    def make(parts: tuple[tuple[int, int, int], tuple[int, int, int]]) -> tuple[bytes, str]:
        (y, mo, d), (h, mi, s) = parts
        text = f"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}"
        return int(f"{y:04d}{mo:02d}{d:02d}{h:02d}{mi:02d}{s:02d}").to_bytes(8, "little"), text

    return Kind(ColumnSpec(T.DATETIME), st.tuples(dates, times_of_day).map(make))


@st.composite
def datetime2_kinds(draw: st.DrawFn) -> Kind:
    fsp = draw(st.integers(0, 6))

    def make(parts: tuple[tuple[int, int, int], tuple[int, int, int], int]) -> tuple[bytes, str]:
        (y, mo, d), (h, mi, s), usec = parts
        usec = truncate(usec, fsp)
        text = f"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}" + frac_text(usec, fsp)
        return encode_datetime2(y, mo, d, h, mi, s, usec, fsp), text

    return Kind(ColumnSpec(T.DATETIME2, fsp), st.tuples(dates, times_of_day, usecs).map(make))


@st.composite
def timestamp_kinds(draw: st.DrawFn) -> Kind:
    fsp = draw(st.integers(0, 6))
    old = draw(st.booleans())
    seconds = st.one_of(st.sampled_from([0, 1, 2**31 - 1, 2**32 - 1]), st.integers(0, 2**32 - 1))

    def make(parts: tuple[int, int]) -> tuple[bytes, str]:
        sec, usec = parts
        usec = truncate(usec, fsp)
        if old:
            return sec.to_bytes(4, "little"), utc_text(sec)
        return sec.to_bytes(4, "big") + frac_bytes(usec, fsp), utc_text(sec) + frac_text(usec, fsp)

    spec = ColumnSpec(T.TIMESTAMP) if old else ColumnSpec(T.TIMESTAMP2, fsp)
    return Kind(spec, st.tuples(seconds, usecs).map(make))


time_parts = st.tuples(st.booleans(), st.integers(0, 838), st.integers(0, 59), st.integers(0, 59))


def time_kind() -> Kind:
    def make(parts: tuple[bool, int, int, int]) -> tuple[bytes, str]:
        neg, h, m, s = parts
        neg = neg and (h or m or s) > 0
        raw = (h * 10_000 + m * 100 + s) * (-1 if neg else 1)
        return raw.to_bytes(3, "little", signed=True), f"{'-' if neg else ''}{h:02d}:{m:02d}:{s:02d}"

    return Kind(ColumnSpec(T.TIME), time_parts.map(make))


@st.composite
def time2_kinds(draw: st.DrawFn) -> Kind:
    fsp = draw(st.integers(0, 6))

    def make(parts: tuple[tuple[bool, int, int, int], int]) -> tuple[bytes, str]:
        (neg, h, m, s), usec = parts
        usec = truncate(usec, fsp)
        neg = neg and (h or m or s or usec) > 0
        text = f"{'-' if neg else ''}{h:02d}:{m:02d}:{s:02d}" + frac_text(usec, fsp)
        return encode_time2(neg, h, m, s, usec, fsp), text

    return Kind(ColumnSpec(T.TIME2, fsp), st.tuples(time_parts, usecs).map(make))


@st.composite
def hires_kinds(draw: st.DrawFn) -> Kind:
    """MariaDB 10.0 TIME(n)/DATETIME(n)/TIMESTAMP(n) with mysql56_temporal_format=OFF."""
    fsp = draw(st.integers(1, 6))
    code = draw(st.sampled_from([T.TIME, T.DATETIME, T.TIMESTAMP]))
    unit = 10 ** (6 - fsp)
    if code == T.TIME:

        def make_time(parts: tuple[tuple[bool, int, int, int], int]) -> tuple[bytes, str]:
            (neg, h, m, s), usec = parts
            usec = truncate(usec, fsp)
            neg = neg and (h or m or s or usec) > 0
            total = ((h * 3600 + m * 60 + s) * 1_000_000 + usec) * (-1 if neg else 1)
            raw = total // unit + 3_020_400 * 10**fsp
            text = f"{'-' if neg else ''}{h:02d}:{m:02d}:{s:02d}" + frac_text(usec, fsp)
            return raw.to_bytes(TIME_HIRES_BYTES[fsp], "big"), text

        return Kind(ColumnSpec(T.TIME, fsp), st.tuples(time_parts, usecs).map(make_time))
    if code == T.DATETIME:

        def make_datetime(parts: tuple[tuple[int, int, int], tuple[int, int, int], int]) -> tuple[bytes, str]:
            (y, mo, d), (h, mi, s), usec = parts
            usec = truncate(usec, fsp)
            packed = (((((y * 13 + mo) * 32 + d) * 24 + h) * 60 + mi) * 60 + s) * 1_000_000 + usec
            text = f"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}" + frac_text(usec, fsp)
            return (packed // unit).to_bytes(DATETIME_HIRES_BYTES[fsp], "big"), text

        return Kind(ColumnSpec(T.DATETIME, fsp), st.tuples(dates, times_of_day, usecs).map(make_datetime))

    def make_timestamp(parts: tuple[int, int]) -> tuple[bytes, str]:
        sec, usec = parts
        usec = truncate(usec, fsp)
        raw = sec.to_bytes(4, "big") + (usec // unit).to_bytes(FRAC_BYTES[fsp], "big")
        return raw, utc_text(sec) + frac_text(usec, fsp)

    return Kind(ColumnSpec(T.TIMESTAMP, fsp), st.tuples(st.integers(0, 2**32 - 1), usecs).map(make_timestamp))


@st.composite
def string_kinds(draw: st.DrawFn) -> Kind:
    code = draw(st.sampled_from([T.VARCHAR, T.STRING, T.BLOB, T.JSON, T.GEOMETRY, T.VECTOR]))
    if code == T.VARCHAR:
        max_length = draw(st.sampled_from([1, 255, 256, 1020, 65535]) | st.integers(1, 65535))
        spec, prefix, longest = ColumnSpec(T.VARCHAR, max_length), (2 if max_length > 255 else 1), max_length
    elif code == T.STRING:  # CHAR/BINARY, up to CHAR(255) in utf8mb4 = 1020 bytes
        length = draw(st.sampled_from([1, 255, 256, 400, 511, 512, 767, 768, 1020]) | st.integers(1, 1020))
        spec, prefix, longest = ColumnSpec(T.STRING, char_meta(length)), (2 if length > 255 else 1), length
    elif code == T.BLOB:
        prefix = draw(st.integers(1, 4))
        spec, longest = ColumnSpec(T.BLOB, prefix), 2 ** (8 * prefix) - 1
    else:
        prefix = 4
        spec, longest = ColumnSpec(code, 4), 2**32 - 1
    data = st.binary(max_size=min(longest, 600))
    return Kind(spec, data.map(lambda b: (len(b).to_bytes(prefix, "little") + b, b)))


def kinds() -> st.SearchStrategy[Kind]:
    return st.one_of(
        int_kinds(),
        decimal_kinds(),
        st.just(float_kind()),
        st.just(double_kind()),
        st.just(year_kind()),
        bit_kinds(),
        enum_set_kinds(),
        st.just(date_kind()),
        st.just(datetime_kind()),
        datetime2_kinds(),
        timestamp_kinds(),
        st.just(time_kind()),
        time2_kinds(),
        hires_kinds(),
        string_kinds(),
    )


@st.composite
def kind_and_value(draw: st.DrawFn) -> tuple[ColumnSpec, bytes, object]:
    kind = draw(kinds())
    raw, expected = draw(kind.values)
    return kind.spec, raw, expected


# ---------------------------------------------------------------------------------------------
# parse_column_metadata
# ---------------------------------------------------------------------------------------------
