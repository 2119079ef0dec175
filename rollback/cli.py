"""The `mysql-rollback` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

from rollback.errors import RangeError, RollbackError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mysql-rollback", description="Undo mistaken changes from the binlog."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    decode = sub.add_parser("decode", help="print every row change of binlog files")
    decode.add_argument("files", nargs="+", metavar="FILE")
    decode.add_argument("--start-position", type=int, default=None, help="in the first file")
    decode.add_argument("--stop-position", type=int, default=None, help="in the last file")
    decode.add_argument("--format", choices=("jsonl", "text"), default="jsonl")
    decode.add_argument("--no-verify", action="store_true", help="do not verify CRC32 checksums")
    decode.set_defaults(func=_decode)

    _add_plugin_commands(sub)
    return parser


def _decode(args: argparse.Namespace) -> int:
    from rollback.binlog.decode import decode_rows, decode_stream, state_at
    from rollback.binlog.reader import BinlogFile
    from rollback.binlog.rows import RowsEvent
    from rollback.records import batch_records, record_json, record_text

    render = record_json if args.format == "jsonl" else record_text
    out = sys.stdout
    last = len(args.files) - 1
    for index, path in enumerate(args.files):
        with BinlogFile(path) as binlog:
            start = args.start_position if index == 0 and args.start_position else 4
            stop = args.stop_position if index == last and args.stop_position else binlog.size
            if stop > binlog.size:
                raise RangeError(f"{path}: stop position {stop} is past the end of the file ({binlog.size})")
            if stop < start:
                raise RangeError(f"{path}: stop position {stop} is before start position {start}")
            state = state_at(binlog.buf, binlog.facts, start, binlog.path)
            for decoded in decode_stream(binlog.buf, state, start, stop, verify=not args.no_verify):
                if isinstance(decoded.event, RowsEvent):
                    batch = decode_rows(decoded, decoded.event, state)
                    for record in batch_records(batch):
                        out.write(render(record))
                        out.write("\n")
    out.flush()
    return 0


def _add_plugin_commands(sub: argparse._SubParsersAction) -> None:
    """Commands of other installed packages (the service adds `serve` and `db`); the engine imports none of them."""
    for entry in entry_points(group="mysql_rollback.commands"):
        entry.load()(sub)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except RollbackError as exc:
        print(f"mysql-rollback: error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("mysql-rollback: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
