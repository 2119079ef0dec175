"""Merge execution of real `flashback --net` plans (issue 28), through execute_plan and the CLI.

The incident runs on the scratch server (rows updated many times, a row deleted, one inserted), the
application then goes on writing; the plan is generated from the binlog with --net, and
`flashback --execute --merge` undoes the incident while keeping the later writes.
"""

from __future__ import annotations

import json

import pytest

from rollback import ExecutionConflict, ExecutionRefused, execute_plan, parse_resolutions
from rollback.target import execute as execution
from tests.support.restore import flashback, range_args, run_cli, snapshot

pytestmark = pytest.mark.both_ways_off("rows change after the incident on purpose: the merge keeps them")

DB = "merge_net"
TABLE = f"{DB}.t"
BEFORE = [(i, i, f"r{i}", i * 10, i * 100) for i in range(1, 9)]


@pytest.fixture()
def incident(scratch_server, tmp_path):
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {TABLE} (id INT PRIMARY KEY, a INT, b VARCHAR(40), c INT, u INT UNIQUE)",
            f"INSERT INTO {TABLE} VALUES " + ", ".join(str(row) for row in BEFORE),
        ]
    )
    pre = snapshot(scratch_server, [TABLE])
    rng = scratch_server.run_sql(
        [
            *[f"UPDATE {TABLE} SET a = a + 1000, b = CONCAT(b, '{n}') WHERE id <= 6" for n in range(5)],
            f"DELETE FROM {TABLE} WHERE id = 7",
            f"INSERT INTO {TABLE} VALUES (9, 9, 'r9', 90, 900)",
        ]
    )
    script, plan, report = flashback(scratch_server, rng, tmp_path, net=True)
    yield {"server": scratch_server, "rng": rng, "plan": plan, "before": pre, "tmp": tmp_path}
    scratch_server.query(f"DROP DATABASE {DB}")


def _expected(server, rows):
    twin = f"{DB}.expected"
    server.query(f"DROP TABLE IF EXISTS {twin}")
    server.query(f"CREATE TABLE {twin} LIKE {TABLE}")
    server.query(f"INSERT INTO {twin} VALUES " + ", ".join(str(row) for row in rows))
    shot = snapshot(server, [twin])[twin]
    server.query(f"DROP TABLE {twin}")
    return {TABLE: shot}


def test_a_net_plan_holds_one_step_per_row_with_its_merge_data(incident):
    steps = [json.loads(line) for line in incident["plan"].read_text().splitlines()]
    assert sorted((s["merge"]["kind"], json.dumps(s["merge"]["key"])) for s in steps) == sorted(
        [
            *(("update", json.dumps({"id": i})) for i in range(1, 7)),
            ("delete", '{"id": 7}'),
            ("insert", '{"id": 9}'),
        ]
    )


def test_merge_of_a_net_plan_keeps_later_writes_of_other_columns(incident):
    server = incident["server"]
    server.query(f"UPDATE {TABLE} SET c = c + 1 WHERE id IN (1, 2, 8)")
    result = execute_plan(incident["plan"], server.dsn, commit=True, merge=True)
    want = [(i, a, b, c + (1 if i in (1, 2, 8) else 0), u) for i, a, b, c, u in BEFORE]
    assert snapshot(server, [TABLE]) == _expected(server, want)
    assert result.merge["restored"] == 8 and result.merge["kept_later_changes"] == 2
    assert not result.conflicts


def test_merge_of_a_net_plan_with_a_same_column_conflict_and_resolutions(incident):
    server = incident["server"]
    server.query(f"UPDATE {TABLE} SET a = 5 WHERE id = 3")  # the incident's column, changed since
    server.query(f"INSERT INTO {TABLE} VALUES (70, 0, 'late', 0, 700)")  # takes row 7's unique key
    now = snapshot(server, [TABLE])
    with pytest.raises(ExecutionConflict) as raised:
        execute_plan(incident["plan"], server.dsn, commit=True, merge=True)
    assert snapshot(server, [TABLE]) == now
    conflicts = {c["kind"]: c for c in raised.value.result.conflicts}
    assert conflicts["update"]["key"] == {"id": 3}
    assert conflicts["update"]["columns"][0] == {
        "name": "a",
        "before": 3,
        "after": 5003,
        "now": 5,
        "changed_since": True,
    }
    assert conflicts["delete"]["key"] == {"id": 7} and conflicts["delete"]["now_present"]
    doc = {
        "default": "keep_now",
        "rows": [{"table": TABLE, "key": {"id": 3}, "choice": "take_before_where_unchanged"}],
    }
    result = execute_plan(
        incident["plan"], server.dsn, commit=True, merge=True, resolutions=parse_resolutions(doc)
    )
    assert (
        result.merge["resolved"]["take_before_where_unchanged"] == 1
        and result.merge["resolved"]["keep_now"] == 1
    )
    want = [row for row in BEFORE if row[0] != 7]
    want[2] = (3, 5, "r3", 30, 300)  # a kept as it is now, b back to its pre-incident value
    assert snapshot(server, [TABLE]) == _expected(server, [*want, (70, 0, "late", 0, 700)])


