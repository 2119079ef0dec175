"""The savepoint statements the planner reads, and the spans of rows events they undo."""

from __future__ import annotations

import pytest

from rollback.binlog.events import classify_sql
from rollback.pipeline.savepoints import VoidSet, merged, name_key, parse


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SAVEPOINT `s1`", ("savepoint", "s1")),
        ("ROLLBACK TO `we``ird Ä`", ("rollback_to", "we`ird Ä")),
        ("rollback work to savepoint x", ("rollback_to", "x")),
        ("/* c */ ROLLBACK TO SAVEPOINT `a b`", ("rollback_to", "a b")),
        ("RELEASE SAVEPOINT `s`", ("release", "s")),
        ("ROLLBACK", None),
        ("COMMIT", None),
    ],
)
def test_savepoint_statements_are_read_with_their_quoted_names(sql, expected):
    assert parse(sql) == expected


def test_a_rollback_to_a_savepoint_does_not_end_the_transaction():
    assert classify_sql("ROLLBACK WORK TO SAVEPOINT s") == classify_sql("ROLLBACK TO `s`") == "SAVEPOINT"
    assert classify_sql("ROLLBACK") == classify_sql("ROLLBACK WORK") == "ROLLBACK"


def test_savepoint_names_compare_without_case_and_accents_as_the_server_does():
    assert name_key("Outer") == name_key("outer")
    assert name_key("we`ird Ä") == name_key("WE`IRD a")
    assert name_key("ß") != name_key("s")  # utf8_general_ci says equal: such a ROLLBACK TO is refused


def test_nested_spans_merge_and_membership_is_strict():
    voids = merged([(100, 100, 500, 500), (200, 200, 300, 300), (600, 600, 700, 700), (650, 10, 650, 90)])
    assert voids == [(100, 100, 500, 500), (600, 600, 700, 700)]
    inside = VoidSet(voids)
    assert inside.covers(101, 101) and inside.covers(499, 499) and inside.covers(650, 50)
    assert not inside.covers(100, 100) and not inside.covers(500, 500) and not inside.covers(550, 550)
