"""Every command of README.md and docs/**/*.md runs, as written, against the scratch MariaDB.

Each document's commands run in document order in one bash session (tests/support/doccommands.py:
how commands are found, the placeholders, the example values, the few rewrites and the list of what
is not run, with reasons). Before them, `shop.orders` holds 20 orders and the incident has happened
(`DELETE FROM shop.orders WHERE status = 'open'`, in its own binlog file), except where a document
records the tables first and its deploy runs later (DEPLOY_AFTER). Every command must exit 0 (a
document that expects otherwise says so in its own text: none does today), and the tutorials' ends
are checked on the server: the deleted orders are back.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys
from pathlib import Path

import pytest

from tests.support import REPO
from tests.support.app import ADMIN, OPERATOR, TOKENS
from tests.support.doccommands import (
    DEPLOY_AFTER,
    EXPECT,
    NO_INCIDENT_FIRST,
    Shell,
    commands_of,
    documents,
    fill,
    not_runnable,
    rewrite,
)

ORDERS = (
    "CREATE TABLE shop.orders (id INT PRIMARY KEY, customer VARCHAR(40), status ENUM('open','shipped'), "
    "amount DECIMAL(10,2))"
)
INCIDENT = "DELETE FROM shop.orders WHERE status = 'open'"
# The legitimate-change trap: orders deleted on purpose just before and just after the incident, in the
# same binlog file. A document in TRAPPED must bound its range to the incident: both stay deleted.
LEGITIMATE_BEFORE = "DELETE FROM shop.orders WHERE id = 20"
LEGITIMATE_AFTER = "DELETE FROM shop.orders WHERE id = 18"
# (A document that records the tables first has the change before only: one after the deploy would
# rightly make its table differ from the record.)
TRAPPED = {"docs/tutorial-cli.md", "docs/tutorial-ci.md", "docs/tutorial-rest.md"}
DEPLOY = "UPDATE shop.orders SET amount = amount * 2 WHERE id % 3 = 0"
# What each tutorial and README's quick start must leave on the server (the other docs' examples only
# generate and verify).
RESTORES_THE_ORDERS = {"README.md", "docs/tutorial-cli.md", "docs/tutorial-rest.md", "docs/tutorial-merge.md"}
# The incident found late (docs/tutorial-merge.md): a cleanup script's one transaction, then the
# application's later writes: another column of order 1 (kept by the merge), the column the incident
# changed on order 3 (a conflict: its amount kept, its status restored), the re-taken key of order 20
# (a conflict: the new order kept).
LATE = {"docs/tutorial-merge.md"}
CLEANUP = [
    "BEGIN",
    "UPDATE shop.orders SET status = 'shipped', amount = 0 WHERE status = 'open'",
    "DELETE FROM shop.orders WHERE id >= 19",
    "COMMIT",
]
SINCE = [
    "UPDATE shop.orders SET customer = 'customer 1 (moved)' WHERE id = 1",
    "UPDATE shop.orders SET amount = 3.50 WHERE id = 3",
    "INSERT INTO shop.orders VALUES (20, 'customer 21', 'open', 21.25)",
]
# a document whose every command another test runs as written (its NOT_RUNNABLE reason names it)
DOCS = [
    p.relative_to(REPO).as_posix() for p in documents() if any(not not_runnable(c) for c in commands_of(p))
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _link_binlogs(server, work: Path) -> None:
    """The README's commands name binlog files as they sit in the current directory: link them there."""
    for path in server.binlog_files():
        if not (work / path.name).exists():
            (work / path.name).symlink_to(path)


def _orders(server) -> list[tuple]:
    return server.query("SELECT * FROM shop.orders ORDER BY id")


