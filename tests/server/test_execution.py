"""Verified execution: dry run, conflicts found before anything is applied, all-or-nothing on failure,
--on-conflict skip, and the CLI's exit codes (0, 2 with one line for bad input, 3 for irreversible
changes and conflicts), never a traceback."""

from __future__ import annotations

import json

import pytest

from rollback.base.errors import ConflictError
from rollback.cli import commands as cli
from rollback.target.execute import ExecutionFailed, execute_plan
from tests.support.restore import flashback, range_args, run_cli, snapshot

DB = "ex"
TABLES = [f"{DB}.acct", f"{DB}.tags", f"{DB}.loose"]

# The incident: five transactions. The rollback runs them newest first, so the reverse of the oldest
# (the DELETE from `loose`) runs last, after every other reverse statement has been applied.
INCIDENT = [
    f"DELETE FROM {DB}.loose WHERE a = 5",
    f"UPDATE {DB}.acct SET balance = balance - 10 WHERE id <= 3",
    f"DELETE FROM {DB}.acct WHERE id = 4",
    f"INSERT INTO {DB}.acct VALUES (100, 'new', 1)",
    f"UPDATE {DB}.tags SET n = n + 1",
]


@pytest.fixture(scope="module")
def recorded(scratch_server, tmp_path_factory):
    """Tables, the incident's binlog range and its plan; snapshots before and after it; a copy of the
    after state (database ex_after) that every test starts from."""
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.acct (id INT PRIMARY KEY, owner VARCHAR(20), balance DECIMAL(10,2))",
            f"CREATE TABLE {DB}.tags (code CHAR(4) NOT NULL, n INT, UNIQUE KEY (code))",
            # A unique key on a nullable column does not identify rows: a re-insert gets no key check.
            f"CREATE TABLE {DB}.loose (a INT NULL, b INT, UNIQUE KEY (a))",
            f"INSERT INTO {DB}.acct VALUES " + ", ".join(f"({i}, 'o{i}', {i * 100})" for i in range(1, 6)),
            f"INSERT INTO {DB}.tags VALUES ('a', 1), ('b', 2), ('c', NULL)",
            f"INSERT INTO {DB}.loose VALUES (5, 50), (NULL, 1), (NULL, 1)",
        ]
    )
    before = snapshot(scratch_server, TABLES)
    rng = scratch_server.run_sql(INCIDENT)
    after = snapshot(scratch_server, TABLES)
    script, plan, report = flashback(scratch_server, rng, tmp_path_factory.mktemp("execution"))
    assert report.statements == 3 + 1 + 1 + 2 + 1  # tags 'c': NULL + 1 changes nothing
    _copy(scratch_server, DB, "ex_after")
    return {"range": rng, "plan": plan, "script": script, "before": before, "after": after}


def _copy(server, source: str, target: str) -> None:
    """Copy a database's tables and rows, outside the binlog (the incident's range stays as it is)."""
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute(f"DROP DATABASE IF EXISTS {target}")
            cur.execute(f"CREATE DATABASE {target}")
            for table in TABLES:
                name = table.split(".")[1]
                cur.execute(f"CREATE TABLE {target}.{name} LIKE {source}.{name}")
                cur.execute(f"INSERT INTO {target}.{name} SELECT * FROM {source}.{name}")
    finally:
        conn.close()


@pytest.fixture()
def incident(scratch_server, recorded):
    _copy(scratch_server, "ex_after", DB)
    assert snapshot(scratch_server, TABLES) == recorded["after"]
    return recorded


def test_dry_run_changes_nothing_and_reports_what_would_change(scratch_server, incident):
    dry = execute_plan(incident["plan"], scratch_server.dsn)
    assert dry.dry_run and not dry.committed
    assert dry.statements == dry.rows_affected == 8 and not dry.conflicts
    assert snapshot(scratch_server, TABLES) == incident["after"]


@pytest.mark.parametrize("single_transaction", [True, False], ids=["single-transaction", "per-transaction"])
def test_commit_restores_the_state_before_the_incident(scratch_server, incident, single_transaction):
    result = execute_plan(
        incident["plan"], scratch_server.dsn, commit=True, single_transaction=single_transaction
    )
    assert result.committed and result.statements == 8
    assert snapshot(scratch_server, TABLES) == incident["before"]


