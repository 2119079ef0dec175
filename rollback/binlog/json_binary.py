"""MySQL's binary JSON (the value of a JSON column in a row image) to JSON text.

The text is what MySQL itself prints for the value (``SELECT json_col``,
``mysqlbinlog -v``): ``{"a": 1, "b": [1, 2]}`` with ", " and ": " separators,
object members in stored order (MySQL stores them sorted by key length, then
bytes), strings escaped like ``double_quote()`` in sql-common/json_dom.cc, doubles
like ``my_gcvt()`` plus ".0" for integral values, DECIMAL as a bare number,
temporal values as quoted strings, other opaque values as
``"base64:typeNN:..."``. Layout facts from sql-common/json_binary.cc:

    doc       := type:1 value
    object    := count size key-entry* value-entry* key* value*
    array     := count size value-entry* value*
    count, size, offsets: 2 bytes LE (small format) or 4 bytes LE (large format);
    offsets are relative to the first byte after the container's type byte
    key-entry := key-offset key-length:2
    value-entry := type:1 (offset | inlined value)
        inlined: literal, int16, uint16 always; int32, uint32 in large containers
    string    := varlen bytes      (varlen: 7 bits a byte, low first, high bit = more)
    opaque    := field-type:1 varlen bytes
        NEWDECIMAL: precision:1 scale:1 binary-decimal
        DATE, TIME, DATETIME, TIMESTAMP: 8-byte LE packed longlong

A zero-length value is the JSON null literal: ``json_binary::parse_binary()``
reads it so (MySQL writes it for NULL forced into a NOT NULL JSON column under
INSERT IGNORE or a non-strict sql_mode).

PARTIAL_UPDATE_ROWS (binlog_row_value_options=PARTIAL_JSON) logs JSON columns
as diff vectors (sql/json_diff.cc): op:1 (0 REPLACE, 1 INSERT, 2 REMOVE),
lenenc path length, path text, and unless REMOVE, lenenc value length and a
binary JSON value. :func:`decode_json_diff` reads them and
:func:`apply_json_diffs` replays them on the before image's document.
"""

from __future__ import annotations

import base64
import json
import math
import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NoReturn

from rollback.base.errors import BinlogFormatError
from rollback.binlog.constants import ColumnType

__all__ = ["JsonDiff", "MAX_DEPTH", "apply_json_diffs", "decode_json", "decode_json_diff"]

MAX_DEPTH = 100  # JSON_DOCUMENT_MAX_DEPTH: arrays/objects nested deeper are refused, as MySQL does

_SMALL_OBJECT, _LARGE_OBJECT, _SMALL_ARRAY, _LARGE_ARRAY = 0x0, 0x1, 0x2, 0x3
_LITERAL, _INT16, _UINT16, _INT32, _UINT32, _INT64, _UINT64 = 0x4, 0x5, 0x6, 0x7, 0x8, 0x9, 0xA
_DOUBLE, _STRING, _OPAQUE = 0xB, 0xC, 0xF
_LITERALS = ("null", "true", "false")

_COUNT_SIZE = (struct.Struct("<HH"), struct.Struct("<II"))  # indexed by large
_KEY_ENTRY = (struct.Struct("<HH"), struct.Struct("<IH"))  # offset, length
_VALUE_ENTRY = (struct.Struct("<BH"), struct.Struct("<BI"))  # type, offset or inlined value
_SCALARS = {
    _INT16: struct.Struct("<h"),
    _UINT16: struct.Struct("<H"),
    _INT32: struct.Struct("<i"),
    _UINT32: struct.Struct("<I"),
    _INT64: struct.Struct("<q"),
    _UINT64: struct.Struct("<Q"),
}
_DOUBLE_LE = struct.Struct("<d")
_TEMPORAL_TYPES = frozenset({ColumnType.DATE, ColumnType.TIME, ColumnType.DATETIME, ColumnType.TIMESTAMP})
_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)  # bytes of a binary-decimal group of n digits


def _fail(offset: int | None, reason: str) -> NoReturn:
    raise BinlogFormatError(None, offset, reason)


