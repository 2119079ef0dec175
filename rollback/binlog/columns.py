"""Column values of row images: TABLE_MAP metadata, ColumnSpec and one reader per MySQL type.

The row decoder (``rowdecoder.py``) compiles straight-line code per table signature; this module
holds the facts it compiles from: how wide each value is, and how raw bytes become a value.
The readers here (``read_value`` and the ``read_*`` functions) are the readable reference and
the slow path used to pinpoint errors; the compiled code shares the value converters below.

Value representation (exact, and cheap to render as SQL later):

===========================================  =====================================================
column type (table map code)                 Python value
===========================================  =====================================================
TINY, SHORT, INT24, LONG, LONGLONG           ``int``, signed or unsigned per ``ColumnSpec.unsigned``
YEAR                                         ``int``: 0 stays 0, otherwise 1900 + stored byte
BIT(n)                                       ``int`` (big-endian bits, n from the metadata)
NEWDECIMAL(p, s)                             ``decimal.Decimal`` with exactly ``s`` fractional
                                             digits (``Decimal('1.50')`` for DECIMAL(4,2))
FLOAT                                        ``float``: the stored float32, widened exactly
DOUBLE                                       ``float``
DATE                                         ``str`` ``'YYYY-MM-DD'``
DATETIME, DATETIME2(fsp)                     ``str`` ``'YYYY-MM-DD HH:MM:SS[.f]'``
TIMESTAMP, TIMESTAMP2(fsp)                   ``str``, the stored instant as UTC text in the same
                                             form; the stored 0 is ``'0000-00-00 00:00:00[.0]'``
TIME, TIME2(fsp)                             ``str`` ``'[-]HH:MM:SS[.f]'``, hours may exceed 99
                                             (``'-838:59:59'``)
VARCHAR, VAR_STRING, STRING (CHAR, BINARY)   ``bytes`` as packed by the server: CHAR loses its
                                             trailing spaces and BINARY its trailing NUL bytes
ENUM                                         ``int``: the 1-based index (0 = the '' error value)
SET                                          ``int``: the member bitmask
BLOB / TEXT (all sizes), JSON, GEOMETRY,     ``bytes``: raw payload without its length prefix
VECTOR                                       (JSON = MySQL binary JSON, GEOMETRY = 4-byte SRID LE
                                             + WKB, VECTOR = float32 LE array)
NULL                                         ``None``
column absent from the image (MINIMAL /      ``MISSING``
NOBLOB row images)
===========================================  =====================================================

``[.f]`` is printed with exactly ``fsp`` digits when fsp > 0 and omitted when fsp = 0. Zero and
partially zero dates stay as stored (``'0000-00-00'``, ``'2024-00-15 10:00:00'``); no text goes
through ``datetime``. Strings stay bytes: charsets are a rendering concern, not a decoding one.

MariaDB's pre-10.1 fractional TIME/DATETIME/TIMESTAMP ("hires", written with
``mysql56_temporal_format=OFF``) arrive in the table map as the old codes 11/12/7 *without* any
metadata byte, so the binlog alone cannot tell TIME(3) from TIME. A caller that knows the
column's precision from the schema builds ``ColumnSpec(ColumnType.TIME, meta=fsp)``; a non-zero
``meta`` on TIME/DATETIME/TIMESTAMP selects the hires layout (see ``read_time_hires``).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from typing import Any, Final

from rollback.base.errors import BinlogFormatError
from rollback.binlog.constants import ColumnType as T

__all__ = [
    "MISSING",
    "ColumnSpec",
    "parse_column_metadata",
    "read_value",
]


class _Missing:
    """The value of a column that the row image does not contain."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        return "MISSING"  # pickles (Spark) as a reference to this module's singleton

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()

# MariaDB 10.3+ compressed columns ("Compressed types are only used internally for RBR").
# They are not in ColumnType; their metadata is parsed so that later columns stay aligned.
BLOB_COMPRESSED: Final = 140
VARCHAR_COMPRESSED: Final = 141

# ---------------------------------------------------------------------------------------------
# TABLE_MAP metadata
# ---------------------------------------------------------------------------------------------

