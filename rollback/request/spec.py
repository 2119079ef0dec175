"""What a job is asked to do: the range, the filters, the options, and the rules they must meet.

The one place where range rules live and where GTID and time texts are parsed: the CLI, the
service and the job all check a request here, and read the parsed forms from the request itself
(`RangeSpec.gtid_filter`, `RangeSpec.since`, `RangeSpec.until`), so each text is parsed once.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from functools import cached_property
from typing import Any

from rollback.base.errors import RangeError
from rollback.base.render_text import check_plain
from rollback.binlog.gtid import GtidSet
from rollback.schema.tables import SchemaSource, ServerSchema


class EngineKind(StrEnum):
    """Where the partitions of a job run."""

    AUTO = "auto"  # local below AUTO_SPARK_BYTES of range, Spark from there on
    SPARK = "spark"  # as Spark tasks (a range that fits in one partition runs in-process)
    LOCAL = "local"  # in this process, in order


# The one default of the CLI, the service's configuration and Options.
DEFAULT_ENGINE = EngineKind.AUTO
# `auto` runs a range of fewer bytes than this in-process: a small incident range never pays the JVM's
# start-up (seconds) for a job the local engine finishes sooner. MYSQL_ROLLBACK_AUTO_SPARK_BYTES changes it.
AUTO_SPARK_BYTES = 256 << 20
MODES = ("flashback", "forward", "changes")
CHANGES_FORMATS = ("jsonl", "parquet")
FIRST_EVENT = 4  # events start after the 4-byte magic


def parse_size(text: str | int) -> int:
    """A positive byte count: 67108864, 64M, 512k, 1G (binary units; a trailing B is allowed).
    The CLI's sizes and the service's size settings read the same way; ValueError names the text."""
    if isinstance(text, int) and not isinstance(text, bool):
        size = text
    else:
        units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
        value = str(text).strip().lower().removesuffix("ib").removesuffix("b")
        try:
            size = int(float(value[:-1]) * units[value[-1]]) if value and value[-1] in units else int(value)
        except ValueError:
            raise ValueError(f"{text!r} is not a size such as 64M") from None
    if size <= 0:
        raise ValueError(f"{text!r}: a size must be positive")
    return size


def parse_engine(value: str) -> EngineKind:
    try:
        return EngineKind(value)
    except ValueError:
        raise RangeError(
            f"engine {value!r} is not one of {', '.join(sorted(e.value for e in EngineKind))}"
        ) from None


# ---- texts of a range ------------------------------------------------------------------------------


def parse_datetime(text: str) -> float:
    """An ISO-like datetime; with an explicit offset (+02:00, Z) as given, otherwise read as UTC."""
    value = text.strip().replace("T", " ")
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise RangeError(f"datetime {text!r} is not YYYY-MM-DD HH:MM:SS[+HH:MM]") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


_MARIA_GTID = re.compile(r"^(\d+)-(\d+)-(\d+)(?:\.\.(?:(\d+)-(\d+)-)?(\d+))?$")


class GtidFilter:
    """Which transactions a --gtid argument selects (MySQL set, or MariaDB GTIDs and ranges)."""

    def __init__(self, text: str):
        self.text = text
        self.mysql: GtidSet | None = None
        self.maria: list[tuple[int, int, int, int]] = []  # domain, server, first seq, last seq
        items = [t.strip() for t in text.split(",") if t.strip()]
        if items and all(_MARIA_GTID.match(t) for t in items):
            for item in items:
                m = _MARIA_GTID.match(item)
                assert m is not None
                domain, server, first = int(m.group(1)), int(m.group(2)), int(m.group(3))
                last = int(m.group(6)) if m.group(6) else first
                if last < first:
                    raise RangeError(f"GTID range {item} ends before it starts")
                self.maria.append((domain, server, first, last))
        else:
            self.mysql = GtidSet.parse(text)

    def selects(self, gtid: str | None) -> bool:
        if not gtid:
            return False
        if self.mysql is not None:
            parts = gtid.split(":")
            if len(parts) < 2:
                return False
            tag = parts[1] if len(parts) == 3 else ""
            return self.mysql.contains(parts[0], tag, int(parts[-1]))
        try:
            domain, server, seq = (int(x) for x in gtid.split("-"))
        except ValueError:
            return False
        return any(d == domain and s == server and a <= seq <= b for d, s, a, b in self.maria)


# ---- range rules -----------------------------------------------------------------------------------


def check_window(
    since: float | None, until: float | None, message: str = "stop datetime is not after start datetime"
) -> None:
    """A time window must not stop at or before it starts."""
    if since is not None and until is not None and until <= since:
        raise RangeError(message)


def check_positions(path: str, start: int, stop: int, size: int) -> None:
    """The stop position of a range within one file of `size` bytes, against its start."""
    if stop > size:
        raise RangeError(f"{path}: stop position {stop} is past the end of the file ({size})")
    if stop < start:
        raise RangeError(f"{path}: stop position {stop} is before start position {start}")


def check_server_range(
    start_file: str | None,
    start_position: int | None,
    stop_file: str | None,
    stop_position: int | None,
    gtid: str | None,
    timed: bool,
) -> None:
    """A server range is one of: a start file (+ positions, stop file), GTIDs, a time window; or a time
    window within the files from a start file on."""
    if start_file is None and (start_position is not None or stop_file or stop_position is not None):
        raise RangeError("a position or a stop file on a server needs the start file it refers to")
    kinds = [
        kind for kind, given in (("start file", start_file), ("GTIDs", gtid), ("time window", timed)) if given
    ]
    if not kinds:
        raise RangeError("a server range needs a start file (with positions), GTIDs, or a time window")
    if kinds == ["start file", "time window"]:
        return  # a time window searched from the start file on, as binlog2sql and mysqlbinlog -R take it
    if len(kinds) > 1:
        raise RangeError(
            f"a server range is given by a start file, by GTIDs, or by a time window, not by {' and '.join(kinds)}"
        )


# ---- the request -----------------------------------------------------------------------------------


@dataclass
class RangeSpec:
    files: list[str]
    start_position: int | None = None  # in files[0]
    stop_position: int | None = None  # in files[-1]
    gtid: str | None = None  # MySQL GTID set, or MariaDB GTIDs/ranges: 0-1-5,0-1-7..0-1-9
    start_datetime: str | None = None
    stop_datetime: str | None = None
    # a server range asked without a stop (resolved to the log's end when it was read)
    to_log_end: bool = field(default=False, compare=False)

    @property
    def open_ended(self) -> bool:
        """Whether the range runs to the end of its files or of the server's log: no stop was given."""
        return self.to_log_end or (self.stop_position is None and not self.stop_datetime and not self.gtid)

    def describe(self) -> str:
        parts = [f"files {', '.join(os.path.basename(f) for f in self.files)}"]
        if self.start_position:
            parts.append(f"start position {self.start_position}")
        if self.stop_position:
            parts.append(f"stop position {self.stop_position}")
        if self.gtid:
            parts.append(f"gtid {self.gtid}")
        if self.start_datetime or self.stop_datetime:
            parts.append(f"time [{self.start_datetime or '-'}, {self.stop_datetime or '-'})")
        return "; ".join(parts)

    # The parsed `gtid`, made once (by the property below, or given by whoever parsed it already).
    parsed_gtid: GtidFilter | None = field(default=None, repr=False, compare=False)

    @property
    def gtid_filter(self) -> GtidFilter | None:
        if not self.gtid:
            return None
        if self.parsed_gtid is None or self.parsed_gtid.text != self.gtid:
            self.parsed_gtid = GtidFilter(self.gtid)
        return self.parsed_gtid

    @cached_property
    def since(self) -> float | None:
        return parse_datetime(self.start_datetime) if self.start_datetime else None

    @cached_property
    def until(self) -> float | None:
        return parse_datetime(self.stop_datetime) if self.stop_datetime else None


