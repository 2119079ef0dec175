"""Decoded row changes as records: the JSON values of each column type and the record layout that
`decode` prints and the change log holds, on hand-built table maps and rows."""

from __future__ import annotations

import json
from decimal import Decimal

from rollback.binlog.columns import MISSING
from rollback.binlog.constants import ColumnType as T
from rollback.binlog.decode import RowsBatch, TxContext
from rollback.binlog.rows import JsonText
from rollback.binlog.table_map import TableMap
from rollback.render.records import (
    batch_records,
    column_members,
    column_names,
    json_value,
    record_json,
    record_text,
    utc_text,
)
from rollback.schema.tables import Column

UTF8MB4_0900, BINARY, LATIN1 = 255, 63, 8
# (id INT, note VARCHAR utf8mb4, raw VARBINARY, doc JSON, price DECIMAL(6,2), shape GEOMETRY, l1 VARCHAR latin1)
TMAP = TableMap(
    5,
    1,
    "shop",
    "items",
    bytes([T.LONG, T.VARCHAR, T.VARCHAR, T.JSON, T.NEWDECIMAL, T.GEOMETRY, T.VARCHAR]),
    (0, 80, 16, 4, (6 << 8) | 2, 4, 20),
    (False,) + (True,) * 6,
    charsets=(None, UTF8MB4_0900, BINARY, None, None, None, LATIN1),
    column_names=("id", "note", "raw", "doc", "price", "shape", "l1"),
)


def test_numbers_and_null_stay_json_numbers_and_decimals_keep_every_digit_as_text():
    assert json_value(7, TMAP, 0) == 7
    assert json_value(None, TMAP, 1) is None
    assert json_value(Decimal("-0.10"), TMAP, 4) == "-0.10"  # a float would print -0.1


def test_text_columns_read_as_text_and_binary_columns_as_hex():
    assert json_value("café 😀".encode(), TMAP, 1) == "café 😀"
    assert json_value(b"\x00\xffab", TMAP, 2) == {"hex": "00ff6162"}  # binary collation: never text
    assert json_value(b"abc", TMAP, 2) == {"hex": "616263"}
    assert json_value(b"caf\xe9", TMAP, 6) == {"hex": "636166e9"}  # not UTF-8: the bytes, untouched


def test_json_columns_decode_the_binary_format_and_geometry_stays_hex():
    # MySQL binary JSON: a type byte, then the value: 0x04 literal (0x01 true), 0x05 int16, 0x0c string;
    # the record holds the document as the server prints it (JSON text), not as a parsed value
    assert json_value(b"\x04\x01", TMAP, 3) == {"json": "true"}
    assert json_value(b"\x05\x2a\x00", TMAP, 3) == {"json": "42"}
    assert json_value(b"\x0c\x03abc", TMAP, 3) == {"json": '"abc"'}
    assert json_value(JsonText('{"a": 1}'), TMAP, 3) == {"json": '{"a": 1}'}
    point = bytes.fromhex("000000000101000000000000000000f03f0000000000000040")  # SRID 0, POINT(1 2)
    assert json_value(point, TMAP, 5) == {"hex": point.hex()}


def test_columns_are_named_by_the_table_map_or_by_position():
    assert column_names(TMAP) == TMAP.column_names
    assert column_names(TMAP, tuple("abcdefg")) == tuple("abcdefg")  # names from the schema win
    # names that do not fit the columns name none of them: positions, never a shifted name
    assert column_names(TMAP, ("a", "b")) == ("@1", "@2", "@3", "@4", "@5", "@6", "@7")
    unnamed = TableMap(5, 1, "d", "t", bytes([T.LONG, T.LONG]), (0, 0), (True, True))
    assert column_names(unnamed) == ("@1", "@2")


def test_utc_text_is_iso_8601_in_utc():
    assert utc_text(0) == "1970-01-01T00:00:00Z"
    assert utc_text(1486595539) == "2017-02-08T23:12:19Z"


def _batch(kind: str, rows: list) -> RowsBatch:
    tx = TxContext(gtid="3e11fa47-71ca-11e1-9e33-c80aa9429562:23", thread_id=11)
    return RowsBatch("binlog.000002", 1234, 1400, kind, TMAP, tx, 1486595539, 93157, rows, True)


