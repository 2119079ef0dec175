"""Row change -> its reverse, on hand-built row images of one table.

`shop`.`items` (id INT NOT NULL PRIMARY KEY, name VARCHAR(20) utf8mb4, qty INT, total INT GENERATED).
The expected statements follow the server's rules, written out by hand: the reverse of an INSERT
deletes by primary key; the reverse of a DELETE inserts every column but the generated one (the
server computes it and refuses a value for it); the reverse of an UPDATE sets the before values of
the changed columns, found by the after image's key. A MINIMAL before image holds only the key, so an
UPDATE's old values are lost; NOBLOB/MINIMAL after images omit unchanged columns, whose current
value is the before image's.
"""

from __future__ import annotations

from rollback.binlog.columns import MISSING
from rollback.binlog.constants import ColumnType as T
from rollback.binlog.table_map import TableMap
from rollback.render.invert import Irreversible, Reverse, current_image, forward_row, invert_row, invert_rows
from rollback.render.sql import TableRenderer
from rollback.schema.tables import Column, TableSchema

ITEMS = "`shop`.`items`"
# the conflict check of a row (7, 'pen', qty): every column byte-exact and NULL-safe
CHECK_7 = (
    "SELECT COUNT(*) FROM `shop`.`items` WHERE `id`<=>7 AND CAST(`name` AS BINARY)<=>_binary 0x70656e "
    "AND `qty`<=>{qty} AND `total`<=>{total}"
)


def _renderer(primary: tuple[int, ...] = (0,)) -> TableRenderer:
    tmap = TableMap(
        1,
        1,
        "shop",
        "items",
        bytes([T.LONG, T.VARCHAR, T.LONG, T.LONG]),
        (0, 80, 0, 0),
        (False, True, True, True),
    )
    columns = [
        Column("id", "int", nullable=False),
        Column("name", "varchar", charset="utf8mb4"),
        Column("qty", "int"),
        Column("total", "int", generated=True),
    ]
    return TableRenderer(tmap, TableSchema("shop", "items", columns, primary, [], "ddl"), "mysql")


def test_an_insert_is_undone_by_a_delete_of_its_key_checked_against_the_whole_row():
    reverse = invert_row(_renderer(), "insert", (7, b"pen", 3, 30))
    assert reverse == Reverse(
        f"DELETE FROM {ITEMS} WHERE `id`=7;", CHECK_7.format(qty=3, total=30), 1, "insert"
    )


def test_a_delete_is_undone_by_an_insert_of_every_writable_column_once_the_key_is_free():
    reverse = invert_row(_renderer(), "delete", (7, b"it's", None, 0))
    assert reverse == Reverse(
        f"INSERT INTO {ITEMS} (`id`, `name`, `qty`) VALUES (7, 'it''s', NULL);",
        "SELECT COUNT(*) FROM `shop`.`items` WHERE `id`=7",
        0,
        "delete",
    )


def test_an_update_is_undone_by_setting_the_changed_columns_back_where_the_row_now_is():
    before, after = (7, b"pen", 3, 30), (8, b"pen", 5, 50)
    reverse = invert_row(_renderer(), "update", (before, after))
    assert isinstance(reverse, Reverse)
    # the generated column changed too, but only the server may write it
    assert reverse.sql == f"UPDATE {ITEMS} SET `id`=7, `qty`=3 WHERE `id`=8;"
    assert reverse.check == (
        "SELECT COUNT(*) FROM `shop`.`items` WHERE `id`<=>8 AND CAST(`name` AS BINARY)<=>_binary 0x70656e "
        "AND `qty`<=>5 AND `total`<=>50"
    )
    assert (reverse.expect, reverse.kind) == (1, "update")


def test_an_update_that_changed_nothing_has_nothing_to_undo():
    row = (7, b"pen", 3, 30)
    assert invert_row(_renderer(), "update", (row, row)) is None


