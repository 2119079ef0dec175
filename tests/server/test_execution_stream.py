"""The streamed one-transaction pass (rollback/target/execute.py's _streamed: a dry run, a commit, a
commit after its dry run): the first batch goes to the server before the plan is read, each batch
read, cut and built while the server runs the one before. Its outcome is the careful path's: every row restored, a conflict in a later batch applies
nothing and names its row, and a step its preflight did not see rolls back what ran and has the careful
path take the plan from the start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rollback.base.errors import ConflictError, RollbackError
from rollback.target import execute
from rollback.target.execute import ExecutionObserver, ExecutionProgress, execute_plan
from rollback.target.resolutions import ResolutionsError, parse_resolutions
from tests.support.restore import flashback, snapshot

DB = "sx"
ROWS = 1_600  # four batches of re-inserts (in batches of 500 steps: _batches_of_500), then the UPDATEs'


@pytest.fixture(autouse=True)
def _batches_of_500(monkeypatch):
    """Batches of 500 steps, as the apply's were when these tests were written: the plan streams over
    several of them without a plan of four times the rows."""
    monkeypatch.setattr(execute, "BATCH_STEPS", 500)


class Heard(ExecutionObserver):
    def __init__(self) -> None:
        self.states: list[ExecutionProgress] = []

    def progress(self, state: ExecutionProgress) -> None:
        self.states.append(state)


def incident(server: Any, tmp_path: Any) -> dict[str, Any]:
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, a INT, b VARCHAR(20), KEY (a))",
            f"INSERT INTO {DB}.t SELECT seq, seq * 7, CONCAT('b', seq) FROM {DB}.seq_1_to_{2 * ROWS}",
            f"CREATE TABLE {DB}.u (id INT PRIMARY KEY, v INT)",
            f"INSERT INTO {DB}.u SELECT seq, seq FROM {DB}.seq_1_to_20",
        ]
    )
    tables = [f"{DB}.t", f"{DB}.u"]
    before = snapshot(server, tables)
    rng = server.run_sql(
        [  # sx.u first: the plan (newest change first) ends with its steps
            f"UPDATE {DB}.u SET v = -v",
            f"DELETE FROM {DB}.t WHERE id % 2 = 0",
            f"UPDATE {DB}.t SET a = a + 1, b = 'x' WHERE id % 3 = 0",
        ]
    )
    _, plan, _ = flashback(server, rng, tmp_path)
    return {"plan": plan, "tables": tables, "before": before}


def careful_path_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """The careful path reads the whole plan first (_survey): here that fails the test."""

    def survey(steps: Any) -> Any:
        raise AssertionError("the careful path read the whole plan")

    monkeypatch.setattr(execute, "_survey", survey)


def surveys_counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A 1 for each time the careful path reads the whole plan (_survey)."""
    read: list[int] = []
    survey = execute._survey

    def counted(steps: Any) -> Any:
        read.append(1)
        return survey(steps)

    monkeypatch.setattr(execute, "_survey", counted)
    return read


def merge_table(server: Any) -> str:
    """sx.m, for the merge's incidents: 2 * ROWS rows (id, a = 7 * id, b = 'b' id, c = id)."""
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.m (id INT PRIMARY KEY, a INT, b VARCHAR(20), c INT)",
            f"INSERT INTO {DB}.m SELECT seq, seq * 7, CONCAT('b', seq), seq FROM {DB}.seq_1_to_{2 * ROWS}",
        ]
    )
    return f"{DB}.m"


def test_a_streamed_commit_of_many_batches_restores_every_row(scratch_server, tmp_path, monkeypatch):
    data = incident(scratch_server, tmp_path)
    steps = sum(1 for _ in open(data["plan"], encoding="utf-8"))
    assert steps > 3 * execute.BATCH_STEPS
    careful_path_forbidden(monkeypatch)
    heard = Heard()
    result = execute_plan(data["plan"], scratch_server.dsn, commit=True, check_first=False, observer=heard)
    assert result.committed and result.statements == result.rows_affected == steps
    assert result.side_effects == {"triggers": [], "cascades": [], "non_transactional": []}
    assert snapshot(scratch_server, data["tables"]) == data["before"]
    # the progress of one pass, its total known from the start
    assert {state.statements_total for state in heard.states} == {steps}
    done = [state.statements_done for state in heard.states]
    assert done == sorted(done) and done[-1] == steps


