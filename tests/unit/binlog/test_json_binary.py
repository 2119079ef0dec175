"""MySQL binary JSON -> JSON text as MySQL prints it, and PARTIAL_JSON diffs."""

from __future__ import annotations

import base64
import json
import struct
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollback.base.errors import BinlogFormatError
from rollback.binlog.json_binary import JsonDiff, apply_json_diffs, decode_json, decode_json_diff
from tests.support.corpus import JSON_OPAQUE_AS_MYSQL_PRINTS, VENDORED
from tests.support.examples import examples

CORPUS = VENDORED.path("blackbeam__rust_mysql_common/test-data/binlogs")


# ---------------------------------------------------------------- a tiny encoder (tests only)


class U(int):
    """An integer to store with an unsigned type (uint16/uint32/uint64)."""


@dataclass
class Opaque:
    field_type: int
    data: bytes


def varlen(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n >> 7 else 0))
        n >>= 7
        if not n:
            return bytes(out)


def encode(value: object, large: bool = False) -> bytes:
    """A document: type byte + value. ``large`` forces the large format on every container."""
    type_, payload = _encode(value, large)
    return bytes([type_]) + payload


def _encode(value: object, large: bool) -> tuple[int, bytes]:
    if value is None or isinstance(value, bool):
        return 0x04, bytes([{None: 0, True: 1, False: 2}[value]])
    if isinstance(value, U):
        for type_, fmt, top in ((0x06, "<H", 1 << 16), (0x08, "<I", 1 << 32), (0x0A, "<Q", 1 << 64)):
            if value < top:
                return type_, struct.pack(fmt, value)
    if isinstance(value, int):
        for type_, fmt, top in ((0x05, "<h", 1 << 15), (0x07, "<i", 1 << 31), (0x09, "<q", 1 << 63)):
            if -top <= value < top:
                return type_, struct.pack(fmt, value)
        return 0x0A, struct.pack("<Q", value)
    if isinstance(value, float):
        return 0x0B, struct.pack("<d", value)
    if isinstance(value, str):
        raw = value.encode("utf-8")
        return 0x0C, varlen(len(raw)) + raw
    if isinstance(value, Opaque):
        return 0x0F, bytes([value.field_type]) + varlen(len(value.data)) + value.data
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (len(k.encode()), k.encode()))
        items = [value[k] for k in keys]
    else:
        assert isinstance(value, list)
        keys, items = None, value
    body = None if large else _container(keys, items, False, large)
    if body is None:  # like MySQL: small format first, large when it does not fit
        body = _container(keys, items, True, large)
        assert body is not None
        return (0x01 if keys is not None else 0x03), body
    return (0x00 if keys is not None else 0x02), body


def _container(keys: list[str] | None, items: list[object], large: bool, force: bool) -> bytes | None:
    """MySQL's layout of an array or object; None when the small format cannot hold it."""
    word = "<I" if large else "<H"
    osz = struct.calcsize(word)
    n = len(items)
    header = 2 * osz + (n * (osz + 2) if keys is not None else 0) + n * (1 + osz)
    key_entries, value_entries, body = b"", b"", bytearray()
    try:
        for key in keys or []:
            raw = key.encode("utf-8")
            key_entries += struct.pack(word, header + len(body)) + struct.pack("<H", len(raw))
            body += raw
        for item in items:
            type_, payload = _encode(item, force)
            if type_ in (0x04, 0x05, 0x06) or (large and type_ in (0x07, 0x08)):  # inlined in the entry
                number = int.from_bytes(payload, "little", signed=type_ in (0x05, 0x07))
                value_entries += bytes([type_]) + number.to_bytes(osz, "little", signed=number < 0)
            else:
                value_entries += bytes([type_]) + struct.pack(word, header + len(body))
                body += payload
        return (
            struct.pack(word, n) + struct.pack(word, header + len(body)) + key_entries + value_entries + body
        )
    except struct.error:  # an offset or the size does not fit in 2 bytes
        return None


def decimal_bin(text: str, precision: int, scale: int) -> bytes:
    """precision, scale, then decimal2bin(): 9-digit groups big-endian, sign bit inverted."""
    dig2bytes = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
    negative = text.startswith("-")
    whole, _, fraction = text.lstrip("-").partition(".")
    whole, fraction = whole.lstrip("0").rjust(precision - scale, "0"), fraction.ljust(scale, "0")
    out = bytearray()
    lead = len(whole) % 9
    if lead:
        out += int(whole[:lead]).to_bytes(dig2bytes[lead], "big")
    for i in range(lead, len(whole), 9):
        out += int(whole[i : i + 9]).to_bytes(4, "big")
    for i in range(0, len(fraction) - len(fraction) % 9, 9):
        out += int(fraction[i : i + 9]).to_bytes(4, "big")
    if len(fraction) % 9:
        tail = fraction[len(fraction) - len(fraction) % 9 :]
        out += int(tail).to_bytes(dig2bytes[len(tail)], "big")
    if negative:
        out = bytearray(b ^ 0xFF for b in out)
    out[0] ^= 0x80
    return bytes([precision, scale]) + bytes(out)


