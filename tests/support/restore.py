"""Helpers of the restore proofs: snapshot tables, generate a rollback for a range, apply it with `mariadb`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rollback import Filters, Options, RangeSpec, Report, generate
from rollback.schema.tables import SchemaSource, ServerSchema
from tests.support import REPO
from tests.support.mariadb import BinlogRange, ScratchServer


def range_spec(rng: BinlogRange, **extra: Any) -> RangeSpec:
    return RangeSpec([str(f) for f in rng.files], rng.start_position, rng.stop_position, **extra)


def range_args(rng: BinlogRange) -> list[str]:
    """The CLI arguments naming exactly this range."""
    return [
        *map(str, rng.files),
        "--start-position",
        str(rng.start_position),
        "--stop-position",
        str(rng.stop_position),
    ]


def span(server: ScratchServer, first: BinlogRange, last: BinlogRange) -> BinlogRange:
    """One range from the start of `first` to the end of `last`, with every binlog file between them."""
    names = [p.name for p in server.binlog_files()]
    files = names[names.index(first.start_file) : names.index(last.stop_file) + 1]
    return BinlogRange(
        first.start_file,
        first.start_position,
        last.stop_file,
        last.stop_position,
        first.gtid_before,
        last.gtid_after,
        tuple(server.binlog_dir / n for n in files),
    )


def run_as_an_application(server: ScratchServer, database: str, statements: Iterable[str]) -> BinlogRange:
    """The statements, each in a transaction of its own as an application would send them; one the server
    refuses for a duplicate key is left out, as the application's would be. Returns the range they wrote."""
    import pymysql

    first = server.run_sql([])
    conn = server.connect(database)
    try:
        with conn.cursor() as cur:
            for sql in statements:
                try:
                    cur.execute(sql)
                except pymysql.err.IntegrityError:
                    pass
    finally:
        conn.close()
    return span(server, first, server.run_sql([]))


def snapshot(server: ScratchServer, tables: Iterable[str]) -> dict[str, tuple[Any, list[str]]]:
    """Per table: CHECKSUM TABLE ... EXTENDED and every row (sorted, as repr: duplicates kept)."""
    conn = server.connect()
    out: dict[str, tuple[Any, list[str]]] = {}
    try:
        with conn.cursor() as cur:
            for table in tables:
                cur.execute(f"CHECKSUM TABLE {table} EXTENDED")
                checksum = cur.fetchone()[1]
                cur.execute(f"SELECT * FROM {table}")
                out[table] = (checksum, sorted(map(repr, cur.fetchall())))
    finally:
        conn.close()
    return out


def digest(server: ScratchServer, tables: Iterable[str]) -> dict[str, tuple[Any, int, str]]:
    """Per table: CHECKSUM TABLE ... EXTENDED, the row count and a sum of per-row MD5s (over the hex of every
    value, 60 bits each), computed by the server: snapshot()'s multiset comparison for big tables."""
    conn = server.connect()
    out: dict[str, tuple[Any, int, str]] = {}
    try:
        with conn.cursor() as cur:
            for table in tables:
                cur.execute(f"CHECKSUM TABLE {table} EXTENDED")
                checksum = cur.fetchone()[1]
                cur.execute(f"SELECT * FROM {table} LIMIT 0")
                columns = ", ".join(f"IFNULL(HEX(`{d[0]}`), 'N')" for d in cur.description)
                row_hash = f"CONV(LEFT(MD5(CONCAT_WS(',', {columns})), 15), 16, 10)"  # 60 bits per row
                cur.execute(f"SELECT COUNT(*), SUM(CAST({row_hash} AS UNSIGNED)) FROM {table}")
                count, sums = cur.fetchone()
                out[table] = (checksum, count, str(sums))
    finally:
        conn.close()
    return out


