"""The job: the one module that knows every step of a flashback, and runs them in order.

request (checked) -> plan -> schemas -> partitions on an engine (decode, select, invert, render,
part files) -> hold-back passes -> report and refusals -> merge -> outputs moved into place.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from rollback.base.errors import (
    EmptyRange,
    IrreversibleChange,
    PartialTransaction,
    SchemaMismatch,
    SchemaUnproven,
)
from rollback.base.output_files import OutputPath
from rollback.job.guard import (
    ddl_hits,
    lost_rows,
    refuse_lost_rows,
    refuse_row_loss_under_keep,
    refuse_schema_change_mid_range,
    refuse_selected_ddl,
)
from rollback.job.header import script_header
from rollback.job.merge import (
    BinaryTo,
    Sink,
    change_parts,
    closed_spans,
    concatenate,
    filter_splits,
    irreversible_items,
    merge_parts,
    partial_picks,
)
from rollback.job.net_script import net_body, write_net
from rollback.job.range_notes import range_notes
from rollback.job.report import IRREVERSIBLE_KEPT, PARTIAL_KEPT, Progress, ProgressCallback, Report
from rollback.pipeline.contents import held, table_hints
from rollback.pipeline.dependencies import DEPENDENTS_KEPT, Seen, dependents, merge_lines
from rollback.pipeline.dependencies import describe as describe_dependency
from rollback.pipeline.engines import choose_engine, engine_for
from rollback.pipeline.engines.base import LentSpark
from rollback.pipeline.engines.local import FORK_BYTES, usable_cpus
from rollback.pipeline.holdback import Taints, load_taints, merge_taints, taints_before
from rollback.pipeline.partition import JobSpec
from rollback.pipeline.parts import Summary, decode_error, part_path
from rollback.pipeline.plan import (
    PARALLEL_PLAN_BYTES,
    TARGET_BYTES,
    Partition,
    PartitionPlan,
    SchemaKey,
    partition_target,
    plan_range,
    range_bytes,
)
from rollback.pipeline.session import session_started, spark_master, spark_slots
from rollback.request.spec import EngineKind, Filters, Options, RangeSpec, check_request
from rollback.schema.ddl import shorten
from rollback.schema.tables import SchemaResolver, SchemaSource, ServerSchema, StaticSchema, TableSchema

if TYPE_CHECKING:
    # imported where used: the schema history (sqlglot) and the proof scan are not on a plain run's path
    from rollback.job.ddl_modes import DdlPlan
    from rollback.job.schema_proof import LaterDdl, Scan
from rollback.schema.side_effects import SIDE_EFFECTS, detect_with, statement_kinds

RunPartitions = Callable[[list[Partition]], list[Summary]]


class Job:
    def __init__(self, rng: RangeSpec, filters: Filters, options: Options, spark: LentSpark | None = None):
        check_request(rng, filters, options)
        self.rng = rng
        self.filters = filters
        self.options = options
        self._spark = spark  # another process's session, in place of one of this process
        self.report = Report()
        self._unchecked: list[str] = []  # files without event checksums (a header note each)
        self._times: list[int] = []  # event timestamps at the ends of each file's range
        self._resolved: dict[SchemaKey, TableSchema | str | None] = {}
        self._engine = EngineKind.LOCAL
        self._target: int | None = None
        self._plan_processes = 1
        self._local_processes = 1  # forked workers of the local engine
        self._history: DdlPlan | None = None  # --ddl keep | reverse
        self._history_check = ""

    # -- planning
    def partition_plan(self) -> PartitionPlan:
        target = self._partition_bytes()
        return plan_range(self.rng, target, self._plan_processes, whole_transactions=self.options.net)

    def _choose_engine(self) -> None:
        """The engine (auto: by the range's size) and the partition size (by the slots it has)."""
        asked = EngineKind(self.options.engine)
        size = 0
        if asked != EngineKind.SPARK or not self.options.partition_bytes:
            try:
                size = range_bytes(self.rng)
            except OSError:
                pass  # a file that is not there: planning says so
        master = self.options.spark_master or spark_master()
        warm = self.options.spark_warm or session_started()
        self._engine, self.report.engine_reason = choose_engine(
            asked, size, self.options.auto_spark_bytes, master, warm
        )
        if len(self.rng.files) > 1 and size >= PARALLEL_PLAN_BYTES:
            self._plan_processes = min(len(self.rng.files), os.cpu_count() or 1)
        if self.options.partition_bytes:
            self._target = self.options.partition_bytes
        elif self._engine == EngineKind.SPARK:
            slots = self._spark.slots() if self._spark is not None else spark_slots(self.options.spark_master)
            self._target = partition_target(size, slots)
        else:
            self._target = TARGET_BYTES
        if self._engine == EngineKind.LOCAL and (self.options.partition_bytes or size >= FORK_BYTES):
            # the local engine forks a worker per usable CPU, with partitions sized for them
            self._local_processes = usable_cpus()
            if not self.options.partition_bytes:
                self._target = partition_target(size, self._local_processes)

    def _partition_bytes(self) -> int:
        if self._target is None:
            self._choose_engine()
        assert self._target is not None
        return self._target

    def _name_rule(self) -> None:
        """Database and table filters compare names as the server does: exactly under
        lower_case_table_names=0 (and when no server says otherwise), case-insensitively under 1 or 2."""
        if not (self.filters.databases or self.filters.tables):
            return
        servers = [
            s for s in (self.options.schema, self.options.binlog_server) if isinstance(s, ServerSchema)
        ]
        if not servers:
            return
        conn = servers[0].connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT @@lower_case_table_names")
                self.filters.case_sensitive = int(cur.fetchone()[0]) == 0
        finally:
            conn.close()

    def _schemas(self, plan: PartitionPlan) -> dict[SchemaKey, TableSchema | str | None]:
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
        script = OutputPath(script_path)
        plan = OutputPath(plan_path) if plan_path else None
        changes = (
            OutputPath(changes_path, directory_ok=self.options.changes_format == "parquet")
            if changes_path
            else None
        )
        outputs = [o for o in (script, plan, changes) if o is not None]
        out_dir = tempfile.mkdtemp(prefix=".mysql-rollback-", dir=self._parts_dir(script.directory))
        try:
            summaries = self._run(out_dir, changes is not None, plan is not None, progress)
            _tell(progress, "merging", self.report)
            with open(script.staging, "wb") as script_out:
                plan_out = open(plan.staging, "wb") if plan is not None else None
                try:
                    self._merge(out_dir, summaries, script_out, plan_out)
                finally:
                    if plan_out is not None:
                        plan_out.close()
            if changes is not None:
                self._write_changes(out_dir, summaries, changes.staging)
            for output in outputs:
                output.commit()
        finally:
            for output in outputs:
                output.discard()
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
        out_dir = tempfile.mkdtemp(prefix="mysql-rollback-", dir=self._parts_dir(None))
        try:
            summaries = self._run(out_dir, changes_out is not None, plan_out is not None, progress)
            self._merge(out_dir, summaries, BinaryTo(script_out), BinaryTo(plan_out) if plan_out else None)
            if changes_out is not None:
                for part in change_parts(out_dir, summaries):
                    with open(part, encoding="utf-8") as f:
                        shutil.copyfileobj(f, changes_out)
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)
        return self.report

    def _parts_dir(self, beside: Path | None) -> str | None:
        """Where the parts go on the driver: the work dir when it is a local directory (a URL work dir
        only stages binlogs for a cluster's executors), else `beside` (None: the system's temp dir)."""
        work_dir = self.options.work_dir
        if work_dir and "://" not in work_dir:
            os.makedirs(work_dir, exist_ok=True)
            return work_dir
        return str(beside) if beside is not None else None

    def _run(
        self, out_dir: str, changes: bool, plan_lines: bool, progress: ProgressCallback | None
    ) -> list[Summary]:
        self._name_rule()
        plan = self.partition_plan()
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
            rows_per_statement=self.options.rows_per_statement,
            verify_checksums=self.options.verify_checksums,
            gtid=self.rng.gtid_filter,
            since=self.rng.since,
            until=self.rng.until,
            schemas=self._schemas(plan),
            changes=changes,
            plan_lines=plan_lines,
            hold=self.options.allow_partial and self.options.mode == "flashback",
            track_dependencies=self.filters.picks and self.options.mode == "flashback",
            net=self.options.net,
        )
        if self.options.ddl != "refuse" and self.options.mode != "changes":
            history = self._schema_history(plan)
            spec.epochs = history.schemas
            spec.inverse_ddl = history.inverse if self.options.mode == "flashback" else {}
        chosen = self._engine
        if chosen == EngineKind.SPARK and len(plan.partitions) == 1:
            chosen = EngineKind.LOCAL  # nothing to distribute
            report.engine_reason = "the range fits in one partition"
        engine = (
            self._spark
            if chosen == EngineKind.SPARK and self._spark is not None
            else engine_for(chosen, self.options.spark_master, self.options.work_dir, self._local_processes)
        )
        report.engine = chosen.value
        note = None
        if progress is not None:
            parts = len(plan.partitions)
            note = lambda done, events: progress(  # noqa: E731
                Progress(done, plan.bytes_total, events, plan.events_total, parts, chosen.value)
            )

        def execute(partitions: list[Partition]) -> list[Summary]:
            return engine.run(spec, partitions, note)

        summaries = execute(plan.partitions)
        if spec.hold:
            summaries = _hold_back(out_dir, spec, plan, summaries, execute)
        self._collect(out_dir, plan, summaries)
        self._side_effects()
        self._packet_limit()
        return summaries

    def _schema_history(self, plan: PartitionPlan) -> DdlPlan:
        """--ddl keep | reverse: each selected table's definitions from the schema source (now) back
        through the DDL after the range and in it (rollback.schema.history, rollback.job.ddl_modes)."""
        from rollback.job.ddl_modes import BeforeRange, ddl_events, dropped_columns, plan_ddl
        from rollback.job.schema_proof import scan_before

        report = self.report
        report.ddl_mode = self.options.ddl
        if self.options.schema is None:
            raise SchemaUnproven(
                f"--ddl {self.options.ddl} rebuilds each table's history from the tables as they are now: "
                "give them with --schema-dsn, --schema-file or --server"
            )
        later: list[LaterDdl] = []
        where = "the binlog after the range: not read (--trust-schema)"
        if plan.partitions and not self.options.trust_schema:
            scan, reasons = self._scan_after(plan, self.options.schema, set(), later)
            if scan is None:
                raise SchemaUnproven(
                    f"--ddl {self.options.ddl}: cannot read the DDL after the range up to the schema source "
                    f"({'; '.join(reasons)}); --trust-schema takes the schema source as the tables after the range"
                )
            where = f"{scan.where} after {scan.after} up to {scan.up_to}"
        events = ddl_events(plan, [(d.sql, d.database, d.file, d.pos) for d in later])
        before = BeforeRange()
        if plan.partitions:
            first = plan.partitions[0]
            found = scan_before(first.location, first.start)
            before = BeforeRange.read([(d.sql, d.database, d.file, d.pos) for d in found.ddl], found.maps)
        history = plan_ddl(
            self.options.ddl, plan, events, self.options.schema, self.filters.table_selected, before
        )
        report.timelines = [t.to_dict() for t in history.timelines]
        lost = dropped_columns(history.schemas)
        if lost:
            report.warnings.append(
                f"--ddl keep: column(s) dropped since the binlog wrote them are not written: {', '.join(lost)}"
            )
        if self.options.mode == "flashback" and history.inverse:
            report.warnings.append(
                "--ddl reverse: the script holds inverse DDL, which commits implicitly: executions refuse its "
                "plan; apply the reviewed script with the mysql client"
            )
        self._history = history
        self._history_check = (
            f"schema history of {len(history.timelines)} table(s) through {len(events)} DDL ({where})"
        )
        return history

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

    def _packet_limit(self) -> None:
        """The largest statement against the schema server's max_allowed_packet: the mysql client stops
        at a statement the server refuses, with the script half applied (an execution checks its target)."""
        schema = self.options.schema
        largest = self.report.largest_statement
        if largest is None or not isinstance(schema, ServerSchema):
            return
        try:
            conn = schema.connect()
            try:
                with conn.cursor() as cur:
                    cur.execute("SELECT @@max_allowed_packet")
                    limit = int(cur.fetchone()[0])
            finally:
                conn.close()
        except Exception as exc:  # noqa: BLE001 - a warning: the job's output does not depend on it
            reason = " ".join(str(exc.args[-1] if exc.args else exc).split())
            self.report.warnings.append(f"cannot read max_allowed_packet from the schema server: {reason}")
            return
        size = largest["bytes"]
        if size + 1 >= limit:  # the statement and its command byte in one packet, as execute checks
            self.report.warnings.append(
                f"the largest statement ({size} bytes, {largest['table']} at {largest['file']}:{largest['pos']}) "
                f"does not fit the schema server's max_allowed_packet ({limit}): piped to the mysql client, the "
                f"script stops there half applied; raise it on the target (SET GLOBAL max_allowed_packet = "
                f"{(size + 1024) // 1024 * 1024 + 1024}) and the client's --max-allowed-packet"
            )

    def _collect(self, out_dir: str, plan: PartitionPlan, summaries: list[Summary]) -> None:
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
            if report.no_fk_checks is None:
                report.no_fk_checks = summary.no_fk_checks
        report.largest_transactions = largest_transactions(summaries if failed is None else [])
        hits = ddl_hits(report.ddl, changed)
        stop_at = (failed.index, failed.error_pos or 0) if failed is not None else None
        history = self.options.ddl != "refuse" and self.options.mode != "changes"
        if history:
            refuse_row_loss_under_keep(hits, ddl_at, changed, self.options.ddl)
        else:
            refuse_schema_change_mid_range(hits, ddl_at, changed, stop_at)
        if failed is not None:
            assert failed.error is not None
            raise decode_error(failed.error)
        report.transactions += closed_spans(summaries)
        # (The forward SQL and the change log undo nothing: for them only a schema changing under
        # the changes counts.)
        if self.options.mode == "flashback" and not history:
            refuse_selected_ddl(hits)
        if self.options.mode == "flashback" and self.options.ddl != "reverse":
            report.lost_rows = lost_rows(hits)
            if not self.options.accept_lost_rows:
                refuse_lost_rows(report.lost_rows)
        mismatch = next((s.mismatch for s in summaries if s.mismatch is not None), None)
        if mismatch is not None:
            raise decode_error(mismatch)
        self._partial_picks(summaries)
        self._filter_splits(summaries)
        if self.filters.picks and self.options.mode == "flashback":
            self._dependencies(out_dir, summaries)
        self._check_schema_source(plan, set(changed))
        if not report.counts:
            self._empty(summaries)
        if self.options.mode == "flashback":
            report.range_notes = range_notes(self.rng, self.filters, summaries)
            report.warnings.extend(report.range_notes)
        for item in irreversible_items(out_dir, summaries):
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

    def _partial_picks(self, summaries: list[Summary]) -> None:
        """Row picks that take only part of a transaction: refused unless the user accepts them."""
        found = partial_picks(summaries)
        if not found or self.options.mode == "changes":  # a change log undoes nothing
            return
        self.report.partial_transaction_count += len(found)
        if not self.options.allow_partial_transactions:
            first = found[0]
            raise PartialTransaction(
                f"the row picks ({self.filters.describe()}) take only part of {len(found)} transaction(s); first: "
                f"gtid {first['gtid'] or '-'} at {first['file']}:{first['pos']} ({first['picked']} row(s) taken, "
                f"{first['dropped']} left); undoing part of a transaction may break its invariants: "
                "--allow-partial-transactions accepts it"
            )
        self.report.partial_transactions = found[:PARTIAL_KEPT]

    def _filter_splits(self, summaries: list[Summary]) -> None:
        """Table and type filters that take only part of a transaction: refused unless accepted, as
        row picks are (the rest of the transaction stays as it is)."""
        found = filter_splits(summaries)
        if not found or self.options.mode == "changes":  # a change log undoes nothing
            return
        if not self.options.allow_partial_transactions:
            first = found[0]
            raise PartialTransaction(
                f"the filters ({self.filters.describe()}) take only part of {len(found)} transaction(s); first: "
                f"gtid {first['gtid'] or '-'} at {first['file']}:{first['pos']}, leaving out "
                f"{', '.join(first['left_out'])}; undoing part of a transaction may break its invariants: "
                "--allow-partial-transactions accepts it"
            )
        kept = PARTIAL_KEPT - len(self.report.partial_transactions)
        self.report.partial_transactions.extend(found[: max(kept, 0)])
        self.report.partial_transaction_count += len(found)

    def _dependencies(self, out_dir: str, summaries: list[Summary]) -> None:
        """Rows a later excluded change touched after a selected one (pipeline/dependencies.py)."""
        selected: Seen = {}
        excluded: Seen = {}
        for summary in summaries:
            if summary.dependency_keys:
                with open(part_path(out_dir, summary.index, "keys.jsonl"), encoding="utf-8") as f:
                    merge_lines(f, selected, excluded)
        found = dependents(selected, excluded)
        self.report.dependency_count = len(found)
        self.report.dependencies = found[:DEPENDENTS_KEPT]
        if found:
            self.report.warnings.append(
                f"{len(found)} row(s) changed by a selected transaction were changed again later by an excluded "
                f"one (first: {describe_dependency(found[0])}); the rollback would overwrite those changes, "
                "and executing it stops at them (the row is not as the selected change left it)"
            )

    def _empty(self, summaries: list[Summary]) -> None:
        """The range selected no row change: an error unless allowed, saying what the files hold."""
        tables = {table for s in summaries for table, _kind in s.contents}
        said = [
            f"searched {self.rng.describe()}; filters: {self.filters.describe()}",
            held(summaries, self._times),
            *table_hints(self.filters.tables, self.filters.databases, tables, self.filters.case_sensitive),
        ]
        if not self.options.allow_empty:
            raise EmptyRange(
                f"the range selected no row change: {'; '.join(said)}; --allow-empty accepts an empty result"
            )
        self.report.warnings.append(f"the range selected no row change: {'; '.join(said[1:])}")

    def _check_schema_source(self, plan: PartitionPlan, changed: set[str]) -> None:
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
            if self._history is not None:
                checks.append(self._history_check)
            elif self.options.trust_schema:
                checks.append("not checked: --trust-schema")
            else:
                checks.append(self._prove(plan, by_position, source))
        report = self.report
        report.schema_source = "; ".join(sources) or (source.description if source else "binlog metadata")
        report.schema_check = "; ".join(checks) or "nothing to check (no row changes)"

    def _scan_after(
        self,
        plan: PartitionPlan,
        source: SchemaSource | None,
        tables: set[str],
        collect: list[LaterDdl] | None = None,
    ) -> tuple[Scan | None, list[str]]:
        """The binary log after the range up to the present: from the server the range was read from
        or the schema server, else from the files beside the range's; with the reasons each could
        not tell (rollback.job.schema_proof)."""
        from rollback.job.schema_proof import NotProven, scan_files, scan_server

        last = plan.partitions[-1]
        reasons: list[str] = []
        for server in [s for s in (self.options.binlog_server, source) if isinstance(s, ServerSchema)]:
            scan, why = scan_server(
                server.connect,
                server.name,
                last.location,
                last.start,
                last.end,
                tables,
                collect,
                server.replication,
            )
            if scan is not None:
                return scan, reasons
            reasons.append(why)
        try:
            return scan_files(last.location, last.end, tables, collect), reasons
        except NotProven as exc:
            reasons.append(str(exc))
            return None, reasons

    def _prove(self, plan: PartitionPlan, tables: set[str], source: SchemaSource) -> str:
        """Look for DDL on `tables` after the range up to the present (rollback.job.schema_proof)."""

        scan, reasons = self._scan_after(plan, source, tables)
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
                f"after that change, and the binlog names no columns to match by name; {advice}, "
                "or --ddl keep to follow the DDL (the schema history)"
            )
        what = "table" if len(tables) == 1 else "tables"
        return f"no DDL on the changed {what} in {scan.where} after {scan.after} up to {scan.up_to}"

    # -- the merge
    def _merge(self, out_dir: str, summaries: list[Summary], script_out: Sink, plan_out: Sink | None) -> None:
        mode = self.options.mode
        body = None
        if self.options.net:
            body = net_body(out_dir, summaries, plan_out is not None)
            self.report.statements = body[2]
            self.report.transactions = 1 if body[2] else 0
        header = script_header(
            mode,
            self.rng,
            self.filters,
            self.report,
            self._unchecked,
            irreversible_items(out_dir, summaries),
        )
        if body is not None:
            write_net(header, body, script_out, plan_out)
            return
        merge_parts(out_dir, summaries, header, mode == "flashback", script_out, plan_out, remove=True)

    def _write_changes(self, out_dir: str, summaries: list[Summary], path: Path) -> None:
        parts = change_parts(out_dir, summaries)
        if self.options.changes_format == "parquet":
            from rollback.pipeline.changes import write_parquet

            write_parquet(parts, str(path), self.options.spark_master)
            return
        with open(path, "wb") as out:
            concatenate(parts, out)


