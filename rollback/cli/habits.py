"""What a binlog2sql or mysqlbinlog user types, on `flashback` and `sql`: the server as -h/-P/-u/-p
(`cli_connection`), `-R` with the server's file names, binlog2sql's spellings (`--sql-type`,
`--start-pos`, `--end-file`, `-B/--flashback`, `--only-dml`, several names after one `-d`/`-t`),
bare table names that belong to the `-d` databases, and `--stop-never` refused with its reason.

`normalise` turns these into the one form the rest of the command reads (`args.server`,
`args.table` as DB.TABLE, `args.type` as a set); it runs before anything connects or reads.
"""

from __future__ import annotations

import argparse
import os
import re

from rollback import RangeError
from rollback.cli.connection import complete_dsn, connection_given, server_from_options, server_named

STOP_NEVER = (
    "--stop-never: mysql-rollback reverses a closed range and does not follow the log; give "
    "--stop-datetime or --stop-position (without them the range ends where the log ends now)"
)
TYPES = ("insert", "update", "delete")
BINLOG_NAME = re.compile(r"[^.\s]+\.[0-9]{6,}")


def add_habit_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "-R",
        "--read-from-remote-server",
        action="store_true",
        help="as in mysqlbinlog: the BINLOG_FILE names are the server's files (first to last), read over "
        "the replication protocol",
    )
    cmd.add_argument(
        "-B",
        "--flashback",
        dest="flashback_mode",
        action="store_true",
        help="as in binlog2sql and mariadb-binlog: the reverse SQL (on `sql`, the same as `flashback`)",
    )
    cmd.add_argument(
        "--only-dml",
        action="store_true",
        help="as in binlog2sql; always so: the script holds row changes only (DDL on a changed table "
        "inside the range is refused, see docs/safety.md)",
    )
    cmd.add_argument("--stop-never", action="store_true", help="refused: mysql-rollback reads a closed range")


def normalise(args: argparse.Namespace) -> None:
    """The habits in their one form; RangeError (exit 2) for what cannot mean anything."""
    if args.stop_never:
        raise RangeError(STOP_NEVER)
    if args.flashback_mode:
        args.mode = "flashback"
    for option, values in (
        ("-d/--database", args.database),
        ("-t/--table", args.table),
        ("--type", args.type),
    ):
        refuse_file_names(option, values)
    _server(args)
    args.table = qualified_tables(args.table, args.database)
    types = {t.strip().lower() for item in args.type for t in item.split(",") if t.strip()}
    if types - set(TYPES):
        raise RangeError(
            f"--type takes insert, update, delete (got {' '.join(args.type)}; --sql-type is the same)"
        )
    args.type = types


def _server(args: argparse.Namespace) -> None:
    options = connection_given(args)
    if args.server and options:
        raise RangeError("give the server as --server DSN or as -h/-P/-u/-p, not both")
    if not args.server and (args.read_from_remote_server or not args.files):
        options = server_named(args)  # a host in ~/.my.cnf, --defaults-file or --login-path is the server
    if args.read_from_remote_server:
        if args.server is None and not options:
            raise RangeError(
                "-R/--read-from-remote-server needs the server: -h HOST (-u, -p), host= in an option "
                "file, or --server DSN"
            )
        if args.files:
            if args.start_file or args.stop_file:
                raise RangeError(
                    "with -R, name the server's files as BINLOG_FILE or with --start-file, not both"
                )
            args.start_file, args.stop_file = args.files[0], args.files[-1]
            args.files = []
    if args.server:
        args.server = complete_dsn(args.server, args)
    elif options and not args.files:
        args.server = server_from_options(args)
    elif options:
        # local files with -h/-u: the server gives the schema (binlog2sql's column names come from it)
        if args.schema_dsn or args.schema_file:
            raise RangeError(
                "-h/-P/-u/-p with local binlog files name the schema server: give it or --schema-dsn/--schema-file, "
                "not both (with -R the files are the server's)"
            )
        args.schema_dsn = server_from_options(args)
        return
    if args.schema_dsn:
        args.schema_dsn = complete_dsn(args.schema_dsn, args)


def refuse_file_names(option: str, values: list[str]) -> None:
    """-d, -t and --type take several values, so binlog files written after them would be read as names
    and the range would silently lose them: a value that is a file here, or is named like a binlog file
    (NAME.000042: no database or table is), is refused rather than guessed."""
    for value in values:
        if os.path.isfile(value) or BINLOG_NAME.fullmatch(value):
            raise RangeError(
                f"{option} {value}: a binlog file after {option.split('/')[0]}, which takes several names; "
                "put the binlog files before it, or end its names with --"
            )


def qualified_tables(tables: list[str], databases: list[str]) -> list[str]:
    """-t names as DB.TABLE: a bare name belongs to each -d database. Without -d a bare name is kept:
    it selects nothing, and the job's empty-range error (exit 4) says which DB.TABLE the files hold."""
    out: list[str] = []
    for name in tables:
        if "." in name:
            out.append(name)
        elif databases:
            out.extend(f"{database}.{name}" for database in databases)
        else:
            out.append(name)
    return out
