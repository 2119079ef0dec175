"""SQL literals and statements: identifiers, strings per charset, exact numbers, temporals, JSON, GEOMETRY,
and the row identification of TableRenderer. What the server makes of them is proven end to end in
tests/server/test_flashback_workloads.py; here each rule is pinned on its own."""

from __future__ import annotations

import math
import struct
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rollback.base.errors import RollbackError
from rollback.binlog.columns import MISSING
from rollback.binlog.constants import ColumnType as T
from rollback.binlog.table_map import TableMap
from rollback.render.sql import (
    TableRenderer,
    bit_literal,
    column_literals,
    decimal_literal,
    double_literal,
    float32_literal,
    float32_where_literal,
    hex_literal,
    quote_ident,
    quote_text,
    string_literal,
)
from rollback.schema.tables import Column, TableSchema

F32 = struct.Struct("<f")
FLT_MAX = 3.4028234663852886e38


# ---- identifiers and strings -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "quoted"),
    [("t", "`t`"), ("a`b", "`a``b`"), ("``", "``````"), ("sp ace;--", "`sp ace;--`"), ("é😀", "`é😀`")],
)
def test_identifiers_are_backquoted_with_backquotes_doubled(name, quoted):
    assert quote_ident(name) == quoted


def test_quote_text_doubles_quotes_and_needs_no_backslash_escapes():
    assert quote_text("it's") == "'it''s'"
    assert quote_text("''") == "''''''"


@pytest.mark.parametrize(
    ("data", "charset", "literal"),
    [
        (b"plain", "utf8mb4", "'plain'"),
        (b"it's", "utf8mb4", "'it''s'"),
        ("😀 four bytes".encode(), "utf8mb4", "'😀 four bytes'"),
        ("é".encode(), "utf8mb3", "'é'"),
        # Readable literals carry no introducer: the script's utf8mb4 text converts to the column's charset.
        ("café €".encode("cp1252"), "latin1", "'café €'"),
        ("😀".encode("utf-16-be"), "utf16", "'😀'"),
        (b"ascii only", "cp1251", "'ascii only'"),
        (b"", "utf8mb4", "''"),
    ],
)
def test_valid_text_is_readable(data, charset, literal):
    assert string_literal(data, charset) == literal


@pytest.mark.parametrize(
    ("data", "charset", "literal"),
    [
        (b"a\\b", "utf8mb4", "_utf8mb4 0x615c62"),  # backslash: an escape unless NO_BACKSLASH_ESCAPES
        (b"a\x00b", "utf8mb4", "_utf8mb4 0x610062"),
        (b"tab\there", "utf8mb4", "_utf8mb4 0x7461620968657265"),
        (b"\xff\xfe", "utf8mb4", "_utf8mb4 0xfffe"),  # not UTF-8
        (b"\xed\xa0\x80", "utf8mb4", "_utf8mb4 0xeda080"),  # a surrogate: not valid UTF-8
        (b"\x81", "latin1", "_latin1 0x81"),  # undefined in cp1252: no guessing
        ("Привет".encode("cp1251"), "cp1251", "_cp1251 0xcff0e8e2e5f2"),  # server's map, not Python's
        (b"\x00'\\", "binary", "_binary 0x00275c"),
        (b"'", None, "_binary 0x27"),
        (b"", "binary", "_binary''"),
        (b"", "latin1", "''"),
    ],
)
def test_other_bytes_are_hex_with_their_charset_introducer(data, charset, literal):
    assert string_literal(data, charset) == literal


def test_hex_literal_of_nothing_keeps_the_charset():
    assert hex_literal(b"") == "_binary''" and hex_literal(b"", "latin1") == "_latin1''"


# ---- numbers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Decimal("-99999999999999999999999999999999999.999999999999999999999999999999"), None),
        (Decimal("0.000000000000000000000000000001"), None),
        (Decimal("1E-30"), "0.000000000000000000000000000001"),
        (Decimal("12.50"), "12.50"),
        (Decimal("-0.00"), "-0.00"),
        (Decimal("1E+5"), "100000"),
    ],
)
def test_decimal_is_exact_without_exponent(value, text):
    literal = decimal_literal(value)
    assert "e" not in literal.lower() and Decimal(literal) == value
    if text is not None:
        assert literal == text


