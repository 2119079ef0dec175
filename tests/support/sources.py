"""Fixtures of the live-source tests: a table on the scratch server, the fetch command as the CLI runs it."""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from rollback.binlog.reader import BinlogFile
from rollback.cli import commands as cli
from rollback.cli.fetch import add_fetch_command

_tables = itertools.count(1)


@pytest.fixture
def table(scratch_server) -> str:
    """A fresh table `sources.tN (id INT PRIMARY KEY, v VARCHAR(64))` on the default scratch server."""
    name = f"sources.t{next(_tables)}"
    scratch_server.run_sql(
        ["CREATE DATABASE IF NOT EXISTS sources", f"CREATE TABLE {name} (id INT PRIMARY KEY, v VARCHAR(64))"]
    )
    return name


@pytest.fixture
def fetch_cli(monkeypatch, capsys) -> Callable[..., tuple[int, str, str]]:
    """Run `mysql-rollback fetch ...` through rollback.cli.commands.main; returns (exit code, stdout, stderr)."""

    def build_parser(command: str | None = None) -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(prog="mysql-rollback")
        add_fetch_command(parser.add_subparsers(dest="command", required=True))
        return parser

    monkeypatch.setattr(cli, "build_parser", build_parser)

    def run(*argv: str) -> tuple[int, str, str]:
        code = cli.main(["fetch", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def event_positions(path: Path) -> list[tuple[int, int]]:
    """(position, type code) of every event of a binlog file, every CRC verified."""
    with BinlogFile(path) as binlog:
        return [(e.pos, e.type_code) for e in binlog.events(verify=True)]


ENGINE = ("--engine", "local")  # a job that needs no Spark


def run_cli_in_process(capsys, *argv: str) -> tuple[int, str, str]:
    """`mysql-rollback ARGV` in-process: (exit code, stdout, stderr)."""
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err