# Bytes of metadata per type, as Field_*::do_save_field_metadata writes them and the server's
# table_def constructor (rpl_utility.cc) reads them back.
_META_1: Final = frozenset(
    {
        T.FLOAT,  # pack_length(): 4
        T.DOUBLE,  # pack_length(): 8
        T.BLOB,  # pack_length_no_ptr(): bytes of the length prefix, 1..4
        T.TINY_BLOB,
        T.MEDIUM_BLOB,
        T.LONG_BLOB,
        T.GEOMETRY,  # Field_geom is a Field_blob
        T.JSON,  # Field_json is a Field_blob
        T.VECTOR,  # MySQL 9 Field_vector is a Field_blob with packlength 4
        T.TIMESTAMP2,  # decimals(): fsp 0..6
        T.DATETIME2,
        T.TIME2,
        BLOB_COMPRESSED,
    }
)
# VAR_STRING (pre-5.0.3 VARCHAR) is never a binlog type of current servers; MySQL's table_def
# reads no metadata for it; third-party readers treat it as VARCHAR with 2 bytes, as we do.
_META_2_LE: Final = frozenset({T.VARCHAR, T.VAR_STRING, VARCHAR_COMPRESSED})  # int2store(length)
_META_2_BE: Final = frozenset({T.NEWDECIMAL, T.STRING, T.ENUM, T.SET})  # byte0 << 8 | byte1
_META_0: Final = frozenset(
    {
        T.DECIMAL,
        T.TINY,
        T.SHORT,
        T.LONG,
        T.NULL,
        T.TIMESTAMP,
        T.LONGLONG,
        T.INT24,
        T.DATE,
        T.TIME,
        T.DATETIME,
        T.YEAR,
        T.NEWDATE,
    }
)


def parse_column_metadata(types: bytes, meta_block: bytes, offset: int | None = None) -> tuple[int, ...]:
    """Split the TABLE_MAP metadata block into one int per column (0 for types without any).

    Layout per type (MySQL ``Field_*::do_save_field_metadata``, read back by ``table_def``):

    * FLOAT, DOUBLE: 1 byte, the pack length (4 or 8).
    * BLOB (every TEXT/BLOB size), GEOMETRY, JSON, VECTOR: 1 byte, bytes of the length prefix.
    * TIMESTAMP2, DATETIME2, TIME2: 1 byte, fsp.
    * VARCHAR, VAR_STRING: 2 bytes little-endian, the maximum length in bytes.
    * BIT: 2 bytes, ``bits % 8`` then ``bits / 8``; the int is ``bytes << 8 | bits % 8``.
    * NEWDECIMAL: 2 bytes, precision then scale; the int is ``precision << 8 | scale``.
    * STRING, ENUM, SET: 2 bytes, real type (with CHAR length bits, see ColumnSpec) then
      length or pack length; the int is ``byte0 << 8 | byte1``.
    * every other type: nothing.

    ``offset`` (where ``meta_block`` starts in the file) only improves error messages.
    """
    metas: list[int] = []
    i = 0
    size = len(meta_block)
    for col, code in enumerate(types):
        if code in _META_0:
            metas.append(0)
            continue
        if code in _META_1:
            width = 1
        elif code in _META_2_LE or code in _META_2_BE or code == T.BIT:
            width = 2
        else:
            raise BinlogFormatError(
                None, offset, f"table map column {col + 1} has type code {code}, whose metadata is unknown"
            )
        if i + width > size:
            raise BinlogFormatError(
                None, offset, f"table map metadata block ends inside the metadata of column {col + 1}"
            )
        if width == 1:
            metas.append(meta_block[i])
        elif code in _META_2_BE:
            metas.append(meta_block[i] << 8 | meta_block[i + 1])
        else:  # little-endian: VARCHAR length, BIT (bits % 8, bytes)
            metas.append(meta_block[i] | meta_block[i + 1] << 8)
        i += width
    if i != size:
        raise BinlogFormatError(
            None, offset, f"table map metadata block has {size - i} bytes more than its columns use"
        )
    return tuple(metas)


# ---------------------------------------------------------------------------------------------
# ColumnSpec
# ---------------------------------------------------------------------------------------------

_DIG2BYTES: Final = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_FRAC_BYTES: Final = (0, 1, 1, 2, 2, 3, 3)  # fractional-second bytes of the *2 types, by fsp
_TIME_HIRES_BYTES: Final = (3, 4, 4, 5, 5, 5, 6)  # MariaDB Type_handler_time::m_hires_bytes
_DATETIME_HIRES_BYTES: Final = (5, 6, 6, 7, 7, 7, 8)  # Type_handler_datetime::m_hires_bytes
_TEMPORAL_FSP: Final = frozenset({T.TIMESTAMP2, T.DATETIME2, T.TIME2})
_HIRES_CAPABLE: Final = frozenset({T.TIME, T.DATETIME, T.TIMESTAMP})
_BLOBS: Final = frozenset({T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB, T.GEOMETRY, T.JSON, T.VECTOR})
_FIXED_WIDTH: Final[dict[int, int]] = {
    T.TINY: 1,
    T.SHORT: 2,
    T.INT24: 3,
    T.LONG: 4,
    T.LONGLONG: 8,
    T.FLOAT: 4,
    T.DOUBLE: 8,
    T.YEAR: 1,
    T.DATE: 3,
    T.NEWDATE: 3,
    T.TIME: 3,
    T.DATETIME: 8,
    T.TIMESTAMP: 4,
    T.NULL: 0,
}


