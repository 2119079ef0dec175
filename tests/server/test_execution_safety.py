"""Execution meets what statements do beyond their rows, on the scratch MariaDB: triggers fire again,
cascading foreign keys act on (or missed) child tables, non-transactional tables cannot be rolled
back, a statement can exceed the target's max_allowed_packet, a concurrent session can change a row
between the check and the apply, and a late failure must not leave part of the rollback committed."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from rollback.base.errors import ConflictError
from rollback.target.execute import ExecutionFailed, ExecutionRefused, execute_plan
from tests.support.restore import flashback, range_args, run_cli, snapshot


def _incident(server, tmp_path: Path, db: str, setup: list[str], incident: list[str], tables: list[str]):
    """A fresh database, the incident's range, its plan and report; snapshots before and after."""
    server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}", *setup])
    before = snapshot(server, tables)
    rng = server.run_sql(incident)
    after = snapshot(server, tables)
    script, plan, report = flashback(server, rng, tmp_path)
    return {"range": rng, "script": script, "plan": plan, "report": report, "before": before, "after": after}


# ---- triggers ----------------------------------------------------------------------------------------

TRG = "ex_trg"
TRG_TABLES = [f"{TRG}.acct", f"{TRG}.audit"]


@pytest.fixture()
def audited(scratch_server, tmp_path):
    """An audit trigger on acct; the incident deletes a row (its audit row is in the range too, so the
    rollback deletes it, and re-inserting the acct row writes it again)."""
    return _incident(
        scratch_server,
        tmp_path,
        TRG,
        [
            f"CREATE TABLE {TRG}.acct (id INT PRIMARY KEY, v INT)",
            f"CREATE TABLE {TRG}.audit (n INT AUTO_INCREMENT PRIMARY KEY, id INT, what CHAR(1))",
            f"CREATE TRIGGER {TRG}.acct_ins AFTER INSERT ON {TRG}.acct "
            f"FOR EACH ROW INSERT INTO {TRG}.audit (id, what) VALUES (NEW.id, 'i')",
            f"CREATE TRIGGER {TRG}.acct_del AFTER DELETE ON {TRG}.acct "
            f"FOR EACH ROW INSERT INTO {TRG}.audit (id, what) VALUES (OLD.id, 'd')",
            f"INSERT INTO {TRG}.acct VALUES (1, 10), (2, 20)",
        ],
        [f"DELETE FROM {TRG}.acct WHERE id = 2"],
        TRG_TABLES,
    )


def test_triggers_are_reported_at_generation(audited):
    report = audited["report"]
    # the reverse of the DELETE is an INSERT: the INSERT trigger fires, the DELETE trigger does not
    # (the reverse DELETE of the audit row fires nothing: audit has no trigger)
    assert report.side_effects["triggers"] == [
        {
            "trigger": f"{TRG}.acct_ins",
            "table": f"{TRG}.acct",
            "timing": "AFTER",
            "event": "INSERT",
            "statements": 1,
        }
    ]
    header = audited["script"].read_text().split("SET NAMES")[0]
    assert f"-- warning: trigger {TRG}.acct_ins (AFTER INSERT on {TRG}.acct) fires again" in header
    assert report.to_dict()["side_effects"]["triggers"][0]["trigger"] == f"{TRG}.acct_ins"


@pytest.mark.parametrize("commit", [False, True], ids=["dry-run", "commit"])
def test_triggers_refuse_execution_unless_accepted(scratch_server, audited, commit):
    with pytest.raises(ExecutionRefused) as refused:
        execute_plan(audited["plan"], scratch_server.dsn, commit=commit)
    message = refused.value.one_line()
    assert f"trigger {TRG}.acct_ins (AFTER INSERT on {TRG}.acct)" in message
    assert "--accept-triggers" in message and "nothing was run" in message
    assert refused.value.exit_code == 2
    assert snapshot(scratch_server, TRG_TABLES) == audited["after"]