@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_float32_literal_parses_back_to_the_same_float32(value):
    literal = float32_literal(value)
    assert "e" in literal  # a DOUBLE literal: never read as an exact DECIMAL
    parsed = float(literal)
    assert F32.pack(parsed) == F32.pack(value)  # the server stores (float) of the parsed double
    assert abs(parsed) <= FLT_MAX  # above it the server clips (or refuses, strict)
    assert len(literal) <= len(repr(value)) + 2


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_double_literal_round_trips(value):
    literal = double_literal(value)
    assert (
        "e" in literal
        and float(literal) == value
        and math.copysign(1, float(literal)) == math.copysign(1, value)
    )


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        (0.1, "0.1e0"),
        (F32.unpack(F32.pack(0.1))[0], "0.1e0"),
        (FLT_MAX, "3.4028234663852886e+38"),
        (1e-45, "1.4013e-45"),
    ],
)
def test_float32_literal_examples(value, literal):
    assert float32_literal(F32.unpack(F32.pack(value))[0]) == literal


def test_float32_in_where_is_the_widened_double_exactly():
    stored = F32.unpack(F32.pack(0.1))[0]
    assert float32_where_literal(stored) == "0.10000000149011612e0"
    assert float(float32_where_literal(stored)) == stored


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_are_refused(bad):
    with pytest.raises(ValueError):
        float32_literal(bad)
    with pytest.raises(ValueError):
        double_literal(bad)


@pytest.mark.parametrize(
    ("width", "value", "literal"),
    [(1, 0, "b'0'"), (1, 1, "b'1'"), (10, 5, "b'0000000101'"), (64, 2**64 - 1, "b'" + "1" * 64 + "'")],
)
def test_bit_literal_keeps_the_width(width, value, literal):
    assert bit_literal(width)(value) == literal


# ---- per column type --------------------------------------------------------------------------------


def literals(real_type, meta=0, charset=None, column=None, flavour="mariadb"):
    return column_literals(real_type, meta, charset, column, flavour)


def test_enum_and_set_render_by_member_names():
    enum = Column("e", "enum", enum_values=("a", "b", "it's"))
    value, where = literals(T.ENUM, column=enum)
    assert value(1) == "'a'" and value(3) == "'it''s'" and where(2) == "'b'"
    assert value(0) == "0"  # the '' error value: its index keeps it exact
    sets = Column("s", "set", set_values=("x", "y", "z"))
    value, _ = literals(T.SET, column=sets)
    assert value(0b101) == "'x,z'" and value(0) == "''" and value(0b1000) == "8"
    value, _ = literals(T.ENUM)  # no names known: the index stores the same member
    assert value(2) == "2"


@pytest.mark.parametrize(
    ("real_type", "text"),
    [
        (T.DATETIME2, "2024-02-29 23:59:59.999999"),
        (T.DATETIME2, "0000-00-00 00:00:00"),
        (T.DATE, "0000-00-00"),
        (T.DATE, "2024-00-15"),
        (T.TIME2, "-838:59:59.000"),
        (T.TIMESTAMP2, "1970-01-01 00:00:01.001"),
        (T.YEAR, 0),
    ],
)
def test_temporals_are_written_as_stored(real_type, text):
    value, where = literals(real_type)
    expected = str(text) if real_type == T.YEAR else f"'{text}'"
    assert value(text) == where(text) == expected


def test_binary_n_is_padded_back_to_its_width():
    col = Column("b", "binary")
    value, where = literals(T.STRING, 6, None, col)
    assert value(b"\x00'") == where(b"\x00'") == "_binary 0x002700000000"
    inet6 = Column("ip", "inet6")
    value, _ = literals(T.STRING, 16, None, inet6)
    assert value(b"") == "_binary 0x" + "00" * 16
    value, _ = literals(T.STRING, 6, "binary")  # from binlog metadata: charset binary, no data type
    assert value(b"a") == "_binary 0x610000000000"
    char = Column("c", "char", charset="utf8mb4")  # CHAR drops trailing spaces; the server pads it back
    value, where = literals(T.STRING, 40, "utf8mb4", char)
    assert value(b"ab") == "'ab'" and where(b"ab") == "_binary 0x6162"


