"""join_statements: which one-row statements of a rows event join, and how (the server tests in
tests/server/test_rows_per_statement.py prove the joined script restores the same rows)."""

from __future__ import annotations

from rollback.render import statement_batches
from rollback.render.statement_batches import join_statements

INSERT = b"INSERT INTO `d`.`t` (`id`, `a`) VALUES ("
DELETE = b"DELETE FROM `d`.`t` WHERE "


def _join(lines: list[bytes], rows: int) -> list[bytes]:
    data, longest = join_statements(b"".join(line + b"\n" for line in lines), rows, INSERT, DELETE)
    out = data.split(b"\n")[:-1]
    assert longest == max(map(len, out))
    return out


def test_inserts_and_keyed_deletes_join_in_order_up_to_n_rows():
    lines = [INSERT + b"%d, 'a;b'" % i + b");" for i in range(5)] + [
        DELETE + b"`id`=%d;" % i for i in (9, 8, 7)
    ]
    assert _join(lines, 2) == [
        INSERT + b"0, 'a;b'), (1, 'a;b');",
        INSERT + b"2, 'a;b'), (3, 'a;b');",
        INSERT + b"4, 'a;b');",
        DELETE + b"(`id`=9) OR (`id`=8);",
        DELETE + b"(`id`=7);",
    ]


def test_updates_keyless_deletes_and_partial_inserts_stay_one_a_row_and_cut_a_run():
    lines = [
        INSERT + b"1, 2);",
        b"UPDATE `d`.`t` SET `a`=3 WHERE `id`=1;",
        INSERT + b"2, 2);",
        DELETE + b"`a`<=>1 LIMIT 1;",
        b"INSERT INTO `d`.`t` (`id`) VALUES (5);",
        INSERT + b"3, 2);",
        INSERT + b"4, 2);",
    ]
    assert _join(lines, 100) == [*lines[:5], INSERT + b"3, 2), (4, 2);"]


def test_a_joined_statement_stays_under_its_byte_cap(monkeypatch):
    monkeypatch.setattr(statement_batches, "MAX_STATEMENT_BYTES", 40)
    out = _join([INSERT + b"%d, 'xxxxxxxxxx');" % i for i in range(6)], 1000)
    assert len(out) == 3 and all(len(line) - len(INSERT) <= 40 + 4 for line in out)


def test_one_row_a_statement_is_the_text_as_rendered():
    lines = [INSERT + b"1, 2);", DELETE + b"`id`=1;"]
    assert _join(lines, 1) == [INSERT + b"1, 2);", DELETE + b"(`id`=1);"]
