"""The script's header: what the job read, selected, found and could not restore, as comment lines.

Every line is a comment line: names, file names, filter values and the server's version are
escaped there (rollback/base/render_text.py), so that none of them can start a line of its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rollback.base.render_text import comment_line
from rollback.base.version import __version__
from rollback.job.report import Report
from rollback.pipeline.dependencies import describe as describe_dependency
from rollback.request.spec import Filters, RangeSpec
from rollback.schema.side_effects import SIDE_EFFECTS

PARTIAL_LISTED = 20  # partial transactions the header names one by one (the report lists more)

SCRIPT_PRELUDE = (
    "SET NAMES utf8mb4;\nSET time_zone = '+00:00';\nSET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO';\n"
)
_MODES = {
    "flashback": "flashback (reverse SQL, newest change first)",
    "forward": "forward SQL",
}


def timeline_lines(timeline: dict[str, Any]) -> list[str]:
    """A table's schema timeline (schema_history.Timeline.to_dict()) as header lines."""
    out = [f"schema timeline of {timeline['table']}:"]
    for item in timeline["epochs"]:
        via = f" (after {item['ddl']})" if item["ddl"] else ""
        out.append(f"  {item['from']} .. {item['until']}: {item['definition']}{via}")
    return out


def script_header(
    mode: str,
    rng: RangeSpec,
    filters: Filters,
    report: Report,
    unchecked: list[str],
    irreversible: Iterable[dict[str, Any]],
) -> str:
    """The header lines and the session settings every script starts with.

    `unchecked`: labels of the files without event checksums; `irreversible`: every row change the
    binlog's images cannot restore."""
    lines = [
        f"mysql-rollback {__version__}: {_MODES.get(mode, 'change log only (no SQL)')}",
        f"range: {rng.describe()}",
    ]
    if rng.start_datetime or rng.stop_datetime:
        lines.append("datetimes without an explicit offset are read as UTC")
    lines.append(f"filters: {filters.describe()}")
    lines.append(f"server version: {report.server_version or '-'}")
    for label in unchecked:
        lines.append(
            f"note: {label} has no event checksums (binlog_checksum=NONE): corruption cannot be detected"
        )
    lines.append(f"row images seen: {', '.join(sorted(report.row_images)) or '-'}")
    lines.append(f"schema: {report.schema_source}; checked: {report.schema_check}")
    if report.ddl_mode != "refuse":
        lines.append(f"ddl: {report.ddl_mode}")
    for timeline in report.timelines:
        lines.extend(timeline_lines(timeline))
    lines.append(f"transactions: {report.transactions}, statements: {report.statements}")
    largest = report.largest_statement
    if largest is not None:
        lines.append(
            f"largest statement: {largest['bytes']} bytes ({largest['table']} at {largest['file']}:{largest['pos']})"
        )
    for (table, kind), rows in sorted(report.counts.items()):
        lines.append(f"rows: {table} {kind} {rows}")
    if mode == "flashback":
        found = report.side_effects
        if found is None:
            state = "not checked (no schema server)"
        else:
            state = "see the warnings below" if any(found.values()) else "none found"
        lines.append(f"{SIDE_EFFECTS}: {state}; execution checks them at the target")
    if report.partial_transaction_count:
        lines.append(
            f"partial transactions: {report.partial_transaction_count}, undone in part as "
            "--allow-partial-transactions accepted"
        )
    for item in report.partial_transactions[:PARTIAL_LISTED]:
        if "left_out" in item:
            what = f"left out by the filters: {', '.join(item['left_out'])}"
        else:
            what = f"{item['picked']} row(s) undone, {item['dropped']} left as they are"
        lines.append(
            f"partial transaction (--allow-partial-transactions): gtid={item['gtid'] or '-'} at "
            f"{item['file']}:{item['pos']}: {what}"
        )
    if report.dependencies is not None:
        lines.append(
            f"dependent rows: {report.dependency_count} (changed again by an excluded transaction after a "
            "selected one: the reverse statement overwrites that change; execution's check refuses it)"
        )
        for item in report.dependencies:
            lines.append(f"dependent: {describe_dependency(item)}")
    for item in report.lost_rows:
        lines.append(
            f"rows lost without row events (--accept-lost-rows): {item['file']}:{item['pos']}: {item['sql']} "
            f"(tables: {', '.join(item['tables']) or 'unknown'}): this rollback does not bring them back"
        )
    for warning in report.warnings:
        lines.append(f"warning: {warning}")
    for item in irreversible:
        why = f"missing {', '.join(item['missing'])}" if item["missing"] else item["reason"]
        lines.append(
            f"irreversible: {item['type']} on {item['table']} at {item['file']}:{item['pos']} "
            f"row {item['row']} ({why})"
        )
    prelude = SCRIPT_PRELUDE
    off = report.no_fk_checks
    if off is not None and mode != "changes":
        lines.append(
            f"foreign_key_checks: the incident ran with foreign_key_checks=0 (first at {off['file']}:{off['pos']}, "
            f"{off['table']}): the script sets it for its session too, since its statements meet the rows in the "
            "order the incident left them"
        )
        prelude += "SET SESSION foreign_key_checks = 0;\n"
    return "".join(comment_line(line) + "\n" for line in lines) + prelude
