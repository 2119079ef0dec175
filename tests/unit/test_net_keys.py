"""net.row_keys: the row keys of a DELETE's images, as the driver collects them to find the tables
the range only deletes from, each key once (rollback/job/net_script.py)."""

from __future__ import annotations

from rollback.render.net import NetFold, row_keys


def test_the_keys_are_the_folds_keys():
    rows = [(1, "a", 7), (2, "b", 7)]
    assert row_keys(rows, (0,)) == [1, 2]
    assert row_keys(rows, (0, 2)) == [(1, 7), (2, 7)]
    fold = NetFold("`d`.`t`", (0, 2))
    fold.add_rows("delete", rows, 0, "f", 4, [0, 1], 1, None)
    assert set(fold.gone) == set(row_keys(rows, (0, 2)))