def test_strings_compare_by_exact_bytes_in_where():
    value, where = literals(T.VARCHAR, 40, "utf8mb4")
    assert value("é ".encode()) == "'é '" and where("é ".encode()) == "_binary 0xc3a920"


def test_json_is_cast_for_mysql_and_a_string_for_mariadb():
    doc = b"\x0c\x04it's"  # binary JSON: the string "it's"
    mysql, _ = literals(T.JSON, flavour="mysql")
    assert mysql(doc) == "CAST('\"it''s\"' AS JSON)"
    maria, _ = literals(T.JSON, flavour="mariadb")
    assert maria(doc) == "'\"it''s\"'"
    assert mysql(b"\x04\x01") == "CAST('true' AS JSON)"


def test_geometry_from_wkb_with_its_srid():
    wkb = bytes.fromhex("0101000000000000000000f83f00000000000002c0")  # POINT(1.5 -2.25)
    value, where = literals(T.GEOMETRY, 4)
    assert value(b"\x00\x00\x00\x00" + wkb) == f"ST_GeomFromWKB(0x{wkb.hex()}, 0)" == where(b"\x00" * 4 + wkb)
    mysql, _ = literals(T.GEOMETRY, 4, flavour="mysql")
    assert (
        mysql(struct.pack("<I", 4326) + wkb) == f"ST_GeomFromWKB(0x{wkb.hex()}, 4326, 'axis-order=long-lat')"
    )


# ---- statements ---------------------------------------------------------------------------------------


def _renderer(schema: TableSchema | None, full_where: bool = False) -> TableRenderer:
    # `odd``db`.`t``1` (id INT, name VARCHAR(10) utf8mb4, f FLOAT, g INT generated)
    tmap = TableMap(
        1, 1, "odd`db", "t`1", bytes([T.LONG, T.VARCHAR, T.FLOAT, T.LONG]), (0, 40, 4, 0), (True,) * 4
    )
    return TableRenderer(tmap, schema, "mariadb", full_where)


def _schema(primary=(0,), uniques=None) -> TableSchema:
    cols = [
        Column("id", "int", nullable=False),
        Column("na`me", "varchar", charset="utf8mb4"),
        Column("f", "float"),
        Column("g", "int", generated=True),
    ]
    return TableSchema("odd`db", "t`1", cols, primary, uniques or [], "ddl")


def test_statements_by_primary_key_without_limit():
    r = _renderer(_schema())
    row = (7, b"it's", 0.5, 8)
    assert r.table == "`odd``db`.`t``1`"
    assert r.insert(row) == "INSERT INTO `odd``db`.`t``1` (`id`, `na``me`, `f`) VALUES (7, 'it''s', 0.5e0);"
    assert r.delete(row) == "DELETE FROM `odd``db`.`t``1` WHERE `id`=7;"
    assert r.update((7, b"old", 0.5, 8), row) == "UPDATE `odd``db`.`t``1` SET `na``me`='old' WHERE `id`=7;"
    assert r.update(row, row) is None  # nothing differs: nothing to write
    assert r.key_exists(row) == "SELECT COUNT(*) FROM `odd``db`.`t``1` WHERE `id`=7"
    assert r.exists(row) == (
        "SELECT COUNT(*) FROM `odd``db`.`t``1` WHERE `id`<=>7 AND CAST(`na``me` AS BINARY)<=>_binary 0x69742773 "
        "AND `f`<=>0.5e0 AND `g`<=>8"
    )


