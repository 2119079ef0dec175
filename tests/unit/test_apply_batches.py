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


def update(n: int, where: str, sets: str = "`u`='u{n}'") -> dict[str, Any]:
    return step(
        "update",
        f"SELECT COUNT(*) FROM `db`.`t` WHERE {where.format(n=n)}",
        1,
        f"UPDATE `db`.`t` SET {sets.format(n=n)} WHERE `id`={n};",
    )


def joined(steps: list[dict[str, Any]], learned: bool = False) -> list[tuple[str, int]]:
    """Each group's kind and size, on a server with table value constructors; `learned`: with the check
    form the table learned before (else none)."""
    if not learned:
        apply_batches._seen.clear()
    return [
        (group.shape[0] if group.shape else "plain", len(group.steps))
        for group in apply_batches.groups(steps, KEYED, set(), joined=True)
    ]


def test_a_joined_update_compares_each_row_with_its_own_values_through_the_key():
    """Each comparison of the check as the plan writes it, its left side on the target and its right
    side the row's own column of the VALUES table; NULL compared by a plain left side whatever the
    column's comparison is (`c`<=>NULL, as sql.py writes it)."""
    where = (
        "`id`<=>{n} AND CAST(`b` AS BINARY)<=>_binary 0x78 AND `e`+0<=>2 AND `c`<=>'2024-01-02 10:04:22.068'"
    )
    steps = [update(1, where), update(2, where.replace("CAST(`b` AS BINARY)<=>_binary 0x78", "`b`<=>NULL"))]
    grouped = apply_batches.groups(steps, KEYED, set(), joined=True)
    (piece,) = [p for p in apply_batches.pieces(grouped, KEYED) if p.kind == "statements"]
    assert piece.expect == 2
    assert piece.sql == (
        "UPDATE (WITH rollback_rows(o0, o1, o2, o3, n0) AS (VALUES "
        "(1, _binary 0x78, 2, '2024-01-02 10:04:22.068', 'u1'), (2, NULL, 2, '2024-01-02 10:04:22.068', 'u2')) "
        "SELECT * FROM rollback_rows) AS rollback_rows STRAIGHT_JOIN `db`.`t` AS rollback_target "
        "FORCE INDEX (PRIMARY) ON rollback_target.`id` <=> rollback_rows.o0 AND "
        "CAST(rollback_target.`b` AS BINARY) <=> rollback_rows.o1 AND rollback_target.`e`+0 <=> rollback_rows.o2 "
        "AND rollback_target.`c` <=> rollback_rows.o3 SET rollback_target.`u` = rollback_rows.n0;"
    )
    # the same steps where the server has none: a CASE
    assert joined(steps)[0] == ("joined", 2)
    assert [g.shape[0] for g in apply_batches.groups(steps, KEYED, set()) if g.shape] == ["update"]


def test_a_joined_update_takes_at_most_join_rows_rows():
    steps = [update(n, "`id`<=>{n} AND `u`<=>'new'") for n in range(1, apply_batches.JOIN_ROWS + 3)]
    assert joined(steps) == [("joined", apply_batches.JOIN_ROWS), ("joined", 2)]


def test_values_of_another_kind_or_compared_another_way_start_a_new_join():
    """One column of a VALUES table holds values of one kind (the server types the column from them
    all): a number after a text, or a column compared by its bytes after it was compared by value, is
    a new group; NULL goes with any."""
    steps = [
        update(1, "`id`<=>{n} AND `v`<=>'a'"),
        update(2, "`id`<=>{n} AND `v`<=>NULL"),
        update(3, "`id`<=>{n} AND `v`<=>3"),
        update(4, "`id`<=>{n} AND CAST(`v` AS BINARY)<=>_binary 0x33"),
        update(5, "`id`<=>{n} AND `v`<=>NULL", sets="`u`=NULL"),
        update(6, "`id`<=>{n} AND `v`<=>NULL", sets="`u`=6"),
    ]
    assert joined(steps) == [("joined", 2), ("joined", 1), ("joined", 2), ("joined", 1)]
    assert joined([steps[4], steps[0]]) == [("joined", 2)]  # NULLs first
    assert joined([steps[0], steps[5]]) == [("joined", 1), ("joined", 1)]  # `u`: a text, then a number