def packed_datetime(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0, us: int = 0) -> bytes:
    """TIME_to_longlong_datetime_packed() (also DATE: time zero), 8 bytes LE."""
    return (((((y * 13 + mo) << 5) | d) << 17 | (h << 12) | (mi << 6) | s) << 24 | us).to_bytes(8, "little")


def packed_time(h: int, mi: int, s: int, us: int = 0, negative: bool = False) -> bytes:
    """TIME_to_longlong_time_packed(), 8 bytes LE."""
    packed = (((h << 12) | (mi << 6) | s) << 24) + us
    return (-packed if negative else packed).to_bytes(8, "little", signed=True)


# ---------------------------------------------------------------- a minimal binlog walker (tests only)


def binlog_events(path: Path):
    """(type, body) of each event; every event of these files ends with a 4-byte CRC32."""
    data = path.read_bytes()
    assert data[:4] == b"\xfebin"
    pos = 4
    while pos < len(data):
        _, type_, _, length, _, _ = struct.unpack_from("<IBIIIH", data, pos)
        yield type_, data[pos + 19 : pos + length - 4]
        pos += length


def _lenenc(body: bytes, pos: int) -> tuple[int, int]:
    first = body[pos]
    if first < 0xFB:
        return first, pos + 1
    width = {0xFC: 2, 0xFD: 3, 0xFE: 8}[first]
    return int.from_bytes(body[pos + 1 : pos + 1 + width], "little"), pos + 1 + width


def table_columns(body: bytes) -> list[tuple[int, bytes]]:
    """(type, metadata) per column of a TABLE_MAP; knows the metadata of LONG, JSON, VARCHAR."""
    pos = 8
    pos += 1 + body[pos] + 1  # database name
    pos += 1 + body[pos] + 1  # table name
    count, pos = _lenenc(body, pos)
    types = body[pos : pos + count]
    _, pos = _lenenc(body, pos + count)
    columns = []
    for type_ in types:
        size = {3: 0, 245: 1, 15: 2}[type_]
        columns.append((type_, body[pos : pos + size]))
        pos += size
    return columns