def test_a_conflict_in_a_later_batch_applies_nothing_and_names_its_row(scratch_server, tmp_path, monkeypatch):
    data = incident(scratch_server, tmp_path)
    # a key the plan re-inserts in its third batch, taken since
    scratch_server.run_sql(
        ["SET SESSION sql_log_bin = 0", f"INSERT INTO {DB}.t VALUES (1200, 0, 'taken later')"]
    )
    changed = snapshot(scratch_server, data["tables"])
    careful_path_forbidden(monkeypatch)
    with pytest.raises(
        ConflictError, match=rf"conflict at mysql-bin\.\d+:\d+ \({DB}\.t, .*key is taken; nothing"
    ):
        execute_plan(data["plan"], scratch_server.dsn, commit=True, check_first=False)
    assert snapshot(scratch_server, data["tables"]) == changed
    monkeypatch.undo()
    result = execute_plan(
        data["plan"], scratch_server.dsn, commit=True, on_conflict="skip", check_first=False
    )
    assert [(c["table"], c["statement"]) for c in result.conflicts] == [
        (f"{DB}.t", f"INSERT INTO `{DB}`.`t` (`id`, `a`, `b`) VALUES (1200, 8400, 'b1200');")
    ]


def test_a_step_its_preflight_did_not_see_rolls_back_what_ran_and_the_careful_path_runs(
    scratch_server, tmp_path
):
    """The lines of one table written in another layout than the plan's writer's: the plan's scan does
    not see that table, so the stream meets it after batches of the other ran. What ran is rolled back
    (the careful path then starts from nothing) and the careful path applies the whole plan."""
    data = incident(scratch_server, tmp_path)
    lines = open(data["plan"], encoding="utf-8").read().splitlines()
    hidden = [
        json.dumps(json.loads(line), separators=(",", " : ")) if f'"table": "{DB}.u"' in line else line
        for line in lines
    ]
    assert hidden != lines and not any(f'"table": "{DB}.u"' in line for line in hidden)
    first_u = next(n for n, line in enumerate(hidden) if f'"table" : "{DB}.u"' in line)
    assert first_u > 2 * execute.BATCH_STEPS  # batches of sx.t ran before the stream met it
    plan = tmp_path / "hidden.plan.jsonl"
    plan.write_text("\n".join(hidden) + "\n", encoding="utf-8")
    heard = Heard()
    result = execute_plan(plan, scratch_server.dsn, commit=True, check_first=False, observer=heard)
    assert result.committed and result.rows_affected == len(lines)
    assert snapshot(scratch_server, data["tables"]) == data["before"]
    done = [state.statements_done for state in heard.states]
    turn = next(n for n in range(1, len(done)) if done[n] < done[n - 1])  # the careful path starts over
    assert done[turn - 1] >= 2 * execute.BATCH_STEPS and done[-1] == len(lines)
    assert done[turn:] == sorted(done[turn:])