def test_without_a_key_every_column_is_compared_null_safely_with_limit_1():
    r = _renderer(_schema(primary=()))
    row = (None, b"x", F32.unpack(F32.pack(0.1))[0], None)
    assert r.delete(row) == (
        "DELETE FROM `odd``db`.`t``1` WHERE `id`<=>NULL AND CAST(`na``me` AS BINARY)<=>_binary 0x78 "
        "AND `f`<=>0.10000000149011612e0 AND `g`<=>NULL LIMIT 1;"
    )
    assert r.key_exists(row) is None


def test_full_where_ignores_the_key():
    r = _renderer(_schema(), full_where=True)
    assert r.delete((1, b"", 2.0, 3)) == (
        "DELETE FROM `odd``db`.`t``1` WHERE `id`<=>1 AND CAST(`na``me` AS BINARY)<=>_binary'' AND `f`<=>2.0e0 "
        "AND `g`<=>3 LIMIT 1;"
    )


def test_not_null_unique_key_identifies_rows_and_missing_columns_are_skipped():
    r = _renderer(_schema(primary=(), uniques=[(1,)]))
    assert r.delete((MISSING, b"k", MISSING, MISSING)) == "DELETE FROM `odd``db`.`t``1` WHERE `na``me`='k';"
    # A NULL in a key column (possible when the key came from a server that has since changed): IS NULL.
    r = _renderer(_schema(primary=(0,)))
    assert r.delete((None, b"k", 1.0, 2)) == "DELETE FROM `odd``db`.`t``1` WHERE `id` IS NULL;"


def test_without_any_schema_columns_are_positional():
    tmap = TableMap(1, 1, "d", "t", bytes([T.LONG]), (0,), (True,))
    r = TableRenderer(tmap, None, "mysql")
    assert r.insert((1,)) == "INSERT INTO `d`.`t` (`@1`) VALUES (1);" and not r.keyed


# ---- byte-exact identification ------------------------------------------------------------------------


def _typed_renderer(flavour: str = "mariadb", full_where: bool = False, key=(0,)) -> TableRenderer:
    # (code VARCHAR utf8mb4, e ENUM, s SET, raw VARBINARY, d DOUBLE, c CHAR latin1, j JSON)
    tmap = TableMap(
        1,
        1,
        "d",
        "t",
        bytes([T.VARCHAR, T.STRING, T.STRING, T.VARCHAR, T.DOUBLE, T.STRING, T.JSON]),
        (40, (T.ENUM << 8) | 1, (T.SET << 8) | 1, 20, 8, (T.STRING << 8) | 8, 4),
        (True,) * 7,
    )
    cols = [
        Column("code", "varchar", nullable=False, charset="utf8mb4"),
        Column("e", "enum", enum_values=("", "a")),
        Column("s", "set", set_values=("x", "y")),
        Column("raw", "varbinary"),
        Column("d", "double"),
        Column("c", "char", charset="latin1"),
        Column("j", "json"),
    ]
    return TableRenderer(tmap, TableSchema("d", "t", cols, key, [], "ddl"), flavour, full_where)


ROW = (b"K1", 1, 0b11, b"\x00a", 0.0, b"ab", b"\x04\x01")  # j: binary JSON `true`


def test_exact_comparisons_ignore_collations_and_type_equalities():
    r = _typed_renderer(key=())
    assert r.delete(ROW) == (
        "DELETE FROM `d`.`t` WHERE CAST(`code` AS BINARY)<=>_binary 0x4b31 AND `e`+0<=>1 AND `s`+0<=>3 "
        "AND `raw`<=>_binary 0x0061 AND `d`<=>0.0e0 AND CAST(`c` AS BINARY)<=>_binary 0x6162 "
        "AND CAST(`j` AS BINARY)<=>'true' LIMIT 1;"
    )
    # NULL stays NULL-safe on the bare column.
    assert r.delete((None,) * 7).startswith("DELETE FROM `d`.`t` WHERE `code`<=>NULL AND `e`<=>NULL AND ")


def test_mysql_json_and_signed_zeros_are_compared_apart():
    r = _typed_renderer("mysql", key=())
    where = r.delete(ROW)
    assert "`j`<=>CAST('true' AS JSON) AND CAST(`j` AS BINARY)<=>'true'" in where
    assert "`d`<=>0e0 AND ATAN2(`d`,-1)>0" in where
    assert "`d`<=>-0e0 AND ATAN2(`d`,-1)<0" in r.delete(ROW[:4] + (-0.0,) + ROW[5:])
    assert "`d`<=>1.5e0 AND" in r.delete(ROW[:4] + (1.5,) + ROW[5:])