def test_an_update_record_holds_both_images_without_the_columns_they_omit():
    before = (7, b"pen", b"\x01", b"\x04\x00", Decimal("1.50"), MISSING, MISSING)
    after = (7, MISSING, MISSING, MISSING, Decimal("2.00"), MISSING, MISSING)
    (record,) = batch_records(_batch("update", [(before, after)]))
    assert record == {
        "file": "binlog.000002",
        "pos": 1234,
        "end_pos": 1400,
        "gtid": "3e11fa47-71ca-11e1-9e33-c80aa9429562:23",
        "timestamp": "2017-02-08T23:12:19Z",
        "server_id": 93157,
        "thread_id": 11,
        "database": "shop",
        "table": "items",
        "type": "update",
        "row": 0,
        "before": {"id": 7, "note": "pen", "raw": {"hex": "01"}, "doc": {"json": "null"}, "price": "1.50"},
        "after": {"id": 7, "price": "2.00"},
    }
    assert record_json(record).startswith('{"file":"binlog.000002","pos":1234,')
    assert json.loads(record_json(record)) == record


def test_inserts_hold_an_after_image_and_deletes_a_before_image_numbered_by_row():
    rows = [(1, b"a", None, None, None, None, None), (2, "é".encode(), None, None, None, None, None)]
    inserted = list(batch_records(_batch("insert", rows)))
    assert [(r["row"], "before" in r, r["after"]["note"]) for r in inserted] == [
        (0, False, "a"),
        (1, False, "é"),
    ]
    (deleted,) = batch_records(_batch("delete", rows[:1]))
    assert "after" not in deleted and deleted["before"]["id"] == 1
    assert record_json(inserted[1]).count("é") == 1  # not escaped to \u00e9


def test_the_text_form_is_one_head_line_and_one_line_per_image():
    (record,) = batch_records(_batch("delete", [(1, b"it's", None, None, None, None, None)]))
    assert record_text(record).splitlines() == [
        "binlog.000002:1234-1400 2017-02-08T23:12:19Z gtid=3e11fa47-71ca-11e1-9e33-c80aa9429562:23 "
        "server=93157 DELETE `shop`.`items` row 0",
        '  before: id=1, note="it\'s", raw=null, doc=null, price=null, shape=null, l1=null',
    ]


# (id INT, state ENUM('new','paid','shipped'), tags SET('a','b','c')): members from FULL metadata or a schema


def _enum_map(**metadata):
    return TableMap(
        9,
        1,
        "shop",
        "orders",
        bytes([T.LONG, T.STRING, T.STRING]),
        (0, (T.ENUM << 8) | 1, (T.SET << 8) | 1),
        (False, True, True),
        column_names=("id", "state", "tags"),
        **metadata,
    )


def test_enum_and_set_values_read_as_their_members_from_full_metadata():
    tmap = _enum_map(enum_values={1: (b"new", b"paid", b"shipped")}, set_values={2: (b"a", b"b", b"c")})
    members = column_members(tmap)
    assert json_value(2, tmap, 1, members) == "paid"
    assert json_value(0, tmap, 1, members) == ""  # the '' error value
    assert json_value(5, tmap, 2, members) == "a,c"
    assert json_value(0, tmap, 2, members) == ""
    assert json_value(9, tmap, 1, members) == 9  # outside the definition: the number, not a guess
    assert json_value(8, tmap, 2, members) == 8


def test_enum_and_set_members_come_from_the_schema_when_the_binlog_has_none():
    tmap = _enum_map()
    columns = [
        Column("id"),
        Column("state", "enum", enum_values=("new", "paid", "shipped")),
        Column("tags", "set", set_values=("a", "b", "c")),
    ]
    rows = [((1, 1, 1), (1, 3, 6))]
    batch = RowsBatch("binlog.000002", 1234, 1400, "update", tmap, TxContext(), 1486595539, 1, rows, True)
    (record,) = batch_records(batch, None, columns)
    assert record["before"] == {"id": 1, "state": "new", "tags": "a"}
    assert record["after"] == {"id": 1, "state": "shipped", "tags": "b,c"}
    # no definition at all: the numbers the binlog holds
    (bare,) = batch_records(batch)
    assert bare["after"] == {"id": 1, "state": 3, "tags": 6}