def largest_transactions(summaries: list[Summary], top: int = 10) -> list[dict[str, Any]]:
    """The blocks with the most statements, the pieces of crossing blocks added up."""
    blocks: dict[int, dict[str, Any]] = {}
    for summary in summaries:
        for facts in summary.largest_blocks:
            seen = blocks.get(facts["tx"])
            if seen is None:
                blocks[facts["tx"]] = dict(facts)
            else:
                seen["statements"] += facts["statements"]
                seen["tables"] = sorted(set(seen["tables"]) | set(facts["tables"]))
    ranked = sorted(blocks.values(), key=lambda b: (-b["statements"], b["tx"]))[:top]
    return [{k: v for k, v in b.items() if k != "tx"} for b in ranked]


def _hold_back(
    out_dir: str,
    spec: JobSpec,
    plan: PartitionPlan,
    summaries: list[Summary],
    execute: RunPartitions,
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


def _tell(progress: ProgressCallback | None, phase: str, report: Report) -> None:
    """A phase after the partitions starts (merging): the caller hears it once, with the range's totals
    and the rows found. (Before the first partition's progress the caller knows it is planning.)"""
    if progress is not None:
        progress(
            Progress(
                report.bytes_total,
                report.bytes_total,
                report.events_total,
                report.events_total,
                report.partitions,
                report.engine,
                phase=phase,
                rows=sum(report.counts.values()),
            )
        )


def generate(
    rng: RangeSpec,
    filters: Filters,
    options: Options,
    script_path: str | Path,
    plan_path: str | Path | None = None,
    changes_path: str | Path | None = None,
    progress: ProgressCallback | None = None,
    spark: LentSpark | None = None,
) -> Report:
    """Write the script (and plan, change log) for a range; files appear only when the job succeeds.

    `progress` is called now and then with a Progress; an exception it raises cancels the job.
    `spark`: the Spark engine runs the partitions on that session (another process's) instead of
    starting one in this process."""
    return Job(rng, filters, options, spark).generate(script_path, plan_path, changes_path, progress)
