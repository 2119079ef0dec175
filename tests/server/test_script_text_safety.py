"""Nothing but the generated statements runs when the plain `mariadb` client runs a script.

Database, table and column names (from the binlog's TABLE_MAP), binlog file names (from the user),
the server version (FORMAT_DESCRIPTION), original statements (ANNOTATE_ROWS, NUL bytes included),
warnings and irreversible-change notes all reach comment lines; filter values reach the `-- filters:`
line. Each hostile string below would run a statement (or a client command) if it escaped its line.
The proof: the server's general log holds exactly the script's statements, the sentinel database is
intact, no client shell command ran, and the changed tables are restored.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from rollback import Filters, Options, RangeSpec, generate
from rollback.base.render_text import comment_line
from rollback.schema.tables import ServerSchema
from tests.support.restore import client_command, snapshot

SENTINEL = "sentinel_db"
ATTACK = f"DROP DATABASE {SENTINEL};"
MARK = f"INSERT INTO {SENTINEL}.t VALUES (666);"

DATABASE = f"hx\n{ATTACK}\nx"
TABLES = {
    "t1": f"t\n{MARK}\nx",
    "t2": "u\n\\! touch pwned\nDELIMITER ;;\nv",
    "t3": 'w */ it\'s \\ "q" \r\u2028\u0085\u202e end',
}
COLUMN = f"c\n{ATTACK}\nx"
MEMBER = f"x\\'); {ATTACK} --"  # an ENUM member: a backslash before the quote ends a naive string literal
PLAIN_DB = "plain_db"
PLAIN_TABLE = 'w */ it\'s \\ "q" end'  # no control character: a valid filter value
FILE_NAME = f"bin\\ it's \u2028\r\n{ATTACK}\n.000001"
SERVER_VERSION = f"10.11.19-MariaDB\n{ATTACK}"
QUERY_TAIL = f"'x\x00\n{ATTACK}\x00' <> ''"  # a NUL byte and a line break in the original statement


def q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def table(db: str, name: str) -> str:
    return f"{q(db)}.{q(name)}"


def _with_server_version(data: bytes, version: str) -> bytes:
    """The binlog with another server version in its FORMAT_DESCRIPTION (and that event's CRC32 redone)."""
    out = bytearray(data)
    length = struct.unpack_from("<I", out, 4 + 9)[0]
    field = version.encode().ljust(50, b"\0")
    assert len(field) == 50
    out[4 + 19 + 2 : 4 + 19 + 52] = field
    event = bytearray(out[4 : 4 + length - 4])
    struct.pack_into("<H", event, 17, struct.unpack_from("<H", event, 17)[0] & ~1)  # not "in use"
    struct.pack_into("<I", out, 4 + length - 4, zlib.crc32(event))
    return bytes(out)


def _statements_logged(server, script: Path, cwd: Path) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run `mariadb < script` with the general log on: (the client's result, the statements it sent)."""
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID()")
            me = cur.fetchone()[0]
            cur.execute("SET GLOBAL log_output = 'TABLE'")
            cur.execute("TRUNCATE mysql.general_log")
            cur.execute("SET GLOBAL general_log = 1")
            try:
                with open(script, "rb") as f:
                    done = subprocess.run(client_command(server), stdin=f, capture_output=True, cwd=cwd)
            finally:
                cur.execute("SET GLOBAL general_log = 0")
                cur.execute("SET GLOBAL log_output = 'FILE'")
            cur.execute(
                "SELECT argument FROM mysql.general_log WHERE command_type = 'Query' AND thread_id <> %s "
                "ORDER BY event_time, thread_id",
                (me,),
            )
            logged = [bytes(r[0]).decode() if isinstance(r[0], bytes) else r[0] for r in cur.fetchall()]
            cur.execute("TRUNCATE mysql.general_log")
    finally:
        conn.close()
    return done, logged


def _planned(plan: Path) -> list[str]:
    """The statements a script of this plan holds, in order: its prelude, then BEGIN, statements, COMMIT."""
    out = ["SET NAMES utf8mb4", "SET time_zone = '+00:00'", "SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO'"]
    current = None
    for line in plan.read_bytes().decode().split("\n")[:-1]:  # JSON lines: U+2028 and U+0085 stay raw
        step = json.loads(line)
        if step["tx"] != current:
            if current is not None:
                out.append("COMMIT")
            out.append("BEGIN")
            current = step["tx"]
        out.append(step["sql"].removesuffix(";"))
    if current is not None:
        out.append("COMMIT")
    return out


@pytest.fixture
def hostile(scratch_server):
    server = scratch_server
    member = "'" + MEMBER.replace("\\", "\\\\").replace("'", "''") + "'"
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {SENTINEL}",
            f"CREATE DATABASE {SENTINEL}",
            f"CREATE TABLE {SENTINEL}.t (x INT)",
            f"INSERT INTO {SENTINEL}.t VALUES (1)",
            f"DROP DATABASE IF EXISTS {q(DATABASE)}",
            f"CREATE DATABASE {q(DATABASE)}",
            f"DROP DATABASE IF EXISTS {PLAIN_DB}",
            f"CREATE DATABASE {PLAIN_DB}",
        ]
        + [
            f"CREATE TABLE {table(db, name)} (id INT PRIMARY KEY, {q(COLUMN)} INT, e ENUM('ok', {member}))"
            for db, name in [*((DATABASE, n) for n in TABLES.values()), (PLAIN_DB, PLAIN_TABLE)]
        ]
        + [
            f"INSERT INTO {table(db, name)} VALUES (1, 10, 'ok'), (2, 20, {member}), (3, 30, {member})"
            for db, name in [*((DATABASE, n) for n in TABLES.values()), (PLAIN_DB, PLAIN_TABLE)]
        ]
    )
    return server


