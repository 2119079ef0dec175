"""`--report FILE` (JSON) and `--junit FILE` (JUnit XML) of every command, written on failure too.

A command fills its `CommandReport` (`args.outcome`) as it goes; `main` sets the exit code and the
error line and writes the files whatever happened, so that a CI job always has an answer to read.
The `result` word follows the exit code (docs/safety.md); `verify` uses its own words
(restored / differs / error) and adds its per-table verdicts.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rollback import redact
from rollback.base.output_files import write_bytes

RESULTS = {
    0: "ok",
    1: "internal error",
    2: "refused",
    3: "incomplete",
    4: "empty",
    5: "differs",
    130: "interrupted",
}


def add_report_options(parser: argparse.ArgumentParser, junit: str | None = None) -> None:
    """--report, and --junit when `junit` says what its test cases are."""
    parser.add_argument(
        "--report", metavar="FILE", help="write the outcome as JSON here, on failure too (see docs/ci.md)"
    )
    if junit:
        parser.add_argument("--junit", metavar="FILE", help=f"write a JUnit XML file here: {junit}")


@dataclass
class CommandReport:
    command: str
    exit_code: int = 0
    error: str | None = None
    result: str | None = None  # None: the word of the exit code
    counts: list[dict[str, Any]] = field(default_factory=list)  # {table, type, rows}
    warnings: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    conflicts: list[Any] = field(default_factory=list)
    range_asked: dict[str, Any] | None = None
    range_read: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # the command's own facts
    cases: list[tuple[str, str | None]] = field(default_factory=list)  # JUnit: (name, failure or None)
    junit: bytes | None = None  # a command's own JUnit document (verify: one case per table)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "command": self.command,
            "result": self.result or RESULTS.get(self.exit_code, "error"),
            "exit_code": self.exit_code,
            "error": self.error,
            "counts": self.counts,
            "warnings": self.warnings,
            "refusals": self.refusals,
            "conflicts": self.conflicts,
            "range_asked": self.range_asked,
            "range_read": self.range_read,
        }
        out.update(self.extra)
        return out

    def junit_xml(self) -> bytes:
        from xml.etree import ElementTree  # only for --junit

        if self.junit is not None:
            return self.junit
        cases = list(self.cases) or [(self.command, None)]
        if self.error and all(failure is None for _, failure in cases):
            cases.append(
                (f"{self.command}: {self.result or RESULTS.get(self.exit_code, 'error')}", self.error)
            )
        suite = ElementTree.Element("testsuite", name=f"mysql-rollback {self.command}")
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(1 for _, failure in cases if failure)))
        for name, failure in cases:
            case = ElementTree.SubElement(suite, "testcase", classname=self.command, name=name)
            if failure:
                ElementTree.SubElement(case, "failure", message=failure).text = failure
        return ElementTree.tostring(suite, encoding="utf-8", xml_declaration=True)


def write_outputs(args: argparse.Namespace, report: CommandReport) -> None:
    """The report files the command line asked for (OSError when one cannot be written)."""
    if getattr(args, "report", None):
        write_bytes(args.report, (json.dumps(report.to_dict(), ensure_ascii=False, indent=1) + "\n").encode())
    if getattr(args, "junit", None):
        write_bytes(args.junit, report.junit_xml())


def report_path_in(argv: Sequence[str]) -> tuple[str | None, str | None]:
    """(command, --report FILE) read from raw arguments, for a command line argparse refused."""
    command = next((a for a in argv if not a.startswith("-")), None)
    for i, arg in enumerate(argv):
        if arg == "--report" and i + 1 < len(argv):
            return command, argv[i + 1]
        if arg.startswith("--report="):
            return command, arg.split("=", 1)[1]
    return command, None


def range_asked(args: argparse.Namespace) -> dict[str, Any]:
    """The range as the command line gave it (a server without its password)."""
    asked = {
        name: getattr(args, name, None)
        for name in (
            "start_file",
            "start_position",
            "stop_file",
            "stop_position",
            "gtid",
            "start_datetime",
            "stop_datetime",
        )
    }
    asked["files"] = [os.path.basename(f) for f in getattr(args, "files", []) or []]
    server = getattr(args, "server", None)
    asked["server"] = redact(server) if server else None
    return {k: v for k, v in asked.items() if v not in (None, [])}