def rows(event_type: int, body: bytes, columns: list[tuple[int, bytes]]):
    """(before, after) images of a rows event v2 as {column: value}; a partial JSON value is ("diff", bytes)."""
    extra = struct.unpack_from("<H", body, 8)[0]
    count, pos = _lenenc(body, 8 + extra)
    width = (count + 7) // 8
    bitmaps = []
    for _ in range(1 if event_type == 30 else 2):
        bits = int.from_bytes(body[pos : pos + width], "little")
        bitmaps.append([c for c in range(count) if bits >> c & 1])
        pos += width

    def image(present: list[int], partial_image: bool) -> dict:
        nonlocal pos
        partial: set[int] = set()
        if partial_image:
            options, pos = _lenenc(body, pos)
            if options & 1:
                json_columns = [c for c in present if columns[c][0] == 245]
                bits = int.from_bytes(body[pos : pos + (len(json_columns) + 7) // 8], "little")
                partial = {c for i, c in enumerate(json_columns) if bits >> i & 1}
                pos += (len(json_columns) + 7) // 8
        nulls = int.from_bytes(body[pos : pos + (len(present) + 7) // 8], "little")
        pos += (len(present) + 7) // 8
        values = {}
        for i, column in enumerate(present):
            type_, meta = columns[column]
            if nulls >> i & 1:
                values[column] = None
            elif type_ == 3:
                values[column], pos = struct.unpack_from("<i", body, pos)[0], pos + 4
            elif type_ == 15:
                size = 1 if struct.unpack("<H", meta)[0] < 256 else 2
                length = int.from_bytes(body[pos : pos + size], "little")
                values[column], pos = body[pos + size : pos + size + length].decode(), pos + size + length
            else:  # JSON: 4-byte length (metadata 4), then the binary JSON or the diff vector
                length = int.from_bytes(body[pos : pos + meta[0]], "little")
                raw = body[pos + meta[0] : pos + meta[0] + length]
                values[column] = ("diff", raw) if column in partial else raw
                pos += meta[0] + length
        return values

    while pos < len(body):
        before = image(bitmaps[0], False) if event_type != 30 else None
        after = image(bitmaps[-1], event_type == 39)
        yield before, after


def corpus_rows(name: str):
    columns: list[tuple[int, bytes]] = []
    for type_, body in binlog_events(CORPUS / name):
        if type_ == 19:
            columns = table_columns(body)
        elif type_ in (30, 31, 39):
            for before, after in rows(type_, body, columns):
                yield type_, before, after


# ---------------------------------------------------------------- corpus facts


@pytest.mark.corpus
def test_json_opaque_binlog_values_print_as_mysql_prints_them():
    # MySQL's text, exactly (why it differs from ORACLES.md: tests/support/corpus.py); then ORACLES.md's
    # facts hold as JSON values, the DECIMALs as the exact numbers the quotes held.
    values = [after[0] for _, _, after in corpus_rows("json-opaque.binlog")]
    assert [decode_json(value) for value in values] == JSON_OPAQUE_AS_MYSQL_PRINTS
    facts = ['{"a":"base64:type15:VQ=="}', '{"b":"2012-03-18"}', '{"c":"2012-03-18 11:30:45.000000"}',
             '{"c":"87:31:46.654321"}', '{"e":[0,1,true,false]}', '{"e":null}']  # fmt: skip
    texts = [decode_json(value) for i, value in enumerate(values) if i not in (4, 5)]
    assert [json.loads(text) for text in texts] == [json.loads(fact) for fact in facts]
    assert json.loads(decode_json(values[4]), parse_float=str) == {"d": "123.456"}
    assert json.loads(decode_json(values[5]), parse_float=str) == {"e": "9.00"}


@pytest.mark.corpus
def test_partial_update_diffs_rebuild_the_full_after_image():
    # json.binlog.000001 (MySQL 8.0.22): t(id INT PRIMARY KEY, json_col JSON, name VARCHAR AS
    # (json_col->>'$.name'), age INT AS (json_col->'$.age')); an UPDATE logs the full after
    # images, then a PARTIAL_UPDATE_ROWS logs `$.age` replacements. The generated columns of
    # the partial after image give an independent check of the rebuilt document.
    documents: dict[int, str] = {}
    rebuilt = 0
    for event_type, before, after in corpus_rows("json.binlog.000001"):
        if event_type == 31:
            documents[after[0]] = decode_json(after[1])
        elif event_type == 39:
            kind, raw = after[1]
            assert kind == "diff"
            diffs = decode_json_diff(raw)
            assert [(d.op, d.path) for d in diffs] == [("REPLACE", "$.age")]
            assert diffs[0].value == str(after[3])
            full = apply_json_diffs(documents[before[0]], diffs)
            assert json.loads(full)["age"] == after[3]
            assert json.loads(full)["name"] == after[2]
            assert full == documents[before[0]].replace(f'"age": {after[3] - 1},', f'"age": {after[3]},')
            rebuilt += 1
    assert rebuilt == 6
    assert documents[1] == '{"age": 25, "data": "xxxxxxxxxx", "name": "Joe"}'


# ---------------------------------------------------------------- vectors from MySQL's own source


def test_array_example_of_json_binary_cc():
    # The serialized ["abc", "def"] and its three partial updates documented above
    # Value::update_in_shadow(): shorter string with a free byte, string moved into free
    # space, string replaced by an inlined int16.
    header = "02 0200 1200 0c 0a00"
    assert decode_json(bytes.fromhex(f"{header} 0c 0e00 03 616263 03 646566")) == '["abc", "def"]'
    assert decode_json(bytes.fromhex(f"{header} 0c 0e00 02 5859 63 03 646566")) == '["XY", "def"]'
    assert decode_json(bytes.fromhex(f"{header} 0c 0d00 02 5859 04 58595a57")) == '["XY", "XYZW"]'
    assert decode_json(bytes.fromhex(f"{header} 05 c801 02 5859 04 58595a57")) == '["XY", 456]'


# ---------------------------------------------------------------- every type


@pytest.mark.parametrize(
    ("hex_value", "text"),
    [
        ("", "null"),  # a zero-length value: parse_binary() reads the JSON null literal
        ("0400", "null"),
        ("0401", "true"),
        ("0402", "false"),
        ("05ffff", "-1"),
        ("060080", "32768"),
        ("0700000080", "-2147483648"),
        ("08ffffffff", "4294967295"),
        ("090000000000000080", "-9223372036854775808"),
        ("0affffffffffffffff", "18446744073709551615"),
        ("0b000000000000f83f", "1.5"),
        ("0c00", '""'),
        ("0c03616263", '"abc"'),
        ("02 0000 0400", "[]"),
        ("00 0000 0400", "{}"),
        ("03 00000000 08000000", "[]"),
        ("01 00000000 08000000", "{}"),
        # small array: int32 is not inlined (offset 13), uint16 and literals are
        ("02 0300 1100 07 0d00 06 0400 04 0100 00000080", "[-2147483648, 4, true]"),
        # large array: int32/uint32 inlined in 4 bytes, int16 in the low 2 of 4
        ("03 03000000 17000000 07 ffffff7f 08 ffffffff 05 feffffff", "[2147483647, 4294967295, -2]"),
        # large object {"a": -2}: key entry offset:4 length:2, value entry type:1 inlined:4
        ("01 01000000 14000000 13000000 0100 05 feff0000 61", '{"a": -2}'),
        # small object {"a": 1, "bb": "x"}
        ("00 0200 1700 1200 0100 1300 0200 05 0100 0c 1500 61 6262 01 78", '{"a": 1, "bb": "x"}'),
    ],
)
def test_hand_built_vectors(hex_value: str, text: str):
    assert decode_json(bytes.fromhex(hex_value)) == text


def test_memoryview_input_is_accepted():
    assert decode_json(memoryview(b"\x0c\x03abc")) == '"abc"'
    assert decode_json(memoryview(b"xx\x05\x07\x00")[2:]) == "7"


def test_bytes_after_the_value_are_ignored_like_mysql():
    assert decode_json(b"\x04\x01\xff\xff") == "true"


def test_string_with_multi_byte_length():
    value = "é" * 100  # 200 bytes: length 0xc8 0x01
    assert encode(value)[:3] == b"\x0c\xc8\x01"
    assert decode_json(encode(value)) == f'"{value}"'


def test_large_format_chosen_for_big_documents():
    document = {"a": ["x" * 30000, "y" * 30000, "z" * 10000], "b": 1}
    data = encode(document)
    assert data[0] == 0x01  # large object
    assert decode_json(data) == json.dumps(document, separators=(", ", ": "))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.5, "1.5"),
        (1.0, "1.0"),
        (-1.0, "-1.0"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (0.1, "0.1"),
        (100.0, "100.0"),
        (1e14, "100000000000000.0"),
        (123456789012345.0, "123456789012345.0"),
        (1e15, "1e15"),
        (1234567890123456.0, "1.234567890123456e15"),
        (1234567890123456.7, "1234567890123456.8"),
        (1e100, "1e100"),
        (-1.5e300, "-1.5e300"),
        (1e-15, "0.000000000000001"),
        (1e-16, "1e-16"),
        (-2.5e-5, "-0.000025"),
        (1.2345678901234568e-5, "0.000012345678901234568"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e308"),
        (2.0**53, "9.007199254740992e15"),
    ],
)
def test_doubles_print_like_my_gcvt(value: float, text: str):
    assert decode_json(encode(value)) == text
    assert float(text) == value


@pytest.mark.parametrize("bits", ["000000000000f07f", "000000000000f0ff", "000000000000f87f"])
def test_non_finite_doubles_are_refused(bits: str):
    with pytest.raises(BinlogFormatError):
        decode_json(bytes.fromhex("0b" + bits))


def test_string_escapes_match_double_quote():
    value = 'a"b\\c/\n\r\t\b\f\x00\x01\x1f\x7f é😀'
    expected = '"a\\"b\\\\c/\\n\\r\\t\\b\\f\\u0000\\u0001\\u001f\x7f é😀"'
    assert decode_json(encode(value)) == expected
    assert decode_json(encode({value: [value]})) == "{" + expected + ": [" + expected + "]}"
    assert json.loads(expected) == value


def test_object_members_print_in_stored_order():
    data = encode({"bb": 1, "a": 2, "c": 3, "aaa": 4})
    assert decode_json(data) == '{"a": 2, "c": 3, "bb": 1, "aaa": 4}'


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (-1, "-1"),
        (-32768, "-32768"),
        (U(65535), "65535"),
        (U(65536), "65536"),
        (2147483647, "2147483647"),
        (-2147483649, "-2147483649"),
        (U(4294967295), "4294967295"),
        (9223372036854775807, "9223372036854775807"),
        (U(18446744073709551615), "18446744073709551615"),
    ],
)
@pytest.mark.parametrize("large", [False, True])
def test_integers_inlined_or_not_in_both_formats(value: int, text: str, large: bool):
    assert decode_json(encode([value, {"k": value}], large=large)) == f'[{text}, {{"k": {text}}}]'
    assert decode_json(encode(value)) == text


# ---------------------------------------------------------------- opaque values


@pytest.mark.parametrize(
    ("text", "precision", "scale", "printed"),
    [
        ("123.456", 6, 3, "123.456"),
        ("-123.456", 6, 3, "-123.456"),
        ("9.00", 11, 2, "9.00"),
        ("0.5", 1, 1, "0.5"),
        ("-0.05", 3, 2, "-0.05"),
        ("42", 5, 0, "42"),
        ("-42", 5, 0, "-42"),
        ("0", 10, 0, "0"),
        ("42.10", 7, 2, "42.10"),
        ("12345678901234567890.123456789012", 32, 12, "12345678901234567890.123456789012"),
        ("9" * 35 + "." + "9" * 30, 65, 30, "9" * 35 + "." + "9" * 30),
        ("-" + "1" * 65, 65, 0, "-" + "1" * 65),
    ],
)
def test_decimals_print_as_bare_numbers(text: str, precision: int, scale: int, printed: str):
    assert decode_json(encode(Opaque(246, decimal_bin(text, precision, scale)))) == printed
    assert (
        decode_json(encode({"d": [Opaque(246, decimal_bin(text, precision, scale))]}))
        == f'{{"d": [{printed}]}}'
    )


def test_decimal_of_the_corpus_by_hand():
    assert decode_json(bytes.fromhex("0f f6 06 06 03 807b 01c8")) == "123.456"
    assert decode_json(bytes.fromhex("0f f6 06 06 03 7f84 fe37")) == "-123.456"


@settings(max_examples=examples(200))
@given(st.integers(1, 65), st.data())
def test_decimal_round_trip(precision: int, data):
    scale = data.draw(st.integers(0, min(precision, 30)))
    digits = data.draw(st.text("0123456789", min_size=precision, max_size=precision))
    negative = data.draw(st.booleans())
    text = (
        ("-" if negative else "")
        + digits[: precision - scale]
        + ("." + digits[precision - scale :] if scale else "")
    )
    printed = decode_json(encode(Opaque(246, decimal_bin(text, precision, scale))))
    assert Decimal(printed) == Decimal(text)
    assert printed.partition(".")[2] == digits[precision - scale :]
    assert printed.lstrip("-").partition(".")[0] == (digits[: precision - scale].lstrip("0") or "0")


@pytest.mark.parametrize(
    ("field_type", "packed", "text"),
    [
        (10, packed_datetime(2012, 3, 18), '"2012-03-18"'),
        (10, packed_datetime(0, 0, 0), '"0000-00-00"'),
        (10, packed_datetime(9999, 12, 31), '"9999-12-31"'),
        (12, packed_datetime(2012, 3, 18, 11, 30, 45), '"2012-03-18 11:30:45.000000"'),
        (12, packed_datetime(1000, 1, 1, 0, 0, 0, 1), '"1000-01-01 00:00:00.000001"'),
        (7, packed_datetime(2038, 1, 19, 3, 14, 7, 999999), '"2038-01-19 03:14:07.999999"'),
        (11, packed_time(87, 31, 46, 654321), '"87:31:46.654321"'),
        (11, packed_time(0, 0, 0), '"00:00:00.000000"'),
        (11, packed_time(5, 6, 7, 80), '"05:06:07.000080"'),
        (11, packed_time(838, 59, 59, negative=True), '"-838:59:59.000000"'),
        (11, packed_time(0, 0, 0, 500000, negative=True), '"-00:00:00.500000"'),
    ],
)
def test_temporal_values_print_like_my_time_to_str(field_type: int, packed: bytes, text: str):
    assert decode_json(encode(Opaque(field_type, packed))) == text
    assert decode_json(encode([Opaque(field_type, packed)], large=True)) == f"[{text}]"


def test_opaque_of_other_types_prints_base64_with_mysql_line_breaks():
    assert decode_json(encode(Opaque(15, b"U"))) == '"base64:type15:VQ=="'
    assert decode_json(encode(Opaque(252, b""))) == '"base64:type252:"'
    data = bytes(range(100))  # 136 base64 characters: MySQL's base64_encode() breaks after 76
    text = decode_json(encode(Opaque(252, data)))
    encoded = base64.b64encode(data).decode()
    assert text == f'"base64:type252:{encoded[:76]}\\n{encoded[76:]}"'
    assert len(base64.b64encode(bytes(57))) == 76
    assert "\\n" not in decode_json(encode(Opaque(252, bytes(57))))


def test_opaque_var_string_prints_as_plain_string():
    assert decode_json(encode(Opaque(253, 'hé"'.encode()))) == '"hé\\""'


@pytest.mark.parametrize(
    ("opaque", "reason"),
    [
        (Opaque(246, b"\x06"), "precision and scale"),
        (Opaque(246, b"\x06\x03\x80\x7b\x01"), "bytes"),
        (Opaque(246, b"\x00\x00"), "out of range"),
        (Opaque(246, b"\x06\x07\x80\x7b\x01\xc8"), "out of range"),
        (Opaque(246, b"\x06\x03\x83\xe8\x01\xc8"), "digits"),  # 1000 in a 3-digit group
        (Opaque(246, b"\x0b\x02\xbb\x9a\xca\x00\x00"), "digits"),  # 10**9 in a 9-digit group
        (Opaque(10, b"\x00" * 7), "8 expected"),
        (Opaque(11, ((1 << 24) - 1).to_bytes(8, "little")), "microseconds"),
        (Opaque(253, b"\xff"), "UTF-8"),
    ],
)
def test_malformed_opaque_values(opaque: Opaque, reason: str):
    with pytest.raises(BinlogFormatError, match=reason):
        decode_json(encode(opaque))


# ---------------------------------------------------------------- round trips


json_documents = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=25,
)