@pytest.mark.parametrize(
    ("later", "reason"),
    [
        (f"UPDATE {DB}.acct SET owner = 'changed later' WHERE id = 1", "the row changed since the incident"),
        (f"INSERT INTO {DB}.acct VALUES (4, 'taken', 0)", "the row's key is taken"),
        (f"DELETE FROM {DB}.acct WHERE id = 100", "the row changed since the incident"),
        (f"UPDATE {DB}.tags SET n = NULL WHERE code = 'a'", "the row changed since the incident"),
    ],
    ids=["row-updated", "key-taken", "row-deleted", "unique-key-row-updated"],
)
def test_conflicting_row_is_detected_before_anything_is_applied(scratch_server, incident, later, reason):
    scratch_server.run_sql([later])  # a change after the incident
    changed = snapshot(scratch_server, TABLES)
    with pytest.raises(
        ConflictError, match=rf"conflict at mysql-bin\.\d+:\d+ \({DB}\.\w+, .*{reason}; nothing"
    ):
        execute_plan(incident["plan"], scratch_server.dsn, commit=True)
    assert snapshot(scratch_server, TABLES) == changed


def test_conflict_in_per_transaction_mode_stops_before_the_first_commit(scratch_server, incident):
    # The row of the oldest transaction but one: in per-transaction mode the three newer reverse
    # transactions would be committed first, were it not for the dry run.
    scratch_server.run_sql([f"UPDATE {DB}.acct SET owner = 'changed later' WHERE id = 1"])
    changed = snapshot(scratch_server, TABLES)
    with pytest.raises(ConflictError, match="nothing was applied"):
        execute_plan(incident["plan"], scratch_server.dsn, commit=True, single_transaction=False)
    assert snapshot(scratch_server, TABLES) == changed


def test_on_conflict_skip_restores_everything_else(scratch_server, incident):
    scratch_server.run_sql([f"UPDATE {DB}.acct SET owner = 'changed later' WHERE id = 2"])
    result = execute_plan(incident["plan"], scratch_server.dsn, commit=True, on_conflict="skip")
    assert result.committed and result.skipped == 1 and result.statements == 7
    assert [c["table"] for c in result.conflicts] == [f"{DB}.acct"]
    rows = scratch_server.query(f"SELECT id, owner, balance FROM {DB}.acct ORDER BY id")
    assert [(r[0], r[1], float(r[2])) for r in rows] == [
        (1, "o1", 100.0),
        (2, "changed later", 190.0),  # left alone: it changed after the incident
        (3, "o3", 300.0),
        (4, "o4", 400.0),
        (5, "o5", 500.0),
    ]
    for table in (f"{DB}.tags", f"{DB}.loose"):
        assert snapshot(scratch_server, [table]) == {table: incident["before"][table]}


def test_failing_statement_is_found_by_the_dry_run_and_nothing_is_applied(scratch_server, incident):
    # The re-insert into `loose` (no row key, so no check) collides with a row inserted after the incident.
    scratch_server.run_sql([f"INSERT INTO {DB}.loose VALUES (5, 99)"])
    changed = snapshot(scratch_server, TABLES)
    with pytest.raises(
        ExecutionFailed, match=r"refused the statement at mysql-bin\.\d+:\d+ \(ex\.loose.*Duplicate"
    ):
        execute_plan(incident["plan"], scratch_server.dsn, commit=True, single_transaction=False)
    assert snapshot(scratch_server, TABLES) == changed


def test_dropped_column_fails_the_statement_and_nothing_is_applied(scratch_server, incident):
    # Outside the binlog, as the fixture restores the tables: the next tests' jobs find no DDL on
    # the incident's tables after its range (a logged ALTER would rightly refuse their schema source).
    scratch_server.run_sql(["SET SESSION sql_log_bin = 0", f"ALTER TABLE {DB}.tags DROP COLUMN n"])
    changed = snapshot(scratch_server, TABLES)
    with pytest.raises(
        ExecutionFailed, match=r"refused the statement .*Unknown column 'n'.*nothing was applied"
    ):
        execute_plan(incident["plan"], scratch_server.dsn, commit=True)
    assert snapshot(scratch_server, TABLES) == changed


def test_failure_after_the_dry_run_rolls_back_everything_the_run_started(scratch_server, incident):
    """A writer slips in between the dry run and the real run: the real run's last statement fails, and
    every statement it had applied before is rolled back with it."""
    connections = []

    def factory():
        connections.append(1)
        if len(connections) == 3:  # the target read, the dry run, then the real run: the writer goes first
            scratch_server.run_sql([f"INSERT INTO {DB}.loose VALUES (5, 99)"])
        return scratch_server.connect(autocommit=False)

    with pytest.raises(ExecutionFailed, match="Duplicate entry '5'.*nothing was applied"):
        execute_plan(incident["plan"], factory, commit=True, single_transaction=True)
    changed = dict(incident["after"])
    changed.pop(f"{DB}.loose")
    now = snapshot(scratch_server, TABLES)
    assert now.pop(f"{DB}.loose") != incident["after"][f"{DB}.loose"]  # the writer's row
    assert now == changed  # the seven reverse statements applied before the failure are gone