def decimal_binary_size(precision: int, scale: int) -> int:
    """Bytes of a NEWDECIMAL(precision, scale): 4 per 9 digits, leftovers per _DIG2BYTES."""
    intg = precision - scale
    return intg // 9 * 4 + _DIG2BYTES[intg % 9] + scale // 9 * 4 + _DIG2BYTES[scale % 9]


def _bad_meta(reason: str) -> BinlogFormatError:
    return BinlogFormatError(None, None, f"table map metadata is invalid: {reason}")


def _derive(code: int, meta: int) -> tuple[int, int, int | None]:
    """(real_type, length, width) of a column; width is None for length-prefixed values."""
    if code in _FIXED_WIDTH:
        if meta and code in _HIRES_CAPABLE:  # MariaDB hires: meta is the fsp, set by the caller
            if meta > 6:
                raise _bad_meta(f"fractional precision {meta} of a type {code} column")
            if code == T.TIME:
                return code, 0, _TIME_HIRES_BYTES[meta]
            if code == T.DATETIME:
                return code, 0, _DATETIME_HIRES_BYTES[meta]
            return code, 0, 4 + _FRAC_BYTES[meta]
        return code, 0, _FIXED_WIDTH[code]
    if code in _TEMPORAL_FSP:
        if meta > 6:
            raise _bad_meta(f"fractional precision {meta} of a type {code} column")
        base = 5 if code == T.DATETIME2 else 4 if code == T.TIMESTAMP2 else 3
        return code, 0, base + _FRAC_BYTES[meta]
    if code == T.NEWDECIMAL:
        precision, scale = meta >> 8, meta & 0xFF
        if not 0 < precision <= 65 or scale > 30 or scale > precision:
            raise _bad_meta(f"DECIMAL({precision},{scale})")
        return code, 0, decimal_binary_size(precision, scale)
    if code == T.BIT:
        nbytes, bits = meta >> 8, meta & 0xFF
        if bits > 7 or nbytes * 8 + bits > 64 or nbytes * 8 + bits == 0:
            raise _bad_meta(f"BIT metadata {meta:#06x}")
        return code, nbytes * 8 + bits, nbytes + (bits > 0)
    if code in (T.STRING, T.ENUM, T.SET):
        if code == T.STRING and meta == 0:  # no metadata (pre-5.1 writers): CHAR of unknown size
            return code, 0, None
        real_type, length = meta >> 8, meta & 0xFF
        if code != T.STRING:
            real_type = code
        elif (real_type & 0x30) != 0x30:
            # CHAR longer than 255 bytes: bits 8-9 of the length are stored inverted in bits
            # 4-5 of the real-type byte (Field_string::do_save_field_metadata).
            length |= ((real_type & 0x30) ^ 0x30) << 4
            real_type |= 0x30
        if real_type not in (T.STRING, T.VAR_STRING, T.ENUM, T.SET):
            # the decoder reads such a column as a string, a renderer would take the type it names
            raise _bad_meta(f"real type {real_type} of a CHAR column")
        if real_type == T.ENUM:
            if length not in (1, 2):
                raise _bad_meta(f"ENUM pack length {length}")
            return real_type, length, length
        if real_type == T.SET:
            if not 1 <= length <= 8:
                raise _bad_meta(f"SET pack length {length}")
            return real_type, length, length
        return real_type, length, None
    if code in (T.VARCHAR, T.VAR_STRING):
        return code, meta, None
    if code in _BLOBS:
        if not 1 <= meta <= 4:
            raise _bad_meta(f"length-prefix size {meta} of a type {code} column")
        return code, meta, None
    # DECIMAL (pre-5.0), compressed and unknown types: decoding their values raises.
    return code, meta, None


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """How to decode one column: decoding facts only, so the decoder cache key stays small.

    ``type`` is the code stored in the table map and ``meta`` the int ``parse_column_metadata``
    made of its metadata. Derived (not part of equality):

    * ``real_type``: STRING columns: ENUM, SET or STRING after the CHAR length quirk;
      otherwise equal to ``type``.
    * ``length``: CHAR/BINARY and VARCHAR: maximum length in bytes (decides a 1- or 2-byte
      length prefix); BLOB/TEXT/JSON/GEOMETRY/VECTOR: bytes of the length prefix;
      ENUM/SET: pack length; BIT: number of bits; otherwise 0.
    * ``width``: bytes of every value of a fixed-width type, None for length-prefixed ones.
    """

    type: int
    meta: int = 0
    unsigned: bool = False
    real_type: int = field(init=False, compare=False)
    length: int = field(init=False, compare=False)
    width: int | None = field(init=False, compare=False)

    def __post_init__(self) -> None:
        real_type, length, width = _derive(self.type, self.meta)
        object.__setattr__(self, "real_type", real_type)
        object.__setattr__(self, "length", length)
        object.__setattr__(self, "width", width)

    @property
    def fsp(self) -> int:
        """Fractional-second digits of TIME2/DATETIME2/TIMESTAMP2 (and MariaDB hires) columns."""
        return self.meta if self.type in _TEMPORAL_FSP or self.type in _HIRES_CAPABLE else 0

    @property
    def precision(self) -> int:
        return self.meta >> 8 if self.type == T.NEWDECIMAL else 0

    @property
    def scale(self) -> int:
        return self.meta & 0xFF if self.type == T.NEWDECIMAL else 0