def test_keyed_statements_use_the_key_and_checks_add_it_for_the_index():
    r = _typed_renderer()
    assert r.delete(ROW) == "DELETE FROM `d`.`t` WHERE `code`='K1';"
    # The check compares every column exactly; the key by value first, so that its index finds the row.
    assert r.exists(ROW).startswith(
        "SELECT COUNT(*) FROM `d`.`t` WHERE `code`='K1' AND CAST(`code` AS BINARY)<=>_binary 0x4b31 AND `e`+0<=>1"
    )
    full = _typed_renderer(full_where=True)
    assert full.delete(ROW).startswith("DELETE FROM `d`.`t` WHERE `code`='K1' AND CAST(`code` AS BINARY)<=>")
    # A key column missing from the image: every present column exactly.
    assert r.delete((MISSING, 2) + (MISSING,) * 5) == "DELETE FROM `d`.`t` WHERE `e`+0<=>2;"


@pytest.mark.parametrize("flavour", ["mariadb", "mysql"])
@pytest.mark.parametrize(("full_where", "key"), [(False, ()), (True, (0,)), (False, (0,))])
def test_generated_full_image_statements_equal_the_generic_ones(flavour, full_where, key):
    r = _typed_renderer(flavour, full_where, key)
    full = r.full_images()
    assert full is not None
    rows = [ROW, (None,) * 7, (b"K2", 0, 0, b"", -0.0, b"", b"\x04\x02")]
    for before in rows:
        assert full.insert(before) == r.insert(before)
        assert full.delete(before) == r.delete(before)
        for after in rows:
            assert full.update(before, after) == r.update(before, after)


# ---- text that could end a literal or a line ----------------------------------------------------------


def test_text_literals_with_backslashes_or_controls_are_hex():
    # `'x\'); DROP ...'` would end the string after `x'` wherever backslashes are escapes (the default).
    assert quote_text("x\\'); DROP DATABASE d; --") == "_utf8mb4 0x" + b"x\\'); DROP DATABASE d; --".hex()
    assert quote_text("a\r\nb") == "_utf8mb4 0x610d0a62"
    enum = Column("e", "enum", enum_values=("ok", "x\\'"))
    value, _ = literals(T.ENUM, column=enum)
    assert value(1) == "'ok'" and value(2) == "_utf8mb4 0x785c27" and value(0) == "0" and value(9) == "9"
    sets = Column("s", "set", set_values=("a\\", "b"))
    value, _ = literals(T.SET, column=sets)
    assert value(0b11) == "_utf8mb4 0x615c2c62" and value(0b10) == "'b'"


def test_a_name_the_client_cannot_read_back_is_refused():
    # The mysql client drops a carriage return before a line feed: `a\r\nb` would name table `a\nb`.
    tmap = TableMap(1, 1, "d", "a\r\nb", bytes([T.LONG]), (0,), (True,))
    with pytest.raises(RollbackError, match=r"table d\.a\\r\\nb: .* carriage return before a line feed"):
        TableRenderer(tmap, TableSchema("d", "a\r\nb", [Column("id", "int")], (0,), [], "ddl"), "mariadb")
    tmap = TableMap(1, 1, "d", "t", bytes([T.LONG]), (0,), (True,))
    with pytest.raises(RollbackError, match=r"the name c\\r\\n holds"):
        TableRenderer(tmap, TableSchema("d", "t", [Column("c\r\n", "int")], (0,), [], "ddl"), "mariadb")
    lone = TableRenderer(TableMap(1, 1, "d", "a\rb", bytes([T.LONG]), (0,), (True,)), None, "mariadb")
    assert lone.insert((1,)) == "INSERT INTO `d`.`a\rb` (`@1`) VALUES (1);"  # a lone CR is read back as is
