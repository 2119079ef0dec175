"""net.touched_keys: the row keys a rows event touches, as the driver counts them to find the rows
the range changes once (rollback/net_script.py)."""

from __future__ import annotations

from rollback.net import touched_keys


def test_one_key_a_row_and_two_for_an_update_moving_its_key():
    assert touched_keys("delete", [(1, "a"), (2, "b")], (0,)) == [1, 2]
    assert touched_keys("insert", [(1, "a", 7)], (0, 2)) == [(1, 7)]
    updates = [((1, "a"), (1, "b")), ((2, "a"), (20, "a")), ((3, "a"), (3, "c"))]
    assert touched_keys("update", updates, (0,)) == [1, 2, 3, 20]
    assert touched_keys("update", updates[:1], (0,)) == [1]