def test_the_cli_merges_with_resolutions_and_says_so(incident):
    server, tmp = incident["server"], incident["tmp"]
    server.query(f"UPDATE {TABLE} SET a = 5, c = 1 WHERE id = 3")
    resolutions = tmp / "resolutions.json"
    resolutions.write_text(json.dumps({"default": "take_before"}))
    args = [*range_args(incident["rng"]), "--execute", "--target", server.dsn, "--schema-dsn", server.dsn]
    stopped = run_cli("flashback", *args, "--merge", "--json")
    assert stopped.returncode == 3, stopped.stderr
    assert "a: before 3, after 5003, now 5 (changed since)" in stopped.stderr
    assert "1 conflict(s) without a resolution" in stopped.stderr
    done = run_cli("flashback", *args, "--merge", "--commit", "--json", "--resolutions", str(resolutions))
    assert done.returncode == 0, done.stderr
    execution = json.loads(done.stderr.strip().splitlines()[-1])["execution"]
    assert execution["committed"] and execution["merge"]["resolved"]["take_before"] == 1
    assert execution["merge"]["restored"] == 7 and execution["merge"]["unresolved"] == 0
    assert [(c["key"], c["resolution"]) for c in execution["conflicts"]] == [({"id": 3}, "take_before")]
    want = [(i, a, b, 1 if i == 3 else c, u) for i, a, b, c, u in BEFORE]
    assert snapshot(server, [TABLE]) == _expected(server, want)


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (["--merge"], "--merge is a way to execute: add --execute --target DSN"),
        (["--resolutions", "x.json"], "--resolutions settles the conflicts of --merge: add --merge"),
    ],
)
def test_the_cli_refuses_merge_flags_out_of_place(incident, extra, line):
    done = run_cli("flashback", *range_args(incident["rng"]), "--schema-dsn", incident["server"].dsn, *extra)
    assert done.returncode == 2 and line in done.stderr and done.stderr.strip().count("\n") == 0


def test_the_cli_names_a_bad_resolutions_entry_in_one_line(incident):
    server, tmp = incident["server"], incident["tmp"]
    bad = tmp / "bad.json"
    bad.write_text(json.dumps({"rows": [{"table": TABLE, "key": {"id": 3}, "choice": "keep"}]}))
    args = [*range_args(incident["rng"]), "--execute", "--target", server.dsn, "--schema-dsn", server.dsn]
    done = run_cli("flashback", *args, "--merge", "--resolutions", str(bad))
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0
    assert "resolutions: rows[0].choice: unknown choice 'keep'" in done.stderr


def test_a_merge_batches_its_reads_and_writes(batch_incident):
    """120 rows (40 updated, 40 deleted, 40 inserted), nothing changed since: one batch, whose re-inserts
    are one INSERT, its deletes one DELETE, its updates one UPDATE."""
    server, table, plan = batch_incident["server"], batch_incident["table"], batch_incident["plan"]
    counts: list[dict[str, int]] = []
    dry = execute_plan(plan, server.dsn, merge=True, inspect=_session_counts(counts))
    assert dry.merge["restored"] == 120 and dry.statements == 120
    writes = [{name: seen[name] for name in ("Com_insert", "Com_delete", "Com_update")} for seen in counts]
    assert writes == [{"Com_insert": 1, "Com_delete": 1, "Com_update": 1}]
    execute_plan(plan, server.dsn, commit=True, merge=True)
    assert server.query(f"SELECT id, a, b FROM {table} ORDER BY id") == batch_incident["before"]


def test_a_merge_on_a_table_with_triggers_is_refused_as_the_strict_apply_is(incident):
    server = incident["server"]
    server.query(f"CREATE TRIGGER {DB}.audit BEFORE UPDATE ON {TABLE} FOR EACH ROW SET NEW.c = NEW.c")
    now = snapshot(server, [TABLE])
    with pytest.raises(
        ExecutionRefused, match=rf"trigger {DB}\.audit .*--accept-triggers runs the plan anyway"
    ):
        execute_plan(incident["plan"], server.dsn, commit=True, merge=True)
    assert snapshot(server, [TABLE]) == now


