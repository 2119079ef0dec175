"""Undo one session's transactions, proven with checksums on a real binlog of two interleaved sessions.

MySQL 8.0.31's binlog.000693 (rust-us/mysql-cdc-rs, vendored in tests/corpus) holds 523 row transactions of
threads 10 and 11, interleaved. MariaDB 10.11 (the scratch server) writes no thread id for row
transactions, so the proof replays that real file into it with `mariadb-binlog FILE | mariadb`:

- the file's UPDATEs change rows that existed before it (in binlog files the corpus lacks); each such
  row is seeded as the binlog's first change of it saw it (its full before image), after the file's
  own CREATE TABLE statements;
- state A: the whole file replayed, then our `--thread-id 10` rollback applied with the mariadb client;
- state B: the same start, with only thread 11's transactions replayed, cut by mariadb-binlog
  --start-position/--stop-position at the transaction bounds mariadb-binlog itself prints (a second
  implementation's reading of the thread ids);
- A and B agree, table by table and row by row, everywhere except the rows thread 10 changed and
  thread 11 changed again later: undoing thread 10 there cannot equal never having run it, and the job
  reports exactly those rows as dependent."""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter

import pytest

from rollback import Filters, Options, RangeSpec, ServerSchema, generate
from rollback.binlog.constants import EventType
from rollback.binlog.decode import DECODERS
from rollback.binlog.reader import BinlogFile, iter_events
from tests.support.restore import apply_with_client, client_command

FILE = "rust-us__mysql-cdc-rs/tests/events/8.0/folder/binlog.000693"
DB = "hdb_meta"
_AT = re.compile(r"^# at (\d+)$")
_HEAD = re.compile(r"^#\d{6} .*\t(Ignorable|Query|Xid)(?:\tthread_id=(\d+))?")


def _transactions(text: str) -> list[tuple[int, int, int]]:
    """(thread id, start, stop) of each row transaction as mariadb-binlog prints it: from the
    ANONYMOUS_GTID before its BEGIN to the end of its XID event."""
    found, at, start, thread, pending_xid = [], 0, None, None, False
    for line in text.splitlines():
        if m := _AT.match(line):
            at = int(m.group(1))
            if pending_xid:
                found.append((thread, start, at))
                start = thread = None
                pending_xid = False
        elif m := _HEAD.match(line):
            kind = m.group(1)
            if kind == "Ignorable":
                start, thread = at, None
            elif kind == "Query" and start is not None and thread is None:
                thread = int(m.group(2))
            elif kind == "Xid" and start is not None and thread is not None:
                pending_xid = True
    return [t for t in found if t[0] is not None]


def _literal(conn, value) -> str:
    if isinstance(value, dict) and "hex" in value:
        return f"X'{value['hex']}'"
    return conn.escape(value)


def _seed_rows(records: list[dict]) -> list[tuple[str, list]]:
    """The rows as the binlog's first change of each found them: replaying the images in order,
    every before image not there yet existed before the file."""
    state: dict[str, Counter] = {}
    seed = []
    for r in records:
        rows = state.setdefault(r["table"], Counter())
        before = json.dumps(r["before"], sort_keys=True) if r.get("before") else None
        if before is not None:
            if rows[before] == 0:
                seed.append((r["table"], [r["before"][f"@{i + 1}"] for i in range(len(r["before"]))]))
                rows[before] += 1
            rows[before] -= 1
        if r.get("after"):
            rows[json.dumps(r["after"], sort_keys=True)] += 1
    return seed


def _start(server, ddl: list[str], seed: list[tuple[str, list]]) -> None:
    server.run_sql([f"DROP DATABASE IF EXISTS {DB}", f"CREATE DATABASE {DB}"])
    server.run_sql(ddl, database=DB)
    conn = server.connect(DB)
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0, time_zone = '+00:00'")
            for table, values in seed:
                cur.execute(f"INSERT INTO `{table}` VALUES ({', '.join(_literal(conn, v) for v in values)})")
        conn.commit()
    finally:
        conn.close()


def _replay(server, text: bytes) -> None:
    done = subprocess.run([*client_command(server), DB], input=text, capture_output=True)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-600:]


def _key_text(columns: list[str], key: tuple) -> str:
    return ", ".join(
        f"{c}={v!r}" if isinstance(v, str) else f"{c}={v}" for c, v in zip(columns, key, strict=True)
    )


def _checksums(server, tables: list[str]) -> dict[str, int]:
    return {t: server.query(f"CHECKSUM TABLE `{DB}`.`{t}` EXTENDED")[0][1] for t in tables}


def _primary_keys(server, tables: list[str]) -> dict[str, list[str]]:
    return {
        table: [
            r[0]
            for r in server.query(
                "SELECT COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s AND "
                "TABLE_NAME = %s AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX",
                (DB, table),
            )
        ]
        for table in tables
    }