def test_only_checks_of_plain_forms_through_a_numeric_key_are_joined():
    """A FLOAT's or DOUBLE's value (an exponent), a BIT's, text in another charset, MySQL's JSON and
    the signed zero's compound forms, and a key compared as text or bytes: such UPDATEs stay CASEs."""
    for where in (
        "`id`<=>{n} AND `f`<=>1.5e0",
        "`id`<=>{n} AND `f`<=>b'101'",
        "`id`<=>{n} AND CAST(`s` AS BINARY)<=>_latin1 0xe9",
        "`id`<=>{n} AND `j`<=>CAST(_utf8mb4'{{}}' AS JSON) AND CAST(`j` AS BINARY)<=>_utf8mb4'{{}}'",
        "`id`<=>{n} AND `f`<=>-0e0 AND ATAN2(`f`,-1)<0",
        "`id`<=>'{n}' AND `u`<=>1",
        "CAST(`id` AS BINARY)<=>_binary 0x31 AND `u`<=>1",
        "`u`<=>1 AND `v`<=>{n}",
    ):
        assert joined([update(1, where), update(2, where)]) == [("update", 2)], where
    keyed = {"db.t": "`id`, `k`"}
    two = [update(n, "`id`<=>{n} AND `k`<=>7 AND `u`<=>1") for n in (1, 2)]
    assert [g.shape[0] for g in apply_batches.groups(two, keyed, set(), joined=True) if g.shape] == ["joined"]
    two = [update(n, "`id`<=>{n} AND `k`<=>'7' AND `u`<=>1") for n in (1, 2)]
    assert [g.shape[0] for g in apply_batches.groups(two, keyed, set(), joined=True) if g.shape] == ["update"]


def test_a_quote_inside_a_text_value_is_part_of_the_value():
    """A text's quotes are doubled: a value never ends inside one. Comparison by comparison, a value
    holding `<=>` is not read at all (the comparisons are counted by it): that UPDATE stays a CASE; the
    check form learned from a check without it reads it whole."""
    apply_batches._seen.clear()
    where = "`id`<=>{n} AND `j`<=>'{{\"a\": \"x'' AND `u`=1\"}}'"
    (group,) = apply_batches.groups([update(1, where)], KEYED, set(), joined=True)
    assert group.shape is not None and group.shape[0] == "joined"
    assert group.found == [("1", "'{\"a\": \"x'' AND `u`=1\"}'")]
    inside = where.replace("`u`=1", "`u`<=>1")
    (group,) = apply_batches.groups([update(1, inside)], KEYED, set(), joined=True)
    assert group.shape is not None and group.shape[0] == "joined"
    assert group.found == [("1", "'{\"a\": \"x'' AND `u`<=>1\"}'")]
    assert joined([update(1, inside)]) == [("update", 1)]


def test_a_learned_check_form_reads_what_comparison_by_comparison_reads():
    """The same groups and the same statement, whether the table's check form reads the checks or they
    are read comparison by comparison (a check form is learned only from a check without NULL)."""
    where = "`id`<=>{n} AND {b} AND `c`<=>'2024-01-02' AND `d`<=>-1.50"
    values = [
        "CAST(`b` AS BINARY)<=>_binary 0x78",
        "`b`<=>NULL",
        "CAST(`b` AS BINARY)<=>_binary''",
        "`b`<=>NULL",
    ]
    steps = [update(n, where.replace("{b}", values[n % 4])) for n in range(1, 9)]
    apply_batches._seen.clear()
    by_terms = apply_batches.groups([steps[0]], KEYED, set(), joined=True)  # NULL: nothing learned
    assert apply_batches._seen["db.t"].check_form is None and by_terms[0].form is None
    by_terms = apply_batches.groups(steps[0::2], KEYED, set(), joined=True)
    learning = apply_batches.groups(steps, KEYED, set(), joined=True)  # from steps[1]
    assert apply_batches._seen["db.t"].check_form is not None and [len(g.steps) for g in learning] == [8]
    by_form = apply_batches.groups(steps, KEYED, set(), joined=True)
    assert [g.form is not None for g in by_form] == [True]
    assert apply_batches.pieces(by_form, KEYED)[1].sql == apply_batches.pieces(learning, KEYED)[1].sql
    again = apply_batches.groups(steps[0::2], KEYED, set(), joined=True)
    assert [group.found for group in again] == [group.found for group in by_terms]
    # `b` is NULL in every row of these: compared by its bytes (the form) or by value, the same rows
    by_bytes = apply_batches.pieces(again, KEYED)[1].sql
    assert "CAST(rollback_target.`b` AS BINARY) <=>" in by_bytes
    assert by_bytes.replace("CAST(rollback_target.`b` AS BINARY)", "rollback_target.`b`") == (
        apply_batches.pieces(by_terms, KEYED)[1].sql
    )
    assert [len(g.steps) for g in by_form] == [8]
