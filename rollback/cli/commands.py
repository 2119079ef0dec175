"""The `mysql-rollback` command line."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any, NoReturn

import rollback
from rollback import (
    AUTO_SPARK_BYTES,
    DEFAULT_ENGINE,
    EXIT_INCOMPLETE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REFUSED,
    EngineKind,
    RangeError,
    RollbackError,
    parse_size,
)
from rollback.cli import summary
from rollback.cli.connection import add_connection_options, bare_password, complete_dsn
from rollback.cli.fetch import add_fetch_command
from rollback.cli.habits import add_habit_options, normalise
from rollback.cli.progress import for_stream as progress_display
from rollback.cli.progress import jvm_output_to
from rollback.cli.report import CommandReport, add_report_options, range_asked, report_path_in, write_outputs


class _Parser(argparse.ArgumentParser):
    """Bad arguments are bad input: one line on stderr and exit 2 (argparse alone prints the whole usage)."""

    last_error: str | None = None  # what the last refusal said (for the --report of a refused command line)

    def error(self, message: str) -> NoReturn:
        _Parser.last_error = " ".join(message.split())
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


class _VersionAction(argparse.Action):
    """`--version`: one line, never re-wrapped to the terminal's width (argparse's own action wraps)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any) -> NoReturn:
        print(f"mysql-rollback {rollback.__version__}, hot path: {rollback.hot_path()}")
        parser.exit(0)


ENGINE_ENV = "MYSQL_ROLLBACK_ENGINE"  # the default of --engine, as the service's setting of that name

EXIT_CODES = (
    "exit codes: 0 done; 1 internal error; 2 bad input or refusal; 3 irreversible changes left out "
    "(--allow-partial), conflicts or a failed execution; 4 the range selected no row change (--allow-empty); 5 verify: a table differs from its expected state"
)