@pytest.fixture()
def batch_incident(scratch_server, tmp_path):
    """80 rows; the incident updates a of 40, deletes the other 40 and inserts 40 new ones (one batch)."""
    db = "merge_optimistic"
    table = f"{db}.t"
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {table} (id INT PRIMARY KEY, a INT, b VARCHAR(20))",
            f"INSERT INTO {table} SELECT seq, seq, CONCAT('r', seq) FROM {db}.seq_1_to_80",
        ]
    )
    before = scratch_server.query(f"SELECT id, a, b FROM {table} ORDER BY id")
    rng = scratch_server.run_sql(
        [
            f"UPDATE {table} SET a = -a WHERE id <= 40",
            f"DELETE FROM {table} WHERE id > 40",
            f"INSERT INTO {table} SELECT seq, 0, 'new' FROM {db}.seq_100_to_139",
        ]
    )
    _script, plan, _report = flashback(scratch_server, rng, tmp_path, net=True)
    yield {"server": scratch_server, "table": table, "plan": plan, "before": before}
    scratch_server.query(f"DROP DATABASE {db}")


def _session_counts(into):
    def status(conn):
        with conn.cursor() as cur:
            cur.execute(
                "SHOW SESSION STATUS WHERE Variable_name IN "
                "('Com_select', 'Com_insert', 'Com_delete', 'Com_update', 'Com_update_multi', "
                "'Com_rollback_to_savepoint')"
            )
            seen = {name: int(value) for name, value in cur.fetchall()}
            # an UPDATE of one table or joined to a table of values (apply_batches: joined UPDATEs)
            seen["Com_update"] += seen.pop("Com_update_multi")
            into.append(seen)

    return status


def test_a_merge_with_nothing_changed_since_sends_no_locking_read(batch_incident):
    """The writes carry their rows' checks (as the strict apply's do): a batch that nothing changed since
    is its writes alone, no read."""
    server, plan = batch_incident["server"], batch_incident["plan"]
    counts: list[dict[str, int]] = []
    dry = execute_plan(plan, server.dsn, merge=True, inspect=_session_counts(counts))
    assert dry.merge["restored"] == 120 and dry.merge["kept_later_changes"] == 0
    assert counts == [
        {"Com_select": 0, "Com_insert": 1, "Com_delete": 1, "Com_update": 1, "Com_rollback_to_savepoint": 0}
    ]


def test_a_batch_whose_rows_changed_since_goes_back_to_its_savepoint_and_its_locking_reads(batch_incident):
    """Five updated rows whose b changed since, and a deleted row's key taken again: the batch's writes come
    up short, the batch goes back to its savepoint, its locking reads find which rows, the incident is
    undone on the others and on a of the five (their b kept), the taken key is a conflict."""
    server, table, plan = batch_incident["server"], batch_incident["table"], batch_incident["plan"]
    server.query(f"UPDATE {table} SET b = 'later' WHERE id <= 5")
    server.query(f"INSERT INTO {table} VALUES (50, 5000, 'taken')")
    counts: list[dict[str, int]] = []
    dry = execute_plan(plan, server.dsn, merge=True, on_conflict="skip", inspect=_session_counts(counts))
    assert dry.merge["restored"] == 119 and dry.merge["kept_later_changes"] == 5
    assert [(c["key"], c["resolution"]) for c in dry.conflicts] == [({"id": 50}, "keep_now")]
    assert counts[0]["Com_rollback_to_savepoint"] >= 1 and counts[0]["Com_select"] >= 1
    execute_plan(plan, server.dsn, commit=True, merge=True, on_conflict="skip")
    want = [
        (i, a, "later" if i <= 5 else b) if i != 50 else (50, 5000, "taken")
        for i, a, b in batch_incident["before"]
    ]
    assert server.query(f"SELECT id, a, b FROM {table} ORDER BY id") == want