# ---------------------------------------------------------------------------------------------
# Text of temporal values (shared by the readers and the compiled row decoders)
# ---------------------------------------------------------------------------------------------

_FRAC_DIV: Final = (1, 100_000, 10_000, 1_000, 100, 10, 1)  # usec // this = the fsp digits
_FRAC_FMT: Final = ("", ".%01d", ".%02d", ".%03d", ".%04d", ".%05d", ".%06d")
_FRAC_UNIT: Final = (0, 10_000, 10_000, 100, 100, 1, 1)  # usec per unit of the stored fraction
_CACHE_LIMIT: Final = 1 << 16

# Texts already made, keyed by the raw bits they come from; the compiled row decoders look
# them up inline (``cache.get(key) or miss(key)``) and call the ``*_miss`` function, which
# validates, formats and remembers, only for keys not seen yet.
DATE_CACHE: dict[int, str] = {}  # DATE 24 bits -> 'YYYY-MM-DD'
DT2_DATE_CACHE: dict[int, str] = {}  # DATETIME2 bits ``(year*13 + month) << 5 | day`` -> 'YYYY-MM-DD '
DT2_HMS_CACHE: dict[int, str] = {}  # DATETIME2 bits ``hour << 12 | minute << 6 | second`` -> 'HH:MM:SS'
DAY_CACHE: dict[int, str] = {}  # days since 1970-01-01 -> 'YYYY-MM-DD '
SECOND_CACHE: dict[int, str] = {}  # second of the day -> 'HH:MM:SS'


def _remember(cache: dict[int, str], key: int, text: str) -> str:
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = text
    return text


def _check_date(year: int, month: int, day: int) -> None:
    if year > 9999 or month > 12 or day > 31:
        raise ValueError(f"impossible date {year:04d}-{month:02d}-{day:02d}")


def _check_hms(hour: int, minute: int, second: int, max_hour: int = 23) -> None:
    if hour > max_hour or minute > 59 or second > 59:
        raise ValueError(f"impossible time {hour:02d}:{minute:02d}:{second:02d}")


def _frac_text(usec: int, fsp: int) -> str:
    if usec >= 1_000_000:
        raise ValueError(f"fractional part {usec} exceeds a second")
    return _FRAC_FMT[fsp] % (usec // _FRAC_DIV[fsp])


def date_miss(raw: int) -> str:
    year, month, day = raw >> 9, raw >> 5 & 15, raw & 31
    _check_date(year, month, day)
    return _remember(DATE_CACHE, raw, f"{year:04d}-{month:02d}-{day:02d}")


def date_text(raw: int) -> str:
    """DATE: 3 bytes LE, ``day | month << 5 | year << 9`` (Field_newdate::store_TIME)."""
    return DATE_CACHE.get(raw) or date_miss(raw)


def datetime_text(raw: int) -> str:
    """Old DATETIME: 8 bytes LE, the decimal number YYYYMMDDhhmmss (Field_datetime)."""
    ymd, hms = divmod(raw, 1_000_000)
    year, month, day = ymd // 10_000, ymd // 100 % 100, ymd % 100
    hour, minute, second = hms // 10_000, hms // 100 % 100, hms % 100
    _check_date(year, month, day)
    _check_hms(hour, minute, second)
    return f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}"


def dt2_date_miss(ymd: int) -> str:
    ym = ymd >> 5
    year, month, day = ym // 13, ym % 13, ymd & 31
    _check_date(year, month, day)
    return _remember(DT2_DATE_CACHE, ymd, f"{year:04d}-{month:02d}-{day:02d} ")


def dt2_hms_miss(hms: int) -> str:
    hour, minute, second = hms >> 12, hms >> 6 & 63, hms & 63
    _check_hms(hour, minute, second)
    return _remember(DT2_HMS_CACHE, hms, f"{hour:02d}:{minute:02d}:{second:02d}")