@pytest.mark.parametrize("doc", DOCS)
def test_every_command_of_the_document_runs(doc, scratch_server, tmp_path):
    scratch_server.run_sql(
        ["DROP DATABASE IF EXISTS shop", "CREATE DATABASE shop", ORDERS]
        + [
            f"INSERT INTO shop.orders VALUES ({i}, 'customer {i}', '{'open' if i % 2 else 'shipped'}', {i}.25)"
            for i in range(1, 21)
        ]
    )
    before = _orders(scratch_server)
    deploys = [text for d, text in DEPLOY_AFTER if d == doc]
    if doc in NO_INCIDENT_FIRST:  # the tables are recorded first; BINLOG is the current file, the deploy's
        scratch_server.flush_binary_logs()
        if doc in TRAPPED:  # the file already holds a change the rollback must leave alone
            scratch_server.run_sql(LEGITIMATE_BEFORE)
        binlog, stop = scratch_server.binlog_position()[:2]
    elif doc in LATE:
        done = scratch_server.run_sql(CLEANUP, own_file=True)
        binlog, stop = done.start_file, done.stop_position
        scratch_server.run_sql(SINCE)
        late = {row[0]: row for row in _orders(scratch_server)}
        # what must be there at the end: the orders as before the incident, but for the later writes
        # order 1 with its new customer, order 3 with its status back and its hand-fixed amount, the new 20
        before = [late[1][:2] + row[2:] if row[0] == 1 else row for row in before]
        before = [
            row[:3] + late[3][3:] if row[0] == 3 else late[20] if row[0] == 20 else row for row in before
        ]
    elif doc in TRAPPED:
        scratch_server.flush_binary_logs()
        first = scratch_server.run_sql(LEGITIMATE_BEFORE)
        done = scratch_server.run_sql(INCIDENT)
        scratch_server.run_sql(LEGITIMATE_AFTER)
        assert first.start_file == done.stop_file  # one file holds all three
        binlog, stop = done.start_file, done.stop_position
        before = [row for row in before if row[0] not in (18, 20)]  # what must be there at the end
        assert len(_orders(scratch_server)) == 8
    else:
        done = scratch_server.run_sql(INCIDENT, own_file=True)
        binlog, stop = done.start_file, done.stop_position
        assert len(_orders(scratch_server)) == 10
    port = _free_port()
    values = {
        "DSN": scratch_server.dsn,
        "SCRATCH_DSN": scratch_server.dsn,
        "DSN_WITHOUT_PASSWORD": f"mysql://{scratch_server.user}@{scratch_server.host}:{scratch_server.port}/",
        "PASSWORD_ASSIGNMENT": f"MYSQL_ROLLBACK_PASSWORD_PROD1={shlex.quote(scratch_server.password)}",
        "TOKENS_QUOTED": shlex.quote(TOKENS),
        "SERVICE": f"http://127.0.0.1:{port}",
        "BINLOG": binlog,
        "STOP": str(stop),
        "POSITION": str(stop),
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYSQL_ROLLBACK_")}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PORT=str(port),
        REPO=str(REPO),
        TOKEN=OPERATOR,
        ADMIN_TOKEN=ADMIN,
        MYSQL_ROLLBACK_DATA_DIR=str(tmp_path / "data"),
        MYSQL_ROLLBACK_SERVERS=json.dumps({"prod1": scratch_server.dsn}),
        MYSQL_ROLLBACK_API_TOKENS=TOKENS,
        # Ranges to the end of the log span several files: on Spark each command would start a JVM
        # (tests/spark holds both engines to the same bytes); the commands are what is tested here.
        MYSQL_ROLLBACK_ENGINE="local",
        **{k: v for k, v in values.items() if k in ("DSN", "SCRATCH_DSN", "SERVICE", "BINLOG", "POSITION")},
    )
    commands = commands_of(REPO / doc)
    work = tmp_path / "work"
    work.mkdir()
    _link_binlogs(scratch_server, work)
    shell = Shell(work, env)
    try:
        uses_service = any("$SERVICE" in c.text or "127.0.0.1:8080" in c.text for c in commands)
        starts_service = any(rewrite(c.text) != c.text and "serve" in c.text for c in commands)
        if uses_service and not starts_service:  # a document that assumes a running service
            status, out = shell.run(rewrite("mysql-rollback serve"))
            assert status == 0, out
        ran = 0
        for command in commands:
            if not_runnable(command):
                continue
            status, out = shell.run(fill(rewrite(command.text), values))
            assert status == 0, f"{command}\nexit {status}:\n{out}"
            for d, text, wanted in EXPECT:
                if d == doc and text in command.text:
                    assert wanted in out, f"{command}\nthe output lacks {wanted!r}:\n{out}"
            ran += 1
            if any(text in command.text for text in deploys):
                if doc in TRAPPED:  # the deploy writes into the file that holds the earlier change
                    scratch_server.run_sql(DEPLOY)
                else:
                    done = scratch_server.run_sql(DEPLOY, own_file=True)
                    values.update(BINLOG=done.start_file, STOP=str(done.stop_position))
                    shell.export(BINLOG=done.start_file)
                _link_binlogs(scratch_server, work)
        assert ran, f"{doc}: no command ran"
    finally:
        shell.close()
    if doc in RESTORES_THE_ORDERS:
        assert _orders(scratch_server) == before
