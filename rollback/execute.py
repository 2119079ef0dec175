"""Verified execution of a rollback plan against a target server: all or nothing.

Every statement runs after its check (the row is still as the binlog left it, or its key is
free for a re-insert) and must affect exactly one row. The checks run inside the same
transaction, in execution order, so each one sees the state the later changes' reversal left.
A dry run does everything and rolls back. Commit mode first runs the dry run; conflicts stop
it before anything is applied (or are skipped with on_conflict="skip").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pymysql

from rollback.errors import ConflictError, RollbackError, SourceError

PRELUDE = ("SET NAMES utf8mb4", "SET time_zone = '+00:00'", "SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO'")


@dataclass
class ExecutionResult:
    dry_run: bool
    committed: bool = False
    statements: int = 0
    rows_affected: int = 0
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0
    transactions_committed: int = 0  # per-transaction mode: committed before the end (or an error)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "committed": self.committed,
            "statements": self.statements,
            "rows_affected": self.rows_affected,
            "conflicts": self.conflicts,
            "skipped": self.skipped,
            "transactions_committed": self.transactions_committed,
        }


class ExecutionFailed(RollbackError):
    """A statement affected a number of rows other than one: everything was rolled back."""

    exit_code = 3


def parse_dsn(dsn: str) -> dict[str, Any]:
    """mysql://user:password@host:port/[database] -> PyMySQL connect arguments."""
    url = urlparse(dsn)
    if url.scheme not in ("mysql", "mariadb"):
        raise SourceError(
            f"server DSN must look like mysql://user:password@host:3306/ (got scheme {url.scheme!r})"
        )
    args: dict[str, Any] = {
        "host": url.hostname or "127.0.0.1",
        "port": url.port or 3306,
        "user": unquote(url.username or ""),
        "password": unquote(url.password or ""),
        "charset": "utf8mb4",
        "autocommit": False,
    }
    if url.path.strip("/"):
        args["database"] = url.path.strip("/")
    return args


def redact(dsn: str) -> str:
    url = urlparse(dsn)
    if url.password:
        return dsn.replace(f":{url.password}@", ":***@")
    return dsn


def connect(dsn: str) -> pymysql.connections.Connection:
    try:
        return pymysql.connect(**parse_dsn(dsn))
    except pymysql.err.MySQLError as exc:
        raise SourceError(f"cannot connect to {redact(dsn)}: {exc.args[-1] if exc.args else exc}") from None


def read_plan(path: str | Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def _where(step: dict[str, Any]) -> str:
    return f"{step.get('file')}:{step.get('pos')} ({step.get('table')}, reverse of {step.get('type')})"


def _applied(result: ExecutionResult) -> str:
    """What an error leaves behind: nothing, or the transactions committed before it (per-transaction mode)."""
    if result.transactions_committed:
        return (
            f"{result.transactions_committed} earlier transaction(s) stay committed, this one was rolled back "
            "(--single-transaction applies all or nothing)"
        )
    return "nothing was applied"


def _execute(cur: Any, sql: str, step: dict[str, Any], result: ExecutionResult) -> int:
    try:
        return int(cur.execute(sql))
    except pymysql.err.MySQLError as exc:
        reason = exc.args[-1] if exc.args else exc
        raise ExecutionFailed(
            f"the target refused the statement at {_where(step)}: {reason}; {_applied(result)}: {sql[:300]}"
        ) from None


def _run(
    conn: Any, plan: list[dict[str, Any]], on_conflict: str, result: ExecutionResult, per_transaction: bool
) -> None:
    with conn.cursor() as cur:
        for sql in PRELUDE:
            cur.execute(sql)
        current_tx = None
        for step in plan:
            if per_transaction and step["tx"] != current_tx:
                if current_tx is not None:
                    conn.commit()
                    result.transactions_committed += 1
                current_tx = step["tx"]
                cur.execute("BEGIN")
            if step.get("check"):
                _execute(cur, step["check"], step, result)
                found = cur.fetchone()[0]
                expect = step["expect"]
                ok = found == 0 if expect == 0 else found >= 1
                if not ok:
                    conflict = {
                        "file": step.get("file"),
                        "pos": step.get("pos"),
                        "table": step.get("table"),
                        "statement": step["sql"],
                        "found": found,
                        "reason": "the row's key is taken"
                        if expect == 0
                        else "the row changed since the incident",
                    }
                    result.conflicts.append(conflict)
                    if on_conflict == "skip":
                        result.skipped += 1
                        continue
                    raise ConflictError(
                        f"conflict at {_where(step)}: {conflict['reason']}; {_applied(result)} "
                        "(--on-conflict skip leaves such rows alone)"
                    )
            affected = _execute(cur, step["sql"], step, result)
            result.statements += 1
            if affected != 1:
                raise ExecutionFailed(
                    f"statement at {_where(step)} affected {affected} rows, not 1; {_applied(result)}: "
                    f"{step['sql'][:300]}"
                )
            result.rows_affected += affected


def _rollback_quietly(conn: Any) -> None:
    try:
        conn.rollback()
    except pymysql.err.MySQLError:
        pass  # a lost connection rolls back on the server by itself


def _attempt(
    factory: Callable[[], Any],
    plan: list[dict[str, Any]],
    on_conflict: str,
    result: ExecutionResult,
    per_transaction: bool,
    commit: bool,
) -> None:
    """One pass over the plan on a fresh connection; commit at the end or roll everything back."""
    conn = factory()
    try:
        conn.begin()
        _run(conn, plan, on_conflict, result, per_transaction)
        if commit:
            conn.commit()
            result.committed = True
    except pymysql.err.MySQLError as exc:
        reason = exc.args[-1] if exc.args else exc
        raise ExecutionFailed(f"the target failed during execution: {reason}; {_applied(result)}") from None
    finally:
        if not result.committed:
            _rollback_quietly(conn)
        try:
            conn.close()
        except pymysql.err.MySQLError:
            pass


def execute_plan(
    plan_path: str | Path,
    target: Callable[[], Any] | str,
    commit: bool = False,
    single_transaction: bool = True,
    on_conflict: str = "abort",
) -> ExecutionResult:
    """Run the plan on the target (a DSN or a connection factory). Dry run unless commit=True.

    The dry run applies everything, checks included, in one transaction and rolls it back: a conflict or a
    refused statement stops the job there, before anything is applied. Commit mode then runs it for real.
    """
    plan = list(read_plan(plan_path))
    factory = (lambda: connect(target)) if isinstance(target, str) else target
    dry = ExecutionResult(dry_run=True)
    _attempt(factory, plan, on_conflict, dry, per_transaction=False, commit=False)
    if not commit:
        return dry
    real = ExecutionResult(dry_run=False)
    _attempt(factory, plan, on_conflict, real, per_transaction=not single_transaction, commit=True)
    return real