def mysql_key_order(document: object) -> bool:
    if isinstance(document, dict):
        keys = [(len(k.encode()), k.encode()) for k in document]
        return keys == sorted(keys) and all(mysql_key_order(v) for v in document.values())
    if isinstance(document, list):
        return all(mysql_key_order(v) for v in document)
    return True


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(json_documents, st.booleans())
def test_documents_round_trip_through_the_binary_format(document: object, large: bool):
    text = decode_json(encode(document, large=large))
    assert json.loads(text) == document
    assert mysql_key_order(json.loads(text, object_pairs_hook=dict))
    assert apply_json_diffs(text, []) == text  # the text parses back and prints identically


def test_nesting_limit_is_mysqls():
    deep: object = 1
    for _ in range(100):
        deep = [deep]
    assert decode_json(encode(deep)) == "[" * 100 + "1" + "]" * 100
    with pytest.raises(BinlogFormatError, match="deeper than 100"):
        decode_json(encode([deep]))
    with pytest.raises(BinlogFormatError, match="deeper than 100"):
        decode_json(encode({"k": deep}, large=True))


# ---------------------------------------------------------------- malformed input


VALID = [
    encode(
        {"a": [1, -70000, 2.5, "x" * 200, None, {"b": U(70000)}], "cc": Opaque(246, decimal_bin("1.5", 4, 1))}
    ),
    encode([Opaque(12, packed_datetime(2020, 1, 2, 3, 4, 5)), Opaque(252, bytes(90)), "é", True], large=True),
    encode("a string of some length"),
    encode(-(2**62)),
    encode(2.5),
]


