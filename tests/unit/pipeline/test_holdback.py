"""Which newer changes --allow-partial holds back once an older change to a row is irreversible."""

from __future__ import annotations

from rollback.binlog.columns import MISSING
from rollback.pipeline.holdback import HoldBack, dump_taints, load_taints, row_key

T = "db.t"
KEY = (0,)


def at(pos: int, row: int = 0) -> tuple[int, int, int, int]:
    return (0, pos, pos, row)


def test_a_row_is_followed_where_an_update_moves_its_key():
    hold = HoldBack({})
    hold.irreversible(T, "delete", (1, MISSING), KEY, at(100))
    assert not hold.held(T, "insert", (2, "other"), KEY, at(200))
    assert hold.held(T, "insert", (1, "again"), KEY, at(300))
    assert hold.held(T, "update", ((1, MISSING), (5, MISSING)), KEY, at(400))  # moves 1 -> 5
    assert hold.held(T, "delete", (5, MISSING), KEY, at(500))
    assert not hold.held("db.other", "insert", (1, "x"), KEY, at(600))
    assert set(hold.found) == {(T, row_key((1,), KEY)), (T, row_key((5,), KEY))}


def test_changes_older_than_the_irreversible_one_are_not_held():
    hold = HoldBack(load_taints(dump_taints({(T, row_key((1,), KEY)): at(300)})))
    assert not hold.held(T, "insert", (1, "x"), KEY, at(200))
    assert not hold.held(T, "insert", (1, "x"), KEY, at(300))  # the irreversible change itself
    assert hold.held(T, "insert", (1, "x"), KEY, at(300, row=1))  # a later row of the same event


def test_keys_compare_as_case_and_accent_insensitive_collations_do():
    assert row_key(("Ab\u00e9 ",), KEY) == row_key((b"abe",), KEY)
    assert row_key((b"\xff\x00",), KEY) == row_key((b"\xff\x00  ",), KEY)


def test_a_keyless_table_or_a_change_without_its_key_holds_back_every_newer_change_of_the_table():
    hold = HoldBack({})
    hold.irreversible(T, "update", ((1, 2), (MISSING, 3)), (), at(100))  # no row key: the whole table
    assert not hold.held(T, "insert", (9, 9), (), at(50))
    assert hold.held(T, "insert", (9, 9), (), at(150))
    other = HoldBack({})
    other.irreversible(T, "insert", (MISSING, "x"), KEY, at(100))  # its key is not in the image
    assert other.held(T, "delete", (7, "y"), KEY, at(200))
