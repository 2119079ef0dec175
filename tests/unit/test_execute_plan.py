"""What execute.py decides before it connects to anything: reading a plan, refusing statements the
target's max_allowed_packet cannot carry, refusing side effects the caller did not accept, and saying
what an error leaves behind. Running a plan is proven on the scratch server (tests/server)."""

from __future__ import annotations

import json

import pytest

from rollback.schema.side_effects import SideEffects, plan_statement_kinds
from rollback.target.execute import (
    LOCKING,
    ExecutionRefused,
    ExecutionResult,
    _applied,
    _check_sizes,
    _packet_for,
    _refusals,
    _survey,
    read_plan,
)

PLAN = [
    {"file": "binlog.000002", "pos": 400, "table": "shop.orders", "type": "delete", "sql": "INSERT ...;"},
    {"file": "binlog.000002", "pos": 900, "table": "shop.Items", "type": "update", "sql": "UPDATE ...;"},
    {"file": "binlog.000003", "pos": 120, "table": "shop.orders", "type": "insert", "sql": "DELETE ...;"},
]
TRIGGER = {"trigger": "audit", "timing": "AFTER", "event": "INSERT", "table": "shop.orders", "statements": 1}
CASCADE = {
    "parent": "shop.items",
    "child": "shop.lines",
    "on": "UPDATE",
    "rule": "CASCADE",
    "reverse": "UPDATE",
    "parent_rows": 1,
    "constraint": "fk_lines",
}
MYISAM = {"table": "shop.orders", "engine": "MyISAM"}


def test_a_plan_is_json_lines_and_blank_lines_are_skipped(tmp_path):
    path = tmp_path / "plan.jsonl"
    path.write_text("\n".join(json.dumps(step) for step in PLAN[:2]) + "\n\n   \n", encoding="utf-8")
    assert list(read_plan(path)) == PLAN[:2]


def test_a_statement_that_does_not_fit_one_packet_is_refused_before_anything_runs():
    # the packet holds the query and one command byte: a 99-byte statement needs max_allowed_packet > 100
    step = {"file": "f", "pos": 4, "table": "d.t", "sql": "x" * 99, "check": None}
    _check_sizes([step], 101)
    with pytest.raises(ExecutionRefused) as refused:
        _check_sizes([step], 100)
    message = str(refused.value)
    assert message.startswith("statement 1 of 1 (f:4, d.t) is 99 bytes, too big for the target's")
    assert "SET GLOBAL max_allowed_packet = 2048" in message and message.endswith("nothing was run")


def test_the_locking_check_query_counts_towards_the_packet_too():
    step = {"file": "f", "pos": 4, "table": "d.t", "sql": "short", "check": "c" * (99 - len(LOCKING))}
    with pytest.raises(
        ExecutionRefused, match=r"^the check query of statement 1 of 1 \(f:4, d.t\) is 99 bytes"
    ):
        _check_sizes([step], 100)


def test_sizes_are_counted_in_utf8_bytes_not_characters():
    step = {"file": "f", "pos": 4, "table": "d.t", "sql": "é" * 50, "check": None}  # 100 bytes
    with pytest.raises(ExecutionRefused, match="is 100 bytes"):
        _check_sizes([step], 101)


@pytest.mark.parametrize(
    ("size", "packet"), [(1, 2048), (1023, 2048), (1024, 3072), (16 << 20, (16 << 20) + 2048)]
)
def test_the_packet_asked_for_is_a_multiple_of_1024_that_holds_the_statement(size, packet):
    assert _packet_for(size) == packet and packet % 1024 == 0 and packet > size + 1


def test_triggers_are_refused_even_for_a_dry_run_unless_accepted():
    found = SideEffects(triggers=[TRIGGER, dict(TRIGGER, trigger="audit2")])
    (reason,) = _refusals(found, PLAN, False, False, False, set())
    assert reason.startswith("trigger audit (AFTER INSERT on shop.orders) fires again")
    assert (
        "first at binlog.000002:400 (and 1 more trigger(s)); --accept-triggers runs the plan anyway" in reason
    )
    assert _refusals(found, PLAN, True, True, False, set()) == []


def test_cascades_and_non_transactional_tables_are_refused_only_when_committing():
    found = SideEffects(cascades=[CASCADE], non_transactional=[MYISAM])
    assert _refusals(found, PLAN, False, False, False, set()) == []
    cascade, myisam = _refusals(found, PLAN, True, False, False, set())
    # the plan names the table `shop.Items`; table names compare without case, as the server does here
    assert "first at binlog.000002:900; --accept-cascades runs the plan anyway" in cascade
    assert myisam == (
        "non-transactional table(s) shop.orders (MyISAM) first at binlog.000002:400: a commit that fails "
        "halfway cannot roll back what already ran on them; --accept-non-transactional shop.orders accepts "
        "that risk"
    )
    assert _refusals(found, PLAN, True, False, True, {"shop.orders"}) == []


