"""The job page's execution row says what became of each conflict, and names the rows."""

from __future__ import annotations

from types import SimpleNamespace

from app.web.conflict_words import conflict_words, row_key

REINSERT = "INSERT INTO `shop`.`orders` (`id`, `customer`, `total`) VALUES (4, 'dee, jr.', 3.20);"
UPDATE = "UPDATE `shop`.`orders` SET `total`=7.00 WHERE `id`=2 AND `region`=3;"


def _execution(conflicts, **values):
    fields = {
        "check": False,
        "on_conflict": "abort",
        "skipped": 0,
        "dry_run": False,
        "transactions_applied": [],
    }
    return SimpleNamespace(conflicts=conflicts, **{**fields, **values})


def _conflict(statement, table="shop.orders"):
    return {"table": table, "statement": statement, "reason": "the row's key is taken"}


def test_a_row_is_named_by_its_where_or_the_first_column_it_re_inserts():
    assert row_key(REINSERT) == "id=4"
    assert row_key("INSERT INTO `t` (`name`, `n`) VALUES ('it''s, a (test)', 1);") == "name='it''s, a (test)'"
    assert row_key(UPDATE) == "id=2 AND region=3"
    assert row_key("DELETE FROM `t` WHERE `a`=1 AND `b` IS NULL LIMIT 1;") == "a=1 AND b IS NULL"


def test_no_conflict_says_none():
    assert conflict_words(_execution([])) == "none"


def test_a_skipped_row_is_said_to_be_skipped_and_named():
    one = _execution([_conflict(REINSERT)], on_conflict="skip", skipped=1)
    assert conflict_words(one) == "1 conflict: row skipped, left as the target holds it (shop.orders id=4)"


def test_an_aborted_commit_says_it_rolled_back():
    aborted = _execution([_conflict(UPDATE)])
    assert conflict_words(aborted) == (
        "1 conflict: stopped there and rolled back, nothing applied (shop.orders id=2 AND region=3)"
    )
    dry = _execution([_conflict(UPDATE)], dry_run=True)
    assert conflict_words(dry).startswith("1 conflict: the dry run stopped there")


def test_a_check_says_the_rows_would_be_skipped_and_names_three():
    many = [_conflict(REINSERT.replace("(4,", f"({n},")) for n in range(4, 9)]
    check = _execution(many, check=True, dry_run=True, on_conflict="skip", skipped=5)
    assert conflict_words(check) == (
        "5 conflicts: rows would be skipped (shop.orders id=4, shop.orders id=5, shop.orders id=6 and 2 more)"
    )