def flashback(
    server: ScratchServer,
    rng: BinlogRange,
    out_dir: Path,
    *,
    name: str = "rollback",
    filters: Filters | None = None,
    schema: SchemaSource | None | str = "server",
    **options: Any,
) -> tuple[Path, Path, Report]:
    """Generate the rollback of exactly `rng`: (script, plan, report). schema="server" reads the live server."""
    script, plan = out_dir / f"{name}.sql", out_dir / f"{name}.plan.jsonl"
    source = ServerSchema(server.connect) if schema == "server" else schema
    assert not isinstance(source, str)
    report = generate(
        range_spec(rng),
        filters or Filters(),
        Options(**{"engine": "local", "schema": source, **options}),
        script,
        plan,
    )
    from tests.support.both_ways import check_generated

    check_generated(server, script, plan)
    return script, plan, report


def incident_plan(
    server: ScratchServer, tmp_path: Path, database: str, setup: list[str], changes: list[str], **options: Any
) -> dict[str, Any]:
    """`database` made anew by `setup`, then `changes` run on it: the reverse plan of their range (flashback
    with `options`), the database's tables, and their snapshots before and after the changes."""
    server.run_sql([f"DROP DATABASE IF EXISTS {database}", f"CREATE DATABASE {database}", *setup])
    tables = [f"{database}.{name}" for (name,) in server.query(f"SHOW TABLES FROM {database}")]
    before = snapshot(server, tables)
    rng = server.run_sql(changes)
    after = snapshot(server, tables)
    _, plan, _ = flashback(server, rng, tmp_path, **options)
    return {"plan": plan, "tables": tables, "before": before, "after": after}


def client_command(server: ScratchServer, tcp: bool = False) -> list[str]:
    """The plain `mariadb` client for the scratch server: over its unix socket (loopback TCP costs a
    round trip per statement that the seed benchmark's 200k statements feel), or over TCP."""
    where = ["-h", "127.0.0.1", "-P", str(server.port)] if tcp else ["--socket", str(server.socket_path)]
    return ["mariadb", "--no-defaults", *where, "-u", server.user, f"-p{server.password}"]


def apply_with_client(server: ScratchServer, script: Path, tcp: bool = False) -> None:
    """Apply a script the way a DBA would: `mariadb < script`; its plan's dry run first (both_ways)."""
    from tests.support.both_ways import dry_run_beside

    dry_run_beside(server, script)
    with open(script, "rb") as f:
        done = subprocess.run(client_command(server, tcp), stdin=f, capture_output=True)
    assert done.returncode == 0, done.stderr.decode(errors="replace")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """`mysql-rollback ARGS...` in a fresh interpreter, as a user runs it; a script it writes is also
    applied with the client, rolled back (both_ways)."""
    from tests.support.both_ways import check_cli_script

    done = subprocess.run(
        [sys.executable, "-m", "rollback.cli.commands", *args], capture_output=True, text=True, cwd=REPO
    )
    check_cli_script(args, done.returncode)
    return done


def statements(script: Path) -> list[str]:
    """The SQL statements of a script (comments and the prelude dropped)."""
    return [
        line
        for line in script.read_text(encoding="utf-8").splitlines()
        if line and not line.startswith(("--", "SET ")) and line not in ("BEGIN;", "COMMIT;")
    ]


def restore_both_ways(
    server: ScratchServer,
    tables: Iterable[str],
    incident: list[str],
    out_dir: Path,
    **flashback_options: Any,
) -> None:
    """Run `incident` twice from the same state: the first rollback is applied with the `mariadb` client, the
    second through `--execute` (execute_plan, committed); after each, every table is as before it, by
    CHECKSUM TABLE ... EXTENDED and by its rows."""
    from rollback.target.execute import execute_plan

    tables = list(tables)
    before = snapshot(server, tables)
    for way in ("client", "execute"):
        rng = server.run_sql(incident)
        assert snapshot(server, tables) != before, "the incident changed nothing"
        script, plan, _report = flashback(server, rng, out_dir, name=way, **flashback_options)
        if way == "client":
            apply_with_client(server, script)
        else:
            assert execute_plan(plan, server.dsn, commit=True).committed
        assert snapshot(server, tables) == before, f"not restored through {way}"