@pytest.mark.parametrize("data", VALID)
def test_every_truncation_is_a_format_error(data: bytes):
    decode_json(data)
    for cut in range(1, len(data)):
        with pytest.raises(BinlogFormatError) as caught:
            decode_json(data[:cut])
        assert caught.value.offset is not None and 0 <= caught.value.offset <= cut


@pytest.mark.parametrize(
    ("hex_value", "reason"),
    [
        ("0403", "literal"),
        ("0d00", "unknown JSON value type"),
        ("02 0100 0700 04 0300", "literal"),  # inlined literal 3
        ("02 0100 0700 0c 0400 00", "offset"),  # value offset inside its own entry
        ("02 0100 0900 0c 0900 00", "offset"),  # value offset past the array's size
        ("020100ff00", "overruns"),
        ("02 0500 0700 000000", "does not fit"),
        ("00 0100 0c00 0b00 0300 04 0000 6161", "key outside"),  # key over the end
        ("00 0100 0c00 0000 0100 04 0000 6161", "key outside"),  # key inside the header
        ("0c02ff61", "UTF-8"),
        ("0c8080808080", "malformed JSON length"),
        ("0c 8080808010", "malformed JSON length"),  # more than 32 bits
        ("0c05616263", "overruns"),
        ("0ff6", "truncated"),
    ],
)
def test_malformed_documents(hex_value: str, reason: str):
    with pytest.raises(BinlogFormatError, match=reason):
        decode_json(bytes.fromhex(hex_value))