def datetime2_text(raw: int, fsp: int) -> str:
    """DATETIME2(fsp): ``5 + (fsp+1)//2`` bytes, big-endian (my_datetime_packed_from_binary).

    The first 5 bytes hold ``intpart + 0x8000000000`` where intpart is, from the top,
    17 bits ``year * 13 + month``, 5 bits day, 5 bits hour, 6 bits minute, 6 bits second.
    The fraction follows as a signed big-endian int: fsp 1-2 one byte in 1/100 s,
    fsp 3-4 two bytes in 1/10000 s, fsp 5-6 three bytes in microseconds.
    """
    bits = _FRAC_BYTES[fsp] * 8
    intpart = (raw >> bits) - 0x80_0000_0000
    usec = 0
    if bits:
        frac = raw & ((1 << bits) - 1)
        if frac >> (bits - 1):
            frac -= 1 << bits  # signed, as mi_sint*korr reads it
        usec = frac * _FRAC_UNIT[fsp]
    if intpart < 0 or usec < 0:
        raise ValueError("negative DATETIME2 value")
    ymd = intpart >> 17
    hms = intpart & 0x1FFFF
    text = (DT2_DATE_CACHE.get(ymd) or dt2_date_miss(ymd)) + (DT2_HMS_CACHE.get(hms) or dt2_hms_miss(hms))
    return text + _frac_text(usec, fsp) if fsp else text


def day_miss(days: int) -> str:
    tm = time.gmtime(days * 86400)
    return _remember(DAY_CACHE, days, f"{tm.tm_year:04d}-{tm.tm_mon:02d}-{tm.tm_mday:02d} ")


def second_miss(second: int) -> str:
    hour, rest = divmod(second, 3600)
    return _remember(SECOND_CACHE, second, f"{hour:02d}:{rest // 60:02d}:{rest % 60:02d}")


def timestamp_text(seconds: int, usec: int, fsp: int) -> str:
    """A TIMESTAMP instant (seconds since the epoch) as UTC text; 0 is the zero date."""
    if seconds == 0:
        text = "0000-00-00 00:00:00"
    else:
        days, rest = divmod(seconds, 86400)
        text = (DAY_CACHE.get(days) or day_miss(days)) + (SECOND_CACHE.get(rest) or second_miss(rest))
    return text + _frac_text(usec, fsp) if fsp else text


def timestamp2_text(raw: int, fsp: int) -> str:
    """TIMESTAMP2(fsp): 4 bytes big-endian seconds, then the fraction big-endian as in DATETIME2
    (fsp 1-2: 1 byte of 1/100 s, 3-4: 2 bytes of 1/10000 s, 5-6: 3 bytes of usec)."""
    bits = _FRAC_BYTES[fsp] * 8
    frac = raw & ((1 << bits) - 1)
    usec = frac * _FRAC_UNIT[fsp]
    return timestamp_text(raw >> bits, usec, fsp)


def time_text(raw: int) -> str:
    """Old TIME: 3 bytes LE signed, the decimal number ``±(hours * 10000 + MM * 100 + SS)``."""
    sign = "-" if raw < 0 else ""
    raw = abs(raw)
    hour, minute, second = raw // 10_000, raw // 100 % 100, raw % 100
    _check_hms(hour, minute, second, max_hour=838)
    return f"{sign}{hour:02d}:{minute:02d}:{second:02d}"


def _packed_time_text(packed: int, fsp: int) -> str:
    """MySQL's in-memory packed TIME (``hms << 24 | usec``, negated when negative) as text."""
    sign = ""
    if packed < 0:
        sign, packed = "-", -packed
    hms, usec = packed >> 24, packed & 0xFFFFFF
    hour, minute, second = hms >> 12 & 0x3FF, hms >> 6 & 63, hms & 63
    _check_hms(hour, minute, second, max_hour=1023)
    text = f"{sign}{hour:02d}:{minute:02d}:{second:02d}"
    return text + _frac_text(usec, fsp) if fsp else text


def time2_text(raw: int, fsp: int) -> str:
    """TIME2(fsp): ``3 + (fsp+1)//2`` bytes big-endian (my_time_packed_from_binary).

    fsp 0: 3 bytes, ``hms + 0x800000`` where hms is 1 unused bit, 10 bits hour, 6 bits minute,
    6 bits second. fsp 1-2 and 3-4: those 3 bytes, then an unsigned fraction byte (1/100 s) or
    two bytes (1/10000 s); a negative value with a non-zero fraction stores the fraction
    counted back from the next whole second, so the reader borrows: ``intpart += 1`` and
    ``frac -= 0x100`` (``0x10000``). fsp 5-6: the 6 bytes are ``(hms << 24 | usec) +
    0x800000000000`` as a whole.
    """
    if fsp >= 5:
        return _packed_time_text(raw - 0x8000_0000_0000, fsp)
    bits = _FRAC_BYTES[fsp] * 8
    intpart = (raw >> bits) - 0x80_0000
    frac = raw & ((1 << bits) - 1)
    if intpart < 0 and frac:
        intpart += 1
        frac -= 1 << bits
    return _packed_time_text((intpart << 24) + frac * _FRAC_UNIT[fsp], fsp)