def _add_pick_arguments(cmd: argparse.ArgumentParser) -> None:
    """Precise selection: transactions and rows picked inside the range (docs/safety.md)."""
    picks = cmd.add_argument_group(
        "precise selection",
        "pick transactions inside the range (includes add up, excludes win) and rows by a predicate; "
        "rows that a selected transaction and a later excluded one both changed are reported",
    )
    picks.add_argument(
        "--include-gtid",
        action="append",
        default=[],
        metavar="GTIDS",
        help="only transactions with these GTIDs (a set, as --gtid; repeatable)",
    )
    picks.add_argument(
        "--exclude-gtid",
        action="append",
        default=[],
        metavar="GTIDS",
        help="not the transactions with these GTIDs (repeatable)",
    )
    picks.add_argument(
        "--include-position",
        action="append",
        default=[],
        metavar="FILE:POS",
        help="only the transaction starting at FILE:POS (or POS), as the script's block comment "
        "gives it (repeatable)",
    )
    picks.add_argument(
        "--exclude-position",
        action="append",
        default=[],
        metavar="FILE:POS",
        help="not the transaction starting at FILE:POS (repeatable)",
    )
    picks.add_argument(
        "--exclude-thread-id",
        action="append",
        type=int,
        default=[],
        metavar="N",
        help="not the transactions of this thread (repeatable; MySQL binlogs only)",
    )
    picks.add_argument(
        "--include-query",
        metavar="REGEX",
        help="only the row changes of statements whose original text matches (a regular expression, "
        "searched, case-insensitive)",
    )
    picks.add_argument(
        "--exclude-query",
        metavar="REGEX",
        help="not the row changes of statements whose original text matches",
    )
    picks.add_argument(
        "--where",
        metavar="EXPR",
        help="only rows whose image satisfies this MySQL expression (an UPDATE: either image)",
    )
    picks.add_argument(
        "--allow-partial-transactions",
        action="store_true",
        help="accept picks or table/type filters that undo only part of a transaction (refused without it)",
    )


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; given the `command` asked for, without the other packages' commands
    unless it is one of them (loading them imports the service's CLI and pydantic: a tenth of a
    second that `flashback FILE` does not need)."""
    parser = _Parser(prog="mysql-rollback", description="Undo mistaken changes from the binlog.")
    parser.add_argument(
        "--version",
        action=_VersionAction,
        help="print the version and which hot path decodes and renders (compiled or pure Python), then exit",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    decode = sub.add_parser("decode", help="print every row change of binlog files")
    decode.add_argument("files", nargs="+", metavar="FILE")
    decode.add_argument("--start-position", type=int, default=None, help="in the first file")
    decode.add_argument("--stop-position", type=int, default=None, help="in the last file")
    decode.add_argument("--format", choices=("jsonl", "text"), default="jsonl")
    decode.add_argument("--no-verify", action="store_true", help="do not verify CRC32 checksums")
    decode.add_argument(
        "--schema-file",
        help="CREATE TABLE statements giving the precision of MariaDB's old-format TIME/DATETIME/TIMESTAMP(n) "
        "columns (mysql56_temporal_format=OFF), which the binlog does not record",
    )
    add_report_options(decode)
    decode.set_defaults(func=_decode)

    for name, help_text in (
        ("flashback", "reverse SQL for a binlog range, newest change first (optionally applied)"),
        ("sql", "the changes of a binlog range as SQL, in the order they happened"),
    ):
        cmd = sub.add_parser(name, help=help_text, epilog=EXIT_CODES, add_help=False)
        cmd.add_argument("--help", action="help", help="show this help (-h is the host, as in mysql)")
        _add_range_arguments(cmd)
        add_connection_options(
            cmd, "the server whose binlog is read (or, with local files, the schema server)"
        )
        add_habit_options(cmd)
        add_report_options(cmd, junit="one case for the script, one for the execution")
        cmd.add_argument(
            "--quiet", action="store_true", help="no progress display (there is none off a terminal)"
        )
        cmd.add_argument(
            "--debug",
            action="store_true",
            help="show Spark's own log lines (hidden otherwise) and a traceback on an internal error",
        )
        cmd.set_defaults(func=_flashback, mode="flashback" if name == "flashback" else "forward")
        if name == "flashback":
            cmd.add_argument(
                "--net",
                action="store_true",
                help="one statement per row, from the row as the range left it back to its image before the "
                "range (a row updated ten times: one UPDATE; inserted then deleted: nothing), with the same checks",
            )

    add_fetch_command(sub)
    recover = sub.add_parser(
        "xa-recover",
        help="commit or roll back what a parallel apply (--parallel) that died between prepare and commit "
        "left prepared on a server, as its record says",
        description="Read XA RECOVER on --target, match each prepared transaction of a parallel apply with "
        "its record, and commit it (the record says every partition was prepared) or roll it back (it does "
        "not); one line each. A prepared transaction without a record is left as it is.",
    )
    recover.add_argument("--target", required=True, metavar="DSN", help="the server the apply ran on")
    recover.add_argument(
        "--records",
        metavar="DIR",
        help="where the records are ($MYSQL_ROLLBACK_DATA_DIR/xa, else ~/.local/state/mysql-rollback/xa)",
    )
    recover.set_defaults(func=_xa_recover)
    from rollback.cli.verify import add_verify_commands

    add_verify_commands(sub)
    if command is None or (command not in sub.choices and command not in ("completion", "--version")):
        _add_plugin_commands(sub)
    completion = sub.add_parser(
        "completion",
        help='print a shell completion script: eval "$(mysql-rollback completion bash)"',
        description="Print the completion script of a shell (generated from this parser by shtab).",
    )
    completion.add_argument("shell", choices=("bash", "zsh", "tcsh"))
    completion.set_defaults(func=_completion)
    return parser


def _completion(args: argparse.Namespace) -> int:
    import shtab

    sys.stdout.write(shtab.complete(build_parser(), shell=args.shell))
    return EXIT_OK


def _add_range_arguments(cmd: argparse.ArgumentParser) -> None:
    from rollback import DEFAULT_LOCK_WAIT_TIMEOUT

    files = cmd.add_argument(
        "files", nargs="*", metavar="BINLOG_FILE", help="binlog files, in log order (or --server)"
    )
    files.complete = {"bash": "_shtab_compgen_files", "zsh": "_files", "tcsh": "f"}  # type: ignore[attr-defined]
    cmd.add_argument(
        "--server",
        metavar="DSN",
        help="read the range from this server over the replication protocol, spooled to local files "
        "(mysql://user:password@host:port/; without a password, $MYSQL_PWD); the schema comes from it too",
    )
    cmd.add_argument(
        "--start-file",
        metavar="FILE",
        help="with --server: the first binlog file of the range (with --start/--stop-datetime: the window "
        "is searched from it on)",
    )
    cmd.add_argument(
        "--stop-file",
        "--end-file",
        metavar="FILE",
        help="with --server: the last binlog file (default: the start file "
        "with --stop-position, else the current one)",
    )
    cmd.add_argument(
        "--start-position", "--start-pos", type=int, help="in the first file (with --server: in --start-file)"
    )
    cmd.add_argument(
        "--stop-position",
        "--end-pos",
        type=int,
        help="in the last file (with --server: in --stop-file, exclusive)",
    )
    cmd.add_argument("--gtid", help="MySQL GTID set, or MariaDB GTIDs/ranges (0-1-5,0-1-7..0-1-9)")
    cmd.add_argument(
        "--start-datetime",
        help="YYYY-MM-DD HH:MM:SS[+HH:MM]; without an offset: UTC for files, the server's time zone with --server",
    )
    cmd.add_argument("--stop-datetime", help="exclusive; same format")
    cmd.add_argument(
        "--spool",
        metavar="DIR",
        help="with --server: where the fetched binlog files are kept and reused "
        "(default: $MYSQL_ROLLBACK_DATA_DIR/spool, else mysql-rollback-spool in the temp dir)",
    )
    cmd.add_argument(
        "--server-id",
        type=int,
        metavar="N",
        help="with --server: our replica server id (default: random, high)",
    )
    cmd.add_argument(
        "-d",
        "--database",
        "--databases",
        nargs="+",
        action="extend",
        default=[],
        metavar="DB",
        help="only these databases (several after one -d, or -d repeated)",
    )
    cmd.add_argument(
        "-t",
        "-T",
        "--table",
        "--tables",
        nargs="+",
        action="extend",
        default=[],
        metavar="TABLE",
        help="only these tables: DB.TABLE, or TABLE of the -d databases",
    )
    cmd.add_argument(
        "--type",
        "--sql-type",
        nargs="+",
        action="extend",
        default=[],
        metavar="TYPE",
        help="only these kinds: insert, update, delete (comma- or space-separated, any case)",
    )
    cmd.add_argument("--thread-id", type=int)
    _add_pick_arguments(cmd)
    schema = cmd.add_mutually_exclusive_group()
    schema.add_argument(
        "--schema-dsn", help="read table schemas from this server (mysql://user:pw@host:port/)"
    )
    schema.add_argument("--schema-file", help="read table schemas from CREATE TABLE statements")
    cmd.add_argument(
        "--trust-schema",
        action="store_true",
        help="when the binlog names no columns: accept the schema source as describing the tables at the "
        "range's time, without looking for DDL on them after the range",
    )
    cmd.add_argument(
        "--accept-lost-rows",
        action="store_true",
        help="write the rollback although TRUNCATE, DROP TABLE or DROP DATABASE in the range destroyed rows of "
        "tables it has no row changes for (refused without it; the header lists them)",
    )
    cmd.add_argument(
        "--ddl",
        choices=("refuse", "keep", "reverse"),
        default="refuse",
        help="DDL on a changed table in the range or after it: refuse (default); keep today's schema, "
        "writing old rows into today's columns by name; reverse: also undo the DDL in the range",
    )
    cmd.add_argument("--full-where", action="store_true", help="identify rows by every column, not the key")
    cmd.add_argument(
        "--rows-per-statement",
        type=_rows_per_statement,
        default=1,
        metavar="N",
        help="join up to N rows of one rows event into one statement of the script: re-inserts, deletes by "
        "key, updates by key that cannot meet a unique key's duplicate midway (default 1: a statement a "
        "row); keyless deletes stay one a row, and the plan keeps one check a row",
    )
    cmd.add_argument("--allow-partial", action="store_true", help="emit what is restorable, list the rest")
    cmd.add_argument(
        "--allow-empty",
        action="store_true",
        help="a range that selects no row change is not an error (without it: exit 4)",
    )
    cmd.add_argument("-o", "--output", "-r", "--result-file", help="script file (default: standard output)")
    cmd.add_argument("--plan", help="also write the execution plan (JSON lines) here")
    cmd.add_argument(
        "--changes", help="also write the decoded changes here (JSON lines, or see --changes-format)"
    )
    cmd.add_argument(
        "--changes-format",
        choices=("jsonl", "parquet"),
        default="jsonl",
        help="parquet: a Parquet directory written through Spark, for Spark SQL analysis",
    )
    cmd.add_argument(
        "--engine",
        choices=tuple(kind.value for kind in EngineKind),
        default=os.environ.get(ENGINE_ENV) or DEFAULT_ENGINE.value,
        help="auto (default, or $MYSQL_ROLLBACK_ENGINE as for the service): in this process below "
        "MYSQL_ROLLBACK_AUTO_SPARK_BYTES of range (default 256 MiB), Spark from there on on a cluster master "
        "(a cold local master would only add a JVM's start: in-process then too); spark: partitions "
        "run as Spark tasks (a range that fits in one partition runs in-process); local: in this process, "
        "in order. The choice and why is said on stderr",
    )
    cmd.add_argument(
        "--spark-master",
        help="Spark master for the spark engine (default: MYSQL_ROLLBACK_SPARK_MASTER, else local[*])",
    )
    cmd.add_argument(
        "--partition-size",
        type=_size,
        metavar="BYTES",
        help="target partition size, e.g. 64M (default: 64M in-process; on Spark about four per core, 1M to 64M)",
    )
    cmd.add_argument(
        "--work-dir",
        help="a directory (or s3a://, hdfs:// URL) every Spark node reads: with a cluster master the binlogs "
        "are staged there; with a local engine or master the parts are written there (default: beside -o)",
    )
    cmd.add_argument(
        "--execute", action="store_true", help="apply the script to --target (dry run unless --commit)"
    )
    cmd.add_argument("--target", help="server to apply to (mysql://user:pw@host:port/)")
    cmd.add_argument("--commit", action="store_true", help="with --execute: commit instead of rolling back")
    cmd.add_argument(
        "--json",
        action="store_true",
        help="with --execute: the result as one JSON line on stderr, on a terminal too (off a terminal it "
        "always is; on one it is in words)",
    )
    cmd.add_argument(
        "--dry-run", action="store_true", help="with --execute: roll back at the end (the default)"
    )
    transactions = cmd.add_mutually_exclusive_group()
    transactions.add_argument(
        "--single-transaction",
        action="store_true",
        help="with --execute: apply everything in one transaction (the default; kept for old scripts)",
    )
    transactions.add_argument(
        "--per-transaction",
        action="store_true",
        help="with --execute --commit: commit per original transaction (a failure leaves the earlier ones "
        "applied, and names them)",
    )
    cmd.add_argument("--on-conflict", choices=("abort", "skip"), default="abort")
    cmd.add_argument(
        "--merge",
        action="store_true",
        help="with --execute: undo the incident column by column and keep what changed since (implies --net); "
        "a column changed since is a conflict with its three versions",
    )
    cmd.add_argument(
        "--resolutions",
        metavar="FILE",
        help="with --execute --merge: the JSON document that settles the merge's conflicts (keep_now, "
        "take_before, take_before_where_unchanged, column; per row, per table, default)",
    )
    cmd.add_argument(
        "--accept-triggers",
        action="store_true",
        help="with --execute: run even though the statements fire triggers again",
    )
    cmd.add_argument(
        "--accept-cascades",
        action="store_true",
        help="with --execute --commit: run even though foreign keys cascade (or cascaded) to child tables",
    )
    cmd.add_argument(
        "--accept-non-transactional",
        action="append",
        default=[],
        metavar="TABLE[,TABLE]",
        help="with --execute --commit: run on these non-transactional DB.TABLEs, whose changes a failure "
        "cannot roll back (repeatable)",
    )
    cmd.add_argument(
        "--lock-wait-timeout",
        type=int,
        default=DEFAULT_LOCK_WAIT_TIMEOUT,
        metavar="SECONDS",
        help=f"with --execute: how long a check waits for a row another session holds "
        f"(default {DEFAULT_LOCK_WAIT_TIMEOUT})",
    )
    cmd.add_argument(
        "--parallel",
        type=int,
        default=1,
        metavar="N",
        help="with --execute: apply over N connections whose rows are independent, all or nothing through "
        "XA (default 1); a death between prepare and commit is finished by `mysql-rollback xa-recover`",
    )


def _flashback(args: argparse.Namespace) -> int:
    import tempfile

    from rollback import (
        ConnectionOptions,
        Filters,
        Options,
        RangeSpec,
        SchemaSource,
        ServerSchema,
        check_plain,
        connect,
        generate,
        missing_local_files,
        parse_dsn,
    )

    for option, values in (
        ("--database", args.database),
        ("--table", args.table),
        ("--type", args.type),
        ("--gtid", [args.gtid] if args.gtid else []),
        ("--start-datetime", [args.start_datetime] if args.start_datetime else []),
        ("--stop-datetime", [args.stop_datetime] if args.stop_datetime else []),
    ):
        for value in values:
            check_plain(option, value)
    normalise(args)
    if args.debug:  # Spark's own log lines on stderr, and tracebacks of internal errors
        os.environ.setdefault("MYSQL_ROLLBACK_SPARK_LOG_LEVEL", "INFO")
        os.environ["MYSQL_ROLLBACK_DEBUG"] = "1"
    if args.server:
        if args.files:
            raise RangeError("give binlog files or --server, not both")
    else:
        alone = [
            flag
            for flag, value in (
                ("--start-file", args.start_file),
                ("--stop-file", args.stop_file),
                ("--spool", args.spool),
                ("--server-id", args.server_id),
            )
            if value is not None
        ]
        if alone:
            need = "needs" if len(alone) == 1 else "need"
            raise RangeError(
                f"{', '.join(alone)} {need} --server (with binlog files, give the files themselves)"
            )
        if not args.files:
            raise RangeError(
                "give binlog files, or a server (--server DSN, or -h HOST -u USER -p) and a range"
            )
    for path in missing_local_files(args.files)[:1]:
        raise RangeError(
            f"{path}: no such binlog file (with -R/--read-from-remote-server, names are the server's)"
        )
    if args.engine not in {kind.value for kind in EngineKind}:  # a default from ENGINE_ENV is not checked
        raise RangeError(f"{ENGINE_ENV} must be one of {', '.join(kind.value for kind in EngineKind)}")
    if args.execute and not args.target:
        raise RangeError("--execute needs --target")
    resolutions = _merge_arguments(args)
    if args.target:
        args.target = complete_dsn(args.target, args)
    types = args.type
    schema: SchemaSource | None = None
    if args.schema_dsn:
        address = parse_dsn(args.schema_dsn)
        connection = ConnectionOptions.of(address)
        where = connection.describe(connection.host(address.host), address.port)
        schema = ServerSchema(lambda: connect(args.schema_dsn), where, args.schema_dsn)
    elif args.schema_file:
        schema = _schema_file(args.schema_file)
    outcome = args.outcome
    outcome.range_asked = range_asked(args)
    binlog_server = None
    if args.server:
        rng, binlog_server = _server_range(args)
        if schema is None:
            schema = binlog_server
    else:
        rng = RangeSpec(
            list(args.files),
            args.start_position,
            args.stop_position,
            args.gtid,
            args.start_datetime,
            args.stop_datetime,
        )
    filters = Filters(
        set(args.database),
        set(args.table),
        types,
        args.thread_id,
        include_gtid=",".join(args.include_gtid) or None,
        exclude_gtid=",".join(args.exclude_gtid) or None,
        include_positions=args.include_position,
        exclude_positions=args.exclude_position,
        exclude_thread_ids=set(args.exclude_thread_id),
        include_query=args.include_query,
        exclude_query=args.exclude_query,
        where=args.where,
    )
    options = Options(
        mode=args.mode,
        full_where=args.full_where,
        rows_per_statement=args.rows_per_statement,
        net=getattr(args, "net", False),
        allow_partial=args.allow_partial,
        allow_partial_transactions=args.allow_partial_transactions,
        allow_empty=args.allow_empty,
        schema=schema,
        engine=args.engine,
        spark_master=args.spark_master or os.environ.get("MYSQL_ROLLBACK_SPARK_MASTER") or None,
        auto_spark_bytes=_auto_spark_bytes(),
        partition_bytes=args.partition_size,
        changes_format=args.changes_format,
        work_dir=args.work_dir,
        trust_schema=args.trust_schema,
        accept_lost_rows=args.accept_lost_rows,
        ddl=args.ddl,
        binlog_server=binlog_server if binlog_server is not schema else None,
    )
    with tempfile.TemporaryDirectory(prefix="mysql-rollback-") as tmp:
        script = args.output or os.path.join(tmp, "rollback.render.sql")
        plan = args.plan or (os.path.join(tmp, "plan.jsonl") if args.execute else None)
        bar = None if args.quiet else progress_display(sys.stderr)
        outcome.range_read = {
            "files": [os.path.basename(f) for f in rng.files],
            "start_position": rng.start_position,
            "stop_position": rng.stop_position,
        }
        jvm_log = None if args.debug or args.engine == "local" else os.path.join(tmp, "spark.log")
        try:
            with jvm_output_to(jvm_log):
                report = generate(rng, filters, options, script, plan, args.changes, progress=bar)
        except RollbackError as exc:
            outcome.cases.append(("generate the script", exc.one_line()))
            raise
        finally:
            if bar is not None and not args.execute:
                bar.close()
        _record_generation(outcome, report)
        for note in report.range_notes:  # what else the range holds: said before the script is used
            print(f"mysql-rollback: note: {note}", file=sys.stderr)
        if not args.output:
            with open(script, encoding="utf-8") as f:
                for line in f:
                    sys.stdout.write(line)
            sys.stdout.flush()
        if args.execute:
            assert plan is not None
            result = _execute(
                args,
                plan,
                commit=args.commit and not args.dry_run,
                single_transaction=not args.per_transaction,
                on_conflict=args.on_conflict,
                accept_triggers=args.accept_triggers,
                accept_cascades=args.accept_cascades,
                accept_non_transactional=[
                    t.strip() for item in args.accept_non_transactional for t in item.split(",") if t.strip()
                ],
                lock_wait_timeout=args.lock_wait_timeout,
                observer=bar,
                check_first=False,
                foreign_key_checks=report.no_fk_checks is None,
                **({"merge": True, "resolutions": resolutions} if args.merge else {}),
            )
            if bar is not None:
                bar.close()
            # The execution's result, with the engine that wrote the plan: words on a terminal, else one JSON line.
            engine = {"name": report.engine, "reason": report.engine_reason, "partitions": report.partitions}
            if summary.wants_text(sys.stderr, args.json):
                for line in summary.text_lines(result.to_dict(), outcome.counts, engine):
                    print(line, file=sys.stderr)
            else:
                print(summary.json_line(result.to_dict(), engine), file=sys.stderr)
            outcome.extra["execution"] = result.to_dict()
            outcome.conflicts = list(result.conflicts)
            outcome.cases.append(("execute on the target", None))
    if not args.execute:
        print(
            f"mysql-rollback: engine {report.engine} ({report.engine_reason}), {report.partitions} partition(s)",
            file=sys.stderr,
        )
    if report.irreversible_count:
        print(
            f"mysql-rollback: {report.irreversible_count} row change(s) could not be restored (listed in the script header)",
            file=sys.stderr,
        )
        return EXIT_INCOMPLETE
    return EXIT_OK


def _merge_arguments(args: argparse.Namespace) -> Any:
    """--merge and --resolutions checked: the resolutions read (or None). --merge implies --net."""
    from rollback import parse_resolutions

    if args.resolutions and not args.merge:
        raise RangeError("--resolutions settles the conflicts of --merge: add --merge")
    if not args.merge:
        return None
    if not args.execute:
        raise RangeError("--merge is a way to execute: add --execute --target DSN")
    args.net = True
    if not args.resolutions:
        return None
    try:
        with open(args.resolutions, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as exc:
        raise RangeError(f"--resolutions {args.resolutions}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise RangeError(f"--resolutions {args.resolutions}: not JSON: {exc}") from None
    return parse_resolutions(doc)


def _execute(args: argparse.Namespace, plan: str, **arguments: Any) -> Any:
    """The verified apply: on one connection, or with --parallel N over N, all or nothing through XA."""
    from rollback import ConflictError, RollbackError, default_xa_record_dir, execute_parallel, execute_plan

    if args.parallel == 1 and args.merge:
        try:
            return execute_plan(plan, args.target, **arguments)
        except ConflictError as exc:  # the unresolved conflicts, each with its three versions
            for line in summary.merge_conflict_lines(getattr(exc, "result", None)):
                print(line, file=sys.stderr)
            raise
    if args.parallel == 1:
        return execute_plan(plan, args.target, **arguments)
    if args.merge:
        raise RollbackError("--merge applies on one connection: run it without --parallel")
    if args.per_transaction:
        raise RollbackError("--parallel commits everything at once (XA): it cannot be --per-transaction")
    if arguments["accept_triggers"] or arguments["accept_non_transactional"]:
        raise RollbackError(
            "--parallel cannot apply statements that fire triggers or write non-transactional tables: "
            "run without it"
        )
    return execute_parallel(
        plan,
        args.target,
        args.parallel,
        commit=arguments["commit"],
        on_conflict=arguments["on_conflict"],
        accept_cascades=arguments["accept_cascades"],
        lock_wait_timeout=arguments["lock_wait_timeout"],
        observer=arguments["observer"],
        foreign_key_checks=arguments["foreign_key_checks"],
        record_dir=default_xa_record_dir(),
    )


def _xa_recover(args: argparse.Namespace) -> int:
    """Finish the prepared XA transactions a parallel apply left on the target, as its records say."""
    from rollback import connect, default_xa_record_dir, read_xa_records, recover_xa, redact

    directory = args.records or default_xa_record_dir()
    records = read_xa_records(directory)
    outcomes = recover_xa(lambda: connect(args.target), records, redact(args.target))
    for outcome in outcomes:
        print(f"mysql-rollback: {outcome.line}", file=sys.stderr)
        if outcome.action != "left prepared":
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(directory, f"{outcome.gtrid}.json"))
    if not outcomes:
        print(
            f"mysql-rollback: {redact(args.target)} holds no prepared transaction of a parallel apply",
            file=sys.stderr,
        )
    return EXIT_INCOMPLETE if any(o.action == "left prepared" for o in outcomes) else EXIT_OK


def _record_generation(outcome: CommandReport, report: Any) -> None:
    facts = report.to_dict()
    outcome.counts = facts["counts"]
    outcome.warnings = list(report.warnings)
    outcome.range_read = {
        **(outcome.range_read or {}),
        "bytes": report.bytes_total,
        "events": report.events_total,
        "transactions": report.transactions,
    }
    outcome.extra["range_notes"] = facts["range_notes"]
    outcome.extra["irreversible"] = facts["irreversible"]
    outcome.extra["irreversible_count"] = report.irreversible_count
    outcome.extra["statements"] = report.statements
    outcome.extra["engine"] = report.engine
    outcome.extra["schema_check"] = facts["schema_check"]
    outcome.cases.append(
        (
            "generate the script",
            f"{report.irreversible_count} row change(s) could not be restored"
            if report.irreversible_count
            else None,
        )
    )


def _rows_per_statement(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 100_000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of rows from 1 to 100000")
    return value


def _auto_spark_bytes() -> int:
    """MYSQL_ROLLBACK_AUTO_SPARK_BYTES (a size such as 256M), else the engine's default."""
    value = os.environ.get("MYSQL_ROLLBACK_AUTO_SPARK_BYTES")
    if not value:
        return AUTO_SPARK_BYTES
    try:
        return _size(value)
    except argparse.ArgumentTypeError as exc:
        raise RangeError(f"MYSQL_ROLLBACK_AUTO_SPARK_BYTES: {exc}") from None