def test_entries_sharing_bytes_are_refused():
    # Two entries pointing at the same string: MySQL never writes this, and chains of such
    # sharing would print exponentially much text from a few bytes.
    shared = bytes.fromhex("02 0200 0e00 0c 0a00 0c 0a00 03 616263")
    with pytest.raises(BinlogFormatError, match="already used"):
        decode_json(shared)
    payload = bytes.fromhex("00000400")  # []; then 40 levels of [inner, inner] sharing one inner
    for _ in range(40):
        payload = b"\x02\x00" + (10 + len(payload)).to_bytes(2, "little") + b"\x02\x0a\x00" * 2 + payload
    with pytest.raises(BinlogFormatError, match="already used"):
        decode_json(b"\x02" + payload)


@settings(max_examples=examples(1000))
@given(st.binary(max_size=300))
def test_random_bytes_only_ever_raise_format_errors(data: bytes):
    try:
        assert isinstance(decode_json(data), str)
    except BinlogFormatError as exc:
        assert exc.offset is None or 0 <= exc.offset <= len(data)
    try:
        assert isinstance(decode_json_diff(data), list)
    except BinlogFormatError:
        pass


@settings(max_examples=examples(500), suppress_health_check=[HealthCheck.too_slow])
@given(json_documents, st.booleans(), st.data())
def test_corrupted_documents_only_ever_raise_format_errors(document: object, large: bool, data):
    raw = bytearray(encode(document, large=large))
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        decode_json(bytes(raw))
    except BinlogFormatError:
        pass


