"""Transaction picks (pipeline/selection.py) and dependent rows (pipeline/dependencies.py), without a server."""

from __future__ import annotations

import pytest

from rollback.base.errors import RangeError
from rollback.binlog.decode import TxContext
from rollback.pipeline.dependencies import NO_KEY, DependencyKeys, dependents, merge_lines
from rollback.pipeline.selection import Selection
from rollback.request.spec import Filters


def tx(gtid: str, pos: int, thread: int | None = 1, query: str | None = "UPDATE t SET v = 1") -> TxContext:
    return TxContext(gtid=gtid, begin_pos=pos, timestamp=100, thread_id=thread, rows_query=query, open=True)


def picks(**given) -> Selection:
    filters = Filters(**given)
    filters.check_picks()
    return Selection(filters, None, None, None)


TXS = [tx("0-1-1", 100, 7), tx("0-1-2", 200, 8), tx("0-1-3", 300, 7), tx("0-1-4", 400, 9)]


@pytest.mark.parametrize(
    ("given", "taken"),
    [
        ({}, [1, 2, 3, 4]),
        ({"include_gtid": "0-1-1,0-1-3"}, [1, 3]),
        ({"include_gtid": "0-1-1..0-1-3", "exclude_gtid": "0-1-2"}, [1, 3]),
        ({"include_positions": ["f.000001:200"]}, [2]),
        ({"include_positions": ["400"]}, [4]),
        ({"include_positions": ["other.000002:200"]}, []),
        ({"include_gtid": "0-1-1", "include_positions": ["f.000001:400"]}, [1, 4]),  # includes add up
        ({"include_positions": ["f.000001:200"], "exclude_gtid": "0-1-2"}, []),  # excludes win
        ({"exclude_positions": ["f.000001:100", "300"]}, [2, 4]),
        ({"thread_id": 7}, [1, 3]),
        ({"exclude_thread_ids": {7, 9}}, [2]),
    ],
)
def test_transaction_picks(given, taken):
    selection = picks(**given)
    assert [k + 1 for k, t in enumerate(TXS) if selection.transaction(t, "f.000001")] == taken


def test_statement_text_is_searched_ignoring_case_and_excludes_win():
    selection = picks(include_query=r"update\s+t\b", exclude_query="v = 2")
    assert selection.statement(tx("0-1-1", 4, query="Update  t SET v = 1"), "f")
    assert not selection.statement(tx("0-1-1", 4, query="UPDATE t SET v = 2"), "f")
    assert not selection.statement(tx("0-1-1", 4, query="DELETE FROM t"), "f")


def test_statement_text_missing_from_the_binlog_is_refused():
    with pytest.raises(RangeError, match="no original statement text"):
        picks(exclude_query="x").statement(tx("0-1-1", 4, query=None), "f")


def test_thread_picks_without_a_thread_id_are_refused():
    with pytest.raises(RangeError, match="--exclude-thread-id cannot select"):
        picks(exclude_thread_ids={3}).transaction(tx("0-1-1", 4, thread=None), "f")


def test_update_rows_are_taken_when_either_image_matches():
    from rollback.schema.tables import Column, TableSchema

    selection = picks(where="v = 5")
    test = selection.row_test(TableSchema("d", "t", [Column("id", "int"), Column("v", "int")], (0,)))
    assert selection.row_selected(test, "update", ((1, 5), (1, 6)), "f:4")
    assert selection.row_selected(test, "update", ((1, 4), (1, 5)), "f:4")
    assert not selection.row_selected(test, "update", ((1, 4), (1, 6)), "f:4")
    assert selection.row_selected(test, "delete", (1, 5), "f:4")


def _where(gtid: str, pos: int) -> dict:
    return {"gtid": gtid, "file": "f", "pos": pos}


def test_an_excluded_change_after_a_selected_one_on_the_same_key_is_dependent():
    keys = DependencyKeys()
    names = ("id", "v")
    keys.add(
        True,
        "d.t",
        "update",
        [((1, 1), (1, 2)), ((2, 1), (2, 2))],
        (0,),
        names,
        (0, 100, 100),
        _where("A", 90),
    )
    keys.add(False, "d.t", "update", [((2, 2), (2, 3))], (0,), names, (0, 200, 200), _where("B", 190))
    keys.add(
        False, "d.t", "update", [((1, 0), (1, 1))], (0,), names, (0, 50, 50), _where("C", 40)
    )  # before: fine
    # another partition's lines fold in the same way
    selected, excluded = {}, {}
    merge_lines(keys.lines(), selected, excluded)
    found = dependents(selected, excluded)
    assert [(d["key"], d["selected"]["gtid"], d["excluded"]["gtid"]) for d in found] == [("id=2", "A", "B")]


def test_an_update_that_moves_a_key_touches_both_keys():
    keys = DependencyKeys()
    names = ("id", "v")
    keys.add(True, "d.t", "update", [((1, 1), (5, 1))], (0,), names, (0, 100, 100), _where("A", 90))
    keys.add(False, "d.t", "delete", [(5, 1)], (0,), names, (0, 200, 200), _where("B", 190))
    assert [d["excluded"]["gtid"] for d in dependents(keys.selected, keys.excluded)] == ["B"]


def test_a_table_without_a_key_counts_as_one_row():
    keys = DependencyKeys()
    keys.add(True, "d.k", "delete", [(1, 1)], (), ("a", "b"), (0, 100, 100), _where("A", 90))
    keys.add(False, "d.k", "insert", [(9, 9)], (), ("a", "b"), (0, 200, 200), _where("B", 190))
    (found,) = dependents(keys.selected, keys.excluded)
    assert found["key"] == NO_KEY and found["excluded"]["gtid"] == "B"
