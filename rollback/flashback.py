"""The flashback job on the local engine: a range of binlog files -> reverse (or forward) SQL script.

Events are read forward; each original transaction becomes one block (its reverse statements,
newest row first, between BEGIN and COMMIT, under a comment naming the transaction). Blocks
are spooled to disk as they complete and written out newest first, so memory holds one
transaction, not the range. Beside the script: an execution plan (JSON lines: each statement
with the check that proves its row is still as the binlog left it) and the change log.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import rollback
from rollback.binlog import events as ev
from rollback.binlog.columns import MISSING
from rollback.binlog.decode import (
    RowsBatch,
    StreamState,
    TxContext,
    check_boundary,
    decode_rows,
    decode_stream,
    state_at,
)
from rollback.binlog.gtid import GtidSet
from rollback.binlog.reader import BinlogFile
from rollback.binlog.rows import RowsEvent
from rollback.binlog.table_map import TableMap
from rollback.errors import DDLInRange, IrreversibleChange, RangeError, SchemaMismatch
from rollback.invert import Irreversible, Reverse, forward_row, invert_rows
from rollback.records import batch_records, record_json
from rollback.schema import SchemaResolver, SchemaSource
from rollback.sql import TableRenderer

SCRIPT_PRELUDE = (
    "SET NAMES utf8mb4;\nSET time_zone = '+00:00';\nSET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO';\n"
)


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

    def table_selected(self, tmap: TableMap) -> bool:
        if self.databases and tmap.database.lower() not in self.databases:
            return False
        return not (self.tables and f"{tmap.database}.{tmap.table}".lower() not in self.tables)


@dataclass
class Options:
    mode: str = "flashback"  # flashback | forward
    full_where: bool = False
    allow_partial: bool = False
    schema: SchemaSource | None = None
    verify_checksums: bool = True


@dataclass
class Report:
    counts: Counter = field(default_factory=Counter)  # (db.table, type) -> rows
    transactions: int = 0
    statements: int = 0
    irreversible: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    server_version: str = ""
    row_images: set[str] = field(default_factory=set)
    ddl: list[dict[str, Any]] = field(default_factory=list)
    bytes_total: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": [{"table": t, "type": k, "rows": n} for (t, k), n in sorted(self.counts.items())],
            "transactions": self.transactions,
            "statements": self.statements,
            "irreversible": self.irreversible,
            "warnings": self.warnings,
            "server_version": self.server_version,
            "row_images": sorted(self.row_images),
            "ddl": self.ddl,
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


# ---- output spool --------------------------------------------------------------------------------------


class BlockSpool:
    """Transaction blocks (script text + plan lines) on disk, replayed in either order."""

    def __init__(self, directory: str | None = None):
        self._script = tempfile.TemporaryFile(dir=directory)
        self._plan = tempfile.TemporaryFile(dir=directory)
        self._blocks: list[tuple[int, int, int, int]] = []

    def add(self, script: str, plan: str) -> None:
        s, p = script.encode("utf-8"), plan.encode("utf-8")
        self._blocks.append((self._script.tell(), len(s), self._plan.tell(), len(p)))
        self._script.write(s)
        self._plan.write(p)

    def __len__(self) -> int:
        return len(self._blocks)

    def replay(self, newest_first: bool) -> Iterator[tuple[bytes, bytes]]:
        order = reversed(self._blocks) if newest_first else iter(self._blocks)
        for s_off, s_len, p_off, p_len in order:
            self._script.seek(s_off)
            script = self._script.read(s_len)
            self._plan.seek(p_off)
            yield script, self._plan.read(p_len)

    def close(self) -> None:
        self._script.close()
        self._plan.close()


# ---- the job ---------------------------------------------------------------------------------------------


def _fixed_unsigned(unsigned: tuple[bool, ...] | None) -> Callable[[TableMap], tuple[bool, ...] | None]:
    return lambda _tmap: unsigned


def _comment(text: str) -> str:
    return " ".join(text.split()).replace("*/", "* /")


class _Transaction:
    def __init__(self, tx: TxContext, file: str | None, first_pos: int):
        self.tx = tx
        self.file = file
        self.first_pos = first_pos
        self.end_pos = first_pos
        self.statements: list[tuple[str, dict[str, Any]]] = []  # in execution order
        self.queries: list[str] = []
        self.rows_total = 0
        self.rows_selected = 0


class Flashback:
    def __init__(self, rng: RangeSpec, filters: Filters, options: Options):
        self.rng = rng
        self.filters = filters
        self.options = options
        self.report = Report()
        self.resolver = SchemaResolver(options.schema)
        self._renderers: dict[tuple[Any, ...], TableRenderer] = {}
        self._gtid = GtidFilter(rng.gtid) if rng.gtid else None
        self._since = parse_datetime(rng.start_datetime) if rng.start_datetime else None
        self._until = parse_datetime(rng.stop_datetime) if rng.stop_datetime else None
        if self._since is not None and self._until is not None and self._until <= self._since:
            raise RangeError("stop datetime is not after start datetime")
        self._changed_tables: set[str] = set()
        self.progress_bytes = 0

    # -- selection
    def _tx_selected(self, tx: TxContext) -> bool:
        if self._gtid is not None and not self._gtid.selects(tx.gtid):
            return False
        if self._since is not None and tx.timestamp < self._since:
            return False
        if self._until is not None and tx.timestamp >= self._until:
            return False
        return not (self.filters.thread_id is not None and tx.thread_id != self.filters.thread_id)

    def _renderer(self, tmap: TableMap, pos: int, flavour: str) -> TableRenderer:
        key = (tmap.database, tmap.table, tmap.column_types, tmap.column_meta, tmap.column_names, flavour)
        renderer = self._renderers.get(key)
        if renderer is None:
            schema = self.resolver.resolve(tmap, pos)
            if schema is None:
                raise SchemaMismatch(
                    f"table {tmap.qualified_name} at position {pos}: the binlog carries no column names "
                    "(binlog_row_metadata is not FULL); give the schema with --schema-dsn or --schema-file"
                )
            renderer = TableRenderer(tmap, schema, flavour, self.options.full_where)
            self._renderers[key] = renderer
        return renderer

    # -- the run
    def run(
        self, script_out: IO[str], plan_out: IO[str] | None = None, changes_out: IO[str] | None = None
    ) -> Report:
        spool = BlockSpool()
        try:
            self._read_range(spool, changes_out)
            self._check_ddl()
            if self.report.irreversible and not self.options.allow_partial:
                first = self.report.irreversible[0]
                raise IrreversibleChange(
                    f"{len(self.report.irreversible)} row change(s) cannot be restored from the binlog's images; "
                    f"first: {first['type']} on {first['table']} at {first['file']}:{first['pos']} "
                    f"(missing {', '.join(first['missing'])}: {first['reason']}); "
                    "--allow-partial emits the restorable changes and lists the rest"
                )
            self._write(spool, script_out, plan_out)
        finally:
            spool.close()
        return self.report

    def _files(self) -> Iterator[tuple[int, str]]:
        yield from enumerate(self.rng.files)

    def _read_range(self, spool: BlockSpool, changes_out: IO[str] | None) -> None:
        last = len(self.rng.files) - 1
        for index, path in self._files():
            with BinlogFile(path) as binlog:
                self.report.server_version = self.report.server_version or binlog.facts.server_version
                flavour = "mariadb" if binlog.facts.is_mariadb else "mysql"
                start = self.rng.start_position if index == 0 and self.rng.start_position else 4
                stop = self.rng.stop_position if index == last and self.rng.stop_position else binlog.size
                if stop > binlog.size:
                    raise RangeError(
                        f"{path}: stop position {stop} is past the end of the file ({binlog.size})"
                    )
                if stop < start:
                    raise RangeError(f"{path}: stop position {stop} is before start position {start}")
                self.report.bytes_total += stop - start
                state = state_at(binlog.buf, binlog.facts, start, binlog.path)
                if stop != binlog.size:
                    check_boundary(binlog.buf, binlog.facts, stop, binlog.path)
                state.file_name = os.path.basename(path)
                if state.tx.open:
                    self.report.warnings.append(
                        f"{state.file_name}:{start} is inside a transaction (opened at {state.tx.begin_pos}); "
                        "its earlier changes are not in the range"
                    )
                self._read_file(binlog, state, start, stop, flavour, spool, changes_out)

    def _read_file(
        self,
        binlog: BinlogFile,
        state: StreamState,
        start: int,
        stop: int,
        flavour: str,
        spool: BlockSpool,
        changes_out: IO[str] | None,
    ) -> None:
        current: _Transaction | None = None
        file_name = state.file_name
        for decoded in decode_stream(binlog.buf, state, start, stop, self.options.verify_checksums):
            event = decoded.event
            self.progress_bytes = decoded.outer_end
            if isinstance(event, RowsEvent):
                if current is None or current.tx is not state.tx:
                    self._finish(current, spool)
                    current = _Transaction(state.tx, file_name, state.tx.begin_pos or decoded.outer_pos)
                current.end_pos = decoded.outer_end
                tmap = state.table_maps.get(event.table_id)
                if tmap is None:
                    decode_rows(decoded, event, state)  # raises the precise error
                    continue
                current.rows_total += 1
                if not self.filters.table_selected(tmap) or (
                    self.filters.types and event.kind not in self.filters.types
                ):
                    continue
                if not self._tx_selected(state.tx):
                    continue
                renderer = self._renderer(tmap, decoded.outer_pos, flavour)
                unsigned = renderer.schema.unsigned if renderer.schema else None
                batch = decode_rows(decoded, event, state, _fixed_unsigned(unsigned))
                self._take(current, batch, renderer, changes_out)
            elif isinstance(event, ev.Xid) or (
                isinstance(event, ev.Query) and event.kind in ("COMMIT", "ROLLBACK")
            ):
                if current is not None:
                    current.end_pos = decoded.outer_end
                self._finish(current, spool)
                current = None
            elif isinstance(event, ev.Query) and event.kind == "DDL":
                self.report.ddl.append(
                    {
                        "file": file_name,
                        "pos": decoded.outer_pos,
                        "sql": _comment(event.sql)[:300],
                        "db": event.database,
                    }
                )
        if current is not None:
            self.report.warnings.append(
                f"{file_name}:{stop} ends inside the transaction opened at {current.first_pos}; "
                "its later changes are not in the range"
            )
        self._finish(current, spool)

    def _take(
        self, current: _Transaction, batch: RowsBatch, renderer: TableRenderer, changes_out: IO[str] | None
    ) -> None:
        table = batch.table.qualified_name
        self._changed_tables.add(table.lower())
        self.report.counts[(table, batch.kind)] += len(batch.rows)
        current.rows_selected += len(batch.rows)
        if batch.tx.rows_query and (not current.queries or current.queries[-1] != batch.tx.rows_query):
            current.queries.append(batch.tx.rows_query)
        image_kind = "FULL"
        for row in batch.rows:
            for image in row if batch.kind == "update" else (row,):
                if any(v is MISSING for v in image):
                    image_kind = "partial (MINIMAL or NOBLOB)"
        self.report.row_images.add(image_kind)
        if changes_out is not None:
            for record in batch_records(batch, renderer.schema.names if renderer.schema else None):
                changes_out.write(record_json(record))
                changes_out.write("\n")
        base = {"file": batch.file, "pos": batch.pos, "table": table}
        if self.options.mode == "forward":
            for row in batch.rows:
                sql = forward_row(renderer, batch.kind, row)
                if sql is not None:
                    current.statements.append((sql, dict(base, type=batch.kind, check=None, expect=None)))
            return
        # Newest first: within the transaction the reversed list is built back to front at the end.
        for index, result in reversed(list(invert_rows(renderer, batch.kind, batch.rows))):
            if isinstance(result, Irreversible):
                self.report.irreversible.append(
                    dict(
                        base, row=index, type=result.kind, missing=list(result.missing), reason=result.reason
                    )
                )
                continue
            assert isinstance(result, Reverse)
            current.statements.append(
                (
                    result.sql,
                    dict(base, row=index, type=result.kind, check=result.check, expect=result.expect),
                )
            )

    def _finish(self, current: _Transaction | None, spool: BlockSpool) -> None:
        if current is None or not current.statements:
            return
        tx = current.tx
        statements = current.statements if self.options.mode == "forward" else current.statements[::-1]
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(tx.timestamp)) if tx.timestamp else "-"
        header = [
            f"-- transaction gtid={tx.gtid or '-'} file={current.file} pos={current.first_pos}-{current.end_pos} "
            f"time={stamp} UTC server_id={tx.server_id} thread={tx.thread_id if tx.thread_id is not None else '-'}"
        ]
        if current.rows_selected < current.rows_total:
            header.append("-- note: filters selected only part of this transaction's changes")
        for query in current.queries:
            header.append(f"-- original: {_comment(query)[:1000]}")
        lines = header + ["BEGIN;"] + [sql for sql, _ in statements] + ["COMMIT;", ""]
        tx_id = self.report.transactions
        plan = "".join(
            json.dumps(dict(meta, tx=tx_id, gtid=tx.gtid, sql=sql), ensure_ascii=False) + "\n"
            for sql, meta in statements
        )
        spool.add("\n".join(lines) + "\n", plan)
        self.report.transactions += 1
        self.report.statements += len(statements)

    def _check_ddl(self) -> None:
        for ddl in self.report.ddl:
            sql = ddl["sql"]
            if not re.match(r"(?is)^\s*(ALTER|DROP|RENAME|TRUNCATE|CREATE\s+OR\s+REPLACE)\b", sql):
                continue
            names = {n.lower() for n in re.findall(r"`((?:[^`]|``)+)`|\b(\w+)\b", sql) for n in n if n}
            for table in self._changed_tables:
                db, _, name = table.partition(".")
                if name in names and (db in names or (ddl["db"] or "").lower() == db):
                    raise DDLInRange(
                        f"DDL on {table} inside the range at {ddl['file']}:{ddl['pos']}: {sql[:200]} — "
                        "the table's schema changes mid-range; split the range at this position"
                    )

    def _write(self, spool: BlockSpool, script_out: IO[str], plan_out: IO[str] | None) -> None:
        report = self.report
        mode = (
            "flashback (reverse SQL, newest change first)"
            if self.options.mode == "flashback"
            else "forward SQL"
        )
        script_out.write(f"-- mysql-rollback {rollback.__version__}: {mode}\n")
        script_out.write(f"-- range: {self.rng.describe()}\n")
        if self.rng.start_datetime or self.rng.stop_datetime:
            script_out.write("-- datetimes without an explicit offset are read as UTC\n")
        script_out.write(f"-- filters: {self.filters.describe()}\n")
        script_out.write(f"-- server version: {report.server_version or '-'}\n")
        script_out.write(f"-- row images seen: {', '.join(sorted(report.row_images)) or '-'}\n")
        script_out.write(f"-- transactions: {report.transactions}, statements: {report.statements}\n")
        for (table, kind), rows in sorted(report.counts.items()):
            script_out.write(f"-- rows: {table} {kind} {rows}\n")
        for warning in report.warnings:
            script_out.write(f"-- warning: {_comment(warning)}\n")
        for item in report.irreversible:
            script_out.write(
                f"-- irreversible: {item['type']} on {item['table']} at {item['file']}:{item['pos']} row {item['row']} "
                f"(missing {', '.join(item['missing'])})\n"
            )
        script_out.write(SCRIPT_PRELUDE)
        for script, plan in spool.replay(newest_first=self.options.mode == "flashback"):
            script_out.write(script.decode("utf-8"))
            if plan_out is not None:
                plan_out.write(plan.decode("utf-8"))


def generate(
    rng: RangeSpec,
    filters: Filters,
    options: Options,
    script_path: str | Path,
    plan_path: str | Path | None = None,
    changes_path: str | Path | None = None,
) -> Report:
    """Write the script (and plan, change log) for a range; files appear only when the job succeeds."""
    job = Flashback(rng, filters, options)
    script_path = Path(script_path)
    tmp_script = script_path.with_name(script_path.name + ".part")
    tmp_plan = Path(str(plan_path) + ".part") if plan_path else None
    tmp_changes = Path(str(changes_path) + ".part") if changes_path else None
    try:
        with open(tmp_script, "w", encoding="utf-8") as script_out:
            plan_out = open(tmp_plan, "w", encoding="utf-8") if tmp_plan else None
            changes_out = open(tmp_changes, "w", encoding="utf-8") if tmp_changes else None
            try:
                report = job.run(script_out, plan_out, changes_out)
            finally:
                for f in (plan_out, changes_out):
                    if f is not None:
                        f.close()
        os.replace(tmp_script, script_path)
        if tmp_plan and plan_path:
            os.replace(tmp_plan, plan_path)
        if tmp_changes and changes_path:
            os.replace(tmp_changes, changes_path)
    finally:
        for tmp in (tmp_script, tmp_plan, tmp_changes):
            if tmp is not None and tmp.exists():
                tmp.unlink()
    return report