# ---------------------------------------------------------------- partial JSON diffs


def lenenc(n: int) -> bytes:
    if n < 0xFB:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def diff(op: int, path: str, value: object = ..., raw_value: bytes | None = None) -> bytes:
    out = bytes([op]) + lenenc(len(path.encode())) + path.encode()
    if raw_value is not None:
        return out + lenenc(len(raw_value)) + raw_value
    if value is not ...:
        out += lenenc(len(encode(value))) + encode(value)
    return out


def test_decode_json_diff_reads_every_operation():
    data = diff(0, "$.a", [1, 2.0]) + diff(1, '$."b c"[3]', {"x": None}) + diff(2, "$[last-1]")
    assert decode_json_diff(data) == [
        JsonDiff("REPLACE", "$.a", "[1, 2.0]"),
        JsonDiff("INSERT", '$."b c"[3]', '{"x": null}'),
        JsonDiff("REMOVE", "$[last-1]", None),
    ]
    assert decode_json_diff(memoryview(data)) == decode_json_diff(data)
    assert decode_json_diff(b"") == []


def test_decode_json_diff_long_path_and_empty_value():
    path = "$." + "k" * 300  # a 302-byte path: length 0xfc 2e 01
    assert diff(2, path)[1:4] == b"\xfc\x2e\x01"
    assert decode_json_diff(diff(2, path)) == [JsonDiff("REMOVE", path, None)]
    assert decode_json_diff(diff(0, "$.a", raw_value=b"")) == [JsonDiff("REPLACE", "$.a", "null")]


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x03\x01$", "operation"),
        (b"\x00", "truncated"),
        (b"\x00\x05$.a", "overruns"),
        (b"\x00\x03a.b\x01\x04\x01", "does not start"),
        (b"\x00\x03$.*\x01\x04\x01", "unsupported"),
        (b"\x00\x03$[a\x01\x04\x01", "unsupported"),
        (b"\x00\x03$.a", "truncated"),
        (b"\x00\x03$.a\x05\x04\x01", "overruns"),
        (b"\x00\x03$.a\xff", "prefix"),
        (b"\x00\x03$.a\x02\x04\x07", "literal"),
        (b'\x02\x04$."a', "unsupported"),
    ],
)
def test_malformed_diffs(data: bytes, reason: str):
    with pytest.raises(BinlogFormatError, match=reason):
        decode_json_diff(data)


def test_diff_value_errors_carry_offsets_within_the_diff_vector():
    data = diff(2, "$.x") + diff(0, "$.a", raw_value=b"\x0c\x05ab")
    with pytest.raises(BinlogFormatError) as caught:
        decode_json_diff(data)
    assert caught.value.offset == data.index(b"\x0c\x05ab") + 1


BEFORE = '{"a": 1, "b": [1.0, 9.00, "x"], "cc": {"d e": null, "f": 1e100}}'