def _head_before_table_u(plan: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """The preflight reads the plan's first two batches of lines (execute.HEAD_BYTES), all of sx.t: its
    last table, sx.u, comes after them. The plan's lines."""
    lines = plan.read_bytes().splitlines(keepends=True)
    first_u = next(n for n, line in enumerate(lines) if f'"table": "{DB}.u"'.encode() in line)
    assert first_u > 2 * execute.BATCH_STEPS
    monkeypatch.setattr(execute, "HEAD_BYTES", sum(map(len, lines[: 2 * execute.BATCH_STEPS])))
    return len(lines)


def scans_counted(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """The bytes each preflight's scan was limited to (None: the whole plan)."""
    limits: list[int | None] = []
    scan = execute.plan_stream.scan

    def counted(path: Any, longest: int, limit: int | None = None) -> Any:
        limits.append(limit)
        return scan(path, longest, limit)

    monkeypatch.setattr(execute.plan_stream, "scan", counted)
    return limits


def test_a_table_past_the_plans_head_starts_the_pass_again_after_a_scan_of_the_whole_plan(
    scratch_server, tmp_path, monkeypatch
):
    """The preflight reads the plan's head only; the stream meets sx.u after batches of sx.t ran: they
    are rolled back and the pass starts again, streamed, after a scan of the whole plan (never the
    careful path). Its total is the plan's lines, counted beside the first pass."""
    data = incident(scratch_server, tmp_path)
    lines = _head_before_table_u(data["plan"], monkeypatch)
    limits = scans_counted(monkeypatch)
    careful_path_forbidden(monkeypatch)
    heard = Heard()
    result = execute_plan(data["plan"], scratch_server.dsn, commit=True, check_first=False, observer=heard)
    assert result.committed and result.rows_affected == lines
    assert limits == [execute.HEAD_BYTES, None]
    assert snapshot(scratch_server, data["tables"]) == data["before"]
    done = [state.statements_done for state in heard.states]
    turn = next(n for n in range(1, len(done)) if done[n] < done[n - 1])  # the second pass starts
    assert done[turn - 1] >= 2 * execute.BATCH_STEPS and done[-1] == lines
    assert heard.states[turn - 1].statements_total == lines  # counted while the first pass ran


def test_a_table_past_the_plans_head_gets_no_statement_before_the_preflight_looked_at_it(
    scratch_server, tmp_path, monkeypatch
):
    """sx.u past the head has an UPDATE trigger that writes to a table without transactions: had a
    statement on sx.u run before the preflight saw the trigger, its row would stay after the rollback.
    The whole plan's scan meets the trigger, the careful path refuses it as ever, nothing is applied."""
    data = incident(scratch_server, tmp_path)
    _head_before_table_u(data["plan"], monkeypatch)
    scratch_server.run_sql(
        [
            f"CREATE TABLE {DB}.audit (id INT) ENGINE=MyISAM",
            f"CREATE TRIGGER {DB}.u_audit AFTER UPDATE ON {DB}.u FOR EACH ROW INSERT INTO {DB}.audit VALUES (NEW.id)",
        ]
    )
    changed = snapshot(scratch_server, [*data["tables"], f"{DB}.audit"])
    limits = scans_counted(monkeypatch)
    with pytest.raises(RollbackError, match=rf"{DB}\.u"):
        execute_plan(data["plan"], scratch_server.dsn, commit=True, check_first=False)
    assert limits == [execute.HEAD_BYTES, None]
    assert snapshot(scratch_server, [*data["tables"], f"{DB}.audit"]) == changed
    assert scratch_server.query(f"SELECT COUNT(*) FROM {DB}.audit")[0][0] == 0


def test_a_table_with_a_trigger_takes_the_careful_path_and_its_refusal(scratch_server, tmp_path, monkeypatch):
    data = incident(scratch_server, tmp_path)
    scratch_server.run_sql(
        [f"CREATE TRIGGER {DB}.u_audit AFTER INSERT ON {DB}.u FOR EACH ROW SET @seen = 1"]
    )  # an INSERT trigger: the plan only UPDATEs sx.u, so the careful path runs it
    changed = snapshot(scratch_server, data["tables"])
    read = surveys_counted(monkeypatch)
    result = execute_plan(data["plan"], scratch_server.dsn, commit=True, check_first=False)
    assert read == [1] and result.committed and result.side_effects["triggers"] == []
    assert snapshot(scratch_server, data["tables"]) == data["before"] != changed


def test_a_dry_run_and_a_commit_with_its_dry_run_first_stream_too(scratch_server, tmp_path, monkeypatch):
    data = incident(scratch_server, tmp_path)
    steps = sum(1 for _ in open(data["plan"], encoding="utf-8"))
    after = snapshot(scratch_server, data["tables"])
    careful_path_forbidden(monkeypatch)
    seen: list[dict[str, Any]] = []

    def inspect(conn: Any) -> None:  # inside the dry run's transaction, before its rollback
        with conn.cursor() as cur:
            cur.execute(f"SELECT COUNT(*) FROM {DB}.t")
            seen.append({"rows": cur.fetchone()[0]})

    dry = execute_plan(data["plan"], scratch_server.dsn, inspect=inspect)
    assert dry.dry_run and not dry.committed and dry.rows_affected == steps
    assert seen == [{"rows": 2 * ROWS}]  # every deleted row back, in the transaction it rolled back
    assert snapshot(scratch_server, data["tables"]) == after
    heard = Heard()
    result = execute_plan(data["plan"], scratch_server.dsn, commit=True, observer=heard)
    assert result.committed and result.rows_affected == steps
    assert snapshot(scratch_server, data["tables"]) == data["before"]
    phases = [state.phase for state in heard.states]
    assert phases == sorted(phases, key=["check", "apply"].index) and set(phases) == {"check", "apply"}


def test_a_streamed_merge_restores_the_incident_and_keeps_a_later_change_of_another_column(
    scratch_server, tmp_path, monkeypatch
):
    """The merge apply (a --net plan, no resolutions) streams too: its batches are read and built as it
    runs, the merge objects of a batch read only where the batch needs them."""
    table = merge_table(scratch_server)
    rng = scratch_server.run_sql(
        [
            f"DELETE FROM {table} WHERE id % 2 = 0",
            f"UPDATE {table} SET a = a + 1, b = 'x' WHERE id % 3 = 0",
        ]
    )
    _, plan, _ = flashback(scratch_server, rng, tmp_path, net=True)
    steps = sum(1 for _ in open(plan, encoding="utf-8"))
    assert steps == ROWS + (ROWS + 1) // 3 and steps > 3 * execute.BATCH_STEPS
    # later: c of the rows the incident updated, which the merge must keep
    scratch_server.run_sql([f"UPDATE {table} SET c = -c WHERE id % 3 = 0"])
    careful_path_forbidden(monkeypatch)
    heard = Heard()
    result = execute_plan(plan, scratch_server.dsn, commit=True, merge=True, observer=heard)
    assert result.committed and not result.conflicts
    assert result.merge is not None and result.merge["restored"] == steps
    rows = scratch_server.query(f"SELECT id, a, b, c FROM {table} ORDER BY id")
    assert rows == [(n, n * 7, f"b{n}", -n if n % 3 == 0 and n % 2 else n) for n in range(1, 2 * ROWS + 1)]
    assert {state.statements_total for state in heard.states} == {steps}
    done = [state.statements_done for state in heard.states if state.phase == "apply"]
    assert done == sorted(done) and done[-1] == steps


def test_a_per_transaction_commit_streams_its_dry_run_and_each_commit(scratch_server, tmp_path, monkeypatch):
    """--per-transaction streams too: its dry run (one transaction) reads the plan as it runs, then the
    commit pass commits each original transaction as the stream reaches the next, never holding the
    plan whole."""
    data = incident(scratch_server, tmp_path)
    steps = sum(1 for _ in open(data["plan"], encoding="utf-8"))
    careful_path_forbidden(monkeypatch)
    heard = Heard()
    result = execute_plan(
        data["plan"], scratch_server.dsn, commit=True, single_transaction=False, observer=heard
    )
    assert result.committed and result.statements == result.rows_affected == steps
    assert snapshot(scratch_server, data["tables"]) == data["before"]
    # the incident's three transactions, newest first, each committed on its own
    assert len(result.transactions_applied) == 3
    committed = [state.committed for state in heard.states if state.committed is not None]
    assert committed == result.transactions_applied
    phases = [state.phase for state in heard.states]
    assert phases == sorted(phases, key=["check", "apply"].index) and set(phases) == {"check", "apply"}


def test_a_per_transaction_commit_that_reads_its_plan_otherwise_than_its_dry_run_names_what_stays(
    scratch_server, tmp_path, monkeypatch
):
    """The plan read differently by the commit pass than by its dry run a moment before (here: the
    commit pass's reader meets a table the preflight did not see in the second transaction): the
    first transaction stays committed, the error says so, and nothing runs again."""
    data = incident(scratch_server, tmp_path)
    read = execute.read_plan
    passes: list[int] = []

    def changed(path: Any, *args: Any, **kwargs: Any) -> Any:
        passes.append(1)
        first_tx, later = None, 0
        for step in read(path, *args, **kwargs):
            first_tx = first_tx or step["tx"]
            later += step["tx"] != first_tx
            if len(passes) == 2 and later == 2:  # the second step of the second transaction
                step = {**step, "table": f"{DB}.elsewhere"}
            yield step

    monkeypatch.setattr(execute, "read_plan", changed)
    careful_path_forbidden(monkeypatch)
    with pytest.raises(
        execute.ExecutionFailed, match=r"could no longer be read .*1 earlier transaction\(s\) stay"
    ):
        execute_plan(data["plan"], scratch_server.dsn, commit=True, single_transaction=False)
    assert passes == [1, 1]
    # the newest transaction (the UPDATE of sx.t) undone, the two before it not
    rows = dict(scratch_server.query(f"SELECT id, b FROM {DB}.t WHERE id IN (3, 6)"))
    assert rows == {3: "b3"}  # 6 was deleted: its re-insert was in the second transaction
    assert scratch_server.query(f"SELECT MIN(v) FROM {DB}.u") == [(-20,)]


def test_a_merge_with_resolutions_streams_after_checking_them_against_every_row(
    scratch_server, tmp_path, monkeypatch
):
    """A merge with resolutions streams too: the resolutions are checked against every row of the plan
    first, a chunk of rows at a time, then the plan is applied as it is read, its conflicts settled as
    the resolutions say. A resolution the check refuses has the careful path read the plan and refuse
    it, in the one line it always gave."""
    table = merge_table(scratch_server)
    rng = scratch_server.run_sql([f"UPDATE {table} SET a = a + 1, b = 'x' WHERE id % 3 = 0"])
    _, plan, _ = flashback(scratch_server, rng, tmp_path, net=True)
    steps = sum(1 for _ in open(plan, encoding="utf-8"))
    assert steps == 2 * ROWS // 3 and steps > 2 * execute.BATCH_STEPS
    # later: `a` itself on two rows the incident updated (conflicts), `c` on another (kept)
    scratch_server.run_sql(
        [
            f"UPDATE {table} SET a = -1 WHERE id IN (3, 3000)",
            f"UPDATE {table} SET c = -6 WHERE id = 6",
        ]
    )
    bad = parse_resolutions(
        {"rows": [{"table": table, "key": {"id": 3000}, "choice": "column", "columns": {"c": "take_before"}}]}
    )
    read = surveys_counted(monkeypatch)
    with pytest.raises(ResolutionsError, match=r"rows\[0\]: column 'c' of .* is not one the range changed"):
        execute_plan(plan, scratch_server.dsn, commit=True, merge=True, resolutions=bad)
    assert read == [1]  # the careful path read the plan, and refused
    monkeypatch.undo()
    careful_path_forbidden(monkeypatch)
    resolved = parse_resolutions(
        {
            "rows": [{"table": table, "key": {"id": 3000}, "choice": "keep_now"}],
            "default": "take_before",
        }
    )
    result = execute_plan(plan, scratch_server.dsn, commit=True, merge=True, resolutions=resolved)
    assert result.committed
    assert sorted((c["key"]["id"], c["resolution"]) for c in result.conflicts) == [
        (3, "take_before"),
        (3000, "keep_now"),
    ]
    rows = scratch_server.query(f"SELECT id, a, b, c FROM {table} ORDER BY id")
    expected = [(n, n * 7, f"b{n}", -6 if n == 6 else n) for n in range(1, 2 * ROWS + 1)]
    expected[3000 - 1] = (3000, -1, "x", 3000)  # kept as it is now
    assert rows == expected