def _rows(server, keys: dict[str, list[str]]) -> dict[str, dict[tuple, tuple]]:
    """Per table: its rows by primary key."""
    out = {}
    for table, key in keys.items():
        columns = [
            r[0]
            for r in server.query(
                "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
                "ORDER BY ORDINAL_POSITION",
                (DB, table),
            )
        ]
        at = [columns.index(k) for k in key]
        out[table] = {
            tuple(row[i] for i in at): row for row in server.query(f"SELECT * FROM `{DB}`.`{table}`")
        }
    return out


@pytest.mark.corpus
def test_undoing_one_threads_transactions_equals_replaying_only_the_others(
    scratch_server, corpus_dir, tmp_path
):
    path = corpus_dir / FILE
    ddl = []
    with BinlogFile(path) as binlog:
        for raw in iter_events(binlog.buf, binlog.facts, 4, binlog.size, binlog.path, verify=True):
            if raw.type_code == EventType.QUERY:
                query = DECODERS[raw.type_code](raw, binlog.facts)
                if query.sql.upper().startswith("CREATE TABLE"):
                    ddl.append(query.sql)
    changes = tmp_path / "all.jsonl"
    generate(
        RangeSpec(files=[str(path)]),
        Filters(),
        Options(mode="changes", engine="local"),
        tmp_path / "c.sql",
        None,
        changes,
    )
    records = [json.loads(line) for line in changes.read_text().splitlines()]
    seed = _seed_rows(records)
    tables = sorted({r["table"] for r in records})
    printed = subprocess.run(
        ["mariadb-binlog", "--no-defaults", str(path)], capture_output=True, check=True
    ).stdout
    transactions = _transactions(printed.decode(errors="replace"))
    per_thread = Counter(t for t, _s, _e in transactions)
    assert set(per_thread) == {10, 11} and min(per_thread.values()) > 200, per_thread

    # A: everything, then our rollback of thread 10
    _start(scratch_server, ddl, seed)
    _replay(scratch_server, printed)
    keys = _primary_keys(scratch_server, tables)
    assert all(keys.values())
    replayed = _rows(scratch_server, keys)
    script = tmp_path / "undo-10.sql"
    report = generate(
        RangeSpec(files=[str(path)]),
        Filters(thread_id=10),
        Options(engine="local", schema=ServerSchema(scratch_server.connect), trust_schema=True),
        script,
    )
    # the range notes (rollback/job/range_notes.py) on these bytes: both connections, with their transactions
    both = generate(
        RangeSpec(files=[str(path)]),
        Filters(),
        Options(engine="local", schema=ServerSchema(scratch_server.connect), trust_schema=True),
        tmp_path / "undo-all.sql",
    )
    listed = ", ".join(f"{t} ({n} transaction(s))" for t, n in per_thread.most_common())
    assert f"the range holds transactions of 2 connections, thread ids {listed}:" in both.range_notes[-1]
    assert not any("connections" in note for note in report.range_notes)  # --thread-id narrowed it
    apply_with_client(scratch_server, script)
    undone = _rows(scratch_server, keys)
    checksums_undone = _checksums(scratch_server, tables)

    # B: only thread 11's transactions, cut by mariadb-binlog at its own transaction bounds
    _start(scratch_server, ddl, seed)
    others = b"".join(
        subprocess.run(
            [
                "mariadb-binlog",
                "--no-defaults",
                f"--start-position={start}",
                f"--stop-position={stop}",
                str(path),
            ],
            capture_output=True,
            check=True,
        ).stdout
        for thread, start, stop in transactions
        if thread == 11
    )
    _replay(scratch_server, others)
    never = _rows(scratch_server, keys)

    # A and B differ only at rows the job reported as dependent (thread 10 changed them, thread 11
    # changed them again later), and those are few: everything else is exactly as if thread 10 never ran.
    dependent = {(d["table"].split(".", 1)[1], d["key"]) for d in report.dependencies or []}
    assert report.dependency_count == len(dependent) > 0
    differing = {
        (table, _key_text(keys[table], key))
        for table in tables
        for key in undone[table].keys() | never[table].keys()
        if undone[table].get(key) != never[table].get(key)
    }
    assert differing == dependent, (sorted(differing - dependent)[:3], sorted(dependent - differing)[:3])
    assert sum(1 for t in tables for k in replayed[t] if replayed[t][k] != undone[t].get(k)) > 50
    clean = [t for t in tables if t not in {d[0] for d in dependent}]
    # CHECKSUM TABLE of every table without a dependent row: the same in A and B
    assert clean and {t: checksums_undone[t] for t in clean} == _checksums(scratch_server, clean)