# ---------------------------------------------------------------- text output


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPES.update({chr(c): f"\\u{c:04x}" for c in range(0x20) if chr(c) not in _ESCAPES})
_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f"\\]')


def _quote(text: str) -> str:
    """Double-quote like MySQL's double_quote(): only '"', '\\' and U+0000..U+001F are escaped."""
    if _NEEDS_ESCAPE.search(text) is None:
        return f'"{text}"'
    return '"' + _NEEDS_ESCAPE.sub(lambda m: _ESCAPES[m.group()], text) + '"'


def _format_double(value: float) -> str:
    """A double as MySQL's JSON printer writes it: my_gcvt(width 34), then ".0" if integral.

    The digits are the shortest that round-trip (dtoa mode 4 with more digits allowed
    than a double ever needs, the same digits as Python's repr). Fixed notation is used
    for decimal exponents -14..15 and when every digit is needed before the point
    anyway; otherwise "d.ddde[-]x".
    """
    text = repr(value)
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exponent = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    significant = digits.lstrip("0")
    if not significant:
        return sign + "0.0"
    decpt = len(whole) + (int(exponent) if exponent else 0) - (len(digits) - len(significant))
    digits = significant.rstrip("0")
    count = len(digits)
    if decpt >= -14 and (decpt <= 15 or count > decpt):
        if decpt <= 0:
            return f"{sign}0.{'0' * -decpt}{digits}"
        if decpt >= count:
            return f"{sign}{digits}{'0' * (decpt - count)}.0"
        return f"{sign}{digits[:decpt]}.{digits[decpt:]}"
    more = "." + digits[1:] if count > 1 else ""
    return f"{sign}{digits[0]}{more}e{decpt - 1}"


def _two(value: int) -> str:
    """format_two_digits() of my_time.cc: values out of 0..99 print as "00"."""
    return f"{value:02d}" if value < 100 else "00"


def _temporal_text(field_type: int, data: bytes, offset: int) -> str:
    """A packed temporal longlong (TIME_to_longlong_*_packed) as my_TIME_to_str(dec=6) prints it."""
    if len(data) != 8:
        _fail(offset, f"JSON temporal value of {len(data)} bytes (8 expected)")
    packed = int.from_bytes(data, "little", signed=True)
    negative = packed < 0
    packed = -packed if negative else packed
    usec, whole = packed % (1 << 24), packed >> 24
    if usec > 999_999:
        _fail(offset, f"JSON temporal value with {usec} microseconds")
    if field_type == ColumnType.TIME:
        hours, minutes, seconds = (whole >> 12) % 1024, (whole >> 6) % 64, whole % 64
        return f'"{"-" if negative else ""}{hours:02d}:{_two(minutes)}:{_two(seconds)}.{usec:06d}"'
    ymd, hms = whole >> 17, whole % (1 << 17)
    year, month, day = (ymd >> 5) // 13, (ymd >> 5) % 13, ymd % 32
    date = f"{_two(year // 100)}{_two(year % 100)}-{_two(month)}-{_two(day)}"
    if field_type == ColumnType.DATE:
        return f'"{date}"'
    hours, minutes, seconds = hms >> 12, (hms >> 6) % 64, hms % 64
    return f'"{date} {_two(hours)}:{_two(minutes)}:{_two(seconds)}.{usec:06d}"'


