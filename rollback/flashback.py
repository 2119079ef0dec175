"""The flashback job: a range of binlog files -> reverse (or forward) SQL script, plan and change log.

    plan (pipeline/plan.py)           the range as ordered partitions that decode on their own
    run (pipeline/local.py | spark.py) the one partition function (pipeline/partition.py) per partition:
                                      decode, invert, render, write its part files, return a summary
    merge (here)                      the script's header from the summaries, then the parts:
                                      newest partition first (flashback) or in order (`sql`)

Each original transaction becomes one block of the script (its reverse statements, newest row
first, between BEGIN and COMMIT, under a comment naming the transaction). A block that crosses
partitions is written by its partitions as bare statements; the merge adds its comment, BEGIN and
COMMIT around them. Beside the script: an execution plan (JSON lines: each statement with the
check that proves its row is still as the binlog left it) and the change log (JSON lines, or
Parquet through Spark). Neither the driver nor any worker holds the range's rows: workers hold a
partition's rendered text (spilling to disk), the merge copies files.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Protocol

import rollback
from rollback.binlog.gtid import GtidSet
from rollback.ddl import DdlTargets, shorten
from rollback.errors import (
    DDLInRange,
    EmptyRange,
    IrreversibleChange,
    RangeError,
    SchemaMismatch,
    SchemaUnproven,
)
from rollback.pipeline.contents import held, table_hints
from rollback.pipeline.holdback import Taints, load_taints, merge_taints, taints_before
from rollback.pipeline.local import run_local
from rollback.pipeline.partition import (
    BLOCK_END,
    JobSpec,
    Piece,
    Summary,
    block_header,
    decode_error,
    part_path,
)
from rollback.pipeline.plan import TARGET_BYTES, Partition, Plan, SchemaKey, plan_range
from rollback.render_text import check_plain, comment_line
from rollback.schema import SchemaResolver, SchemaSource, ServerSchema, StaticSchema, TableSchema
from rollback.schema_proof import NotProven, Scan, scan_files, scan_server
from rollback.side_effects import SIDE_EFFECTS, detect_with, statement_kinds

SCRIPT_PRELUDE = (
    "SET NAMES utf8mb4;\nSET time_zone = '+00:00';\nSET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO';\n"
)
ENGINES = ("local", "spark")
MODES = ("flashback", "forward", "changes")
CHANGES_FORMATS = ("jsonl", "parquet")
IRREVERSIBLE_KEPT = 1000  # irreversible changes listed in Report.irreversible (the script lists all)
# Spark partitions: at most TARGET_BYTES, at least this, two per core when the range allows.
MIN_SPARK_PARTITION = 4 << 20


# ---- what the user asks for --------------------------------------------------------------------------


@dataclass
class RangeSpec:
    files: list[str]
    start_position: int | None = None  # in files[0]
    stop_position: int | None = None  # in files[-1]
    gtid: str | None = None  # MySQL GTID set, or MariaDB GTIDs/ranges: 0-1-5,0-1-7..0-1-9
    start_datetime: str | None = None
    stop_datetime: str | None = None

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


@dataclass
class Filters:
    databases: set[str] = field(default_factory=set)
    tables: set[str] = field(default_factory=set)  # "db.table"
    types: set[str] = field(default_factory=set)  # insert/update/delete
    thread_id: int | None = None

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
        return "; ".join(parts) or "none"

    def table_selected(self, tmap: Any) -> bool:
        if self.databases and tmap.database.lower() not in self.databases:
            return False
        return not (self.tables and f"{tmap.database}.{tmap.table}".lower() not in self.tables)


@dataclass
class Options:
    mode: str = "flashback"  # flashback | forward | changes (the change log only; the script is its header)
    full_where: bool = False
    allow_partial: bool = False
    allow_empty: bool = False  # a range that selects no row change is not an error (exit 4)
    schema: SchemaSource | None = None
    verify_checksums: bool = True
    # local: partitions run in this process, in order. spark: as Spark tasks on the process's
    # SparkSession (a range that fits in one partition runs in-process: nothing to distribute).
    engine: str = "local"
    # Target partition size; None: TARGET_BYTES (64 MB), and on Spark smaller partitions (two per
    # core, not under 4 MB) so that a range of a few hundred MB keeps every core busy.
    partition_bytes: int | None = None
    changes_format: str = "jsonl"  # jsonl | parquet (a directory written through Spark)
    # Where partitions write their parts: shared storage when Spark runs on a cluster. Default:
    # a temporary directory beside the script.
    work_dir: str | None = None
    # Accept the schema source as describing the tables at the range's time without looking for
    # DDL after the range (matters only when the binlog names no columns).
    trust_schema: bool = False
    # The live server the range was read from (--server), when the schema source is another one:
    # its binary log after the range is where DDL on the tables would be.
    binlog_server: ServerSchema | None = None


@dataclass
class Progress:
    """How far a job is: bytes and events of the range read, over the totals the plan found."""

    bytes_done: int
    bytes_total: int
    events_done: int
    events_total: int
    partitions: int
    engine: str

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
    # what the statements set off at the schema server (side_effects.SideEffects.to_dict());
    # None: not checked (no schema server, or not a flashback)
    side_effects: dict[str, Any] | None = None
    # The first of the longest statements: {bytes (UTF-8, as written), table, file, pos}; None without any.
    largest_statement: dict[str, Any] | None = None
    schema_source: str = ""  # where column names came from: binlog metadata, a server, a DDL file
    schema_check: str = ""  # how the source was proven to describe the tables at the range's time

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
            "side_effects": self.side_effects,
            "largest_statement": self.largest_statement,
            "schema_check": {"source": self.schema_source, "checked": self.schema_check},
        }


# ---- range selection -----------------------------------------------------------------------------------


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


# ---- transactions that cross partitions ------------------------------------------------------------------


@dataclass
class _Span:
    """A transaction block whose pieces lie in consecutive partitions (oldest first)."""

    pieces: list[tuple[int, Piece]] = field(default_factory=list)  # (partition index, piece)

    @property
    def statements(self) -> int:
        return sum(p.statements for _, p in self.pieces)

    def header(self, out_dir: str) -> str:
        first = self.pieces[0][1]
        last = self.pieces[-1][1]
        end_pos = next(
            (p.end_pos for _, p in reversed(self.pieces) if p.end_pos is not None), first.first_pos
        )
        partial = sum(p.selected for _, p in self.pieces) < sum(p.events for _, p in self.pieces)
        return block_header(last.tx, first.file, first.first_pos, end_pos, partial, self._queries(out_dir))

    def _queries(self, out_dir: str) -> Iterator[str]:
        last: str | None = None
        for position, (index, piece) in enumerate(self.pieces):
            if not piece.queries:
                continue
            with open(part_path(out_dir, index, "queries.json"), encoding="utf-8") as f:
                queries = json.load(f)["tail" if position == 0 else "head"]
            for query in queries:
                if query != last:
                    yield query
                last = query


def _spans(summaries: list[Summary]) -> tuple[dict[int, _Span], dict[int, _Span]]:
    """The crossing blocks, by the partition of their head pieces and of their tail pieces."""
    heads: dict[int, _Span] = {}
    tails: dict[int, _Span] = {}
    open_span: _Span | None = None
    for summary in summaries:
        if summary.head is not None:
            if open_span is None:
                raise RuntimeError(f"partition {summary.index} continues a transaction no partition opened")
            open_span.pieces.append((summary.index, summary.head))
            heads[summary.index] = open_span
            if summary.head.closed:
                open_span = None
        if summary.tail is not None:
            open_span = _Span([(summary.index, summary.tail)])
            tails[summary.index] = open_span
    if open_span is not None:
        raise RuntimeError("a transaction crossing partitions was never closed")
    return heads, tails


def _copy(src: IO[bytes], dst: _Sink, start: int, length: int) -> None:
    src.seek(start)
    while length > 0:
        data = src.read(min(length, 8 << 20))
        if not data:
            raise RuntimeError("a part file is shorter than its summary says")
        dst.write(data)
        length -= len(data)


# ---- the job ---------------------------------------------------------------------------------------------


def _ddl_hits(ddl: list[dict[str, Any]], changed: Any) -> list[tuple[dict[str, Any], set[str]]]:
    """Each DDL with the changed tables whose columns, rows or existence it may change."""
    hits = []
    for item in ddl:
        targets = DdlTargets.from_dict(item["affects"])
        tables = {t for t in changed if targets.touches(*t.split(".", 1))}
        hits.append((item, tables))
    return hits


class Flashback:
    def __init__(self, rng: RangeSpec, filters: Filters, options: Options):
        if options.engine not in ENGINES:
            raise RangeError(f"engine {options.engine!r} is not one of {', '.join(ENGINES)}")
        if options.mode not in MODES:
            raise RangeError(f"mode {options.mode!r} is not one of {', '.join(MODES)}")
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
        self.rng = rng
        self.filters = filters
        self.options = options
        self.report = Report()
        self._unchecked: list[str] = []  # files without event checksums (a header note each)
        self._times: list[int] = []  # event timestamps at the ends of each file's range
        self._resolved: dict[SchemaKey, TableSchema | str | None] = {}
        self._gtid = GtidFilter(rng.gtid) if rng.gtid else None
        self._since = parse_datetime(rng.start_datetime) if rng.start_datetime else None
        self._until = parse_datetime(rng.stop_datetime) if rng.stop_datetime else None
        if self._since is not None and self._until is not None and self._until <= self._since:
            raise RangeError("stop datetime is not after start datetime")

    # -- planning
    def plan(self) -> Plan:
        return plan_range(self.rng, self._partition_bytes())

    def _partition_bytes(self) -> int:
        if self.options.partition_bytes:
            return self.options.partition_bytes
        if self.options.engine != "spark":
            return TARGET_BYTES
        total = 0
        for path in self.rng.files:
            try:
                total += os.path.getsize(path)
            except OSError:
                return TARGET_BYTES  # a URL: the planner sizes it
        slots = 2 * (os.cpu_count() or 1)
        return max(MIN_SPARK_PARTITION, min(TARGET_BYTES, -(-total // slots)))

    def _schemas(self, plan: Plan) -> dict[SchemaKey, TableSchema | str | None]:
        """Every selected table's schema, resolved once here (workers never talk to a server)."""
        resolver = SchemaResolver(self.options.schema)
        schemas: dict[SchemaKey, TableSchema | str | None] = {}
        for key, (tmap, pos) in plan.table_maps.items():
            if not self.filters.table_selected(tmap):
                continue
            try:
                schemas[key] = resolver.resolve(tmap, pos)
            except SchemaMismatch as exc:
                schemas[key] = str(exc)
        self._resolved = schemas
        return schemas

    # -- the run
    def generate(
        self,
        script_path: str | Path,
        plan_path: str | Path | None = None,
        changes_path: str | Path | None = None,
        progress: ProgressCallback | None = None,
    ) -> Report:
        """Write the script (and plan, change log); the files appear only when the job succeeds."""
        script_path = Path(script_path)
        work_dir = self.options.work_dir or str(script_path.resolve().parent)
        out_dir = tempfile.mkdtemp(prefix=".mysql-rollback-", dir=work_dir)
        outputs: list[tuple[Path, Path]] = [(script_path.with_name(script_path.name + ".part"), script_path)]
        if plan_path:
            outputs.append((Path(str(plan_path) + ".part"), Path(plan_path)))
        try:
            summaries = self._run(out_dir, bool(changes_path), bool(plan_path), progress)
            with open(outputs[0][0], "wb") as script_out:
                plan_out = open(outputs[1][0], "wb") if plan_path else None
                try:
                    self._merge(out_dir, summaries, script_out, plan_out)
                finally:
                    if plan_out is not None:
                        plan_out.close()
            if changes_path:
                tmp = Path(str(changes_path) + ".part")
                outputs.append((tmp, Path(changes_path)))
                self._write_changes(out_dir, summaries, tmp)
            for tmp, final in outputs:
                _replace(tmp, final)
        finally:
            for tmp, _final in outputs:
                if tmp.is_dir():
                    shutil.rmtree(tmp, ignore_errors=True)
                elif tmp.exists():
                    tmp.unlink()
            shutil.rmtree(out_dir, ignore_errors=True)
        return self.report

    def run(
        self,
        script_out: IO[str],
        plan_out: IO[str] | None = None,
        changes_out: IO[str] | None = None,
        progress: ProgressCallback | None = None,
    ) -> Report:
        """The job written to open text streams (the change log as JSON lines)."""
        out_dir = tempfile.mkdtemp(prefix="mysql-rollback-", dir=self.options.work_dir)
        try:
            summaries = self._run(out_dir, changes_out is not None, plan_out is not None, progress)
            script_bin = _BinaryTo(script_out)
            self._merge(out_dir, summaries, script_bin, _BinaryTo(plan_out) if plan_out else None)
            if changes_out is not None:
                for summary in summaries:
                    with open(part_path(out_dir, summary.index, "changes.jsonl"), encoding="utf-8") as f:
                        shutil.copyfileobj(f, changes_out)
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)
        return self.report

    def _run(
        self, out_dir: str, changes: bool, plan_lines: bool, progress: ProgressCallback | None
    ) -> list[Summary]:
        plan = self.plan()
        report = self.report
        report.bytes_total = plan.bytes_total
        report.events_total = plan.events_total
        report.server_version = plan.server_version
        report.partitions = len(plan.partitions)
        report.warnings.extend(plan.notes)
        self._unchecked = plan.unchecked
        self._times = plan.times
        spec = JobSpec(
            out_dir=out_dir,
            filters=self.filters,
            mode=self.options.mode,
            full_where=self.options.full_where,
            verify_checksums=self.options.verify_checksums,
            gtid=self._gtid,
            since=self._since,
            until=self._until,
            schemas=self._schemas(plan),
            changes=changes,
            plan=plan_lines,
            hold=self.options.allow_partial and self.options.mode == "flashback",
        )
        spark = self.options.engine == "spark" and len(plan.partitions) > 1
        report.engine = "spark" if spark else "local"
        note = None
        if progress is not None:
            parts = len(plan.partitions)
            engine = report.engine
            note = lambda done, events: progress(  # noqa: E731
                Progress(done, plan.bytes_total, events, plan.events_total, parts, engine)
            )

        def execute(partitions: list[Partition]) -> list[Summary]:
            if spark:
                from rollback.pipeline.spark import run_spark

                return run_spark(spec, partitions, note)
            return run_local(spec, partitions, note)

        summaries = execute(plan.partitions)
        if spec.hold:
            summaries = _hold_back(out_dir, spec, plan, summaries, execute)
        self._collect(out_dir, plan, summaries)
        self._side_effects()
        return summaries

    def _side_effects(self) -> None:
        """Triggers, cascading foreign keys and non-transactional tables the reverse statements meet,
        when a schema server is known (execution reads them again at the target, whatever this says)."""
        schema = self.options.schema
        if self.options.mode != "flashback" or not isinstance(schema, ServerSchema):
            return
        try:
            found = detect_with(schema.connect, statement_kinds(self.report.counts))
        except Exception as exc:  # noqa: BLE001 - a warning: the job's output does not depend on it
            reason = " ".join(str(exc.args[-1] if exc.args else exc).split())
            self.report.warnings.append(f"cannot read {SIDE_EFFECTS} from the schema server: {reason}")
            return
        self.report.side_effects = found.to_dict()
        self.report.warnings.extend(found.warnings())

    def _collect(self, out_dir: str, plan: Plan, summaries: list[Summary]) -> None:
        """The report from the summaries; raises the error the job stops with, if any."""
        report = self.report
        changed: dict[str, tuple[int, int]] = {}  # table -> (partition, position) of its first change
        ddl_at: list[tuple[int, int]] = []
        failed = next((s for s in summaries if s.error is not None), None)
        for summary in summaries:
            for table, pos in summary.first_change.items():
                changed.setdefault(table, (summary.index, pos))
            for item in summary.ddl:
                report.ddl.append(item)
                ddl_at.append((summary.index, item["pos"]))
            if summary is failed:
                break
            report.counts.update(summary.counts)
            report.row_images.update(summary.row_images)
            report.warnings.extend(summary.warnings)
            report.statements += summary.statements
            report.transactions += summary.transactions
            report.irreversible_count += summary.irreversible
            largest = summary.largest_statement
            if largest is not None and (
                report.largest_statement is None or largest["bytes"] > report.largest_statement["bytes"]
            ):
                report.largest_statement = largest
        # A DDL on a table the range changed before it stops the job where it stands (before an
        # error further on: the DDL may be its cause).
        hits = _ddl_hits(report.ddl, changed)
        stop_at = (failed.index, failed.error_pos or 0) if failed is not None else None
        for (item, tables), at in zip(hits, ddl_at, strict=True):
            if stop_at is not None and at >= stop_at:
                break
            under = sorted(t for t in tables if changed[t] < at)
            if under:
                raise DDLInRange(
                    f"DDL on {under[0]} inside the range at {item['file']}:{item['pos']}: {item['sql'][:200]} — "
                    "the table's schema changes mid-range; split the range at this position"
                )
        if failed is not None:
            assert failed.error is not None
            raise decode_error(failed.error)
        for summary, following in zip(summaries, plan.partitions[1:], strict=False):
            if summary.next_block != following.next_block:
                raise RuntimeError(
                    f"partition {summary.index} ends before block {summary.next_block}, "
                    f"the plan says {following.next_block}: the planner and the workers disagree"
                )
        heads, _tails = _spans(summaries)
        report.transactions += sum(
            1 for index, span in heads.items() if span.pieces[-1][0] == index and span.statements
        )
        # A DDL the range selects, before the table's changes: its effect (rows a TRUNCATE or DROP
        # removed, rows a CREATE ... SELECT wrote, an ALTER) is not in the row changes to undo. (The
        # forward SQL and the change log undo nothing: for them only a schema changing under the
        # changes counts.)
        for item, tables in hits:
            if tables and item["selected"] and self.options.mode == "flashback":
                raise DDLInRange(
                    f"DDL on {min(tables)} inside the range at {item['file']}:{item['pos']}: {item['sql'][:200]} "
                    "— a rollback of row changes cannot undo it; start the range after this position"
                )
        mismatch = next((s.mismatch for s in summaries if s.mismatch is not None), None)
        if mismatch is not None:
            raise decode_error(mismatch)
        self._check_schema_source(plan, set(changed))
        if not report.counts:
            self._empty(summaries)
        for item in self._irreversible(out_dir, summaries):
            if len(report.irreversible) >= IRREVERSIBLE_KEPT:
                break
            report.irreversible.append(item)
        if report.irreversible_count and not self.options.allow_partial:
            item = report.irreversible[0]
            raise IrreversibleChange(
                f"{report.irreversible_count} row change(s) cannot be restored from the binlog's images; "
                f"first: {item['type']} on {item['table']} at {item['file']}:{item['pos']} "
                f"(missing {', '.join(item['missing'])}: {item['reason']}); "
                "--allow-partial emits the restorable changes and lists the rest"
            )

    def _empty(self, summaries: list[Summary]) -> None:
        """The range selected no row change: an error unless allowed, saying what the files hold."""
        tables = {table.lower() for s in summaries for table, _kind in s.contents}
        said = [
            f"searched {self.rng.describe()}; filters: {self.filters.describe()}",
            held(summaries, self._times),
            *table_hints(self.filters.tables, self.filters.databases, tables),
        ]
        if not self.options.allow_empty:
            raise EmptyRange(
                f"the range selected no row change: {'; '.join(said)}; --allow-empty accepts an empty result"
            )
        self.report.warnings.append(f"the range selected no row change: {'; '.join(said[1:])}")

    def _check_schema_source(self, plan: Plan, changed: set[str]) -> None:
        """Say where the changed tables' columns came from and how that was checked; SchemaUnproven
        when a source matched by position may not describe a table as the binlog wrote it."""
        by_name: set[str] = set()
        by_position: set[str] = set()
        for key, schema in self._resolved.items():
            table = f"{key[0]}.{key[1]}".lower()
            if table in changed and isinstance(schema, TableSchema):
                (by_name if schema.source == "binlog" else by_position).add(table)
        source = self.options.schema
        sources: list[str] = []
        checks: list[str] = []
        if by_name:
            sources.append("binlog metadata" + (f" + {source.description}" if source is not None else ""))
            checks.append("names from the binlog")
        if by_position:
            assert source is not None  # without names, only a source gives a schema
            sources.append(source.description)
            if self.options.trust_schema:
                checks.append("not checked: --trust-schema")
            else:
                checks.append(self._prove(plan, by_position, source))
        report = self.report
        report.schema_source = "; ".join(sources) or (source.description if source else "binlog metadata")
        report.schema_check = "; ".join(checks) or "nothing to check (no row changes)"

    def _prove(self, plan: Plan, tables: set[str], source: SchemaSource) -> str:
        """Look for DDL on `tables` after the range up to the present (rollback.schema_proof)."""
        last = plan.partitions[-1]
        scan: Scan | None = None
        reasons: list[str] = []
        servers = [s for s in (self.options.binlog_server, source) if isinstance(s, ServerSchema)]
        for server in servers:
            scan, why = scan_server(server.connect, server.name, last.location, last.start, last.end, tables)
            if scan is not None:
                break
            reasons.append(why)
        if scan is None:
            try:
                scan = scan_files(last.location, last.end, tables)
            except NotProven as exc:
                reasons.append(str(exc))
        described = f"the {source.description}"
        if scan is None:
            raise SchemaUnproven(
                f"cannot prove that {described} describes {', '.join(sorted(tables))} as the binlog wrote "
                f"{'it' if len(tables) == 1 else 'them'} (the binlog names no columns, so they are matched by "
                f"position) by reading the binary log after the range: {'; '.join(reasons)}; "
                f"--trust-schema accepts {described} as describing the tables at the range's time"
            )
        hit = scan.hit
        if hit is not None:
            if isinstance(source, StaticSchema) and source.path:
                advice = f"--trust-schema accepts {described} if it describes the table as of the incident"
            else:
                advice = (
                    "give the table's definition as of the incident with --schema-file, "
                    f"or --trust-schema to accept {described} as it is"
                )
            raise SchemaUnproven(
                f"table {hit.table}: DDL after the range at {hit.file}:{hit.pos} may have changed its columns "
                f"since the binlog wrote them: {shorten(hit.sql, 160)} — {described} may describe the table "
                f"after that change, and the binlog names no columns to match by name; {advice}"
            )
        what = "table" if len(tables) == 1 else "tables"
        return f"no DDL on the changed {what} in {scan.where} after {scan.after} up to {scan.up_to}"

    @staticmethod
    def _irreversible(out_dir: str, summaries: list[Summary]) -> Iterator[dict[str, Any]]:
        for summary in summaries:
            if not summary.irreversible:
                continue
            with open(part_path(out_dir, summary.index, "irreversible.jsonl"), encoding="utf-8") as f:
                for line in f:
                    yield json.loads(line)

    # -- the merge
    def _merge(
        self, out_dir: str, summaries: list[Summary], script_out: _Sink, plan_out: _Sink | None
    ) -> None:
        script_out.write(self._header(out_dir, summaries).encode("utf-8"))
        heads, tails = _spans(summaries)
        flashback = self.options.mode == "flashback"
        for summary in reversed(summaries) if flashback else summaries:
            index = summary.index
            head = summary.head.script_bytes if summary.head else 0
            tail = summary.tail.script_bytes if summary.tail else 0
            size = summary.script_bytes
            head_span, tail_span = heads.get(index), tails.get(index)
            closes = head_span is not None and head_span.pieces[-1][0] == index and head_span.statements
            with open(part_path(out_dir, index, "sql"), "rb") as part:
                if flashback:  # tail piece, blocks, head piece
                    _copy(part, script_out, 0, tail)
                    if tail_span is not None and tail_span.statements:
                        script_out.write(BLOCK_END.encode())
                    _copy(part, script_out, tail, size - tail - head)
                    if closes:
                        assert head_span is not None
                        script_out.write(head_span.header(out_dir).encode("utf-8"))
                    _copy(part, script_out, size - head, head)
                else:  # head piece, blocks, tail piece
                    _copy(part, script_out, 0, head)
                    if closes:
                        script_out.write(BLOCK_END.encode())
                    _copy(part, script_out, head, size - head - tail)
                    if tail_span is not None and tail_span.statements:
                        script_out.write(tail_span.header(out_dir).encode("utf-8"))
                    _copy(part, script_out, size - tail, tail)
            if plan_out is not None:
                with open(part_path(out_dir, index, "plan.jsonl"), "rb") as part:
                    _copy(part, plan_out, 0, os.fstat(part.fileno()).st_size)

    def _header(self, out_dir: str, summaries: list[Summary]) -> str:
        report = self.report
        mode = {
            "flashback": "flashback (reverse SQL, newest change first)",
            "forward": "forward SQL",
        }.get(self.options.mode, "change log only (no SQL)")
        # Every line is a comment line: names, file names, filter values and the server's version are
        # escaped there (rollback/render_text.py), so that none of them can start a line of its own.
        lines = [
            f"mysql-rollback {rollback.__version__}: {mode}",
            f"range: {self.rng.describe()}",
        ]
        if self.rng.start_datetime or self.rng.stop_datetime:
            lines.append("datetimes without an explicit offset are read as UTC")
        lines.append(f"filters: {self.filters.describe()}")
        lines.append(f"server version: {report.server_version or '-'}")
        for label in self._unchecked:
            lines.append(
                f"note: {label} has no event checksums (binlog_checksum=NONE): corruption cannot be detected"
            )
        lines.append(f"row images seen: {', '.join(sorted(report.row_images)) or '-'}")
        lines.append(f"schema: {report.schema_source}; checked: {report.schema_check}")
        lines.append(f"transactions: {report.transactions}, statements: {report.statements}")
        largest = report.largest_statement
        if largest is not None:
            lines.append(
                f"largest statement: {largest['bytes']} bytes "
                f"({largest['table']} at {largest['file']}:{largest['pos']})"
            )
        for (table, kind), rows in sorted(report.counts.items()):
            lines.append(f"rows: {table} {kind} {rows}")
        if self.options.mode == "flashback":
            found = report.side_effects
            if found is None:
                state = "not checked (no schema server)"
            else:
                state = "see the warnings below" if any(found.values()) else "none found"
            lines.append(f"{SIDE_EFFECTS}: {state}; execution checks them at the target")
        for warning in report.warnings:
            lines.append(f"warning: {warning}")
        for item in self._irreversible(out_dir, summaries):
            why = f"missing {', '.join(item['missing'])}" if item["missing"] else item["reason"]
            lines.append(
                f"irreversible: {item['type']} on {item['table']} at {item['file']}:{item['pos']} "
                f"row {item['row']} ({why})"
            )
        return "".join(comment_line(line) + "\n" for line in lines) + SCRIPT_PRELUDE

    def _write_changes(self, out_dir: str, summaries: list[Summary], path: Path) -> None:
        parts = [part_path(out_dir, s.index, "changes.jsonl") for s in summaries]
        if self.options.changes_format == "parquet":
            from rollback.pipeline.changes import write_parquet

            write_parquet(parts, str(path))
            return
        with open(path, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    shutil.copyfileobj(f, out)


def _hold_back(
    out_dir: str,
    spec: JobSpec,
    plan: Plan,
    summaries: list[Summary],
    execute: Callable[[list[Partition]], list[Summary]],
) -> list[Summary]:
    """Run again the partitions that have not seen every row an earlier partition found irreversible
    (or held back), with those rows, until none is left: a split job then holds back what an unsplit
    one does (holdback.py)."""
    done = {s.index: s for s in summaries}
    seen: dict[int, Taints] = {part.index: {} for part in plan.partitions}
    while len(done) == len(plan.partitions) and not any(s.error is not None for s in done.values()):
        taints: Taints = {}
        for summary in done.values():
            if summary.taints:
                with open(part_path(out_dir, summary.index, "taints.jsonl"), encoding="utf-8") as f:
                    merge_taints(taints, load_taints(f))
        stale = []
        for part in plan.partitions:
            wanted = taints_before(taints, part.file_index, part.start, done[part.index].first_change)
            if wanted != seen[part.index]:
                seen[part.index] = wanted
                stale.append(part)
        if not stale:
            break
        spec.taints = {k: pos for part in stale for k, pos in seen[part.index].items()}
        for part in stale:
            for name in os.listdir(out_dir):
                if name.startswith(f"part-{part.index:06d}."):
                    os.remove(os.path.join(out_dir, name))
        for summary in execute(stale):
            done[summary.index] = summary
    return [done[index] for index in sorted(done)]


class _Sink(Protocol):
    def write(self, data: bytes, /) -> int: ...


class _BinaryTo:
    """Bytes written to a text stream (the merge writes bytes; `run` callers pass text streams)."""

    def __init__(self, out: IO[str]):
        self.out = out
        self.decoder = codecs.getincrementaldecoder("utf-8")()

    def write(self, data: bytes) -> int:
        return self.out.write(self.decoder.decode(data))


def _replace(tmp: Path, final: Path) -> None:
    if tmp.is_dir() and final.is_dir():
        shutil.rmtree(final)
    os.replace(tmp, final)


def generate(
    rng: RangeSpec,
    filters: Filters,
    options: Options,
    script_path: str | Path,
    plan_path: str | Path | None = None,
    changes_path: str | Path | None = None,
    progress: ProgressCallback | None = None,
) -> Report:
    """Write the script (and plan, change log) for a range; files appear only when the job succeeds.

    `progress` is called now and then with a Progress; an exception it raises cancels the job."""
    return Flashback(rng, filters, options).generate(script_path, plan_path, changes_path, progress)