def _server_range(args: argparse.Namespace) -> tuple[Any, Any]:
    """--server: the range resolved against the server and spooled; (RangeSpec, the server's schema).
    The server's warnings (row images, resolution) go to stderr, one line each."""
    from pathlib import Path

    from rollback import check_server_range, default_spool_dir, resolve_server_range

    timed = bool(args.start_datetime or args.stop_datetime)
    check_server_range(
        args.start_file, args.start_position, args.stop_file, args.stop_position, args.gtid, timed
    )
    found = resolve_server_range(
        args.server,
        Path(args.spool) if args.spool is not None else default_spool_dir(create=True),
        args.start_file,
        args.start_position,
        args.stop_file,
        args.stop_position,
        args.gtid,
        args.start_datetime,
        args.stop_datetime,
        server_id=args.server_id,
    )
    for warning in found.warnings:
        print(f"mysql-rollback: warning: {' '.join(warning.split())}", file=sys.stderr)
    args.outcome.warnings.extend(" ".join(w.split()) for w in found.warnings)
    return found.rng, found.schema


def _size(text: str) -> int:
    """A byte count: 67108864, 64M, 512k, 1G."""
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _schema_file(path: str) -> rollback.SchemaSource:
    try:
        return rollback.schema_from_file(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise RangeError(f"--schema-file {path}: cannot read it ({exc})") from None


def _decode(args: argparse.Namespace) -> int:
    render = rollback.record_json if args.format == "jsonl" else rollback.record_text
    out = sys.stdout
    counts: Counter[tuple[str, str]] = Counter()
    args.outcome.range_asked = {
        "files": [os.path.basename(f) for f in args.files],
        "start_position": args.start_position,
        "stop_position": args.stop_position,
    }
    schema = _schema_file(args.schema_file) if args.schema_file else None
    with rollback.file_records(
        args.files, args.start_position, args.stop_position, not args.no_verify, schema
    ) as records:
        try:
            for record in records:
                counts[(f"{record['database']}.{record['table']}", record["type"])] += 1
                out.write(render(record))
                out.write("\n")
            out.flush()
        except BrokenPipeError:
            # whoever read our output went away (`| head`): stop quietly, as cat does
            os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
        finally:
            args.outcome.counts = [{"table": t, "type": k, "rows": n} for (t, k), n in sorted(counts.items())]
    return 0


def _add_plugin_commands(sub: argparse._SubParsersAction) -> None:
    """Commands of other installed packages (the service adds `serve` and `db`); the engine imports none of them."""
    from importlib.metadata import entry_points

    for entry in entry_points(group="mysql_rollback.commands"):
        entry.load()(sub)


def _say(json_lines: bool, what: str, message: str) -> None:
    """The one line a failed command leaves on stderr: `mysql-rollback: error: ...`, or with
    MYSQL_ROLLBACK_LOG_FORMAT=json a JSON log line whose event is the message."""
    if json_lines:
        logging.getLogger("mysql_rollback.cli").error(
            message if what in ("", "error") else f"{what}: {message}"
        )
    else:
        print(f"mysql-rollback: {what}: {message}" if what else f"mysql-rollback: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    from rollback import configure_logging

    raw = list(sys.argv[1:] if argv is None else argv)
    try:
        json_lines = configure_logging(deferred=True) == "json"
    except RollbackError as exc:
        print(f"mysql-rollback: error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    argv_checked = bare_password(raw)
    words = [a for a in argv_checked if not a.startswith("-")]
    parser = build_parser(words[0] if words else "--version" if "--version" in argv_checked else None)
    try:
        args = parser.parse_args(argv_checked)
    except SystemExit as exc:
        if exc.code not in (0, None):
            _report_bad_arguments(raw, _Parser.last_error)
        raise
    args.outcome = outcome = CommandReport(args.command)
    code = _run(args, json_lines)
    outcome.exit_code = code
    try:
        write_outputs(args, outcome)
    except OSError as exc:
        _say(json_lines, "error", f"cannot write the report: {' '.join(str(exc).split())}")
        return code or EXIT_REFUSED
    return code


def _run(args: argparse.Namespace, json_lines: bool) -> int:
    outcome: CommandReport = args.outcome
    try:
        return int(args.func(args) or 0)
    except RollbackError as exc:
        _say(json_lines, "error", exc.one_line())
        outcome.error = exc.one_line()
        if exc.exit_code == EXIT_REFUSED:
            outcome.refusals.append(exc.one_line())
        result = getattr(exc, "result", None)
        if result is not None and hasattr(result, "to_dict"):
            outcome.extra["execution"] = result.to_dict()
            outcome.conflicts = list(getattr(result, "conflicts", []))
        if getattr(args, "execute", False) and len(outcome.cases) == 1:
            outcome.cases.append(("execute on the target", exc.one_line()))
        return exc.exit_code
    except KeyboardInterrupt:
        _say(json_lines, "", "interrupted")
        outcome.error = "interrupted"
        return EXIT_INTERRUPTED
    except OSError as exc:  # an output path that cannot be written, a file that vanished...
        _say(json_lines, "error", " ".join(str(exc).split()))
        outcome.error = " ".join(str(exc).split())
        return EXIT_REFUSED
    except Exception as exc:  # a bug: still one line, never a traceback (MYSQL_ROLLBACK_DEBUG=1 shows it)
        if os.environ.get("MYSQL_ROLLBACK_DEBUG"):
            raise
        text = " ".join(str(exc).split())[:500]
        _say(json_lines, "internal error", f"{type(exc).__name__}: {text} (please report it)")
        outcome.error = f"internal error: {type(exc).__name__}: {text}"
        return EXIT_INTERNAL


def _report_bad_arguments(raw: list[str], message: str | None) -> None:
    """A command line argparse refused still leaves its --report, when one was named."""
    command, path = report_path_in(raw)
    if not path:
        return
    refused = CommandReport(command or "", exit_code=EXIT_REFUSED, error=message or "bad arguments")
    refused.refusals.append(refused.error or "")
    try:
        write_outputs(argparse.Namespace(report=path), refused)
    except OSError:
        pass  # the one line argparse printed says what is wrong


if __name__ == "__main__":
    sys.exit(main())