def parse_position(text: str) -> tuple[str | None, int]:
    """A transaction's start position, `file:pos` or `pos` (in any file of the range)."""
    name, _, pos = text.strip().rpartition(":")
    if not pos.isdigit():
        raise RangeError(f"transaction position {text!r} is not FILE:POS or POS")
    return (name or None), int(pos)


def parse_pattern(what: str, text: str) -> re.Pattern[str]:
    """A statement-text pattern: a Python regular expression, searched anywhere, ignoring case."""
    try:
        return re.compile(text, re.IGNORECASE | re.DOTALL)
    except re.error as exc:
        raise RangeError(f"{what} {text!r} is not a regular expression: {exc}") from None


@dataclass
class Filters:
    databases: set[str] = field(default_factory=set)
    tables: set[str] = field(default_factory=set)  # "db.table"
    types: set[str] = field(default_factory=set)  # insert/update/delete
    thread_id: int | None = None
    # Precise selection (rollback/pipeline/selection.py). Transactions: by GTID (a MySQL GTID set or
    # MariaDB GTIDs/ranges, as --gtid takes), by start position (FILE:POS or POS, the position the
    # script's block comment gives), by thread id, by their statements' original text (a regular
    # expression searched in the ROWS_QUERY / ANNOTATE_ROWS text). A transaction is in when no
    # include is given or it matches one, and no exclude matches it.
    include_gtid: str | None = None
    exclude_gtid: str | None = None
    include_positions: list[str] = field(default_factory=list)
    exclude_positions: list[str] = field(default_factory=list)
    exclude_thread_ids: set[int] = field(default_factory=set)
    include_query: str | None = None
    exclude_query: str | None = None
    # Rows: a MySQL boolean expression over the row images (rollback/request/predicate.py).
    where: str | None = None
    # Whether database and table names compare exactly, as a server with lower_case_table_names=0 does
    # (`Shop` and `shop` are two databases there); the job sets it from the schema server, else True.
    case_sensitive: bool = True

    @property
    def picks(self) -> bool:
        """Whether transactions or rows are picked inside the range (dependencies are then looked for)."""
        return bool(
            self.thread_id is not None
            or self.include_gtid
            or self.exclude_gtid
            or self.include_positions
            or self.exclude_positions
            or self.exclude_thread_ids
            or self.include_query
            or self.exclude_query
            or self.where
        )

    def check_picks(self) -> None:
        """Parse every pick once, so that a bad one fails before any work."""
        for what, text in (("--include-gtid", self.include_gtid), ("--exclude-gtid", self.exclude_gtid)):
            if text:
                check_plain(what, text)
                GtidFilter(text)
        for position in [*self.include_positions, *self.exclude_positions]:
            check_plain("transaction position", position)
            parse_position(position)
        for what, text in (("--include-query", self.include_query), ("--exclude-query", self.exclude_query)):
            if text:
                parse_pattern(what, text)
        if self.where:
            from rollback.request.predicate import Predicate

            Predicate(self.where)

    def describe(self) -> str:
        parts = []
        if self.databases:
            parts.append("databases " + ",".join(sorted(self.databases)))
        if self.tables:
            parts.append("tables " + ",".join(sorted(self.tables)))
        if self.types:
            parts.append("types " + ",".join(sorted(self.types)))
        if self.thread_id is not None:
            parts.append(f"thread {self.thread_id}")
        for label, value in (
            ("include gtid", self.include_gtid),
            ("exclude gtid", self.exclude_gtid),
            ("include positions", ",".join(self.include_positions)),
            ("exclude positions", ",".join(self.exclude_positions)),
            ("exclude threads", ",".join(map(str, sorted(self.exclude_thread_ids)))),
            ("include query", self.include_query),
            ("exclude query", self.exclude_query),
            ("where", self.where),
        ):
            if value:
                parts.append(f"{label} {value}")
        return "; ".join(parts) or "none"

    def table_selected(self, tmap: Any) -> bool:
        database, table = tmap.database, f"{tmap.database}.{tmap.table}"
        if self.case_sensitive:
            if self.databases and database not in self.databases:
                return False
            return not (self.tables and table not in self.tables)
        database, table = database.lower(), table.lower()
        if self.databases and all(d.lower() != database for d in self.databases):
            return False
        return not (self.tables and all(t.lower() != table for t in self.tables))