def test_hostile_names_files_and_queries_reach_only_comment_lines(hostile, tmp_path):
    server = hostile
    t1, t2, t3 = (table(DATABASE, TABLES[k]) for k in ("t1", "t2", "t3"))
    plain = table(PLAIN_DB, PLAIN_TABLE)
    watched = [t1, t2, t3, plain, f"{SENTINEL}.t"]
    before = snapshot(server, watched)
    col = q(COLUMN)
    rng = server.run_sql(
        [
            "BEGIN",
            f"UPDATE {t1} SET {col} = {col} + 1 WHERE {QUERY_TAIL}",
            f"INSERT INTO {t2} VALUES (4, 40, 'ok')",
            "COMMIT",
            f"DELETE FROM {t3} WHERE id = 2",
            f"UPDATE {plain} SET {col} = 0 WHERE id = 3",
        ],
        own_file=True,
    )
    # A renamed copy alone proves nothing about DDL after it: the schema is trusted (test_schema_safety
    # covers that check).
    hostile_file = tmp_path / FILE_NAME
    hostile_file.write_bytes(_with_server_version(rng.files[0].read_bytes(), SERVER_VERSION))
    script, plan = tmp_path / "r.sql", tmp_path / "r.plan.jsonl"
    report = generate(
        RangeSpec([str(hostile_file)], rng.start_position, rng.stop_position),
        Filters(),
        Options(engine="local", schema=ServerSchema(server.connect), trust_schema=True),
        script,
        plan,
    )
    assert report.statements == 6
    text = script.read_text(encoding="utf-8")
    assert "\x00" not in text and "-- original: " in text

    done, logged = _statements_logged(server, script, tmp_path)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert logged == _planned(plan)
    assert not (tmp_path / "pwned").exists()
    assert snapshot(server, watched) == before  # the sentinel intact, every changed table restored

    # A range that stops inside a transaction: its warning names the file, on one comment line.
    events = server.query(f"SHOW BINLOG EVENTS IN '{rng.start_file}'")
    inside = next(end for _f, _p, kind, _s, end, _i in events if kind.startswith("Update_rows"))
    partial = tmp_path / "partial.sql"
    report = generate(
        RangeSpec([str(hostile_file)], rng.start_position, inside),
        Filters(),
        Options(engine="local", schema=ServerSchema(server.connect), trust_schema=True),
        partial,
    )
    assert report.warnings and all(FILE_NAME in w for w in report.warnings)
    lines = partial.read_text(encoding="utf-8").split("\n")
    assert all(comment_line(f"warning: {w}") in lines for w in report.warnings)
    assert f"\n{ATTACK}" not in partial.read_text(encoding="utf-8").split("SET NAMES")[0]


def test_filter_values_and_irreversible_notes_are_escaped_too(scratch_server_factory, tmp_path):
    server = scratch_server_factory(row_image="MINIMAL")
    name = TABLES["t1"]
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {SENTINEL}",
            f"CREATE DATABASE {SENTINEL}",
            f"CREATE TABLE {SENTINEL}.t (x INT)",
            f"INSERT INTO {SENTINEL}.t VALUES (1)",
            f"DROP DATABASE IF EXISTS {PLAIN_DB}",
            f"CREATE DATABASE {PLAIN_DB}",
            f"CREATE TABLE {table(PLAIN_DB, PLAIN_TABLE)} (id INT PRIMARY KEY, {q(COLUMN)} INT)",
            f"CREATE TABLE {table(PLAIN_DB, name)} (id INT PRIMARY KEY, {q(COLUMN)} INT)",
            f"INSERT INTO {table(PLAIN_DB, PLAIN_TABLE)} VALUES (1, 10), (2, 20)",
            f"INSERT INTO {table(PLAIN_DB, name)} VALUES (1, 10), (2, 20)",
        ]
    )
    before = snapshot(server, [table(PLAIN_DB, PLAIN_TABLE), f"{SENTINEL}.t"])
    rng = server.run_sql(
        [
            f"INSERT INTO {table(PLAIN_DB, PLAIN_TABLE)} VALUES (3, 30)",
            f"DELETE FROM {table(PLAIN_DB, PLAIN_TABLE)} WHERE id = 1",  # MINIMAL: irreversible
            f"DELETE FROM {table(PLAIN_DB, name)} WHERE id = 1",  # MINIMAL: irreversible
        ],
        own_file=True,
    )
    hostile_file = tmp_path / FILE_NAME
    shutil.copy(rng.files[0], hostile_file)
    script, plan = tmp_path / "r.sql", tmp_path / "r.plan.jsonl"
    report = generate(
        RangeSpec([str(hostile_file)], rng.start_position, rng.stop_position),
        Filters({PLAIN_DB}, set(), {"insert", "delete"}),
        Options(engine="local", schema=ServerSchema(server.connect), allow_partial=True, trust_schema=True),
        script,
        plan,
    )
    assert report.irreversible_count == 2 and report.statements == 1
    text = script.read_text(encoding="utf-8")
    assert comment_line(f"filters: databases {PLAIN_DB}; types delete,insert") in text.splitlines()
    assert sum(line.startswith("-- irreversible: delete on ") for line in text.splitlines()) == 2

    done, logged = _statements_logged(server, script, tmp_path)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert logged == _planned(plan)
    now = snapshot(server, [table(PLAIN_DB, PLAIN_TABLE), f"{SENTINEL}.t"])
    assert now[f"{SENTINEL}.t"] == before[f"{SENTINEL}.t"]
