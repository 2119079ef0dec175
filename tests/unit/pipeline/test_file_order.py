"""The order check of a range's files when only MySQL's PREVIOUS_GTIDS can tell, or nothing can."""

from __future__ import annotations

import pytest

from rollback.base.errors import RangeError
from rollback.binlog import events as ev
from rollback.binlog.gtid import GtidSet
from rollback.pipeline.order import FileTrail, check_order

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def mysql_file(label: str, before: str, gtids: range) -> FileTrail:
    trail = FileTrail(label, f"/logs/{label}")
    trail.event(ev.PreviousGtids(GtidSet.parse(before)), False)
    for gno in gtids:
        trail.event(ev.Gtid(0, UUID, gno), False)
    return trail


def test_previous_gtids_continue_from_the_file_before():
    first = mysql_file("a.log", "", range(1, 6))
    second = mysql_file("b.log", f"{UUID}:1-5", range(6, 9))
    third = mysql_file("c.log", f"{UUID}:1-8", range(9, 10))
    assert check_order([first, second, third]) == []
    with pytest.raises(RangeError, match=r"c\.log does not follow a\.log: the GTIDs logged before it"):
        check_order([first, third])
    with pytest.raises(RangeError, match=r"a\.log does not follow b\.log"):
        check_order([second, first])


def test_files_nothing_can_order_are_accepted_with_a_warning():
    first, second = FileTrail("x.log", "/logs/x.log"), FileTrail("y.log", "/logs/y.log")
    (warning,) = check_order([first, second])
    assert "nothing in x.log and y.log tells whether y.log follows x.log" in warning


def test_the_end_rotate_names_the_next_file():
    first = FileTrail("mysql-bin.000007", "/logs/mysql-bin.000007")
    first.event(ev.Rotate(4, "mysql-bin.000008"), True)
    nxt = FileTrail("mysql-bin.000008", "/logs/mysql-bin.000008")
    assert check_order([first, nxt]) == []
    later = FileTrail("mysql-bin.000009", "/other/mysql-bin.000009")
    with pytest.raises(
        RangeError, match=r"mysql-bin\.000008 is missing between mysql-bin\.000007 and mysql-bin\.000009"
    ):
        check_order([first, later])
