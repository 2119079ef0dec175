"""What a job tells its caller: progress while it runs, the report when it is done."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

IRREVERSIBLE_KEPT = 1000  # irreversible changes listed in Report.irreversible (the script lists all)
PARTIAL_KEPT = 1000  # partial transactions listed in Report.partial_transactions (the count says all)


@dataclass
class Progress:
    """How far a job is: bytes and events of the range read, over the totals the plan found."""

    bytes_done: int
    bytes_total: int
    events_done: int
    events_total: int
    partitions: int
    engine: str
    # decoding (each partition decodes, inverts and renders), then merging (the parts into one script;
    # rows is then the number of row changes); a caller that has heard nothing yet is planning
    phase: str = "decoding"
    rows: int | None = None

    @property
    def fraction(self) -> float:
        return self.bytes_done / self.bytes_total if self.bytes_total else 1.0


ProgressCallback = Callable[[Progress], None]


@dataclass
class Report:
    counts: Counter = field(default_factory=Counter)  # (db.table, type) -> rows
    transactions: int = 0
    statements: int = 0
    irreversible: list[dict[str, Any]] = field(default_factory=list)  # the first IRREVERSIBLE_KEPT
    irreversible_count: int = 0
    warnings: list[str] = field(default_factory=list)
    server_version: str = ""
    row_images: set[str] = field(default_factory=set)
    ddl: list[dict[str, Any]] = field(default_factory=list)
    bytes_total: int = 0
    events_total: int = 0
    partitions: int = 0
    engine: str = ""
    engine_reason: str = ""  # why that engine: asked for, or auto's reason (the range's size)
    # what the statements set off at the schema server (side_effects.SideEffects.to_dict());
    # None: not checked (no schema server, or not a flashback)
    side_effects: dict[str, Any] | None = None
    # The first of the longest statements: {bytes (UTF-8, as written), table, file, pos}; None without any.
    largest_statement: dict[str, Any] | None = None
    # The transactions with the most statements, most first: {gtid, file, position, statements, tables}.
    largest_transactions: list[dict[str, Any]] = field(default_factory=list)
    schema_source: str = ""  # where column names came from: binlog metadata, a server, a DDL file
    schema_check: str = ""  # how the source was proven to describe the tables at the range's time
    # Rows a selected change and a later excluded change both touched (pipeline/dependencies.py):
    # the first DEPENDENTS_KEPT, and how many in all; None: not looked for (no picks).
    dependencies: list[dict[str, Any]] | None = None
    dependency_count: int = 0
    # Transactions undone in part (--allow-partial-transactions): {gtid, file, pos, picked, dropped}
    # when row picks took part of its rows, {gtid, file, pos, left_out} when table or type filters left
    # out some of its tables or statement types; the first PARTIAL_KEPT, and how many in all
    partial_transactions: list[dict[str, Any]] = field(default_factory=list)
    partial_transaction_count: int = 0
    # --ddl keep | reverse: each changed table's definitions and the positions they applied to
    # (schema_history.Timeline.to_dict()), and the columns of old images that were not written
    timelines: list[dict[str, Any]] = field(default_factory=list)
    ddl_mode: str = "refuse"
    # Statements of the range that destroyed rows without row events (TRUNCATE, DROP TABLE, DROP DATABASE
    # of tables it has no row changes for), accepted by Options.accept_lost_rows: {file, pos, sql, tables}
    lost_rows: list[dict[str, Any]] = field(default_factory=list)
    # The first selected row change the incident made with foreign_key_checks=0 {file, pos, table}:
    # the script then runs with it too
    no_fk_checks: dict[str, Any] | None = None
    # what the range holds besides the incident (range_notes.py): also in `warnings`, said apart on stderr
    range_notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": [{"table": t, "type": k, "rows": n} for (t, k), n in sorted(self.counts.items())],
            "transactions": self.transactions,
            "statements": self.statements,
            "irreversible": self.irreversible,
            "irreversible_count": self.irreversible_count,
            "warnings": self.warnings,
            "server_version": self.server_version,
            "row_images": sorted(self.row_images),
            "ddl": self.ddl,
            "bytes_total": self.bytes_total,
            "events_total": self.events_total,
            "partitions": self.partitions,
            "engine": self.engine,
            "engine_reason": self.engine_reason,
            "side_effects": self.side_effects,
            "largest_statement": self.largest_statement,
            "largest_transactions": self.largest_transactions,
            "schema_check": {"source": self.schema_source, "checked": self.schema_check},
            "dependencies": self.dependencies,
            "dependency_count": self.dependency_count,
            "partial_transactions": self.partial_transactions,
            "partial_transaction_count": self.partial_transaction_count,
            "ddl_mode": self.ddl_mode,
            "range_notes": self.range_notes,
            "schema_timelines": self.timelines,
            "lost_rows": self.lost_rows,
            "no_fk_checks": self.no_fk_checks,
        }