def time_hires_text(raw: int, fsp: int) -> str:
    """MariaDB hires TIME(fsp): ``(3,4,4,5,5,5,6)[fsp]`` bytes big-endian unsigned holding
    ``total_usec / 10**(6-fsp) + zero_point`` where total_usec is the signed value in
    microseconds and zero_point = ``(838*3600 + 59*60 + 59 + 1) * 10**fsp``."""
    packed = (raw - 3_020_400 * 10**fsp) * 10 ** (6 - fsp)
    sign = ""
    if packed < 0:
        sign, packed = "-", -packed
    seconds, usec = divmod(packed, 1_000_000)
    if seconds >= 13 * 32 * 86400:
        raise ValueError("MariaDB TIME value out of range")
    hour, rest = divmod(seconds, 3600)
    return f"{sign}{hour:02d}:{rest // 60:02d}:{rest % 60:02d}" + _frac_text(usec, fsp)


def datetime_hires_text(raw: int, fsp: int) -> str:
    """MariaDB hires DATETIME(fsp): ``(5,6,6,7,7,7,8)[fsp]`` bytes big-endian holding
    ``pack_time() / 10**(6-fsp)`` where pack_time is
    ``((((((year*13 + month)*32 + day)*24 + hour)*60 + minute)*60 + second)*10**6 + usec``."""
    packed = raw * 10 ** (6 - fsp)
    packed, usec = divmod(packed, 1_000_000)
    packed, second = divmod(packed, 60)
    packed, minute = divmod(packed, 60)
    packed, hour = divmod(packed, 24)
    packed, day = divmod(packed, 32)
    year, month = divmod(packed, 13)
    _check_date(year, month, day)
    text = f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}"
    return text + _frac_text(usec, fsp)


def timestamp_hires_text(raw: int, fsp: int) -> str:
    """MariaDB hires TIMESTAMP(fsp): 4 bytes big-endian seconds, then
    ``usec / 10**(6-fsp)`` big-endian in ``(0,1,1,2,2,3,3)[fsp]`` bytes."""
    bits = _FRAC_BYTES[fsp] * 8
    return timestamp_text(raw >> bits, (raw & ((1 << bits) - 1)) * 10 ** (6 - fsp), fsp)


# ---------------------------------------------------------------------------------------------
# DECIMAL
# ---------------------------------------------------------------------------------------------


