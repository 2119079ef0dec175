"""The verified apply over several connections (rollback/target/parallel.py), all or nothing through XA:
it restores what the one-connection apply restores, a conflict in one partition applies nothing in
any, and a process killed between prepare and commit leaves a record that names what is prepared,
which `mysql-rollback xa-recover` finishes (commit or roll back) as the record says."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rollback.base.errors import ConflictError
from rollback.target import parallel as parallel_apply
from rollback.target.execute import ExecutionObserver, ExecutionProgress, ExecutionRefused, execute_plan
from rollback.target.parallel import PAUSE_AT, XID_PREFIX, execute_parallel, prepared_xids
from tests.support import REPO
from tests.support.restore import flashback, range_args, run_cli, snapshot

DB = "px"
ROWS = 2000
TABLES = [f"{DB}.t", f"{DB}.u", f"{DB}.parent", f"{DB}.child"]


@pytest.fixture
def incident(scratch_server, tmp_path) -> Iterator[dict[str, Any]]:
    """The issue's incident on a keyed table (DELETE half, UPDATE a third, one row's key moved), on a
    table with a second unique key, and on two tables tied by a foreign key."""
    s = scratch_server
    s.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, a INT, b VARCHAR(64), c DATETIME(3), "
            "d DECIMAL(12,2), KEY (a))",
            f"INSERT INTO {DB}.t SELECT seq, seq, CONCAT('b', seq), '2024-01-02 03:04:05.678', seq / 7 "
            f"FROM {DB}.seq_1_to_{ROWS}",
            f"CREATE TABLE {DB}.u (id INT PRIMARY KEY, u INT NOT NULL, UNIQUE KEY (u))",
            f"INSERT INTO {DB}.u SELECT seq, seq FROM {DB}.seq_1_to_50",
            f"CREATE TABLE {DB}.parent (id INT PRIMARY KEY, v INT)",
            f"CREATE TABLE {DB}.child (id INT PRIMARY KEY, parent INT, FOREIGN KEY (parent) REFERENCES "
            f"{DB}.parent (id))",
            f"INSERT INTO {DB}.parent SELECT seq, seq FROM {DB}.seq_1_to_20",
            f"INSERT INTO {DB}.child SELECT seq, seq FROM {DB}.seq_1_to_20",
        ]
    )
    before = snapshot(s, TABLES)
    rng = s.run_sql(
        [
            f"DELETE FROM {DB}.t WHERE id % 2 = 0",
            f"UPDATE {DB}.t SET a = a + 1, b = 'x' WHERE id % 3 = 0",
            f"UPDATE {DB}.t SET id = {ROWS + 5} WHERE id = 9",  # a key that moves
            f"INSERT INTO {DB}.t VALUES (9, 0, 'new', NULL, NULL)",  # and a new row in its place
            f"UPDATE {DB}.u SET u = u + 100 WHERE id <= 10",
            f"DELETE FROM {DB}.child WHERE id > 10",
            f"UPDATE {DB}.parent SET v = -v",
        ]
    )
    after = snapshot(s, TABLES)
    _, plan, _ = flashback(s, rng, tmp_path)
    yield {"plan": plan, "range": rng, "before": before, "after": after}
    _forget_prepared(s)


def _forget_prepared(server: Any) -> None:
    """Roll back what a failed test left prepared: its locks would stop every later test."""
    conn = server.connect(autocommit=True)
    try:
        with conn.cursor() as cur:
            for gtrid, branches in prepared_xids(conn).items():
                for bqual in branches:
                    cur.execute(f"XA ROLLBACK '{gtrid}', '{bqual}'")
    finally:
        conn.close()


class Records(ExecutionObserver):
    def __init__(self) -> None:
        self.xa: list[dict[str, Any]] = []

    def progress(self, state: ExecutionProgress) -> None:
        if state.xa is not None:
            self.xa.append(state.xa)


def _prepared(server: Any) -> dict[str, list[str]]:
    conn = server.connect()
    try:
        return prepared_xids(conn)
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("parallel", "split"),
    [(1, None), (2, "streamed"), (4, "streamed"), (2, "read whole"), (4, "read whole")],
    ids=["one-connection", "2-streamed", "4-streamed", "2-read-whole", "4-read-whole"],
)
def test_parallel_commit_restores_what_one_connection_restores(
    scratch_server, incident, tmp_path, parallel, split, monkeypatch
):
    """Every form restores the state before the incident, checksums included (snapshot: CHECKSUM TABLE
    EXTENDED and every row), so each restores what the one-connection apply (parallel=1) restores.
    "streamed": no branch holds the plan (each streams its partition's lines); "read whole": the split
    of the plan read first, which a plan whose tables have triggers or cascades takes."""
    if parallel == 1:
        result = execute_plan(incident["plan"], scratch_server.dsn, commit=True)
        assert result.committed and snapshot(scratch_server, TABLES) == incident["before"]
        return
    if split == "streamed":

        def whole(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("the plan was read whole")

        monkeypatch.setattr(parallel_apply, "read_plan", whole)
    else:
        monkeypatch.setattr(parallel_apply, "_stream_preflight", lambda *args: None)
    seen = Records()
    dry = execute_parallel(incident["plan"], scratch_server.dsn, parallel, observer=seen)
    assert not dry.committed and dry.conflicts == [] and dry.rows_affected > ROWS / 2
    assert snapshot(scratch_server, TABLES) == incident["after"]
    assert seen.xa == []  # a dry run prepares nothing: its branches roll back after their last statement
    result = execute_parallel(
        incident["plan"], scratch_server.dsn, parallel, commit=True, observer=seen, record_dir=tmp_path
    )
    assert result.committed and result.rows_affected == dry.rows_affected
    assert snapshot(scratch_server, TABLES) == incident["before"]
    # the record: written before the first XA PREPARE, then the decision; every partition has steps
    assert [r["decision"] for r in seen.xa] == ["none", "commit", "commit"]
    parts = seen.xa[0]["partitions"]
    assert len(parts) == parallel and all(p["steps"] > 0 for p in parts)
    assert sum(p["steps"] for p in parts) == sum(1 for line in open(incident["plan"]) if line.strip())
    # a table with another unique key and tables tied by a foreign key each stay on one partition
    for table in (f"{DB}.u", f"{DB}.parent", f"{DB}.child"):
        assert sum(table in p["tables"] for p in parts) == 1, parts
    assert [f"{DB}.child" in p["tables"] for p in parts] == [f"{DB}.parent" in p["tables"] for p in parts]
    assert sum(f"{DB}.t" in p["tables"] for p in parts) >= 2  # the keyed table is split
    assert list(tmp_path.glob(f"{XID_PREFIX}*.json")) == [] and _prepared(scratch_server) == {}


class OneAtATime(ExecutionObserver):
    """An observer that takes its time, as the service's does (a record written to its database), and
    counts the calls made while another was still running."""

    def __init__(self) -> None:
        self.running = 0
        self.overlaps = 0
        self.xa: list[dict[str, Any]] = []

    def progress(self, state: ExecutionProgress) -> None:
        self.running += 1
        if self.running > 1:
            self.overlaps += 1
        time.sleep(0.005)
        if state.xa is not None:
            self.xa.append(state.xa)
        self.running -= 1


def test_the_observer_is_told_one_call_at_a_time(scratch_server, incident, tmp_path):
    """The partitions' progress and the XA record come from several threads; an observer told two at once
    may write an older record after a newer one (the service's record lost its XA record that way)."""
    seen = OneAtATime()
    result = execute_parallel(
        incident["plan"], scratch_server.dsn, 4, commit=True, observer=seen, record_dir=tmp_path
    )
    assert result.committed
    assert [r["decision"] for r in seen.xa] == ["none", "commit", "commit"]
    assert seen.overlaps == 0


def test_a_conflict_in_one_partition_applies_nothing_anywhere(scratch_server, incident, tmp_path):
    scratch_server.run_sql([f"UPDATE {DB}.t SET b = 'later' WHERE id = 1995"])  # a row the plan restores
    changed = snapshot(scratch_server, TABLES)
    with pytest.raises(ConflictError, match=rf"conflict at mysql-bin\.\d+:\d+ \({DB}\.t, .*changed since"):
        execute_parallel(incident["plan"], scratch_server.dsn, 3, commit=True, record_dir=tmp_path)
    assert snapshot(scratch_server, TABLES) == changed
    assert _prepared(scratch_server) == {} and list(tmp_path.glob("*.json")) == []


def test_parallel_refuses_triggers_in_one_line(scratch_server, incident):
    scratch_server.run_sql(
        [f"CREATE TRIGGER {DB}.tr BEFORE UPDATE ON {DB}.parent FOR EACH ROW SET NEW.v = NEW.v"]
    )
    with pytest.raises(ExecutionRefused, match="fire triggers .*without --parallel") as refused:
        execute_parallel(incident["plan"], scratch_server.dsn, 2, commit=True)
    assert "\n" not in str(refused.value)
    assert snapshot(scratch_server, TABLES) == incident["after"]


def _killed_between_prepare_and_commit(
    server: Any, incident: dict[str, Any], records: Path, point: str
) -> dict[str, Any]:
    """`flashback --execute --commit --parallel 2` paused at `point` by the test hook, then SIGKILLed;
    the record it left."""
    env = {**os.environ, PAUSE_AT: point, "MYSQL_ROLLBACK_DATA_DIR": str(records.parent)}
    args = [*range_args(incident["range"]), "--schema-dsn", server.dsn, "-o", os.devnull]
    args += ["--execute", "--target", server.dsn, "--commit", "--parallel", "2"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rollback.cli.commands", "flashback", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        wanted = "commit" if point == "prepared" else "none"
        while True:
            found = list(records.glob(f"{XID_PREFIX}*.json"))
            record = json.loads(found[0].read_text()) if found else None
            if (
                record
                and record["decision"] == wanted
                and len(_prepared(server).get(record["gtrid"], [])) == 2
            ):
                break
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the apply never reached the pause"
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    return record


@pytest.mark.parametrize("point", ["prepared", "preparing"], ids=["decided", "not-decided"])
def test_a_parallel_apply_killed_between_prepare_and_commit_is_finished_by_its_record(
    scratch_server, incident, tmp_path, point
):
    records = tmp_path / "data" / "xa"
    record = _killed_between_prepare_and_commit(scratch_server, incident, records, point)
    # the record names what is prepared: the transaction, the target, the plan, every partition
    assert record["gtrid"].startswith(XID_PREFIX) and record["target"].endswith(f":{scratch_server.port}/")
    assert [p["bqual"] for p in record["partitions"]] == ["p0", "p1"] and len(record["plan"]) == 64
    # MariaDB keeps the branches prepared after their client died; nothing of them is visible yet
    assert _prepared(scratch_server) == {record["gtrid"]: ["p0", "p1"]}
    assert snapshot(scratch_server, TABLES) == incident["after"]
    # the next parallel apply on that target refuses, naming the way out
    with pytest.raises(ExecutionRefused, match=f"prepared branch.*{record['gtrid']}.*xa-recover"):
        execute_parallel(incident["plan"], scratch_server.dsn, 2, commit=True)
    done = run_cli("xa-recover", "--target", scratch_server.dsn, "--records", str(records))
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and record["gtrid"] in lines[0]
    if point == "prepared":
        assert "committed 2 prepared branch(es) p0, p1 of 2" in lines[0]
        assert snapshot(scratch_server, TABLES) == incident["before"]
    else:
        assert (
            "rolled back 2 prepared branch(es) p0, p1 of 2" in lines[0]
            and "nothing of it is applied" in lines[0]
        )
        assert snapshot(scratch_server, TABLES) == incident["after"]
    assert _prepared(scratch_server) == {} and list(records.glob("*.json")) == []
    again = run_cli("xa-recover", "--target", scratch_server.dsn, "--records", str(records))
    assert again.returncode == 0 and "holds no prepared transaction" in again.stderr
