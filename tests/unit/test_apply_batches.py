"""The queries apply_batches builds for a batch: which combined forms keep a read of their own."""

from __future__ import annotations

from typing import Any

from rollback.target import batches as apply_batches

KEYED = {"db.t": "`id`"}


def step(kind: str, check: str, expect: int, sql: str) -> dict[str, Any]:
    return {"table": "db.t", "type": kind, "check": check, "expect": expect, "sql": sql, "tx": 0}


def reinsert(check_where: str, row: int) -> dict[str, Any]:
    return step(
        "delete",
        f"SELECT COUNT(*) FROM `db`.`t` WHERE {check_where}",
        0,
        f"INSERT INTO `db`.`t` (`id`, `u`) VALUES ({row}, 'u{row}');",
    )


def kinds(steps: list[dict[str, Any]]) -> list[str]:
    return [piece.kind for piece in apply_batches.pieces(apply_batches.groups(steps, KEYED, set()), KEYED)]


def test_re_inserts_by_the_primary_key_are_checked_by_their_insert():
    steps = [reinsert(f"`id`={n}", n) for n in (1, 2, 3)]
    assert kinds(steps) == ["savepoint", "statements"]
    (_, insert) = apply_batches.pieces(apply_batches.groups(steps, KEYED, set()), KEYED)
    assert insert.expect == 3 and insert.sql.startswith(
        "INSERT INTO `db`.`t` (`id`, `u`) VALUES (1, 'u1'), (2,"
    )


def test_re_inserts_checked_by_other_columns_keep_their_read():
    """A check that is not by the target's primary key (a unique key the plan's schema named, a key
    with a string that looks like more of it) is not what a duplicate-key error stands for."""
    for where in ("`u`='u1'", "`id`=1 AND `u`='u1'", "`id`='1 AND `x`=2' AND `v`=3", "`id` IS NULL"):
        assert kinds([reinsert(where, 1), reinsert(where + " ", 2)]) == [
            "savepoint",
            "checks",
            "statements",
        ], where
    assert apply_batches.shape(reinsert("`u`='u1'", 1), KEYED, set()) == (
        "checked_insert",
        "`db`.`t`",
        "INSERT INTO `db`.`t` (`id`, `u`) VALUES ",
    )


def test_a_case_update_finds_its_rows_by_their_checks():
    steps = [
        step(
            "update",
            f"SELECT COUNT(*) FROM `db`.`t` WHERE `id`<=>{n} AND `u`<=>'new'",
            1,
            f"UPDATE `db`.`t` SET `u`='u{n}' WHERE `id`={n};",
        )
        for n in (1, 2)
    ]
    pieces = apply_batches.pieces(apply_batches.groups(steps, KEYED, set()), KEYED)
    assert [piece.kind for piece in pieces] == ["savepoint", "statements"]
    assert pieces[1].expect == 2
    assert pieces[1].sql == (
        "UPDATE `db`.`t` FORCE INDEX (PRIMARY) SET `u` = CASE WHEN (`id`=1) THEN 'u1' WHEN (`id`=2) THEN 'u2' "
        "END WHERE (`id`<=>1 AND `u`<=>'new') OR (`id`<=>2 AND `u`<=>'new');"
    )


def test_a_case_update_takes_at_most_case_rows_rows():
    steps = [
        step(
            "update",
            f"SELECT COUNT(*) FROM `db`.`t` WHERE `id`<=>{n} AND `u`<=>'new'",
            1,
            f"UPDATE `db`.`t` SET `u`='u{n}' WHERE `id`={n};",
        )
        for n in range(1, 2 * apply_batches.CASE_ROWS + 2)
    ]
    grouped = apply_batches.groups(steps, KEYED, set())
    assert [len(group.steps) for group in grouped] == [apply_batches.CASE_ROWS, apply_batches.CASE_ROWS, 1]