def _decimal_text(data: bytes, offset: int) -> str:
    """precision:1 scale:1 then MySQL's binary decimal (decimal2bin), printed like decimal2string()."""
    if len(data) < 2:
        _fail(offset, "JSON DECIMAL without precision and scale")
    precision, scale = data[0], data[1]
    if not (1 <= precision <= 65 and scale <= min(precision, 30)):
        _fail(offset, f"JSON DECIMAL({precision},{scale}) out of range")
    int_full, int_lead = divmod(precision - scale, 9)
    frac_full, frac_tail = divmod(scale, 9)
    size = _DIG2BYTES[int_lead] + 4 * (int_full + frac_full) + _DIG2BYTES[frac_tail]
    if len(data) - 2 != size:
        _fail(offset, f"JSON DECIMAL({precision},{scale}) of {len(data) - 2} bytes ({size} expected)")
    raw = int.from_bytes(data[2:], "big") ^ (1 << (8 * size - 1))  # the sign bit is stored inverted
    negative = not data[2] & 0x80
    if negative:
        raw ^= (1 << (8 * size)) - 1  # negative values are stored with every bit inverted
    groups: list[tuple[int, int]] = []  # (bytes, digits) from the most significant end
    if int_lead:
        groups.append((_DIG2BYTES[int_lead], int_lead))
    groups += [(4, 9)] * (int_full + frac_full)
    if frac_tail:
        groups.append((_DIG2BYTES[frac_tail], frac_tail))
    shift, digits = 8 * size, []
    for nbytes, ndigits in groups:
        shift -= 8 * nbytes
        group = (raw >> shift) & ((1 << (8 * nbytes)) - 1)
        if group >= 10**ndigits:
            _fail(offset, f"JSON DECIMAL group {group} has more than {ndigits} digits")
        digits.append(f"{group:0{ndigits}d}")
    text = "".join(digits)
    whole, fraction = text[: len(text) - scale].lstrip("0") or "0", text[len(text) - scale :]
    return ("-" if negative else "") + whole + ("." + fraction if scale else "")


def _opaque_text(field_type: int, data: bytes, offset: int) -> str:
    if field_type == ColumnType.NEWDECIMAL:
        return _decimal_text(data, offset)
    if field_type in _TEMPORAL_TYPES:
        return _temporal_text(field_type, data, offset)
    if field_type == ColumnType.VAR_STRING:  # wrapper_to_string(): printed as a plain JSON string
        return _quote(_utf8(data, offset))
    encoded = base64.b64encode(data).decode("ascii")
    if len(encoded) > 76:  # MySQL's base64_encode() breaks lines every 76 characters
        encoded = "\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))
    return _quote(f"base64:type{field_type}:{encoded}")