def test_accepted_triggers_run_and_are_reported(scratch_server, audited):
    result = execute_plan(audited["plan"], scratch_server.dsn, commit=True, accept_triggers=True)
    assert result.committed and result.side_effects["triggers"][0]["trigger"] == f"{TRG}.acct_ins"
    assert result.to_dict()["side_effects"]["triggers"][0]["event"] == "INSERT"
    # what the warning says: the rollback removed the DELETE's audit row, and the trigger wrote the
    # INSERT's audit row again
    audit = scratch_server.query(f"SELECT id, what FROM {TRG}.audit ORDER BY n")
    assert audit == [(1, "i"), (2, "i"), (2, "i")]
    assert snapshot(scratch_server, [f"{TRG}.acct"])[f"{TRG}.acct"] == audited["before"][f"{TRG}.acct"]


# ---- cascading foreign keys --------------------------------------------------------------------------

FK = "ex_fk"
FK_TABLES = [f"{FK}.parent", f"{FK}.child"]


@pytest.fixture()
def cascaded(scratch_server, tmp_path):
    """The incident deletes a parent row: the engine deletes its two children, and the binlog holds
    only the parent's DELETE."""
    return _incident(
        scratch_server,
        tmp_path,
        FK,
        [
            f"CREATE TABLE {FK}.parent (id INT PRIMARY KEY, name VARCHAR(10))",
            f"CREATE TABLE {FK}.child (id INT PRIMARY KEY, pid INT, CONSTRAINT child_parent "
            f"FOREIGN KEY (pid) REFERENCES {FK}.parent (id) ON DELETE CASCADE ON UPDATE RESTRICT)",
            f"INSERT INTO {FK}.parent VALUES (1, 'one'), (2, 'two')",
            f"INSERT INTO {FK}.child VALUES (10, 1), (11, 1), (20, 2)",
        ],
        [f"DELETE FROM {FK}.parent WHERE id = 1"],
        FK_TABLES,
    )


def test_cascades_are_reported_at_generation(cascaded):
    report = cascaded["report"]
    assert report.counts == {(f"{FK}.parent", "delete"): 1}  # the children's deletion is not in the binlog
    assert report.side_effects["cascades"] == [
        {
            "constraint": f"{FK}.child_parent",
            "child": f"{FK}.child",
            "parent": f"{FK}.parent",
            "on": "DELETE",
            "rule": "CASCADE",
            "reverse": "INSERT",
            "parent_rows": 1,
        }
    ]
    header = cascaded["script"].read_text().split("SET NAMES")[0]
    assert (
        f"-- warning: foreign key {FK}.child_parent ({FK}.child references {FK}.parent) ON DELETE CASCADE: "
        f"the original DELETE of 1 {FK}.parent row(s) cascaded to {FK}.child"
    ) in header


def test_cascades_refuse_a_commit_unless_accepted(scratch_server, cascaded):
    with pytest.raises(ExecutionRefused) as refused:
        execute_plan(cascaded["plan"], scratch_server.dsn, commit=True)
    message = refused.value.one_line()
    assert f"foreign key {FK}.child_parent ({FK}.child references {FK}.parent) ON DELETE CASCADE" in message
    assert "1 " + f"{FK}.parent row(s)" in message and "--accept-cascades" in message
    assert snapshot(scratch_server, FK_TABLES) == cascaded["after"]
    # accepted: the parent comes back, its children do not (what the warning says)
    result = execute_plan(cascaded["plan"], scratch_server.dsn, commit=True, accept_cascades=True)
    assert result.committed and result.side_effects["cascades"][0]["constraint"] == f"{FK}.child_parent"
    assert snapshot(scratch_server, [f"{FK}.parent"])[f"{FK}.parent"] == cascaded["before"][f"{FK}.parent"]
    assert scratch_server.query(f"SELECT id FROM {FK}.child ORDER BY id") == [(20,)]