def test_without_checks_a_reverse_carries_no_check_query():
    for kind, row in (("insert", (7, b"pen", 3, 30)), ("delete", (7, b"pen", 3, 30))):
        reverse = invert_row(_renderer(), kind, row, checks=False)
        assert isinstance(reverse, Reverse) and reverse.check is None


def test_noblob_after_image_keeps_the_before_values_of_the_columns_it_omits():
    before, after = (7, b"pen", 3, 30), (MISSING, MISSING, 5, 50)
    assert current_image(before, after) == (7, b"pen", 5, 50)
    reverse = invert_row(_renderer(), "update", (before, after))
    assert reverse == Reverse(
        f"UPDATE {ITEMS} SET `qty`=3 WHERE `id`=7;", CHECK_7.format(qty=5, total=50), 1, "update"
    )


def test_minimal_before_image_of_an_update_loses_the_old_values_and_is_refused():
    before, after = (7, MISSING, MISSING, MISSING), (MISSING, MISSING, 5, MISSING)
    assert invert_row(_renderer(), "update", (before, after)) == Irreversible(
        "update", ("qty",), "the old values of changed columns are not in the before image"
    )


def test_a_deleted_row_missing_a_writable_column_cannot_be_reinserted():
    assert invert_row(_renderer(), "delete", (7, MISSING, MISSING, 30)) == Irreversible(
        "delete", ("name", "qty"), "the deleted row's columns are not all in the before image"
    )
    # the generated column alone may be missing: the server computes it again
    reverse = invert_row(_renderer(), "delete", (7, b"pen", 3, MISSING))
    assert isinstance(reverse, Reverse)
    assert reverse.sql == f"INSERT INTO {ITEMS} (`id`, `name`, `qty`) VALUES (7, 'pen', 3);"


def test_an_insert_without_its_key_or_without_a_key_and_a_full_image_cannot_be_found():
    assert invert_row(_renderer(), "insert", (MISSING, b"pen", 3, 30)) == Irreversible(
        "insert", ("id",), "key columns not in the image"
    )
    assert invert_row(_renderer(primary=()), "insert", (7, MISSING, 3, 30)) == Irreversible(
        "insert", ("name",), "row cannot be identified"
    )


def test_without_a_key_the_reverse_compares_every_column_and_touches_one_row():
    reverse = invert_row(_renderer(primary=()), "insert", (7, b"pen", 3, 30), checks=False)
    assert isinstance(reverse, Reverse)
    assert reverse.sql == (
        f"DELETE FROM {ITEMS} WHERE `id`<=>7 AND CAST(`name` AS BINARY)<=>_binary 0x70656e AND `qty`<=>3 "
        "AND `total`<=>30 LIMIT 1;"
    )


def test_an_events_rows_are_reversed_newest_first_and_unchanged_rows_are_skipped():
    same = (2, b"b", 1, 1)
    rows = [((1, b"a", 1, 1), (1, b"a", 2, 2)), (same, same), ((3, b"c", 1, 1), (3, b"c", 9, 9))]
    reversed_rows = list(invert_rows(_renderer(), "update", rows, checks=False))
    assert [index for index, _ in reversed_rows] == [2, 0]
    assert [r.sql for _, r in reversed_rows if isinstance(r, Reverse)] == [
        f"UPDATE {ITEMS} SET `qty`=1 WHERE `id`=3;",
        f"UPDATE {ITEMS} SET `qty`=1 WHERE `id`=1;",
    ]


def test_forward_statements_replay_the_change_as_it_happened():
    renderer = _renderer()
    assert forward_row(renderer, "insert", (7, b"pen", 3, 30)) == (
        f"INSERT INTO {ITEMS} (`id`, `name`, `qty`) VALUES (7, 'pen', 3);"
    )
    assert forward_row(renderer, "delete", (7, b"pen", 3, 30)) == f"DELETE FROM {ITEMS} WHERE `id`=7;"
    update = ((7, b"pen", 3, 30), (MISSING, MISSING, 5, 50))
    assert forward_row(renderer, "update", update) == f"UPDATE {ITEMS} SET `qty`=5 WHERE `id`=7;"
