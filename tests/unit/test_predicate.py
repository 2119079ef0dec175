"""--where predicates: every supported operator, MySQL's comparison and NULL semantics, and the refusals.

Table-driven: (expression, row image, expected result) with the result as MySQL gives it: 1, 0 or
None (NULL). Images are as the decoder gives them: text columns as bytes, temporal columns as text,
ENUM as its 1-based index, SET as a bit mask.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from rollback.base.errors import RangeError
from rollback.binlog.columns import MISSING
from rollback.request.predicate import MissingColumn, Predicate, selects
from rollback.schema.tables import Column

COLUMNS = [
    Column("id", "int"),
    Column("name", "varchar", charset="utf8mb4"),
    Column("price", "decimal"),
    Column("at", "datetime"),
    Column("state", "enum", enum_values=("new", "paid", "void")),
    Column("tags", "set", set_values=("red", "blue")),
    Column("raw", "varbinary"),
    Column("n", "int"),  # often NULL
    Column("t", "time"),
    Column("ratio", "double"),
]
ROW = (7, b"Caf\xc3\xa9 ", Decimal("12.50"), "2024-01-02 10:00:00", 2, 3, b"Ab", None, "-01:30:00", 0.5)


def run(text: str, row=ROW):
    return Predicate(text).bind("db.t", COLUMNS)(row)


CASES = [
    # comparisons
    ("id = 7", 1),
    ("id = 8", 0),
    ("id <> 7", 0),
    ("id != 8", 1),
    ("id < 8", 1),
    ("id <= 7", 1),
    ("id > 7", 0),
    ("id >= 7", 1),
    ("7 = id", 1),
    # text: _ci collation (case, accents, trailing spaces ignored)
    ("name = 'cafe'", 1),
    ("name = 'CAFÉ'", 1),
    ("name = 'caf'", 0),
    ("name < 'd'", 1),
    # binary strings compare byte for byte
    ("raw = 'Ab'", 1),
    ("raw = 'ab'", 0),
    ("raw = 0x4162", 1),
    # number and string: as numbers
    ("id = '7'", 1),
    ("id = '7abc'", 1),
    ("id = 'abc'", 0),
    ("price = 12.5", 1),
    ("price = '12.50'", 1),
    ("price > 12", 1),
    ("ratio = 0.5", 1),
    ("ratio < 1", 1),
    # temporal columns with string literals
    ("at = '2024-01-02 10:00:00'", 1),
    ("at > '2024-01-02'", 1),
    ("at >= '2024-01-02 10:00:00.000001'", 0),
    ("at BETWEEN '2024-01-01' AND '2024-01-03'", 1),
    ("t = '-1:30'", 1),
    ("t < '00:00:00'", 1),
    # ENUM and SET by label
    ("state = 'paid'", 1),
    ("state = 'PAID'", 1),
    ("state IN ('new', 'void')", 0),
    ("tags = 'red,blue'", 1),
    # IN
    ("id IN (1, 7)", 1),
    ("id IN (1, 2)", 0),
    ("id IN (1, NULL)", None),
    ("id IN (7, NULL)", 1),
    ("id NOT IN (1, 2)", 1),
    ("id NOT IN (1, NULL)", None),
    ("n IN (1)", None),
    # BETWEEN
    ("id BETWEEN 1 AND 7", 1),
    ("id BETWEEN 8 AND 9", 0),
    ("id NOT BETWEEN 8 AND 9", 1),
    ("n BETWEEN 1 AND 2", None),
    ("id BETWEEN NULL AND 5", 0),  # 7 <= 5 is false whatever the low end
    ("id BETWEEN NULL AND 9", None),
    # LIKE
    ("name LIKE 'caf%'", 1),
    ("name LIKE 'C_fé '", 1),
    ("name LIKE 'café'", 0),  # LIKE does not pad: the trailing space counts
    ("name NOT LIKE 'x%'", 1),
    ("raw LIKE 'a%'", 0),
    ("raw LIKE 'A_'", 1),
    ("name LIKE 'caf!%' ESCAPE '!'", 0),
    ("'50%' LIKE '50!%' ESCAPE '!'", 1),
    ("'a_b' LIKE 'a\\_b'", 1),
    ("'axb' LIKE 'a\\_b'", 0),
    ("n LIKE '%'", None),
    # IS
    ("n IS NULL", 1),
    ("id IS NULL", 0),
    ("n IS NOT NULL", 0),
    ("id IS TRUE", 1),
    ("n IS TRUE", 0),
    ("n IS NOT TRUE", 1),
    ("(id = 8) IS FALSE", 1),
    # NULL: three-valued logic
    ("n = 1", None),
    ("n = NULL", None),
    ("n <=> NULL", 1),
    ("id <=> NULL", 0),
    ("id <=> 7", 1),
    ("NOT n = 1", None),
    ("n = 1 AND id = 8", 0),
    ("n = 1 AND id = 7", None),
    ("n = 1 OR id = 7", 1),
    ("n = 1 OR id = 8", None),
    ("id = 7 XOR id = 8", 1),
    ("id = 7 XOR n = 1", None),
    ("NOT (id = 7 AND name = 'cafe')", 0),
    # arithmetic
    ("id + 1 = 8", 1),
    ("id - 10 = -3", 1),
    ("id * 2 = 14", 1),
    ("id / 2 = 3.5", 1),
    ("id DIV 2 = 3", 1),
    ("id % 4 = 3", 1),
    ("-id = -7", 1),
    ("id / 0 IS NULL", 1),
    ("n + 1 IS NULL", 1),
    ("price * 2 = 25", 1),
    ("TRUE", 1),
    ("FALSE OR id = 7", 1),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_operator_gives_mysqls_result(text, expected):
    assert run(text) == expected


def test_only_true_selects():
    assert selects(1) and not selects(0) and not selects(None)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("LENGTH(name) > 1", "LENGTH"),
        ("name REGEXP 'x'", "REGEXP"),
        ("id = (SELECT 1)", "SUBQUERY"),
        ("id = ?", "PLACEHOLDER"),
        ("t.id = 1", "without a table"),
        ("id = 1; DROP TABLE x", "one expression"),
        ("id = ", "does not parse"),
        ("id IN (SELECT 1)", "IN takes a list"),
        ("CASE WHEN id = 1 THEN 1 END", "CASE"),
    ],
)
def test_unsupported_expressions_are_refused_naming_the_part(text, named):
    with pytest.raises(RangeError) as caught:
        Predicate(text)
    message = str(caught.value)
    assert "\n" not in message and named.lower() in message.lower(), message


def test_unknown_columns_are_refused_naming_them_and_the_table():
    with pytest.raises(RangeError, match=r"column\(s\) nope, other that table db\.t does not have"):
        Predicate("nope = 1 OR other = 2 OR id = 1").bind("db.t", COLUMNS)


def test_column_names_ignore_case_and_take_backquotes():
    assert Predicate("`ID` = 7 AND Name = 'cafe'").bind("db.t", COLUMNS)(ROW) == 1


def test_enum_without_labels_is_refused():
    with pytest.raises(RangeError, match="does not list the values of ENUM column e"):
        Predicate("e = 'x'").bind("db.t", [Column("e", "enum")])


def test_json_columns_are_refused():
    with pytest.raises(RangeError, match="JSON"):
        Predicate("doc = 'x'").bind("db.t", [Column("doc", "json")])


def test_a_column_missing_from_the_image_is_reported_not_guessed():
    test = Predicate("n = 1").bind("db.t", COLUMNS)
    image = list(ROW)
    image[7] = MISSING
    with pytest.raises(MissingColumn) as caught:
        test(image)
    assert caught.value.column == "n"


def test_a_binary_introducer_compares_byte_for_byte():
    assert run("name = _utf8mb4'CAFE'") == 1
    assert run("name = 'cafe'") == 1 and run("name = _binary'cafe'") == 0
    assert run("name = _binary'Café '") == 1
