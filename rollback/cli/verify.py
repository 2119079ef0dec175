"""`mysql-rollback checksum` and `mysql-rollback verify`: the CI workflow.

mysql-rollback checksum DSN --database shop > before.json       # before the deploy
mysql-rollback flashback FILES... --plan plan.jsonl -o rollback.render.sql
mysql-rollback verify --plan plan.jsonl --target SCRATCH_DSN --expected before.json --junit verify.xml
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from rollback.base.errors import EXIT_DIFFERS, RollbackError
from rollback.base.output_files import write_bytes
from rollback.cli.connection import (
    add_connection_options,
    complete_dsn,
    connection_given,
    server_from_options,
)
from rollback.cli.report import CommandReport, add_report_options
from rollback.cli.service import add_service_options, fetch_plan
from rollback.target.execute import DEFAULT_LOCK_WAIT_TIMEOUT, connect, redact

if TYPE_CHECKING:
    from rollback.target.checksum import TableChecksum
    from rollback.target.verify import VerifyResult


def add_verify_commands(sub: argparse._SubParsersAction) -> None:
    checksum = sub.add_parser(
        "checksum",
        add_help=False,
        help="record what tables hold (JSON), to verify a rollback against later",
        description="Write a checksum of each table: its columns, its key and a digest per row.",
    )
    checksum.add_argument("--help", action="help", help="show this help (-h is the host, as in mysql)")
    checksum.add_argument(
        "dsn", nargs="?", metavar="DSN", help="mysql://user:password@host:port/ (or -h/-P/-u/-p)"
    )
    add_connection_options(checksum, "the server")
    checksum.add_argument("--table", "-t", action="append", default=[], metavar="DB.TABLE")
    checksum.add_argument(
        "--database", "-d", action="append", default=[], metavar="DB", help="every table of DB"
    )
    checksum.add_argument("--output", "-o", metavar="FILE", help="write here instead of standard output")
    add_report_options(checksum)
    checksum.set_defaults(func=_checksum)

    verify = sub.add_parser(
        "verify",
        help="apply a rollback plan to a scratch copy and check every affected table is restored",
        description="Run the plan on --target in one transaction (each statement must touch exactly one "
        "row), compare the affected tables with their expected state, and roll back (unless --keep).",
        epilog=f"exit codes: 0 every table restored; 2 bad input or refusal; 3 a conflict or a failed "
        f"statement; {EXIT_DIFFERS} a table differs from its expected state",
    )
    plan = verify.add_mutually_exclusive_group(required=True)
    plan.add_argument("--plan", help="the plan of `flashback --plan FILE`")
    plan.add_argument("--job", metavar="ID", help="the plan of this service job (with --service and a token)")
    add_service_options(verify)
    verify.add_argument("--target", required=True, metavar="DSN", help="the scratch server holding the copy")
    expected = verify.add_mutually_exclusive_group(required=True)
    expected.add_argument("--expected", metavar="FILE", help="checksums taken before the change")
    expected.add_argument("--expected-server", metavar="DSN", help="a server holding the expected state")
    verify.add_argument(
        "--table", "-t", action="append", default=[], metavar="DB.TABLE", help="compare this table too"
    )
    verify.add_argument("--keep", action="store_true", help="commit the rollback on the target")
    verify.add_argument("--accept-triggers", action="store_true")
    verify.add_argument("--accept-cascades", action="store_true")
    verify.add_argument("--accept-non-transactional", action="append", default=[], metavar="TABLE[,TABLE]")
    verify.add_argument("--lock-wait-timeout", type=int, default=DEFAULT_LOCK_WAIT_TIMEOUT, metavar="SECONDS")
    add_report_options(verify, junit="one case per table (and one for the execution when it failed)")
    verify.set_defaults(func=_verify)


def _checksum(args: argparse.Namespace) -> int:
    # the checksum and verify modules load when their command runs (not on every command's start)
    from rollback.target.checksum import ChecksumError, document, tables_of_database, take_from_server

    if not args.table and not args.database:
        raise ChecksumError("give --table DB.TABLE or --database DB (repeatable)")
    for name in args.table:
        if "." not in name:
            raise ChecksumError(f"--table {name}: give it as DB.TABLE")
    if args.dsn and connection_given(args):
        raise ChecksumError("give the server as DSN or as -h/-P/-u/-p, not both")
    args.dsn = complete_dsn(args.dsn, args) if args.dsn else server_from_options(args)
    conn = connect(args.dsn)
    try:
        tables = list(args.table)
        for database in args.database:
            found = tables_of_database(conn, database)
            if not found:
                raise ChecksumError(f"database {database} has no table on the server")
            tables += found
        taken = take_from_server(conn, tables)
    finally:
        conn.close()
    args.outcome.extra["server"] = redact(args.dsn)
    args.outcome.extra["tables"] = [{"table": name, "rows": t.row_count} for name, t in sorted(taken.items())]
    text = json.dumps(document(taken, server=redact(args.dsn)), ensure_ascii=False, indent=1) + "\n"
    if args.output:
        write_bytes(args.output, text.encode("utf-8"))
    else:
        sys.stdout.write(text)
    return 0


def _expected(args: argparse.Namespace, tables: list[str]) -> dict[str, TableChecksum]:
    from rollback.target.checksum import load, take_from_server

    if args.expected:
        return load(args.expected)
    conn = connect(args.expected_server)
    try:
        return take_from_server(conn, tables)
    finally:
        conn.close()


def _verify(args: argparse.Namespace) -> int:
    args.target = complete_dsn(args.target, args)
    if args.expected_server:
        args.expected_server = complete_dsn(args.expected_server, args)
    if args.job is None:
        return _verify_plan(args)
    args.outcome.extra.update(job=args.job)
    args.plan_label = f"job {args.job}"
    with tempfile.TemporaryDirectory(prefix="mysql-rollback-") as tmp:
        args.plan = str(Path(tmp) / f"job-{args.job}.plan.jsonl")
        fetch_plan(args, Path(args.plan))
        return _verify_plan(args)


def _verify_plan(args: argparse.Namespace) -> int:
    from rollback.target.verify import VerifyResult, plan_tables, verify_plan

    result = VerifyResult(getattr(args, "plan_label", None) or args.plan, redact(args.target), args.keep)
    try:
        tables = sorted(set(plan_tables(args.plan)) | set(args.table))
        verify_plan(
            args.plan,
            lambda: connect(args.target),
            _expected(args, tables),
            tables,
            result,
            accept_triggers=args.accept_triggers,
            accept_cascades=args.accept_cascades,
            accept_non_transactional=[
                t.strip() for item in args.accept_non_transactional for t in item.split(",") if t.strip()
            ],
            lock_wait_timeout=args.lock_wait_timeout,
        )
    except RollbackError as exc:
        result.error = exc.one_line()
        result.exit_code = exc.exit_code
        result.execution = getattr(exc, "result", None) or result.execution
        _record(args.outcome, result)
        raise
    _record(args.outcome, result)
    for verdict in result.verdicts:
        print(verdict.line(), file=sys.stderr if not verdict.ok else sys.stdout)
    if result.exit_code:
        failed = [v.table for v in result.verdicts if not v.ok]
        print(f"mysql-rollback: error: not restored: {', '.join(failed)}", file=sys.stderr)
    return result.exit_code


def _record(outcome: CommandReport, result: VerifyResult) -> None:
    """verify's report: the common fields, its own result words and per-table verdicts, its JUnit."""
    from rollback.target.verify import junit_xml

    facts = result.to_dict()
    outcome.result = facts["result"]
    outcome.extra.update(facts)
    if result.execution is not None:
        outcome.conflicts = list(result.execution.conflicts)
    outcome.junit = junit_xml(result)