DDL_MODES = ("refuse", "keep", "reverse")


@dataclass
class Options:
    mode: str = "flashback"  # flashback | forward | changes (the change log only; the script is its header)
    full_where: bool = False
    # The script's re-inserts and deletes by key joined up to this many rows a statement (1: one row
    # a statement, the readable form); the plan keeps one row a statement (statement_batches.py).
    rows_per_statement: int = 1
    allow_partial: bool = False
    # A pick (--where, --include-query/--exclude-query) may keep only some rows of a transaction:
    # refused unless accepted here, since undoing part of a transaction may break its invariants.
    allow_partial_transactions: bool = False
    allow_empty: bool = False  # a range that selects no row change is not an error (exit 4)
    schema: SchemaSource | None = None
    verify_checksums: bool = True
    engine: EngineKind | str = DEFAULT_ENGINE
    # Target partition size; None: TARGET_BYTES (64 MB) in-process, and on Spark about four per core
    # of the range's bytes, between 1 MB and 64 MB (plan.partition_target).
    partition_bytes: int | None = None
    changes_format: str = "jsonl"  # jsonl | parquet (a directory written through Spark)
    # A directory (or Hadoop-compatible URL) every Spark node can read: with a cluster master, local
    # binlogs are staged there for the executors. With a local engine or master, the parts are written
    # there. Default: a temporary directory beside the script. Resolved against the driver's directory.
    work_dir: str | None = None
    # Accept the schema source as describing the tables at the range's time without looking for
    # DDL after the range (matters only when the binlog names no columns).
    trust_schema: bool = False
    # TRUNCATE, DROP TABLE or DROP DATABASE in the range of tables without row changes in it destroyed
    # rows no rollback of the range brings back: refused unless accepted here (then listed).
    accept_lost_rows: bool = False
    # The live server the range was read from (--server), when the schema source is another one:
    # its binary log after the range is where DDL on the tables would be.
    binlog_server: ServerSchema | None = None
    # The Spark master for EngineKind.SPARK; None: the process's setting (MYSQL_ROLLBACK_SPARK_MASTER).
    spark_master: str | None = None
    # EngineKind.AUTO: ranges of at least this many bytes run on Spark, smaller ones in-process.
    auto_spark_bytes: int = AUTO_SPARK_BYTES
    # EngineKind.AUTO: whether the caller's Spark session is already warm (the service's, once it
    # has started); a cold local master runs every range in-process (choose_engine says why).
    spark_warm: bool = False
    # What DDL on a changed table in the range (or after it, up to the schema source) does: refuse,
    # keep today's schema (old images mapped to today's columns by name), or reverse it too.
    ddl: str = "refuse"
    # One statement per row: each row's change from before the range to after it (rollback/render/net.py)
    net: bool = False