def _utf8(data: bytes, offset: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        _fail(offset + exc.start, "JSON string is not valid UTF-8")


# ---------------------------------------------------------------- binary reader


class _Reader:
    """Walks one binary JSON document held in ``buf``; every offset it reports is an index into ``buf``.

    ``budget`` is the number of bytes the document may still consume: headers, keys
    and scalars of a well-formed document occupy disjoint bytes, so a document whose
    entries point at shared bytes (which could print exponentially much) runs out.
    """

    __slots__ = ("buf", "budget")

    def __init__(self, buf: bytes, budget: int):
        self.buf = buf
        self.budget = budget

    def spend(self, nbytes: int, offset: int) -> None:
        self.budget -= nbytes
        if self.budget < 0:
            _fail(offset, "JSON entries point at bytes already used by another value")

    def varlen(self, pos: int, end: int) -> tuple[int, int]:
        """read_variable_length(): at most 5 bytes, 7 bits each, least significant first."""
        buf = self.buf
        if pos < end and buf[pos] < 0x80:
            return buf[pos], pos + 1
        length = 0
        for i in range(5):
            if pos + i >= end:
                _fail(pos, "truncated JSON length")
            byte = buf[pos + i]
            length |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                if length > 0xFFFFFFFF:
                    break
                return length, pos + i + 1
        _fail(pos, "malformed JSON length")

    def value(self, type_: int, pos: int, end: int, depth: int, out: list[str]) -> None:
        """Append the text of the value of ``type_`` whose bytes start at ``pos`` and may run to ``end``."""
        if type_ <= _LARGE_ARRAY:
            self.container(type_, pos, end, depth, out)
            return
        buf = self.buf
        if type_ == _STRING:
            length, start = self.varlen(pos, end)
            if length > end - start:
                _fail(pos, f"JSON string of {length} bytes overruns its container")
            self.spend(start - pos + length, pos)
            out.append(_quote(_utf8(buf[start : start + length], start)))
        elif type_ in _SCALARS:
            unpacker = _SCALARS[type_]
            if unpacker.size > end - pos:
                _fail(pos, "truncated JSON number")
            self.spend(unpacker.size, pos)
            out.append(str(unpacker.unpack_from(buf, pos)[0]))
        elif type_ == _DOUBLE:
            if end - pos < 8:
                _fail(pos, "truncated JSON double")
            self.spend(8, pos)
            number = _DOUBLE_LE.unpack_from(buf, pos)[0]
            if not math.isfinite(number):
                _fail(pos, "JSON double is not finite")
            out.append(_format_double(number))
        elif type_ == _LITERAL:
            if pos >= end or buf[pos] > 2:
                _fail(pos, "bad JSON literal")
            self.spend(1, pos)
            out.append(_LITERALS[buf[pos]])
        elif type_ == _OPAQUE:
            if pos >= end:
                _fail(pos, "truncated JSON opaque value")
            length, start = self.varlen(pos + 1, end)
            if length > end - start:
                _fail(pos, f"JSON opaque value of {length} bytes overruns its container")
            self.spend(start - pos + length, pos)
            out.append(_opaque_text(buf[pos], bytes(buf[start : start + length]), start))
        else:
            _fail(pos, f"unknown JSON value type 0x{type_:02x}")

    def container(self, type_: int, pos: int, end: int, depth: int, out: list[str]) -> None:
        large = type_ in (_LARGE_OBJECT, _LARGE_ARRAY)
        is_object = type_ in (_SMALL_OBJECT, _LARGE_OBJECT)
        buf = self.buf
        offset_size = 4 if large else 2
        if end - pos < 2 * offset_size:
            _fail(pos, "truncated JSON array or object header")
        count, size = _COUNT_SIZE[large].unpack_from(buf, pos)
        if size > end - pos:
            _fail(pos, f"JSON array or object of {size} bytes overruns the {end - pos} available")
        depth += 1
        if depth > MAX_DEPTH:
            _fail(pos, f"JSON nested deeper than {MAX_DEPTH} levels")
        key_entry, value_entry = _KEY_ENTRY[large], _VALUE_ENTRY[large]
        keys_at = pos + 2 * offset_size
        values_at = keys_at + (count * key_entry.size if is_object else 0)
        header = values_at + count * value_entry.size - pos
        if header > size:
            _fail(pos, f"JSON array or object of {count} elements does not fit in {size} bytes")
        self.spend(header, pos)
        limit = pos + size
        entries = value_entry.iter_unpack(buf[values_at : values_at + count * value_entry.size])
        key_entries = key_entry.iter_unpack(buf[keys_at:values_at])
        out.append("{" if is_object else "[")
        for index, (child_type, word) in enumerate(entries):
            if index:
                out.append(", ")
            if is_object:
                key_offset, key_length = next(key_entries)
                if key_offset < header or key_offset + key_length > size:
                    _fail(keys_at + index * key_entry.size, "JSON object key outside its object")
                self.spend(key_length, pos + key_offset)
                key = buf[pos + key_offset : pos + key_offset + key_length]
                out.append(_quote(_utf8(key, pos + key_offset)) + ": ")
            entry_at = values_at + index * value_entry.size
            if child_type == _LITERAL:
                if word & 0xFF > 2:
                    _fail(entry_at, "bad JSON literal")
                out.append(_LITERALS[word & 0xFF])
            elif child_type == _INT16:
                out.append(str((word & 0xFFFF) - ((word & 0x8000) << 1)))
            elif child_type == _UINT16:
                out.append(str(word & 0xFFFF))
            elif large and child_type == _INT32:
                out.append(str(word - ((word & 0x80000000) << 1)))
            elif large and child_type == _UINT32:
                out.append(str(word))
            else:
                if word > size or word < entry_at - pos + value_entry.size:
                    _fail(entry_at, f"JSON value offset {word} outside its array or object")
                self.value(child_type, pos + word, limit, depth, out)
        out.append("}" if is_object else "]")

    def document(self, start: int, end: int) -> str:
        if start == end:
            return "null"
        out: list[str] = []
        self.value(self.buf[start], start + 1, end, 0, out)
        return "".join(out)


def decode_json(data: bytes | memoryview) -> str:
    """The binary JSON ``data`` (a JSON column's value without its length prefix) as MySQL prints it.

    Raises BinlogFormatError(None, offset within ``data``, reason) for malformed input.
    Bytes after the end of the top-level value are ignored, as MySQL does.
    """
    buf = data if isinstance(data, bytes) else bytes(data)
    return _Reader(buf, len(buf)).document(0, len(buf))


# ---------------------------------------------------------------- partial JSON updates

_OPERATIONS = ("REPLACE", "INSERT", "REMOVE")


@dataclass(frozen=True, slots=True)
class JsonDiff:
    """One change of a PARTIAL_JSON update: ``op`` is REPLACE, INSERT or REMOVE, ``value`` is JSON text."""

    op: str
    path: str
    value: str | None


def _lenenc(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """A length-encoded integer (net_field_length): < 0xfb itself, 0xfc/0xfd/0xfe + 2/3/8 bytes LE."""
    if pos >= end:
        _fail(pos, "truncated JSON diff length")
    first = buf[pos]
    if first < 0xFB:
        return first, pos + 1
    width = {0xFC: 2, 0xFD: 3, 0xFE: 8}.get(first)
    if width is None:
        _fail(pos, f"bad JSON diff length prefix 0x{first:02x}")
    if pos + 1 + width > end:
        _fail(pos, "truncated JSON diff length")
    return int.from_bytes(buf[pos + 1 : pos + 1 + width], "little"), pos + 1 + width


def decode_json_diff(data: bytes | memoryview) -> list[JsonDiff]:
    """The diffs of a PARTIAL_JSON column value; ``data`` is what follows its 4-byte length prefix."""
    buf = data if isinstance(data, bytes) else bytes(data)
    pos, end = 0, len(buf)
    diffs = []
    while pos < end:
        operation = buf[pos]
        if operation >= len(_OPERATIONS):
            _fail(pos, f"unknown JSON diff operation {operation}")
        length, path_at = _lenenc(buf, pos + 1, end)
        if length > end - path_at:
            _fail(pos + 1, f"JSON diff path of {length} bytes overruns the value")
        path = _utf8(buf[path_at : path_at + length], path_at)
        try:
            _parse_path(path)
        except BinlogFormatError as exc:
            _fail(path_at, exc.reason)
        pos = path_at + length
        value = None
        if operation != 2:
            length, value_at = _lenenc(buf, pos, end)
            if length > end - value_at:
                _fail(pos, f"JSON diff value of {length} bytes overruns the value")
            value = _Reader(buf, length).document(value_at, value_at + length)
            pos = value_at + length
        diffs.append(JsonDiff(_OPERATIONS[operation], path, value))
    return diffs


_MEMBER = re.compile(r'\.(?:([^.\[\]"\s*]+)|("(?:[^"\\]|\\.)*"))')
_CELL = re.compile(r"\[(?:(\d+)|last(?:-(\d+))?)\]")


def _parse_path(path: str) -> list[str | tuple[int, bool]]:
    """The legs of a diff path: ``$`` then ``.key``, ``."quoted key"``, ``[n]``, ``[last]``, ``[last-n]``.

    A member leg is its name (str); an array leg is (index, counted from the end).
    """
    if not path.startswith("$"):
        _fail(None, f"JSON path {path!r} does not start with '$'")
    legs: list[str | tuple[int, bool]] = []
    pos = 1
    while pos < len(path):
        if member := _MEMBER.match(path, pos):
            if member.group(1) is not None:
                legs.append(member.group(1))
            else:
                try:
                    legs.append(json.loads(member.group(2)))
                except ValueError:
                    _fail(None, f"bad quoted member in JSON path {path!r}")
            pos = member.end()
        elif cell := _CELL.match(path, pos):
            if cell.group(1) is not None:
                legs.append((int(cell.group(1)), False))
            else:
                legs.append((int(cell.group(2) or 0), True))
            pos = cell.end()
        else:
            _fail(None, f"unsupported JSON path {path!r} at character {pos}")
    return legs


class _Number(str):
    """A JSON number kept as its text, so that 1.0, 9.00 and 1e100 print back unchanged."""

    __slots__ = ()


def _reject_constant(name: str) -> NoReturn:
    _fail(None, f"{name} is not JSON")


def _load(text: str, what: str) -> Any:
    try:
        return json.loads(text, parse_float=_Number, parse_int=_Number, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        _fail(None, f"{what} is not JSON text: {exc}")


def _dump(value: Any, depth: int = 0) -> str:
    if isinstance(value, _Number):
        return str(value)
    if isinstance(value, str):
        return _quote(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if depth >= MAX_DEPTH:
        _fail(None, f"JSON document nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, list):
        return "[" + ", ".join(_dump(item, depth + 1) for item in value) + "]"
    return "{" + ", ".join(f"{_quote(key)}: {_dump(item, depth + 1)}" for key, item in value.items()) + "}"


def _key_order(item: tuple[str, Any]) -> tuple[int, bytes]:
    """MySQL's object member order (Json_key_comparator): shorter keys first, then by bytes."""
    key = item[0].encode("utf-8")
    return len(key), key


def _array_position(leg: tuple[int, bool], size: int) -> tuple[int, bool]:
    """Json_array_index: (position, within bounds); out-of-range positions clamp for INSERT."""
    index, from_end = leg
    if from_end:
        return (size - 1 - index if index < size else 0), index < size
    return min(index, size), index < size


def _apply(document: Any, diff: JsonDiff) -> Any:
    if diff.op not in _OPERATIONS or (diff.op != "REMOVE") != (diff.value is not None):
        _fail(None, f"bad JSON diff {diff.op} {diff.path}")
    legs = _parse_path(diff.path)
    value = None if diff.value is None else _load(diff.value, f"value of JSON diff {diff.op} {diff.path}")
    if not legs:
        if diff.op == "REPLACE":
            return value
        _fail(None, f"JSON diff {diff.op} of the whole document")
    parent = document
    for leg in legs[:-1]:
        if isinstance(leg, str) and isinstance(parent, dict) and leg in parent:
            parent = parent[leg]
        elif isinstance(leg, tuple) and isinstance(parent, list) and _array_position(leg, len(parent))[1]:
            parent = parent[_array_position(leg, len(parent))[0]]
        else:
            _fail(None, f"JSON diff {diff.op} {diff.path}: path not in the before image")
    last = legs[-1]
    if isinstance(last, str) and isinstance(parent, dict):
        if (last in parent) != (diff.op != "INSERT"):
            _fail(
                None, f"JSON diff {diff.op} {diff.path}: member {'exists' if last in parent else 'missing'}"
            )
        if diff.op == "REMOVE":
            del parent[last]
        elif diff.op == "REPLACE":
            parent[last] = value
        else:
            members = sorted([*parent.items(), (last, value)], key=_key_order)
            parent.clear()
            parent.update(members)
        return document
    if isinstance(last, tuple) and isinstance(parent, list):
        position, within = _array_position(last, len(parent))
        if diff.op == "INSERT":
            parent.insert(position, value)
        elif not within:
            _fail(None, f"JSON diff {diff.op} {diff.path}: index out of range")
        elif diff.op == "REPLACE":
            parent[position] = value
        else:
            del parent[position]
        return document
    _fail(None, f"JSON diff {diff.op} {diff.path}: path not in the before image")


def apply_json_diffs(before_json_text: str, diffs: Iterable[JsonDiff]) -> str:
    """The full after document: ``diffs`` applied in order to the before image's JSON text.

    Follows apply_json_diff() of sql/json_diff.cc: REPLACE needs an existing member or
    element, INSERT a missing member (placed in MySQL's key order) or any array position
    (past the end appends), REMOVE an existing one. A diff that does not apply raises
    BinlogFormatError. Numbers keep their text; the result is in MySQL's print format.
    """
    document = _load(before_json_text, "before image")
    for diff in diffs:
        document = _apply(document, diff)
    return _dump(document)
