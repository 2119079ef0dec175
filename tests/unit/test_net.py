"""Net effects (--net, rollback/render/net.py): the fold of a table's changes, the order of their reverses, and
their statements, checks and `merge` objects.

The model: a table (id PRIMARY KEY, u NOT NULL UNIQUE, v) as a dict id -> (id, u, v). A random
sequence of INSERTs, UPDATEs (moving either key too) and DELETEs is applied to it as the server would
(refusing what breaks a key); the net reverse statements are then applied to the final state, in the
order execution_order gives, each under its check and the two unique keys: the result must be the
state the sequence started from (what the full reverse script restores), or the fold refuses because
rows exchange key values.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollback import Filters, Job, Options, RangeError, RangeSpec
from rollback.base.errors import NetRefused
from rollback.binlog.constants import ColumnType as T
from rollback.binlog.table_map import TableMap
from rollback.render.net import NetFold, NetRenderer, NetRow, execution_order
from rollback.render.sql import TableRenderer
from rollback.schema.tables import Column, TableSchema

TABLE = "`shop`.`items`"
UNIQUES = {TABLE: [((0,), False), ((1,), False)]}
Row = tuple[int, int, int]


def _fold(changes: list[tuple[str, object]]) -> list[NetRow]:
    fold = NetFold(TABLE, (0,))
    for seq, (kind, row) in enumerate(changes):
        fold.add(kind, row, seq, ("binlog.000001", 100 + seq, 0, seq, None))
    return execution_order(fold.rows(), UNIQUES)


def test_a_row_updated_ten_times_is_one_update_from_its_first_image_to_its_last():
    changes = [("update", ((1, 1, n), (1, 1, n + 1))) for n in range(10)]
    [row] = _fold(changes)
    assert (row.kind, row.before, row.after, row.where[1]) == ("update", (1, 1, 0), (1, 1, 10), 109)


def test_a_row_inserted_then_updated_then_deleted_inside_the_range_is_no_change():
    changes = [("insert", (1, 1, 0)), ("update", ((1, 1, 0), (2, 1, 5))), ("delete", (2, 1, 5))]
    assert _fold(changes) == []


def test_an_update_moving_the_key_moves_the_row():
    [row] = _fold([("update", ((1, 1, 0), (7, 1, 0))), ("update", ((7, 1, 0), (7, 2, 3)))])
    assert (row.kind, row.before, row.after) == ("update", (1, 1, 0), (7, 2, 3))


def test_a_delete_then_an_insert_of_the_same_key_is_one_update_or_nothing():
    [row] = _fold([("delete", (1, 1, 0)), ("insert", (1, 1, 4))])
    assert (row.kind, row.before, row.after) == ("update", (1, 1, 0), (1, 1, 4))
    assert _fold([("delete", (1, 1, 0)), ("insert", (1, 1, 0))]) == []


def test_rows_exchanging_their_keys_are_refused_naming_the_table_the_position_and_the_way_out():
    changes = [
        ("update", ((1, 1, 0), (3, 1, 0))),
        ("update", ((2, 2, 0), (1, 2, 0))),
        ("update", ((3, 1, 0), (2, 1, 0))),
    ]
    with pytest.raises(NetRefused) as refused:
        _fold(changes)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("table `shop`.`items` at binlog.000001:")
    assert message.endswith("generate the full script, without --net")


def test_a_reinsert_waits_for_the_row_that_holds_its_unique_value_after_the_range():
    # row 1 deleted, then row 2 takes its u=1 (newest): re-inserting 1 must wait for 2's reverse
    rows = _fold(
        [("delete", (1, 1, 0)), ("update", ((2, 2, 0), (2, 1, 0))), ("update", ((3, 3, 0), (3, 3, 1)))]
    )
    assert [(r.kind, r.before) for r in rows] == [
        ("update", (3, 3, 0)),
        ("update", (2, 2, 0)),
        ("delete", (1, 1, 0)),
    ]


# -- the model


def _free(state: dict[int, Row], row: Row, besides: int | None = None) -> bool:
    return all(other[0] != row[0] and other[1] != row[1] for key, other in state.items() if key != besides)


ops = st.lists(
    st.tuples(
        st.sampled_from(["insert", "update", "delete"]),
        st.integers(0, 3),
        st.integers(0, 3),
        st.integers(0, 3),
        st.integers(0, 2),
    ),
    max_size=25,
)
starts = st.dictionaries(st.integers(0, 3), st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=4)


def _run(start: dict[int, tuple[int, int]], steps: list) -> tuple[dict[int, Row], dict[int, Row], list]:
    state: dict[int, Row] = {}
    for key, (u, v) in start.items():
        row = (key, u, v)
        if _free(state, row):
            state[key] = row
    initial = dict(state)
    changes: list[tuple[str, object]] = []
    for kind, key, new_key, u, v in steps:
        if kind == "insert":
            row = (key, u, v)
            if _free(state, row):
                state[key] = row
                changes.append(("insert", row))
        elif key in state:
            old = state[key]
            if kind == "delete":
                del state[key]
                changes.append(("delete", old))
                continue
            new = (new_key, u, v)
            if _free(state, new, besides=key):
                del state[key]
                state[new_key] = new
                changes.append(("update", (old, new)))
    return initial, state, changes


def _apply_reverse(state: dict[int, Row], rows: list[NetRow]) -> dict[int, Row]:
    state = dict(state)
    for row in rows:
        if row.kind == "delete":  # re-insert: the key must be free (the check), and the unique key too
            assert row.before is not None and _free(state, row.before)
            state[row.before[0]] = row.before
            continue
        assert row.after is not None and state.get(row.after[0]) == row.after  # the row as the range left it
        del state[row.after[0]]
        if row.kind == "update":
            assert row.before is not None and _free(state, row.before)
            state[row.before[0]] = row.before
    return state


@settings(max_examples=400, deadline=None)
@given(starts, ops)
def test_the_net_reverse_restores_what_the_full_reverse_restores(start, steps):
    initial, final, changes = _run(start, steps)
    try:
        rows = _fold(changes)
    except NetRefused:
        return  # key values exchanged between rows: refused before anything is written
    assert len({id(r) for r in rows}) == len(rows)
    assert all(r.before != r.after for r in rows)
    assert _apply_reverse(final, rows) == initial


# -- statements, checks and the plan's merge object


def _renderer() -> NetRenderer:
    tmap = TableMap(
        1, 1, "shop", "items", bytes([T.LONG, T.LONG, T.VARCHAR]), (0, 0, 80), (False, False, True)
    )
    columns = [
        Column("id", "int", nullable=False),
        Column("u", "int", nullable=False),
        Column("name", "varchar", charset="utf8mb4"),
    ]
    schema = TableSchema("shop", "items", columns, (0,), [(1,)], "ddl")
    return NetRenderer(TableRenderer(tmap, schema, "mysql"))


def test_a_net_update_sets_the_changed_columns_where_the_row_is_as_the_range_left_it():
    statement = _renderer().statement(NetRow(TABLE, (5, 1, b"x"), (5, 2, b"x")))
    assert statement is not None
    assert statement.sql == "UPDATE `shop`.`items` SET `u`=1 WHERE `id`=5;"
    exact = "`id`<=>5 AND `u`<=>2 AND CAST(`name` AS BINARY)<=>_binary 0x78"
    assert (statement.check, statement.expect) == (f"SELECT COUNT(*) FROM `shop`.`items` WHERE {exact}", 1)
    assert json.loads(json.dumps(statement.merge)) == {
        "kind": "update",
        "key": {"id": 5},
        "where": "`id`=5",
        "columns": [
            {
                "name": "u",
                "before": 1,
                "after": 2,
                "before_sql": "1",
                "after_sql": "2",
                "matches_after": "`u`<=>2",
            }
        ],
        "row_matches": exact,
        "free_where": None,
        "insert_sql": None,
        "replace_sql": None,
        "delete_sql": None,
    }


def test_a_net_delete_is_reinserted_once_its_keys_are_free():
    statement = _renderer().statement(NetRow(TABLE, (5, 1, None), None))
    assert statement is not None
    insert = "INSERT INTO `shop`.`items` (`id`, `u`, `name`) VALUES (5, 1, NULL);"
    assert (statement.sql, statement.check, statement.expect) == (
        insert,
        "SELECT COUNT(*) FROM `shop`.`items` WHERE `id`=5",
        0,
    )
    merge = statement.merge
    assert merge["key"] == {"id": 5}
    assert merge["free_where"] == "(`id`=5) OR (`u`=1)"
    assert merge["insert_sql"] == insert
    assert merge["replace_sql"] == "REPLACE INTO `shop`.`items` (`id`, `u`, `name`) VALUES (5, 1, NULL);"
    assert merge["row_matches"] is None and merge["delete_sql"] is None
    assert [c["name"] for c in merge["columns"]] == ["id", "u", "name"]
    assert merge["columns"][2] == {
        "name": "name",
        "before": None,
        "after": None,
        "before_sql": "NULL",
        "after_sql": None,
        "matches_after": None,
    }


def test_a_net_insert_is_deleted_where_the_row_is_exactly_as_the_range_left_it():
    statement = _renderer().statement(NetRow(TABLE, None, (6, 3, b"caf\xc3\xa9")))
    assert statement is not None
    assert statement.sql == "DELETE FROM `shop`.`items` WHERE `id`=6;"
    assert statement.merge["delete_sql"] == statement.sql
    assert statement.merge["columns"][2]["after"] == "café"
    assert statement.merge["columns"][2]["before_sql"] is None
    assert statement.check == "SELECT COUNT(*) FROM `shop`.`items` WHERE " + statement.merge["row_matches"]


def test_net_is_refused_with_what_it_cannot_be_combined_with():
    for options in (Options(net=True, mode="forward"), Options(net=True, rows_per_statement=5)):
        with pytest.raises(RangeError, match="--net"):
            Job(RangeSpec(["x"]), Filters(), options)