def test_a_dry_run_with_cascades_runs_and_lists_them(scratch_server, cascaded):
    """Foreign keys exist only in transactional engines: what a dry run cascades rolls back with it."""
    dry = execute_plan(cascaded["plan"], scratch_server.dsn)
    assert dry.statements == 1 and dry.side_effects["cascades"][0]["rule"] == "CASCADE"
    assert snapshot(scratch_server, FK_TABLES) == cascaded["after"]


def test_cli_cascade_refusal_is_one_line_exit_2_and_the_flag_accepts_it(scratch_server, cascaded):
    args = [*range_args(cascaded["range"]), "--schema-dsn", scratch_server.dsn, "-o", "/dev/null"]
    args += ["--execute", "--target", scratch_server.dsn, "--commit"]
    refused = run_cli("flashback", *args)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.count("\n") == 1 and "--accept-cascades" in refused.stderr
    assert snapshot(scratch_server, FK_TABLES) == cascaded["after"]
    done = run_cli("flashback", *args, "--accept-cascades")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stderr.splitlines()[-1])["execution"]["committed"] is True


# ---- statement size ----------------------------------------------------------------------------------

BIG = "ex_big"


def test_a_statement_over_max_allowed_packet_is_refused_before_anything_runs(scratch_server, tmp_path):
    data = _incident(
        scratch_server,
        tmp_path,
        BIG,
        [
            f"CREATE TABLE {BIG}.small (id INT PRIMARY KEY, v INT)",
            f"CREATE TABLE {BIG}.doc (id INT PRIMARY KEY, body LONGTEXT)",
            f"INSERT INTO {BIG}.small VALUES (1, 1)",
            f"INSERT INTO {BIG}.doc VALUES (1, REPEAT('x', 40000))",
        ],
        [f"DELETE FROM {BIG}.doc WHERE id = 1", f"UPDATE {BIG}.small SET v = 2"],
        [f"{BIG}.small", f"{BIG}.doc"],
    )
    (limit,) = scratch_server.query("SELECT @@global.max_allowed_packet")[0]
    scratch_server.query("SET GLOBAL max_allowed_packet = 16384")
    try:
        with pytest.raises(ExecutionRefused) as refused:
            execute_plan(data["plan"], scratch_server.dsn, commit=True, single_transaction=False)
    finally:
        scratch_server.query(f"SET GLOBAL max_allowed_packet = {limit}")
    message = refused.value.one_line()
    steps = [json.loads(line) for line in data["plan"].read_text().splitlines()]
    assert [s["table"] for s in steps] == [f"{BIG}.small", f"{BIG}.doc"]
    big = steps[1]
    size = len(big["sql"].encode())
    assert f"statement 2 of 2 ({big['file']}:{big['pos']}, {BIG}.doc) is {size} bytes" in message
    assert "max_allowed_packet of 16384 bytes" in message and "nothing was run" in message
    assert snapshot(scratch_server, [f"{BIG}.small", f"{BIG}.doc"]) == data["after"]


# ---- non-transactional tables ------------------------------------------------------------------------

NT = "ex_nt"
NT_TABLES = [f"{NT}.aria", f"{NT}.plain", f"{NT}.inno"]


@pytest.fixture()
def non_transactional(scratch_server, tmp_path):
    """An Aria (TRANSACTIONAL=1), a MyISAM and an InnoDB table; one Aria row is updated twice."""
    return _incident(
        scratch_server,
        tmp_path,
        NT,
        [
            f"CREATE TABLE {NT}.aria (id INT PRIMARY KEY, v INT) ENGINE=Aria TRANSACTIONAL=1",
            f"CREATE TABLE {NT}.plain (id INT PRIMARY KEY, v INT) ENGINE=MyISAM",
            f"CREATE TABLE {NT}.inno (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
            f"INSERT INTO {NT}.aria VALUES (1, 1), (2, 2)",
            f"INSERT INTO {NT}.plain VALUES (1, 1)",
            f"INSERT INTO {NT}.inno VALUES (1, 1)",
        ],
        [
            f"UPDATE {NT}.inno SET v = 5",
            f"UPDATE {NT}.aria SET v = 10 WHERE id = 1",
            f"UPDATE {NT}.aria SET v = 11 WHERE id = 1",
            f"DELETE FROM {NT}.aria WHERE id = 2",
            f"INSERT INTO {NT}.plain VALUES (2, 2)",
        ],
        NT_TABLES,
    )


