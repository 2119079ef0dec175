"""The `mysql-rollback` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

from rollback.errors import RollbackError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mysql-rollback", description="Undo mistaken changes from the binlog."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    _add_plugin_commands(sub)
    return parser


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