# ---- the CLI -----------------------------------------------------------------------------------------


def _cli(incident, server, *extra: str):
    return run_cli("flashback", *range_args(incident["range"]), "--schema-dsn", server.dsn, *extra)


def test_cli_execute_dry_run_then_commit(scratch_server, incident, tmp_path):
    out = tmp_path / "r.sql"
    dry = _cli(incident, scratch_server, "-o", str(out), "--execute", "--target", scratch_server.dsn)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stderr.splitlines()[-1])["execution"]["dry_run"] is True
    assert snapshot(scratch_server, TABLES) == incident["after"]
    done = _cli(
        incident, scratch_server, "-o", str(out), "--execute", "--target", scratch_server.dsn, "--commit"
    )
    assert done.returncode == 0, done.stderr
    execution = json.loads(done.stderr.splitlines()[-1])["execution"]
    assert execution["committed"] is True and execution["statements"] == 8
    assert snapshot(scratch_server, TABLES) == incident["before"]
    assert scratch_server.password not in dry.stdout + dry.stderr + done.stdout + done.stderr


def test_cli_conflict_exits_3_with_one_line(scratch_server, incident):
    scratch_server.run_sql([f"UPDATE {DB}.acct SET owner = 'x' WHERE id = 3"])
    changed = snapshot(scratch_server, TABLES)
    out = _cli(
        incident, scratch_server, "-o", "/dev/null", "--execute", "--target", scratch_server.dsn, "--commit"
    )
    assert out.returncode == 3
    assert out.stderr.count("\n") == 1 and "conflict at" in out.stderr and "Traceback" not in out.stderr
    assert snapshot(scratch_server, TABLES) == changed
    skipped = _cli(
        incident,
        scratch_server,
        "-o",
        "/dev/null",
        "--execute",
        "--target",
        scratch_server.dsn,
        "--commit",
        "--on-conflict",
        "skip",
    )
    assert skipped.returncode == 0, skipped.stderr
    assert json.loads(skipped.stderr.splitlines()[-1])["execution"]["skipped"] == 1


def test_cli_failed_execution_exits_3_with_one_line(scratch_server, incident):
    scratch_server.run_sql([f"INSERT INTO {DB}.loose VALUES (5, 99)"])
    out = _cli(
        incident, scratch_server, "-o", "/dev/null", "--execute", "--target", scratch_server.dsn, "--commit"
    )
    assert out.returncode == 3
    assert out.stderr.count("\n") == 1 and "Duplicate entry" in out.stderr and "Traceback" not in out.stderr


def test_cli_irreversible_change_exits_3_and_executes_nothing(scratch_server_factory, tmp_path):
    server = scratch_server_factory(row_image="MINIMAL")
    server.run_sql(
        ["CREATE DATABASE IF NOT EXISTS exm", "CREATE OR REPLACE TABLE exm.t (id INT PRIMARY KEY, v INT)"]
        + ["INSERT INTO exm.t VALUES (1, 1), (2, 2)"]
    )
    rng = server.run_sql(["DELETE FROM exm.t WHERE id = 2", "INSERT INTO exm.t VALUES (3, 3)"])
    after = snapshot(server, ["exm.t"])
    out = run_cli(
        "flashback",
        *range_args(rng),
        "--schema-dsn",
        server.dsn,
        "-o",
        str(tmp_path / "r.sql"),
        "--execute",
        "--target",
        server.dsn,
        "--commit",
    )
    assert out.returncode == 3
    assert (
        out.stderr.count("\n") == 1 and "cannot be restored" in out.stderr and "delete on exm.t" in out.stderr
    )
    assert snapshot(server, ["exm.t"]) == after and not (tmp_path / "r.sql").exists()


