"""`mysql-rollback fetch`: copy a server's binlog range into local binlog files, and nothing else.

Like `mysqlbinlog --read-from-remote-server --raw`: the files land in `<spool>/<server>/` under
their own names and are printed one per line; a second run over the same range reuses them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rollback.errors import SourceError
from rollback.sources.ranges import position_range
from rollback.sources.server import BinlogServer
from rollback.sources.spool import spool_range

SPOOL_ENV = "MYSQL_ROLLBACK_SPOOL"


def default_fetch_dir() -> Path:
    return Path(os.environ.get(SPOOL_ENV, "spool"))


def add_fetch_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "fetch",
        help="copy a server's binlog range into local binlog files",
        description="Read a range of a server's binary log over the replication protocol and write it "
        "as local binlog files (like mysqlbinlog --read-from-remote-server --raw). Prints the files.",
    )
    parser.add_argument(
        "--server",
        required=True,
        metavar="DSN",
        help="mysql://user:password@host:port/ (without a password, $MYSQL_PWD is used)",
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
    parser.set_defaults(func=run_fetch)
    return parser


def run_fetch(args: argparse.Namespace) -> int:
    spool_dir = args.spool if args.spool is not None else default_fetch_dir()
    with BinlogServer(args.server, server_id=args.server_id) as server:
        server.check()
        rng = position_range(server, args.start_file, args.start_position, args.stop_file, args.stop_position)
        try:
            spool = spool_range(server, rng, spool_dir, args.name)
        except OSError as exc:
            raise SourceError(f"cannot write the spool in {spool_dir}: {exc.strerror or exc}") from None
    for spooled in spool.files:
        print(spooled.path)
    sys.stdout.flush()
    return 0