def test_non_transactional_tables_are_reported_at_generation(non_transactional):
    found = non_transactional["report"].side_effects["non_transactional"]
    assert found == [
        {"table": f"{NT}.aria", "engine": "Aria", "statements": 3},
        {"table": f"{NT}.plain", "engine": "MyISAM", "statements": 1},
    ]
    header = non_transactional["script"].read_text().split("SET NAMES")[0]
    assert f"-- warning: {NT}.aria is a Aria table (no transactions)" in header


def test_a_dry_run_never_writes_to_non_transactional_tables(scratch_server, non_transactional):
    dry = execute_plan(non_transactional["plan"], scratch_server.dsn)
    assert snapshot(scratch_server, NT_TABLES) == non_transactional["after"]
    assert dry.read_only_tables == [f"{NT}.aria", f"{NT}.plain"]
    assert dry.statements == 1 and dry.rows_affected == 1  # the InnoDB statement ran (and rolled back)
    # the older change of the twice-updated row cannot be checked against a row nothing changed back
    assert not dry.conflicts and dry.unverified == 1
    assert dry.to_dict()["read_only_tables"] == [f"{NT}.aria", f"{NT}.plain"]


def test_a_dry_run_still_finds_a_conflict_on_a_non_transactional_table(scratch_server, non_transactional):
    scratch_server.run_sql([f"UPDATE {NT}.plain SET v = 7 WHERE id = 2"])
    changed = snapshot(scratch_server, NT_TABLES)
    with pytest.raises(ConflictError, match=rf"conflict at .*\({NT}\.plain, .*nothing was applied"):
        execute_plan(non_transactional["plan"], scratch_server.dsn)
    assert snapshot(scratch_server, NT_TABLES) == changed


def test_a_commit_refuses_non_transactional_tables_unless_each_is_accepted(scratch_server, non_transactional):
    for accepted in ((), (f"{NT}.aria",)):
        with pytest.raises(ExecutionRefused) as refused:
            execute_plan(
                non_transactional["plan"],
                scratch_server.dsn,
                commit=True,
                accept_non_transactional=accepted,
            )
        message = refused.value.one_line()
        assert f"{NT}.plain (MyISAM)" in message and "--accept-non-transactional" in message
        assert (f"{NT}.aria (Aria)" in message) == (not accepted)
        assert snapshot(scratch_server, NT_TABLES) == non_transactional["after"]
    result = execute_plan(
        non_transactional["plan"],
        scratch_server.dsn,
        commit=True,
        accept_non_transactional=[f"{NT}.aria", f"{NT}.PLAIN"],  # names compare case-insensitively
    )
    assert result.committed and result.statements == 5
    assert snapshot(scratch_server, NT_TABLES) == non_transactional["before"]


