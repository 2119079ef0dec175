"""Both ways, everywhere (issue 25): a script is never rejected halfway for a reason the tool could know.

Every rollback a test applies through `execute_plan` on a scratch server is also applied with the `mariadb`
client first, from the script written beside its plan (`X.sql` next to `X.plan.jsonl`), inside one
transaction that the client rolls back after reading the tables' digests; when the verified apply then
commits with no conflict, the tables must hold exactly what the client's run held, and the client must
have run every statement. Every script a test applies with the client (tests.support.restore
.apply_with_client) is first dry-run through `execute_plan` from its plan: a script the client takes while
its plan finds conflicts is a silent difference between the two. (A plan whose dry run passed when it was
generated is not dry-run again while its tables still have the digests they had then.)

A script that cannot run inside one transaction (DDL, tables without transactions, sequences) or whose
tables fire triggers (they may keep state of their own, and take AUTO_INCREMENT values a rolled-back run
does not give back) is not applied twice; nor is the rollback of a test that makes it stale or wrong on
purpose (marked `both_ways_off("why")`: rows changed since the incident, a schema file that lies). The
run's summary line counts those beside the checks made.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.support.mariadb import ScratchServer

SERVERS: dict[tuple[str, int], ScratchServer] = {}
COUNTS: Counter[str] = Counter()
CURRENT_TEST: list[Any] = [None]  # the running test's node (tests/conftest.py sets it)

_PLAN_SUFFIXES = (".plan.jsonl", ".plan")
# Statements that end a transaction by themselves, or that a rolled-back run cannot take back.
_NOT_IN_ONE_TRANSACTION = re.compile(
    r"(?i)^\s*(ALTER|CREATE|DROP|TRUNCATE|RENAME|XA|LOCK|UNLOCK|LOAD|SET\s+(SESSION\s+)?autocommit)\b"
)
_TABLE = re.compile(
    r"^(?:INSERT(?: IGNORE)? INTO|REPLACE INTO|DELETE FROM|UPDATE) (`(?:[^`]|``)+`\.`(?:[^`]|``)+`)"
)
_TABLE_PARTS = re.compile(r"^`((?:[^`]|``)+)`\.`((?:[^`]|``)+)`$")
_LOCK_ERRORS = ("ERROR 1205", "ERROR 1213")  # lock wait timeout, deadlock: a test holds the rows on purpose


def register(server: ScratchServer) -> None:
    SERVERS[(server.host, server.port)] = server


def server_of(target: Any) -> ScratchServer | None:
    """The scratch server a target (a DSN or `server.connect`) names, if the suite started it."""
    if isinstance(target, str):
        parts = urlsplit(target)
        return SERVERS.get((parts.hostname or "", parts.port or 3306))
    owner = getattr(target, "__self__", None)
    return owner if isinstance(owner, ScratchServer) else None


def script_beside(plan: str | Path) -> Path | None:
    path = Path(plan)
    for suffix in _PLAN_SUFFIXES:
        if path.name.endswith(suffix):
            script = path.with_name(path.name[: -len(suffix)] + ".sql")
            return script if script.is_file() else None
    return None


def plan_beside(script: Path) -> Path | None:
    for suffix in _PLAN_SUFFIXES:
        plan = script.with_name(script.name[: -len(".sql")] + suffix)
        if script.name.endswith(".sql") and plan.is_file():
            return plan
    return None


@dataclass
class ClientRun:
    ok: bool
    digests: list[str]
    error: str = ""


def _one_transaction(script: Path) -> tuple[str, list[str]] | None:
    """The script's statements without its BEGIN/COMMIT, and the tables it writes; None when it cannot run
    inside one transaction that is rolled back."""
    body: list[str] = []
    tables: dict[str, None] = {}
    for line in script.read_text(encoding="utf-8").splitlines():
        if line in ("BEGIN;", "COMMIT;"):
            continue
        if _NOT_IN_ONE_TRANSACTION.match(line):
            return None
        found = _TABLE.match(line)
        if found:
            tables[found.group(1)] = None
        body.append(line)
    return ("\n".join(body), list(tables)) if tables else None


def _digest_queries(server: ScratchServer, tables: list[str]) -> list[str] | None:
    """Per table, a SELECT of its row count and a sum of per-row MD5s over every column's QUOTE(); None when
    a table has no transactions (a rolled-back run would leave its changes) or fires triggers."""
    queries = []
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            for table in tables:
                parts = _TABLE_PARTS.match(table)
                assert parts is not None, table
                schema, name = (part.replace("``", "`") for part in parts.groups())
                cur.execute(
                    "SELECT ENGINE, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND "
                    "TABLE_NAME = %s",
                    (schema, name),
                )
                found = cur.fetchone()
                if not found or found[0] != "InnoDB" or found[1] != "BASE TABLE":
                    return None
                cur.execute(
                    "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = %s AND "
                    "EVENT_OBJECT_TABLE = %s",
                    (schema, name),
                )
                if cur.fetchone()[0]:
                    return None
                cur.execute(
                    "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND "
                    "TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
                    (schema, name),
                )
                columns = ", ".join(
                    "MD5(QUOTE(`{}`))".format(c.replace("`", "``")) for (c,) in cur.fetchall()
                )
                row = f"CAST(CONV(LEFT(MD5(CONCAT_WS(',', {columns})), 15), 16, 10) AS UNSIGNED)"
                queries.append(f"SELECT '{table}', COUNT(*), IFNULL(SUM({row}), 0) FROM {table};")
    finally:
        conn.close()
    return queries


def _read_digests(server: ScratchServer, queries: list[str], conn: Any = None) -> list[str]:
    own = conn is None
    conn = server.connect() if own else conn
    try:
        with conn.cursor() as cur:
            out = []
            for query in queries:
                cur.execute(query)
                out.append("\t".join(str(v) for v in cur.fetchone()))
            return out
    finally:
        if own:
            conn.close()


def client_run(server: ScratchServer, script: Path) -> tuple[ClientRun | None, list[str]]:
    """The script through the `mariadb` client in one transaction, rolled back after the tables' digests are
    read; (None, []) when the script cannot be applied that way."""
    from tests.support.restore import client_command

    shaped = _one_transaction(script)
    if shaped is None:
        COUNTS["not in one transaction (DDL or no row statement)"] += 1
        return None, []
    body, tables = shaped
    queries = _digest_queries(server, tables)
    if queries is None:
        COUNTS["tables without transactions or with triggers"] += 1
        return None, []
    wrapped = "\n".join(
        [
            "SET SESSION autocommit = 0;",
            "SET SESSION innodb_lock_wait_timeout = 3;",
            body,
            *queries,
            "ROLLBACK;",
            "",
        ]
    )
    done = subprocess.run(
        [*client_command(server), "-N", "-B"], input=wrapped.encode("utf-8"), capture_output=True, timeout=300
    )
    error = done.stderr.decode(errors="replace").strip()
    if done.returncode != 0 and any(code in error for code in _LOCK_ERRORS):
        COUNTS["rows locked by the test"] += 1
        return None, []
    digests = done.stdout.decode(errors="replace").splitlines()[-len(queries) :]
    return ClientRun(done.returncode == 0, digests, error), queries


def _off() -> bool:
    """Whether the running test makes its rollback stale or wrong on purpose (marked both_ways_off)."""
    node = CURRENT_TEST[0]
    if node is None or node.get_closest_marker("both_ways_off") is None:
        return False
    COUNTS["checks left out where the test says why (both_ways_off)"] += 1
    return True


def checked_execute_plan(original: Callable[..., Any]) -> Callable[..., Any]:
    """execute_plan, with the script beside the plan applied by the client first (see the module's text)."""

    def execute_plan(plan_path: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
        server = server_of(target)
        script = script_beside(plan_path)
        if server is None or script is None or _off():
            return original(plan_path, target, *args, **kwargs)
        run, queries = client_run(server, script)
        result = original(plan_path, target, *args, **kwargs)
        if run is None or result.conflicts or result.skipped:
            return result
        assert run.ok, (
            f"the verified apply took {plan_path} but the mariadb client rejected {script}: {run.error}"
        )
        COUNTS["plans also applied with the client"] += 1
        if result.committed and not result.dry_run:
            now = _read_digests(server, queries)
            assert now == run.digests, (
                f"{script} through the mariadb client and {plan_path} through execute_plan left different "
                f"tables: {run.digests} != {now}"
            )
            COUNTS["restores compared table by table"] += 1
        return result

    # not __wrapped__: execute_plan has its own (functools.wraps of its collector pause), which would
    # make the check look installed when it is not
    execute_plan.unchecked = original  # type: ignore[attr-defined]
    return execute_plan


def _dry_run(server: ScratchServer, script: Path, plan: Path, inspect: Any = None) -> Any:
    """The plan's dry run as the script would run (conflicts listed, not raised); None when refused."""
    import rollback.target.execute

    original = getattr(
        rollback.target.execute.execute_plan, "unchecked", rollback.target.execute.execute_plan
    )
    try:
        return original(
            plan,
            server.dsn,
            commit=False,
            on_conflict="skip",
            accept_triggers=True,
            accept_cascades=True,
            foreign_key_checks="SET SESSION foreign_key_checks = 0;"
            not in script.read_text(encoding="utf-8"),
            inspect=inspect,
        )
    except rollback.target.execute.ExecutionRefused:
        COUNTS["plans the verified apply refuses"] += 1
        return None


def check_generated(server: ScratchServer, script: Path, plan: Path) -> None:
    """Right after a test generates a rollback (tests.support.restore.flashback), while the tables are as
    the range left them: the script through the client and the plan through a dry run, both rolled back,
    must leave the same tables, and the client must take every statement the dry run takes."""
    if _off():
        return
    run, queries = client_run(server, script)
    if run is None:
        return
    tables_before = _read_digests(server, queries)
    seen: list[str] = []
    result = _dry_run(server, script, plan, lambda conn: seen.extend(_read_digests(server, queries, conn)))
    if result is None:
        return
    assert not result.conflicts, (
        f"{plan} as generated, on the tables as the range left them: {result.conflicts[:3]}"
    )
    assert run.ok, f"the dry run took {plan} but the mariadb client rejected {script}: {run.error}"
    assert seen == run.digests, (
        f"{script} through the mariadb client and {plan} through a dry run leave different tables: "
        f"{run.digests} != {seen}"
    )
    COUNTS["generated rollbacks applied both ways at once"] += 1
    _DRY_RUN_PASSED[str(plan)] = (_files_state(script, plan), queries, tables_before)


# A plan whose dry run passed right after it was generated -> (its script's and its own size and mtime, the
# digest queries of its tables, their digests then): the same dry run on the same tables need not run again.
_DRY_RUN_PASSED: dict[str, tuple[tuple[int, ...], list[str], list[str]]] = {}


def _files_state(*paths: Path) -> tuple[int, ...]:
    stats = [path.stat() for path in paths]
    return tuple(n for stat in stats for n in (stat.st_size, stat.st_mtime_ns))


def _passed_on_these_tables(server: ScratchServer, script: Path, plan: Path) -> bool:
    """Whether this plan's dry run already passed on tables with the digests they have now."""
    passed = _DRY_RUN_PASSED.get(str(plan))
    if passed is None:
        return False
    files, queries, digests = passed
    return files == _files_state(script, plan) and _read_digests(server, queries) == digests


def dry_run_beside(server: ScratchServer, script: Path) -> None:
    """Before a script is applied with the client: its plan's dry run must find nothing in the way."""
    if _off():
        return
    plan = plan_beside(script)
    if plan is None:
        COUNTS["scripts without a plan beside them"] += 1
        return
    if _passed_on_these_tables(server, script, plan):
        COUNTS["scripts whose plan's dry run had passed on the same tables"] += 1
        return
    result = _dry_run(server, script, plan)
    if result is None:
        return
    assert not result.conflicts, (
        f"{script} is about to be applied with the client, but its plan's dry run finds conflicts: "
        f"{result.conflicts[:3]}"
    )
    COUNTS["scripts also dry-run through execute_plan"] += 1


def check_cli_script(args: tuple[str, ...], returncode: int) -> None:
    """After `mysql-rollback flashback ... -o FILE.sql` exits 0 in a test (tests.support.restore.run_cli):
    the script it wrote goes through the client, rolled back, without a statement refused. The server is
    the scratch server whose binlog files the range names."""
    if returncode != 0 or not args or args[0] != "flashback" or "--execute" in args or _off():
        return
    outputs = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg in ("-o", "--output")]
    script = Path(outputs[-1]) if outputs else None
    if script is None or script.suffix != ".sql" or not script.is_file():
        return
    server = next(
        (s for s in SERVERS.values() if any(arg.startswith(f"{s.binlog_dir}/") for arg in args)), None
    )
    if server is None:
        COUNTS["CLI scripts of files no scratch server wrote"] += 1
        return
    run, _queries = client_run(server, script)
    if run is None:
        return
    assert run.ok, f"the mariadb client rejected {script}, which the CLI wrote with exit 0: {run.error}"
    COUNTS["CLI scripts also applied with the client"] += 1


def summary() -> str:
    made = ", ".join(f"{n} {what}" for what, n in sorted(COUNTS.items()))
    return f"both ways: {made}" if made else ""