@pytest.mark.parametrize(
    ("diffs", "after"),
    [
        (
            [JsonDiff("REPLACE", "$.a", '"z"')],
            '{"a": "z", "b": [1.0, 9.00, "x"], "cc": {"d e": null, "f": 1e100}}',
        ),
        (
            [JsonDiff("REPLACE", "$.b[1]", "2")],
            '{"a": 1, "b": [1.0, 2, "x"], "cc": {"d e": null, "f": 1e100}}',
        ),
        (
            [JsonDiff("REPLACE", "$.b[last]", "[]")],
            '{"a": 1, "b": [1.0, 9.00, []], "cc": {"d e": null, "f": 1e100}}',
        ),
        (
            [JsonDiff("REPLACE", '$.cc."d e"', "true")],
            '{"a": 1, "b": [1.0, 9.00, "x"], "cc": {"d e": true, "f": 1e100}}',
        ),
        (
            [JsonDiff("INSERT", "$.bb", "0")],
            '{"a": 1, "b": [1.0, 9.00, "x"], "bb": 0, "cc": {"d e": null, "f": 1e100}}',
        ),
        (
            [JsonDiff("INSERT", "$.ab", "0")],
            '{"a": 1, "b": [1.0, 9.00, "x"], "ab": 0, "cc": {"d e": null, "f": 1e100}}',
        ),
        (
            [JsonDiff("INSERT", "$.b[0]", "0")],
            '{"a": 1, "b": [0, 1.0, 9.00, "x"], "cc": {"d e": null, "f": 1e100}}',
        ),
        (
            [JsonDiff("INSERT", "$.b[9]", "0")],
            '{"a": 1, "b": [1.0, 9.00, "x", 0], "cc": {"d e": null, "f": 1e100}}',
        ),
        ([JsonDiff("REMOVE", "$.cc.f", None)], '{"a": 1, "b": [1.0, 9.00, "x"], "cc": {"d e": null}}'),
        ([JsonDiff("REMOVE", "$.b[0]", None)], '{"a": 1, "b": [9.00, "x"], "cc": {"d e": null, "f": 1e100}}'),
        ([JsonDiff("REPLACE", "$", '{"k": "\\n"}')], '{"k": "\\n"}'),
        (
            [
                JsonDiff("REMOVE", "$.a", None),
                JsonDiff("INSERT", "$.a", '{"q": 1}'),
                JsonDiff("REPLACE", "$.a.q", "2"),
            ],
            '{"a": {"q": 2}, "b": [1.0, 9.00, "x"], "cc": {"d e": null, "f": 1e100}}',
        ),
    ],
)
def test_apply_json_diffs(diffs: list[JsonDiff], after: str):
    assert apply_json_diffs(BEFORE, diffs) == after


@pytest.mark.parametrize(
    "bad",
    [
        JsonDiff("REPLACE", "$.zz", "1"),
        JsonDiff("REPLACE", "$.b[3]", "1"),
        JsonDiff("REPLACE", "$.a[0]", "1"),
        JsonDiff("REPLACE", "$.a.b", "1"),
        JsonDiff("INSERT", "$.a", "1"),
        JsonDiff("INSERT", "$.zz.y", "1"),
        JsonDiff("REMOVE", "$.zz", None),
        JsonDiff("REMOVE", "$.b[3]", None),
        JsonDiff("REMOVE", "$", None),
        JsonDiff("REMOVE", "$.a", "1"),
        JsonDiff("REPLACE", "$.a", None),
        JsonDiff("MOVE", "$.a", "1"),
        JsonDiff("REPLACE", "$.a", "NaN"),
        JsonDiff("REPLACE", "$.a", "{"),
    ],
)
def test_diffs_that_do_not_apply_are_format_errors(bad: JsonDiff):
    with pytest.raises(BinlogFormatError):
        apply_json_diffs(BEFORE, [bad])


def test_apply_refuses_a_result_deeper_than_mysql_allows():
    deep = "[" * 60 + "]" * 60
    assert apply_json_diffs(deep, [JsonDiff("INSERT", "$" + "[0]" * 59 + "[0]", "[" * 40 + "]" * 40)])
    with pytest.raises(BinlogFormatError, match="deeper than 100"):
        apply_json_diffs(deep, [JsonDiff("INSERT", "$" + "[0]" * 59 + "[0]", "[" * 41 + "]" * 41)])


@settings(max_examples=examples(200), suppress_health_check=[HealthCheck.too_slow])
@given(json_documents, json_documents, st.text(min_size=1, max_size=6))
def test_replace_and_insert_from_binary_diffs(document: object, value: object, key: str):
    before = decode_json(encode({"root": document}))
    diffs = decode_json_diff(diff(0, "$.root", value) + diff(1, "$." + json.dumps(key), value))
    after = apply_json_diffs(before, diffs)
    expected = {"root": value} if key == "root" else {"root": value, key: value}
    if key == "root":
        with pytest.raises(BinlogFormatError):
            apply_json_diffs(before, diffs)
        return
    assert json.loads(after) == expected
    assert after == decode_json(encode(expected))