def test_an_error_says_what_it_leaves_behind():
    assert _applied(ExecutionResult(dry_run=False)) == "nothing was applied"
    done = [{"tx": n, "gtid": None, "file": "binlog.000002", "pos": 100 * n} for n in range(1, 13)]
    message = _applied(ExecutionResult(dry_run=False, transactions_applied=done))
    assert message.startswith("12 earlier transaction(s) stay committed: transaction 1 (binlog.000002:100), ")
    assert "transaction 10 (binlog.000002:1000) and 2 more; this one was rolled back" in message
    kept = ExecutionResult(dry_run=False, non_transactional_applied={"shop.orders": 3})
    assert _applied(kept) == (
        "the changes to transactional tables were rolled back; but the 3 statement(s) already run on "
        "non-transactional tables stay applied: shop.orders (3)"
    )


def test_statement_kinds_are_read_from_each_statement_however_it_starts():
    steps = [
        {"table": "d.t", "sql": "INSERT INTO `d`.`t` (`id`) VALUES (1);"},
        {"table": "d.t", "sql": "  insert\tinto `d`.`t` (`id`) VALUES (2);"},
        {"table": "d.t", "sql": "UPDATE `d`.`t` SET `a`=1 WHERE `id`=1;"},
        {"table": "d.u", "sql": "DELETE FROM `d`.`u` WHERE `id`=1;"},
        {"table": "d.u", "sql": "delete\nFROM `d`.`u` WHERE `id`=2;"},
        {"table": "d.u", "sql": "UPDATEX `d`.`u`;"},
        {"table": "d.u", "sql": "DO 1;"},
    ]
    assert plan_statement_kinds(steps) == {
        ("d.t", "INSERT"): 2,
        ("d.t", "UPDATE"): 1,
        ("d.u", "DELETE"): 2,
    }


def test_the_survey_taken_as_the_plan_is_read_says_what_the_separate_passes_say(tmp_path):
    steps = [
        {"table": "d.T", "sql": "INSERT INTO `d`.`T` (`id`) VALUES (1);", "check": "SELECT 1", "expect": 0},
        {"table": "d.t", "sql": "  insert\tinto `d`.`t` (`b`) VALUES ('é');", "check": None},
        {"table": "d.u", "sql": "UPDATE `d`.`u` SET `b`='ü' WHERE `id`=1;", "check": "SELECT 'ß' " * 40},
        {"table": "d.u", "sql": "delete\nFROM `d`.`u` WHERE `id`=2;", "check": "SELECT 2", "expect": 1},
        {"table": "d.v", "sql": "DO 1;", "check": None},
    ]
    path = tmp_path / "plan.jsonl"
    path.write_text(
        "\n\n".join(json.dumps(step, ensure_ascii=False) for step in steps) + "\n", encoding="utf-8"
    )
    survey = _survey(read_plan(path))
    assert survey.plan == steps
    # each step's bytes in a batch: its statement's and its locking check's (room for the lock clause
    # when it has none), in UTF-8
    assert survey.sizes == [
        len(step["sql"].encode()) + len(((step["check"] or "") + LOCKING).encode()) for step in steps
    ]
    assert survey.kinds == plan_statement_kinds(steps)
    assert survey.tables == ["d.t", "d.u", "d.v"]
    assert survey.longest == len(("SELECT 'ß' " * 40).encode()) + len(LOCKING)  # the check of step 3
    _check_sizes(steps, survey.longest + 2)
    with pytest.raises(ExecutionRefused, match="^the check query of statement 3 of 5"):
        _check_sizes(steps, survey.longest + 1)


def test_joined_updates_are_for_mariadb_from_10_3_3():
    """Table value constructors as derived tables with named columns: MariaDB 10.3.3 on (a server that
    says 5.5.5- first, as MariaDB before 11 does to old clients, included); MySQL's rows are ROW(...)."""
    from rollback.target.execute import value_tables

    class Conn:
        def __init__(self, info: str):
            self.info = info

        def get_server_info(self) -> str:
            return self.info

    said = {
        "10.11.6-MariaDB-0+deb12u1": True,
        "5.5.5-10.11.6-MariaDB-log": True,
        "10.3.3-MariaDB": True,
        "10.3.2-MariaDB": False,
        "10.2.44-MariaDB": False,
        "8.0.36": False,
        "8.4.0-commercial": False,
        "": False,
    }
    assert {info: value_tables(Conn(info)) for info in said} == said
    assert value_tables(object()) is False  # a connection that cannot say