@pytest.fixture()
def later_changes(scratch_server, tmp_path):
    """A table the incident updates (a), deletes from and inserts into, 150 rows (batches of several kinds),
    and one with a column the server stamps on update; then the application's later writes: other columns
    of updated rows, the incident's own column, a deleted row's key and unique key taken, an inserted row
    changed, an updated row deleted."""
    db = "merge_same"
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT, b VARCHAR(20), u INT UNIQUE)",
            f"INSERT INTO {db}.t SELECT seq, seq, CONCAT('r', seq), seq + 1000 FROM {db}.seq_1_to_150",
            f"CREATE TABLE {db}.s (id INT PRIMARY KEY, a INT, at TIMESTAMP(6) NOT NULL DEFAULT '2020-01-01' "
            "ON UPDATE CURRENT_TIMESTAMP(6))",
            f"INSERT INTO {db}.s (id, a) SELECT seq, seq FROM {db}.seq_1_to_20",
        ]
    )
    rng = scratch_server.run_sql(
        [
            f"UPDATE {db}.t SET a = -a WHERE id <= 100",
            f"DELETE FROM {db}.t WHERE id > 120",
            f"INSERT INTO {db}.t SELECT seq, 0, 'new', seq + 5000 FROM {db}.seq_200_to_239",
            f"UPDATE {db}.s SET a = -a",
        ]
    )
    _script, plan, _report = flashback(scratch_server, rng, tmp_path, net=True)
    scratch_server.run_sql(
        [
            f"UPDATE {db}.t SET b = 'later' WHERE id BETWEEN 10 AND 14",
            f"UPDATE {db}.t SET a = 7 WHERE id = 60",
            f"DELETE FROM {db}.t WHERE id = 70",
            f"INSERT INTO {db}.t VALUES (125, 1, 'taken key', 1), (300, 1, 'taken unique', 1130)",
            f"UPDATE {db}.t SET b = 'changed' WHERE id = 210",
            f"UPDATE {db}.s SET at = '2021-01-01' WHERE id = 3",
        ]
    )
    yield {"server": scratch_server, "db": db, "plan": plan, "tmp": tmp_path}
    scratch_server.query(f"DROP DATABASE {db}")


def test_the_statements_sent_for_rows_as_the_range_left_them_do_what_the_merge_writes_would(
    later_changes, monkeypatch
):
    """A --net plan's lines say where the strict statement writes what the merge's write would (merge_same:
    not on a table with a column the server stamps on update); the merge sends those batches' statements,
    checked in their WHERE, and goes its own way only where they come up short. The same plan without
    merge_same (every batch the merge's own way) must leave the same rows and say the same, with the
    conflicts skipped and with every conflict resolved."""
    server, db, plan = later_changes["server"], later_changes["db"], later_changes["plan"]
    lines = [json.loads(line) for line in plan.read_text().splitlines()]
    assert {(s["table"], s.get("merge_same", False)) for s in lines} == {
        (f"{db}.t", True),
        (f"{db}.s", False),
    }
    same = later_changes["tmp"] / "t.plan.jsonl"  # one table's: one batch, every line merge_same
    same.write_text("".join(json.dumps(s) + "\n" for s in lines if s["table"] == f"{db}.t"))
    plain = later_changes["tmp"] / "t_without_merge_same.plan.jsonl"
    plain.write_text(
        "".join(
            json.dumps({k: v for k, v in s.items() if k != "merge_same"}) + "\n"
            for s in lines
            if s["table"] == f"{db}.t"
        )
    )
    sent: list[bool] = []
    checked = execution._Pass._sent_checked

    def spied(self, *args):
        sent.append(checked(self, *args))
        return sent[-1]

    monkeypatch.setattr(execution._Pass, "_sent_checked", spied)

    def state(into):
        def read(conn):
            with conn.cursor() as cur:
                cur.execute(f"SELECT * FROM {db}.t ORDER BY id")
                into.append(cur.fetchall())

        return read

    for options in ({"on_conflict": "skip"}, {"resolutions": parse_resolutions({"default": "take_before"})}):
        results, states = [], []
        for path in (same, plain):
            seen: list = []
            results.append(
                execute_plan(path, server.dsn, merge=True, inspect=state(seen), **options).to_dict()
            )
            states.append(seen)
        assert sent == [
            False
        ]  # the batch of the plan with merge_same came up short, and went the merge's way
        sent.clear()
        assert results[0] == results[1]
        assert states[0] == states[1]
        merged = results[0]["merge"]
        assert merged["kept_later_changes"] == 5 and len(results[0]["conflicts"]) == 5, results[0]
        assert merged["restored"] + len(results[0]["conflicts"]) == len(lines) - 20
    server.query(f"UPDATE {db}.t SET b = CONCAT('r', id), a = -id WHERE id BETWEEN 10 AND 14 OR id = 60")
    server.query(f"INSERT INTO {db}.t VALUES (70, -70, 'r70', 1070)")
    server.query(f"DELETE FROM {db}.t WHERE id IN (125, 300)")
    server.query(f"UPDATE {db}.t SET b = 'new' WHERE id = 210")
    for path in (same, plain):
        result = execute_plan(path, server.dsn, merge=True)
        assert result.merge["restored"] == len(lines) - 20 and not result.conflicts
    assert sent == [True]  # nothing changed since: the statements alone