def test_a_failed_commit_says_what_stays_on_non_transactional_tables(scratch_server, non_transactional):
    """A writer slips in between the dry run and the real run: the real run stops at the InnoDB table's
    check, which comes last; the Aria and MyISAM statements it ran before stay, and the error says so."""
    connections = []

    def factory():
        connections.append(1)
        # the streamed pass's preflight (it finds the non-transactional tables and leaves the plan to the
        # careful path), the careful path's side effects, its dry run, then the real run
        if len(connections) == 4:
            scratch_server.run_sql([f"UPDATE {NT}.inno SET v = 6"])
        return scratch_server.connect(autocommit=False)

    steps = [json.loads(line) for line in non_transactional["plan"].read_text().splitlines()]
    assert [s["table"] for s in steps] == [f"{NT}.plain"] + [f"{NT}.aria"] * 3 + [f"{NT}.inno"]
    with pytest.raises(ConflictError) as conflict:
        execute_plan(
            non_transactional["plan"],
            factory,
            commit=True,
            accept_non_transactional=[f"{NT}.aria", f"{NT}.plain"],
        )
    message = conflict.value.one_line()
    assert f"conflict at {steps[-1]['file']}:{steps[-1]['pos']} ({NT}.inno" in message
    assert "nothing was applied" not in message
    assert (
        f"4 statement(s) already run on non-transactional tables stay applied: {NT}.plain (1), {NT}.aria (3)"
    ) in message
    now = snapshot(scratch_server, NT_TABLES)
    for table in (f"{NT}.aria", f"{NT}.plain"):
        assert now[table] == non_transactional["before"][table]


# ---- lost updates ------------------------------------------------------------------------------------

LU = "ex_lu"
LU_TABLES = [f"{LU}.acct"]


@pytest.fixture()
def updated(scratch_server, tmp_path):
    return _incident(
        scratch_server,
        tmp_path,
        LU,
        [
            f"CREATE TABLE {LU}.acct (id INT PRIMARY KEY, owner VARCHAR(20), balance INT)",
            f"INSERT INTO {LU}.acct VALUES (1, 'a', 100), (2, 'b', 200)",
        ],
        [f"UPDATE {LU}.acct SET balance = balance - 10"],
        LU_TABLES,
    )


def _holder(server, sql: str):
    """Another session holding an uncommitted change."""
    conn = server.connect(autocommit=False)
    with conn.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute(sql)
    return conn


def test_a_change_committed_while_the_apply_waits_is_a_conflict_not_a_lost_update(scratch_server, updated):
    """Between the dry run and the real run another session changes row 1 and commits a moment later:
    the real run's check waits for it and sees the change, instead of overwriting it."""
    holders = []
    timers = []
    connections = []

    def factory():
        connections.append(1)
        if len(connections) == 3:  # the streamed pass's preflight, its dry run, then the real run
            holders.append(_holder(scratch_server, f"UPDATE {LU}.acct SET owner = 'other' WHERE id = 1"))
            timers.append(threading.Timer(1.0, holders[0].commit))
            timers[0].start()
        return scratch_server.connect(autocommit=False)

    try:
        with pytest.raises(ConflictError, match=rf"conflict at .*\({LU}\.acct, .*nothing was applied"):
            execute_plan(updated["plan"], factory, commit=True, lock_wait_timeout=20)
    finally:
        for timer in timers:  # its commit has its answer before the connection closes
            timer.join()
        for conn in holders:
            conn.close()
    rows = scratch_server.query(f"SELECT id, owner, balance FROM {LU}.acct ORDER BY id")
    assert rows == [(1, "other", 90), (2, "b", 190)]


def test_a_row_locked_by_another_session_times_out_with_nothing_applied(scratch_server, updated):
    holder = _holder(scratch_server, f"UPDATE {LU}.acct SET owner = 'other' WHERE id = 2")
    try:
        started = time.monotonic()
        with pytest.raises(ExecutionFailed) as failed:
            execute_plan(updated["plan"], scratch_server.dsn, commit=True, lock_wait_timeout=1)
        assert time.monotonic() - started < 15
    finally:
        holder.rollback()
        holder.close()
    message = failed.value.one_line()
    assert f"row locked by another session at {updated['range'].start_file}:" in message
    assert f"({LU}.acct, " in message and "nothing was applied" in message
    assert snapshot(scratch_server, LU_TABLES) == updated["after"]


# ---- one transaction by default ----------------------------------------------------------------------

TX = "ex_tx"
TX_TABLES = [f"{TX}.a", f"{TX}.b"]


