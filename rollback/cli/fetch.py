"""`mysql-rollback fetch`: copy a server's binlog range into local binlog files, and nothing else.

Like `mysqlbinlog --read-from-remote-server --raw`: the files land in `<spool>/<server>/` under
their own names and are printed one per line; a second run over the same range reuses them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rollback.base.errors import SourceError
from rollback.cli.connection import (
    add_connection_options,
    complete_dsn,
    connection_given,
    server_from_options,
    server_named,
)
from rollback.cli.report import add_report_options

SPOOL_ENV = "MYSQL_ROLLBACK_SPOOL"


def default_fetch_dir() -> Path:
    return Path(os.environ.get(SPOOL_ENV, "spool"))


def add_fetch_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "fetch",
        add_help=False,
        help="copy a server's binlog range into local binlog files",
        description="Read a range of a server's binary log over the replication protocol and write it "
        "as local binlog files (like mysqlbinlog --read-from-remote-server --raw). Prints the files.",
    )
    parser.add_argument("--help", action="help", help="show this help (-h is the host, as in mysql)")
    parser.add_argument(
        "--server",
        metavar="DSN",
        help="mysql://user:password@host:port/ (without a password: -p, an option file or $MYSQL_PWD); "
        "or -h/-P/-u/-p",
    )
    parser.add_argument(
        "--start-file", required=True, metavar="FILE", help="first binlog file, e.g. mysql-bin.000042"
    )
    parser.add_argument(
        "--start-position", type=int, metavar="N", help="an event boundary in the start file (4)"
    )
    parser.add_argument("--stop-file", metavar="FILE", help="last binlog file (default: the current one)")
    parser.add_argument(
        "--stop-position",
        type=int,
        metavar="N",
        help="where the range ends, exclusive, in the stop file (or the start file when no stop file is given); "
        "default: the end of the stop file, or of the log when the fetch starts",
    )
    parser.add_argument(
        "--spool",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"spool directory (default: ${SPOOL_ENV} or ./spool)",
    )
    parser.add_argument(
        "--server-id", type=int, default=None, metavar="N", help="replica server id (default: random, high)"
    )
    parser.add_argument(
        "--name", default=None, help="the server's directory in the spool (default: host_port)"
    )
    add_connection_options(parser, "the server")
    add_report_options(parser)
    parser.set_defaults(func=run_fetch)
    return parser


def run_fetch(args: argparse.Namespace) -> int:
    from rollback.sources.ranges import position_range  # the server side: only for this command
    from rollback.sources.server import BinlogServer
    from rollback.sources.spool import spool_range

    if args.server and connection_given(args):
        raise SourceError("give the server as --server DSN or as -h/-P/-u/-p, not both")
    if not args.server and not server_named(args):
        raise SourceError(
            "fetch needs the server: --server DSN, -h HOST -u USER -p, or host= in an option file"
        )
    dsn = complete_dsn(args.server, args) if args.server else server_from_options(args)
    spool_dir = args.spool if args.spool is not None else default_fetch_dir()
    with BinlogServer(dsn, server_id=args.server_id) as server:
        server.check()
        rng = position_range(server, args.start_file, args.start_position, args.stop_file, args.stop_position)
        try:
            spool = spool_range(server, rng, spool_dir, args.name)
        except OSError as exc:
            raise SourceError(f"cannot write the spool in {spool_dir}: {exc.strerror or exc}") from None
    args.outcome.range_asked = {
        k: v
        for k, v in (
            ("start_file", args.start_file),
            ("start_position", args.start_position),
            ("stop_file", args.stop_file),
            ("stop_position", args.stop_position),
        )
        if v is not None
    }
    args.outcome.range_read = {"files": [str(spooled.path) for spooled in spool.files]}
    for spooled in spool.files:
        print(spooled.path)
    sys.stdout.flush()
    return 0