def _bad_inputs(incident, server, tmp_path):
    rng = incident["range"]
    files = [str(f) for f in rng.files]
    garbage = tmp_path / "not-a-binlog"
    garbage.write_bytes(b"hello, world\n" * 10)
    empty_ddl = tmp_path / "empty.sql"
    empty_ddl.write_text("-- nothing here\n")
    return {
        "no-files": ["flashback"],
        "missing-file": ["flashback", str(tmp_path / "mysql-bin.999999")],
        "not-a-binlog": ["flashback", str(garbage)],
        "start-inside-an-event": ["flashback", *files, "--start-position", str(rng.start_position + 1)],
        "stop-past-the-end": ["flashback", *files, "--stop-position", "999999999999"],
        "position-not-a-number": ["flashback", *files, "--start-position", "abc"],
        "unknown-option": ["flashback", *files, "--frobnicate"],
        "unknown-command": ["frobnicate"],
        "bad-type": ["flashback", *files, "--type", "upsert"],
        "bad-gtid": ["flashback", *files, "--gtid", "0-1-9..0-1-2"],
        "bad-datetime": ["flashback", *files, "--start-datetime", "2024-13-45"],
        "execute-without-target": ["flashback", *range_args(rng), "--schema-dsn", server.dsn, "--execute"],
        "bad-dsn-scheme": ["flashback", *range_args(rng), "--schema-dsn", "postgres://u:p@127.0.0.1:1/"],
        "unreachable-schema-server": [
            "flashback",
            *range_args(rng),
            "--schema-dsn",
            "mysql://u:secret@127.0.0.1:1/",
        ],
        "missing-schema-file": ["flashback", *range_args(rng), "--schema-file", str(tmp_path / "none.sql")],
        "schema-file-without-the-table": ["flashback", *range_args(rng), "--schema-file", str(empty_ddl)],
        "no-schema-at-all": ["flashback", *range_args(rng)],
        "output-in-missing-directory": [
            "flashback",
            *range_args(rng),
            "--schema-dsn",
            server.dsn,
            "-o",
            str(tmp_path / "missing" / "r.sql"),
        ],
        "unreachable-target": [
            "flashback",
            *range_args(rng),
            "--schema-dsn",
            server.dsn,
            "-o",
            "/dev/null",
            "--execute",
            "--target",
            "mysql://u:secret@127.0.0.1:1/",
        ],
    }


BAD = [
    "no-files",
    "missing-file",
    "not-a-binlog",
    "start-inside-an-event",
    "stop-past-the-end",
    "position-not-a-number",
    "unknown-option",
    "unknown-command",
    "bad-type",
    "bad-gtid",
    "bad-datetime",
    "execute-without-target",
    "bad-dsn-scheme",
    "unreachable-schema-server",
    "missing-schema-file",
    "schema-file-without-the-table",
    "no-schema-at-all",
    "output-in-missing-directory",
    "unreachable-target",
]


def _main(args: list[str], capsys) -> tuple[int, str]:
    """The CLI in this process (argparse exits through SystemExit); (exit code, stderr)."""
    try:
        code = cli.main(args)
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def test_cli_bad_input_exits_2_with_one_line_and_no_traceback(scratch_server, incident, tmp_path, capsys):
    cases = _bad_inputs(incident, scratch_server, tmp_path)
    assert sorted(cases) == sorted(BAD)
    failures = []
    for name in BAD:
        code, err = _main(cases[name], capsys)
        lines = err.splitlines()
        if code != 2 or len(lines) != 1 or "Traceback" in err or "secret" in err:
            failures.append(f"{name}: exit {code}: {err[-600:]}")
        elif not lines[0].startswith("mysql-rollback"):
            failures.append(f"{name}: {lines[0]}")
    assert not failures, "\n".join(failures)
    assert snapshot(scratch_server, TABLES) == incident["after"]


@pytest.mark.parametrize("name", ["not-a-binlog", "position-not-a-number", "unreachable-target"])
def test_cli_bad_input_in_a_fresh_process(scratch_server, incident, tmp_path, name):
    out = run_cli(*_bad_inputs(incident, scratch_server, tmp_path)[name])
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr


def test_per_transaction_mode_says_what_stays_committed_when_a_late_failure_stops_it(
    scratch_server, incident
):
    """Per-transaction mode commits each reverse transaction: a failure the dry run could not see (a
    concurrent writer) leaves the newer ones applied, and the error says exactly that."""
    connections = []

    def factory():
        connections.append(1)
        if len(connections) == 3:  # the target read, the dry run, then the real run
            scratch_server.run_sql([f"INSERT INTO {DB}.loose VALUES (5, 99)"])
        return scratch_server.connect(autocommit=False)

    with pytest.raises(
        ExecutionFailed,
        match=r"4 earlier transaction\(s\) stay committed: transaction \d+ .*; this one was rolled back",
    ):
        execute_plan(incident["plan"], factory, commit=True, single_transaction=False)
    now = snapshot(scratch_server, TABLES)
    assert now[f"{DB}.acct"] == incident["before"][f"{DB}.acct"]
    assert now[f"{DB}.tags"] == incident["before"][f"{DB}.tags"]