@pytest.fixture()
def late_failure(scratch_server, tmp_path):
    """Two transactions; undoing the older one (last) fails on the real run only: a trigger counts its
    runs in a MyISAM table (which the dry run cannot roll back) and refuses the second."""
    return _incident(
        scratch_server,
        tmp_path,
        TX,
        [
            f"CREATE TABLE {TX}.a (id INT PRIMARY KEY, v INT)",
            f"CREATE TABLE {TX}.b (id INT PRIMARY KEY, v INT)",
            f"CREATE TABLE {TX}.runs (n INT) ENGINE=MyISAM",
            f"INSERT INTO {TX}.runs VALUES (0)",
            f"CREATE TRIGGER {TX}.second_run BEFORE INSERT ON {TX}.a FOR EACH ROW BEGIN "
            f"UPDATE {TX}.runs SET n = n + 1; "
            f"IF (SELECT n FROM {TX}.runs) > 1 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'second run'; "
            "END IF; END",
            f"INSERT INTO {TX}.a VALUES (1, 1)",
            f"INSERT INTO {TX}.b VALUES (1, 1)",
            f"UPDATE {TX}.runs SET n = 0",
        ],
        [f"DELETE FROM {TX}.a WHERE id = 1", f"UPDATE {TX}.b SET v = 2"],
        TX_TABLES,
    )


def test_cli_commit_is_one_transaction_by_default(scratch_server, late_failure):
    args = [*range_args(late_failure["range"]), "--schema-dsn", scratch_server.dsn, "-o", "/dev/null"]
    args += ["--execute", "--target", scratch_server.dsn, "--commit", "--accept-triggers"]
    out = run_cli("flashback", *args)
    assert out.returncode == 3 and "second run" in out.stderr and "nothing was applied" in out.stderr
    assert out.stderr.count("\n") == 1
    assert snapshot(scratch_server, TX_TABLES) == late_failure["after"]
    scratch_server.run_sql([f"UPDATE {TX}.runs SET n = 0"])
    assert run_cli("flashback", *args, "--single-transaction").returncode == 3  # still accepted
    assert snapshot(scratch_server, TX_TABLES) == late_failure["after"]


def test_per_transaction_mode_names_the_transactions_it_applied(scratch_server, late_failure):
    steps = [json.loads(line) for line in late_failure["plan"].read_text().splitlines()]
    newest = steps[0]
    assert newest["table"] == f"{TX}.b"
    with pytest.raises(ExecutionFailed) as failed:
        execute_plan(
            late_failure["plan"],
            scratch_server.dsn,
            commit=True,
            single_transaction=False,
            accept_triggers=True,
        )
    message = failed.value.one_line()
    applied = f"transaction {newest['tx']} (gtid {newest['gtid']}, {newest['file']}:{newest['pos']})"
    assert f"1 earlier transaction(s) stay committed: {applied}" in message
    assert failed.value.result is not None
    assert failed.value.result.to_dict()["transactions_applied"] == [
        {"tx": newest["tx"], "gtid": newest["gtid"], "file": newest["file"], "pos": newest["pos"]}
    ]
    now = snapshot(scratch_server, TX_TABLES)
    assert now[f"{TX}.b"] == late_failure["before"][f"{TX}.b"]
    assert now[f"{TX}.a"] == late_failure["after"][f"{TX}.a"]


def test_cli_per_transaction_flag(scratch_server, late_failure):
    args = [*range_args(late_failure["range"]), "--schema-dsn", scratch_server.dsn, "-o", "/dev/null"]
    args += [
        "--execute",
        "--target",
        scratch_server.dsn,
        "--commit",
        "--accept-triggers",
        "--per-transaction",
    ]
    out = run_cli("flashback", *args)
    assert out.returncode == 3 and "1 earlier transaction(s) stay committed: transaction" in out.stderr
    both = run_cli("flashback", *args, "--single-transaction")
    assert both.returncode == 2 and both.stderr.count("\n") == 1