def check_net(options: Options) -> None:
    """--net folds whole rows of a flashback, one statement a row: what it cannot be combined with."""
    if options.mode != "flashback":
        raise RangeError(
            "--net writes the net reverse of a flashback: it does not apply to forward SQL or a change log"
        )
    if options.ddl != "refuse":
        raise RangeError(
            f"--net follows rows through one schema: it cannot be combined with --ddl {options.ddl}"
        )
    if options.rows_per_statement > 1:
        raise RangeError(
            "--net writes one statement per row: it cannot be combined with --rows-per-statement"
        )


def check_request(rng: RangeSpec, filters: Filters, options: Options) -> None:
    """Every rule a request must meet before a job starts; parses the range's GTID and time texts."""
    options.engine = parse_engine(str(options.engine))
    if options.work_dir and "://" not in options.work_dir:
        options.work_dir = os.path.abspath(options.work_dir)  # the driver's, before any executor sees it
    if options.mode not in MODES:
        raise RangeError(f"mode {options.mode!r} is not one of {', '.join(MODES)}")
    if options.ddl not in DDL_MODES:
        raise RangeError(f"--ddl {options.ddl!r} is not one of {', '.join(DDL_MODES)}")
    if options.net:
        check_net(options)
    if options.changes_format not in CHANGES_FORMATS:
        raise RangeError(f"change log format {options.changes_format!r} is not one of jsonl, parquet")
    for what, values in (
        ("database filter", filters.databases),
        ("table filter", filters.tables),
        ("type filter", filters.types),
        ("GTID set", [rng.gtid] if rng.gtid else []),
        ("start datetime", [rng.start_datetime] if rng.start_datetime else []),
        ("stop datetime", [rng.stop_datetime] if rng.stop_datetime else []),
    ):
        for value in values:
            check_plain(what, value)
    filters.check_picks()
    rng.gtid_filter  # noqa: B018 - parsed here: a bad GTID text fails before any work
    check_window(rng.since, rng.until)