def decimal_groups(precision: int, scale: int) -> tuple[tuple[int, int], ...]:
    """(bytes, digits) of each digit group of a NEWDECIMAL, in storage order."""
    intg = precision - scale
    digits = [intg % 9] + [9] * (intg // 9) + [9] * (scale // 9) + [scale % 9]
    return tuple((_DIG2BYTES[d], d) for d in digits if d)


@cache
def decimal_converter(precision: int, scale: int) -> Callable[..., Decimal]:
    """A function of the digit-group ints (storage order, as stored) to the Decimal value.

    NEWDECIMAL is MySQL's binary decimal (strings/decimal.c decimal2bin), big-endian:
    integer digits then fraction digits in groups of 9 decimal digits per 4 bytes; the integer
    part starts with its leftover digits (``intg % 9``), the fraction ends with its leftover
    digits (``scale % 9``), each leftover group in ``[0,1,1,2,2,3,3,4,4,4][digits]`` bytes.
    The top bit of the first byte is flipped (set for values >= 0) and a negative value has
    every byte inverted as well. The Decimal has exactly ``scale`` fractional digits.

    The function is generated per (precision, scale) because DECIMAL columns are common and
    a generic loop over the groups costs twice as much.
    """
    groups = decimal_groups(precision, scale)
    names = [f"g{k}" for k in range(len(groups))]
    top = 1 << (groups[0][0] * 8 - 1)
    unscaled = names[0]
    for name, (_, digits) in zip(names[1:], groups[1:], strict=True):
        unscaled = f"({unscaled}) * {10**digits} + {name}"
    checks = " or ".join(f"{name} >= {10**digits}" for name, (_, digits) in zip(names, groups, strict=True))
    text = f"%dE-{scale}" if scale else "%d"
    inverts = [f"{names[0]} ^= {top - 1}"] + [
        f"{name} ^= {(1 << (nbytes * 8)) - 1}"
        for name, (nbytes, _) in zip(names[1:], groups[1:], strict=True)
    ]
    lines = [
        f"def convert({', '.join(names)}):",
        f"    if {names[0]} >= {top}:",
        f"        {names[0]} -= {top}",
        f"        if {checks}:",
        "            raise ValueError('DECIMAL digit group out of range')",
        f"        return Decimal('{text}' % ({unscaled}))",
        *(f"    {line}" for line in inverts),
        f"    if {checks}:",
        "        raise ValueError('DECIMAL digit group out of range')",
        f"    return Decimal('-{text}' % ({unscaled}))",
    ]
    namespace: dict[str, Any] = {"Decimal": Decimal}
    exec("\n".join(lines), namespace)
    convert: Callable[..., Decimal] = namespace["convert"]
    return convert


def decimal_value(raw: bytes, precision: int, scale: int) -> Decimal:
    """The NEWDECIMAL(precision, scale) value of its ``decimal_binary_size`` stored bytes."""
    values = []
    pos = 0
    for nbytes, _ in decimal_groups(precision, scale):
        values.append(int.from_bytes(raw[pos : pos + nbytes], "big"))
        pos += nbytes
    return decimal_converter(precision, scale)(*values)


# ---------------------------------------------------------------------------------------------
# Readers: (buf, pos, spec) -> (value, position after the value)
# ---------------------------------------------------------------------------------------------

_F32: Final = struct.Struct("<f")
_F64: Final = struct.Struct("<d")


def _le(buf: bytes, pos: int, n: int, signed: bool = False) -> int:
    if pos + n > len(buf):
        raise IndexError("value runs past the buffer")
    return int.from_bytes(buf[pos : pos + n], "little", signed=signed)


def _be(buf: bytes, pos: int, n: int) -> int:
    if pos + n > len(buf):
        raise IndexError("value runs past the buffer")
    return int.from_bytes(buf[pos : pos + n], "big")


def read_int(buf: bytes, pos: int, spec: ColumnSpec) -> tuple[int, int]:
    """TINY/SHORT/INT24/LONG/LONGLONG: 1/2/3/4/8 bytes, little-endian two's complement."""
    n = spec.width or 0
    return _le(buf, pos, n, signed=not spec.unsigned), pos + n


def read_year(buf: bytes, pos: int, spec: ColumnSpec) -> tuple[int, int]:
    """YEAR: 1 byte, year - 1900; 0 is the zero year 0000 (Field_year)."""
    b = _le(buf, pos, 1)
    return (b + 1900 if b else 0), pos + 1


def read_float(buf: bytes, pos: int, spec: ColumnSpec) -> tuple[float, int]:
    """FLOAT: 4 bytes IEEE-754 single, little-endian (float4store)."""
    return finite(_F32.unpack_from(buf, pos)[0]), pos + 4


def read_double(buf: bytes, pos: int, spec: ColumnSpec) -> tuple[float, int]:
    """DOUBLE: 8 bytes IEEE-754 double, little-endian (float8store)."""
    return finite(_F64.unpack_from(buf, pos)[0]), pos + 8


def finite(value: float) -> float:
    """The value, unless it is NaN or an infinity: MySQL and MariaDB store neither in a FLOAT or DOUBLE
    column (the statement fails), so such bytes are not a server's, and no SQL literal writes them."""
    if value - value == 0.0:  # false for NaN and both infinities
        return value
    raise ValueError(f"{value!r} is not a number a FLOAT or DOUBLE column can hold")


def read_newdecimal(buf: bytes, pos: int, spec: ColumnSpec) -> tuple[Decimal, int]:
    """NEWDECIMAL: ``decimal_binary_size(p, s)`` bytes, see ``decimal_converter``."""
    size = spec.width or 0
    if pos + size > len(buf):
        raise IndexError("value runs past the buffer")
    return decimal_value(buf[pos : pos + size], spec.precision, spec.scale), pos + size


def read_bit(buf: bytes, pos: int, spec: ColumnSpec) -> tuple[int, int]:
    """BIT(n): ``n // 8 + (n % 8 > 0)`` bytes, big-endian; the odd bits come first
    (Field_bit::pack writes the uneven high bits, then the whole bytes)."""
    n = spec.width or 0
    return _be(buf, pos, n), pos + n


def read_enum_set(buf: bytes, pos: int, spec: ColumnSpec) -> tuple[int, int]:
    """ENUM: 1 or 2 bytes LE index; SET: 1..8 bytes LE bitmask (the metadata's pack length)."""
    n = spec.width or 0
    return _le(buf, pos, n), pos + n


def read_date(buf: bytes, pos: int, spec: ColumnSpec) -> tuple[str, int]:
    return date_text(_le(buf, pos, 3)), pos + 3


def read_time(buf: bytes, pos: int, spec: ColumnSpec) -> tuple[str, int]:
    if spec.meta:
        return read_time_hires(buf, pos, spec)
    return time_text(_le(buf, pos, 3, signed=True)), pos + 3


def read_datetime(buf: bytes, pos: int, spec: ColumnSpec) -> tuple[str, int]:
    if spec.meta:
        return read_datetime_hires(buf, pos, spec)
    return datetime_text(_le(buf, pos, 8)), pos + 8


def read_timestamp(buf: bytes, pos: int, spec: ColumnSpec) -> tuple[str, int]:
    """Old TIMESTAMP: 4 bytes LE seconds since the epoch (Field_timestamp, int4store)."""
    if spec.meta:
        return read_timestamp_hires(buf, pos, spec)
    return timestamp_text(_le(buf, pos, 4), 0, 0), pos + 4


ColumnReader = Callable[[bytes, int, ColumnSpec], tuple[str, int]]


def _big_endian_temporal(text: Callable[[int, int], str]) -> ColumnReader:
    """A reader of the temporal types stored as one big-endian integer of `spec.width` bytes, given
    the function that turns (integer, fractional digits) into its text."""

    def read(buf: bytes, pos: int, spec: ColumnSpec) -> tuple[str, int]:
        n = spec.width or 0
        return text(_be(buf, pos, n), spec.meta), pos + n

    return read


read_datetime2 = _big_endian_temporal(datetime2_text)
read_timestamp2 = _big_endian_temporal(timestamp2_text)
read_time2 = _big_endian_temporal(time2_text)
read_time_hires = _big_endian_temporal(time_hires_text)
read_datetime_hires = _big_endian_temporal(datetime_hires_text)
read_timestamp_hires = _big_endian_temporal(timestamp_hires_text)


def string_prefix_size(spec: ColumnSpec) -> int:
    """Bytes of the length prefix in front of a string value of this column."""
    if spec.type in _BLOBS:
        return spec.meta
    return 2 if spec.length > 255 else 1


def read_string(buf: bytes, pos: int, spec: ColumnSpec) -> tuple[bytes, int]:
    """VARCHAR/VAR_STRING and CHAR/BINARY: a 1-byte length, or 2 bytes LE when the column's
    maximum length in bytes exceeds 255, then the bytes (Field_varstring/Field_string::pack).
    BLOB/TEXT, JSON, GEOMETRY, VECTOR: a ``meta``-byte LE length (1..4), then the bytes."""
    prefix = string_prefix_size(spec)
    n = _le(buf, pos, prefix)
    start = pos + prefix
    if start + n > len(buf):
        raise IndexError("value runs past the buffer")
    return buf[start : start + n], start + n


def read_null_type(buf: bytes, pos: int, spec: ColumnSpec) -> tuple[None, int]:
    """MYSQL_TYPE_NULL: no bytes."""
    return None, pos


_UNSUPPORTED: Final[dict[int, str]] = {
    T.DECIMAL: "pre-5.0 DECIMAL (type 0) columns are not supported; ALTER the table to convert them",
    BLOB_COMPRESSED: "MariaDB compressed BLOB/TEXT columns are not supported",
    VARCHAR_COMPRESSED: "MariaDB compressed VARCHAR columns are not supported",
}


def unsupported_reason(spec: ColumnSpec) -> str | None:
    """Why values of this column cannot be decoded, or None when they can."""
    if spec.type in _READERS or spec.type == T.STRING:
        return None
    return _UNSUPPORTED.get(spec.type, f"column type code {spec.type} is not supported")


_READERS: Final[dict[int, Callable[[bytes, int, ColumnSpec], tuple[Any, int]]]] = {
    T.TINY: read_int,
    T.SHORT: read_int,
    T.INT24: read_int,
    T.LONG: read_int,
    T.LONGLONG: read_int,
    T.YEAR: read_year,
    T.FLOAT: read_float,
    T.DOUBLE: read_double,
    T.NEWDECIMAL: read_newdecimal,
    T.BIT: read_bit,
    T.DATE: read_date,
    T.NEWDATE: read_date,
    T.TIME: read_time,
    T.DATETIME: read_datetime,
    T.TIMESTAMP: read_timestamp,
    T.TIME2: read_time2,
    T.DATETIME2: read_datetime2,
    T.TIMESTAMP2: read_timestamp2,
    T.VARCHAR: read_string,
    T.VAR_STRING: read_string,
    T.BLOB: read_string,
    T.TINY_BLOB: read_string,
    T.MEDIUM_BLOB: read_string,
    T.LONG_BLOB: read_string,
    T.JSON: read_string,
    T.GEOMETRY: read_string,
    T.VECTOR: read_string,
    T.ENUM: read_enum_set,
    T.SET: read_enum_set,
    T.NULL: read_null_type,
}


def read_value(spec: ColumnSpec, buf: bytes, pos: int) -> tuple[object, int]:
    """Read one non-NULL value of ``spec`` at ``pos``: (value, position after it).

    Raises IndexError/struct.error when the value runs past ``buf``, ValueError for bytes that
    are not a valid value and BinlogFormatError for unsupported types.
    """
    if spec.type == T.STRING:
        if spec.real_type in (T.ENUM, T.SET):
            return read_enum_set(buf, pos, spec)
        return read_string(buf, pos, spec)
    reader = _READERS.get(spec.type)
    if reader is None:
        raise BinlogFormatError(None, pos, unsupported_reason(spec) or "unsupported column")
    return reader(buf, pos, spec)
