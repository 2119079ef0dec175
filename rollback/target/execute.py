"""Verified execution of a rollback plan against a target server: all or nothing.

Before anything runs, the target is asked what the plan's statements would do beyond their rows
(rollback/schema/side_effects.py: triggers, cascading foreign keys, tables without transactions) and how
big a statement it accepts (max_allowed_packet): what the caller did not accept is refused, and a
statement that cannot be sent is refused, before a single statement runs.

Every statement runs after its check (the row is still as the binlog left it, or its key is free for
a re-insert) and must affect exactly one row. The checks are locking reads (SELECT ... FOR UPDATE)
inside the transaction that applies, in execution order: each one sees the state the later changes'
reversal left, and a row another session changes concurrently is either waited for and then seen as
changed (a conflict), or reported as locked after the lock wait timeout, never overwritten.

A dry run does everything and rolls back, except on non-transactional tables, where it only runs the
checks (reads). Commit mode first runs the dry run (conflicts stop it before anything is applied, or
are skipped with on_conflict="skip"), then everything again in one transaction, or committing per
original transaction when asked; with check_first=False one transaction is its own dry run. A pass in
one transaction streams its plan when its tables have no triggers, cascading foreign keys or
non-transactional engine (_streamed, plan_stream.py): the preflight reads the tables from the
plan's bytes, and each batch is read, cut and built while the server runs the one before, so that the
first batch goes out at once and the plan is never held whole; a step the preflight did not see rolls
back what ran, and the careful path (the whole plan read first) takes it from the start.

Steps go to the server in batches, one multi-statement query each (every step's check, then its
statement, in plan order, so each check still sees what the steps before it left), and their results
are read in order: the first check that fails or statement that does not affect exactly one row is
handled as it would be one step at a time. A skipped conflict rolls its batch back to a savepoint and
runs it again one step at a time. Steps on non-transactional tables, on tables with triggers, and the
dry run's read-only steps always run one at a time: a batch runs past a failed check before it is read.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import orjson

from rollback.base.collector import collector_paused
from rollback.base.dsn import ConnectionOptions, open_connection, parse_dsn, redact
from rollback.base.errors import EXIT_INCOMPLETE, EXIT_INTERRUPTED, ConflictError, RollbackError, SourceError
from rollback.base.identifiers import quote_ident
from rollback.base.server_version import version_tuple
from rollback.schema.side_effects import (
    KINDS,
    SideEffects,
    cascade_warning,
    detect,
    plan_statement_kinds,
    statement_kind,
    trigger_warning,
)
from rollback.target import batches as apply_batches
from rollback.target import merge_columns as apply_merge
from rollback.target import merge_plan as apply_merge_plan
from rollback.target import plan_stream
from rollback.target.resolutions import ResolutionsError

if TYPE_CHECKING:
    import pymysql  # imported where a connection is made: a script-only run never loads it

    from rollback.target.resolutions import Resolutions

PRELUDE = ("SET NAMES utf8mb4", "SET time_zone = '+00:00'", "SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO'")
LOCKING = apply_batches.LOCKING
DEFAULT_LOCK_WAIT_TIMEOUT = 10  # seconds a check waits for a row another session holds
LOCK_ERRORS = {1205: "row locked by another session", 1213: "deadlock with another session"}
LISTED_TRANSACTIONS = 10  # transactions named in an error message; the result lists them all
PROGRESS_EVERY = 100  # statements between two progress reports (each commit is reported too)
# Steps sent in one query (each its check and its statement): round trips, not the server, were the
# cost of one step at a time (bench/bench_apply.py). A query also stays under max_allowed_packet and
# BATCH_BYTES. The 1M-row incident's verified commit took 6.2-6.3 s in batches of 500 steps, 5.4-5.5 s
# in batches of 1,000, 5.6 s of 2,000 and 5.3-5.4 s of 4,000 (bench/README.md, 2026-11-28).
BATCH_STEPS = 2000
BATCH_BYTES = 1 << 20
# The plan's bytes a streamed pass's preflight reads before its first batch (_streamed); the rest is
# met line by line, each line's table checked against those the preflight looked at.
HEAD_BYTES = 4 << 20
AHEAD = 2  # batches built ahead of the one the server runs
# units a streamed pass reads ahead (each original transaction starts one, beside the batches)
STREAM_AHEAD = 16
BATCH_STEP_ROOM = 1024  # of max_allowed_packet, left for the packet's header (a batch is at most the rest)
STEP_OVERHEAD = 48  # bytes a step adds to a query beyond its statement and check: savepoint, separators


@dataclass
class ExecutionResult:
    dry_run: bool
    committed: bool = False
    statements: int = 0
    rows_affected: int = 0
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0
    # per-transaction mode: the original transactions whose reversal is committed, in commit order
    transactions_applied: list[dict[str, Any]] = field(default_factory=list)
    side_effects: dict[str, Any] = field(default_factory=dict)  # what the target said (SideEffects.to_dict)
    # dry run: non-transactional tables whose statements were not run, only their checks
    read_only_tables: list[str] = field(default_factory=list)
    unverified: int = 0  # of their checks, those that depend on statements the dry run did not run
    # commit: statements run on non-transactional tables (they stay whatever happens next), per table
    non_transactional_applied: dict[str, int] = field(default_factory=dict)
    # merge mode (apply_merge): restored, kept_later_changes, resolved (per choice), unresolved; else None
    merge: dict[str, Any] | None = None

    @property
    def transactions_committed(self) -> int:
        return len(self.transactions_applied)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "committed": self.committed,
            "statements": self.statements,
            "rows_affected": self.rows_affected,
            "conflicts": self.conflicts,
            "skipped": self.skipped,
            "transactions_committed": self.transactions_committed,
            "transactions_applied": self.transactions_applied,
            "side_effects": self.side_effects,
            "read_only_tables": self.read_only_tables,
            "unverified": self.unverified,
            "non_transactional_applied": self.non_transactional_applied,
            "merge": self.merge,
        }


class ExecutionFailed(RollbackError):
    """A statement failed or affected a number of rows other than one; the message says what stays applied."""

    exit_code = EXIT_INCOMPLETE

    def __init__(self, message: str, result: ExecutionResult | None = None):
        super().__init__(message)
        self.result = result  # how far the failed pass got (transactions committed in per-transaction mode)


class ExecutionConflict(ConflictError):
    """A conflict stopped the execution; the message says what stays applied."""

    def __init__(self, message: str, result: ExecutionResult):
        super().__init__(message)
        self.result = result  # how far the pass got (transactions committed in per-transaction mode)


class ExecutionCancelled(RollbackError):
    """The caller asked to stop: the open transaction was rolled back; the message says what stays."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self, message: str, result: ExecutionResult):
        super().__init__(message)
        self.result = result


@dataclass
class ExecutionProgress:
    """Where a pass stands, told to the caller's observer after each statement and each commit."""

    phase: str  # "check" (the dry run every execution starts with) or "apply" (the committing pass)
    statements_done: int
    statements_total: int
    rows_affected: int
    transaction: dict[str, Any] | None  # the original transaction being reversed (tx, gtid, file, pos)
    # per-transaction mode: set once, right after this transaction's reversal was committed
    committed: dict[str, Any] | None = None
    # set once right before a COMMIT is sent: per-transaction mode, the transaction committed (a record
    # written then names the one transaction whose outcome a crash leaves unknown); one-transaction
    # mode, the last one (the COMMIT of the whole execution)
    committing: dict[str, Any] | None = None
    # a parallel apply (apply_parallel.py): its XA record, set before the first XA PREPARE and again
    # when the commit is decided (a crash then leaves prepared transactions the record names)
    xa: dict[str, Any] | None = None


class ExecutionObserver:
    """What execute_plan tells its caller as it goes, and asks it; the default hears nothing, never stops."""

    def progress(self, state: ExecutionProgress) -> None:
        pass

    def cancelled(self) -> bool:
        return False


class ExecutionRefused(RollbackError):
    """The plan cannot or may not run on this target as asked: refused before any statement ran."""

    def __init__(self, message: str, side_effects: dict[str, Any] | None = None):
        super().__init__(message)
        self.side_effects = side_effects  # what the target reported, when the refusal is about it


def connect_args(dsn: str) -> dict[str, Any]:
    """mysql://user:password@host:port/[database][?socket=...&ssl-mode=...] -> PyMySQL connect arguments."""
    parts = parse_dsn(dsn)
    options = ConnectionOptions.of(parts)
    args: dict[str, Any] = {
        "host": options.host(parts.host),
        "port": parts.port,
        "user": parts.user,
        "password": parts.password or "",
        "charset": "utf8mb4",
        "autocommit": False,
    }
    if parts.database.strip("/"):
        args["database"] = parts.database.strip("/")
    return args | options.session_args()


def connect(dsn: str, multi_statements: bool = False) -> pymysql.connections.Connection:
    """A connection to the server; multi_statements for execute_plan's batches only (no other query
    of this project sends more than one statement at a time)."""
    import pymysql
    from pymysql.constants import CLIENT

    try:
        return open_connection(
            **connect_args(dsn), client_flag=CLIENT.MULTI_STATEMENTS if multi_statements else 0
        )
    except pymysql.err.MySQLError as exc:
        raise SourceError(f"cannot connect to {redact(dsn)}: {exc.args[-1] if exc.args else exc}") from None


def read_plan(
    path: str | Path, merge_data: bool = True, only: tuple[Sequence[int], int] | None = None
) -> Iterator[dict[str, Any]]:
    """The plan's steps. orjson reads a line in a fraction of json's time (the plan is the apply's
    biggest input); what it refuses (an integer past 64 bits, NaN, a lone surrogate) json reads as ever.
    merge_data=False leaves out a --net plan line's `merge` object where it can (_without_merge_data).
    Blank lines are skipped (orjson refuses them, so a line is looked at twice only then).
    only=(homes, part): the lines n (counted from 0, blank ones too) with homes[n] == part, the others
    not parsed (a parallel apply's partition)."""
    return (step for step in plan_lines(path, merge_data, only) if step is not None)


def plan_lines(
    path: str | Path, merge_data: bool = True, only: tuple[Sequence[int], int] | None = None
) -> Iterator[dict[str, Any] | None]:
    """read_plan's steps, and None for each blank line: one item a line of the file."""
    loads, refused = orjson.loads, orjson.JSONDecodeError
    with open(path, "rb") as f:
        for line in f if only is None else _lines_of(f, *only):
            # rfind: whether there is one, twice as fast as `in` on a plain plan's lines
            if not merge_data and line.rfind(_MERGE_DATA) >= 0:
                step = _without_merge_data(line)
                if step is not None:
                    yield step
                    continue
            try:
                step = loads(line)
            except refused:
                step = json.loads(line.decode("utf-8")) if line.strip() else None
            yield step


def _lines_of(f: Iterable[bytes], homes: Sequence[int], part: int) -> Iterator[bytes]:
    """The lines n of f with homes[n] == part; a plan of another length than `homes` stops the pass
    (it changed since it was split)."""
    n = -1
    for n, line in enumerate(f):
        if n >= len(homes):
            raise plan_stream.Stopped("the plan has more lines than when it was split")
        if homes[n] == part:
            yield line
    if n + 1 != len(homes):
        raise plan_stream.Stopped("the plan has fewer lines than when it was split")


_MERGE_DATA = b', "merge": {'


def _without_merge_data(line: bytes) -> dict[str, Any] | None:
    """A --net plan line's step without its `merge` object (three quarters of the line, which only the
    merge apply reads), parsed from the bytes before it (apply_merge_plan.cut); None: the whole line is
    then parsed."""
    found = apply_merge_plan.cut(line)
    return None if found is None else found[0]


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _collector_paused(run: Callable[_P, _R]) -> Callable[_P, _R]:
    """`run` with the cyclic garbage collector off (as it was again after): a plan in memory is millions of
    small dicts and lists without cycles, which the collector would walk again and again, as the plan is
    read and then at each threshold the apply's own objects reach (a --net plan's `merge` objects make it
    four times the plain plan's size: about 1 s of the merge apply's CPU at 100k rows). The plan is freed
    by reference counting when `run` returns, before the collector is back."""

    @functools.wraps(run)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with collector_paused():
            return run(*args, **kwargs)

    return paused


def _where(step: dict[str, Any]) -> str:
    return f"{step.get('file')}:{step.get('pos')} ({step.get('table')}, reverse of {step.get('type')})"


def _transaction(item: dict[str, Any]) -> str:
    gtid = f"gtid {item['gtid']}, " if item.get("gtid") else ""
    return f"transaction {item['tx']} ({gtid}{item['file']}:{item['pos']})"


def _applied(result: ExecutionResult) -> str:
    """What an error leaves behind: nothing, or the transactions committed before it (per-transaction
    mode) and what already ran on tables without transactions."""
    parts = []
    done = result.transactions_applied
    if done:
        named = ", ".join(_transaction(t) for t in done[:LISTED_TRANSACTIONS])
        more = f" and {len(done) - LISTED_TRANSACTIONS} more" if len(done) > LISTED_TRANSACTIONS else ""
        parts.append(
            f"{len(done)} earlier transaction(s) stay committed: {named}{more}; this one was rolled back "
            "(without --per-transaction everything is one transaction)"
        )
    kept = result.non_transactional_applied
    if kept:
        if not done:
            parts.append("the changes to transactional tables were rolled back")
        tables = ", ".join(f"{table} ({n})" for table, n in kept.items())
        parts.append(
            f"but the {sum(kept.values())} statement(s) already run on non-transactional tables stay applied: "
            f"{tables}"
        )
    return "; ".join(parts) if parts else "nothing was applied"


@dataclass
class _Pass:
    """One pass over the plan on one connection."""

    plan: list[dict[str, Any]]
    on_conflict: str
    result: ExecutionResult
    per_transaction: bool
    lock_wait_timeout: int
    read_only: set[str]  # lower-cased tables whose statements this pass must not run (dry run)
    non_transactional: set[str]  # lower-cased tables whose changes no rollback undoes
    last: dict[str, Any] | None = None  # per-transaction mode: the transaction open at the end
    observer: ExecutionObserver = field(default_factory=ExecutionObserver)
    # a COMMIT is on its way: an error now leaves its outcome unknown, never "cancelled, rolled back"
    committing: bool = False
    phase: str = "check"
    done: int = 0  # steps passed (run, skipped, or checked only)
    batch_bytes: int = 0  # the largest query of several steps (0: one step at a time)
    touched: set[str] = field(default_factory=set)  # read-only tables with a statement this pass did not run
    # lower-cased tables whose steps run one at a time: read-only and non-transactional ones (what a batch
    # runs past a conflict before it sees it must be undone by the rollback) and those with triggers
    alone: set[str] = field(default_factory=set)
    # lower-cased tables with a primary key, and its columns (apply_batches)
    keyed: dict[str, str] = field(default_factory=dict)
    sizes: list[int] = field(default_factory=list)  # each step's bytes in a batch (_check_sizes)
    separate: set[str] = field(default_factory=set)  # tables whose UPDATEs go one by one (apply_batches)
    version: int = 0  # of `separate`: one more at each table it takes
    joined: bool = False  # the target has table value constructors (apply_batches: joined UPDATEs)
    # False when the incident itself ran with foreign_key_checks=0 (Report.no_fk_checks): its reverse
    # then runs so too, or rows it left without their parents could not come back in plan order
    foreign_key_checks: bool = True
    merge: apply_merge_plan.MergePlan | None = None  # merge mode: where the plan's rows are, else None
    resolutions: Resolutions | None = None
    # a streamed pass (`plan` is empty, the steps are read as the pass runs), and its steps (the plan's
    # lines until the pass has read them all)
    stream: _StreamSource | None = None
    total: int | None = None
    counted: plan_stream.LineCount | None = None  # a streamed pass's total, counted beside it

    @property
    def steps_total(self) -> int:
        if self.total is not None:
            return self.total
        counted = self.counted.lines if self.counted is not None else None
        return len(self.plan) if counted is None else counted

    def _tell(
        self,
        current: dict[str, Any] | None,
        committed: dict[str, Any] | None = None,
        committing: dict[str, Any] | None = None,
    ) -> None:
        self.observer.progress(
            ExecutionProgress(
                self.phase,
                self.done,
                self.steps_total,
                self.result.rows_affected,
                current,
                committed,
                committing,
            )
        )

    def _stop_if_asked(self) -> None:
        if self.observer.cancelled():
            raise ExecutionCancelled(f"cancelled; {_applied(self.result)}", self.result)

    def _refused(self, exc: Any, sql: str, step: dict[str, Any]) -> ExecutionFailed:
        code = exc.args[0] if exc.args else None
        reason = exc.args[-1] if exc.args else exc
        if code in LOCK_ERRORS:
            return ExecutionFailed(
                f"{LOCK_ERRORS[code]} at {_where(step)}: {reason} (waited up to {self.lock_wait_timeout}s, "
                f"--lock-wait-timeout); {_applied(self.result)}",
                self.result,
            )
        return ExecutionFailed(
            f"the target refused the statement at {_where(step)}: {reason}; {_applied(self.result)}: "
            f"{sql[:300]}",
            self.result,
        )

    def _execute(self, cur: Any, sql: str, step: dict[str, Any]) -> int:
        import pymysql

        try:
            return int(cur.execute(sql))
        except pymysql.err.MySQLError as exc:
            raise self._refused(exc, sql, step) from None

    def _wrong_count(self, step: dict[str, Any], affected: int) -> ExecutionFailed:
        return ExecutionFailed(
            f"statement at {_where(step)} affected {affected} rows, not 1; {_applied(self.result)}: "
            f"{step['sql'][:300]}",
            self.result,
        )

    def _applied_one(self, step: dict[str, Any], affected: int) -> None:
        table = str(step.get("table"))
        if table.lower() in self.non_transactional:
            self.result.non_transactional_applied[table] = (
                self.result.non_transactional_applied.get(table, 0) + 1
            )
        self.result.statements += 1
        if affected != 1:
            raise self._wrong_count(step, affected)
        self.result.rows_affected += affected

    def run(self, conn: Any) -> None:
        with conn.cursor() as cur:
            for sql in PRELUDE:
                cur.execute(sql)
            if not self.foreign_key_checks:
                cur.execute("SET SESSION foreign_key_checks = 0")
            cur.execute(f"SET SESSION innodb_lock_wait_timeout = {int(self.lock_wait_timeout)}")
            self.joined = value_tables(conn)
            if self.merge is not None:
                self._merge(cur, self.merge)
                return
            batch = _Batch(self.batch_bytes if _multi_statements(conn) else 0)
            if self.stream is not None:
                with plan_stream.Ahead(self._stream_units, STREAM_AHEAD) as streamed:
                    self._run_units(conn, cur, batch, streamed)
                return
            units = self._units(batch)
            batches = [item for kind, item in units if kind == "batch"]
            with _ahead(
                batches, lambda steps: _Built.of(steps, self.keyed, self.separate, self.version, self.joined)
            ) as ahead:
                queries = iter(ahead)
                built = (
                    (kind, item, next(queries, None) if kind == "batch" else None) for kind, item in units
                )
                self._run_units(conn, cur, batch, built)

    def _run_units(
        self, conn: Any, cur: Any, batch: _Batch, units: Iterable[tuple[str, Any, _Built | None]]
    ) -> None:
        """The pass's units in order (_units), each batch with its query when it was built ahead."""
        current: dict[str, Any] | None = None
        for kind, item, built in units:
            if kind == "tx":
                if self.per_transaction and current is not None:
                    self._stop_if_asked()
                    self._tell(current, committing=current)
                    self.committing = True
                    conn.commit()
                    self.committing = False
                    self.result.transactions_applied.append(current)
                    self._tell(current, committed=current)
                current = item
                if self.per_transaction:
                    cur.execute("BEGIN")
                continue
            self._stop_if_asked()
            if kind == "one":
                self._count(1, current)
                self._one(cur, item)
                continue
            self._count(len(item), current)
            if not batch.limit:  # savepoints failed earlier in the pass: one step at a time
                for step in item:
                    self._one(cur, step)
                continue
            self._send(cur, batch, item, built)
        self._stop_if_asked()
        self._tell(current)
        self.last = current if self.per_transaction else None

    def _merge(self, cur: Any, source: apply_merge_plan.MergePlan) -> None:
        """The plan's batches as the strict apply sends them where every step's statement writes what the
        merge's would (merge_same) and every group's writes check their rows (a table with a primary key):
        all found as the range left them, nothing more to decide. Anything else, or a batch that comes up
        short (back to its savepoint), goes the merge's way (apply_merge), its rows read then."""
        self.result.merge = apply_merge.empty_counts()
        batch = _Batch(self.batch_bytes if _multi_statements(cur.connection) else 0)
        alone = self.alone
        keyed = self.keyed
        with ExitStack() as stack:
            plan_file = stack.enter_context(open(source.path, "rb"))
            if self.stream is not None:
                spans: Iterable[_MergeSpan] = stack.enter_context(
                    plan_stream.Ahead(lambda: self._merge_stream_spans(source, batch), STREAM_AHEAD)
                )
            else:
                spans = self._merge_spans(source, batch, stack)
            for steps, first, sent, built in spans:
                self._stop_if_asked()
                self._count(len(steps), apply_merge.transaction(steps[0]))
                if sent:
                    built = built or _Built.merged(steps, keyed, self.joined)  # None: the thread failed on it
                    if built.pieces and self._sent_checked(cur, built, steps):
                        continue
                rows = source.rows(steps, plan_file, first)
                merged = apply_merge.units(
                    rows, BATCH_STEPS, batch.limit, lambda row: row.plan_table in alone, self.keyed
                )
                apply_merge.run(self, cur, merged, self.resolutions)

        self._tell(None)
        unresolved = [c for c in self.result.conflicts if c["resolution"] is None]
        if unresolved and self.on_conflict == "abort":
            raise ExecutionConflict(
                f"{len(unresolved)} conflict(s) without a resolution, the first at "
                f"{apply_merge.conflict_line(unresolved[0])}; {_applied(self.result)} (--resolutions FILE "
                "settles them, --on-conflict skip keeps those rows as they are now)",
                self.result,
            )

    def _merge_spans(
        self, source: apply_merge_plan.MergePlan, batch: _Batch, stack: ExitStack
    ) -> Iterator[_MergeSpan]:
        """The merge's units of a plan read whole (_units): each unit's steps, the index of its first in
        the plan, whether it goes as checked writes (every line merge_same, a batch), and those writes,
        built in a thread ahead of the apply."""
        spans = list(_merge_units(self._units(batch), source))
        eligible = [steps for steps, _, sent in spans if sent]
        keyed = self.keyed
        queries = iter(
            stack.enter_context(_ahead(eligible, lambda steps: _Built.merged(steps, keyed, self.joined)))
        )
        for steps, first, sent in spans:
            yield steps, first, sent, next(queries, None) if sent else None

    def _merge_stream_spans(self, source: apply_merge_plan.MergePlan, batch: _Batch) -> Iterator[_MergeSpan]:
        """_merge_spans of a streamed pass (plan_stream.Ahead runs this in its thread): the plan read line
        by line, each step checked as _stream_units checks it, and against what a merge refuses (the
        careful path then refuses it before anything runs)."""
        units = self._cut(self._stream_steps(source.steps(), source), batch)
        for steps, first, sent in _merge_units(units, source):
            yield (
                steps,
                first,
                sent,
                _built_or_none(_Built.merged, steps, self.keyed, self.joined) if sent else None,
            )

    def _sent_checked(self, cur: Any, built: _Built, steps: list[dict[str, Any]]) -> bool:
        """The batch's writes, each finding its rows by their checks (_Built.merged): True when every one
        affected all its rows (restored); else the batch is back at its savepoint. A lock wait timeout or
        a deadlock stops the execution, as the merge's own writes do (apply_merge.sent)."""
        expected = [0 if piece.kind == "savepoint" else piece.expect for piece in built.pieces]
        if not apply_merge.sent(self, cur, built.sql, expected, steps[0], built.pieces[0].sql):
            self._execute(cur, f"ROLLBACK TO SAVEPOINT {apply_batches.SAVEPOINT}0", steps[0])
            return False
        counts = self.result.merge
        assert counts is not None
        counts["restored"] += len(steps)
        self.result.statements += len(steps)
        self.result.rows_affected += len(steps)
        return True

    def _units(self, batch: _Batch) -> list[tuple[str, Any]]:
        """The pass in the order it runs: ("tx", the original transaction that starts: per-transaction
        mode commits the one before), ("one", a step that runs on its own), ("batch", steps sent as one
        query)."""
        return list(self._cut(zip(self.plan, self.sizes, strict=True), batch))

    def _cut(self, sized: Iterable[tuple[dict[str, Any], int]], batch: _Batch) -> Iterator[tuple[str, Any]]:
        """_units of the steps, each with its bytes in a batch, as they come."""
        current: Any = None
        alone = self.alone
        for step, bytes_ in sized:
            if current is None or step["tx"] != current["tx"]:
                if self.per_transaction:
                    yield from _taken(batch)
                current = {k: step.get(k) for k in ("tx", "gtid", "file", "pos")}
                yield ("tx", current)
            size = None if alone and str(step.get("table")).lower() in alone else batch.size_of(bytes_)
            if size is None:
                yield from _taken(batch)
                yield ("one", step)
                continue
            if not batch.fits(size):
                yield from _taken(batch)
            batch.add(step, size)
        yield from _taken(batch)

    def _stream_units(self) -> Iterator[tuple[str, Any, _Built | None]]:
        """The units of a streamed pass (plan_stream.Ahead runs this in its thread), each batch built:
        the plan read line by line, each step checked against what the preflight read (its table, a
        statement of a kind it looked for, its size under max_allowed_packet), else the pass stops."""
        assert self.stream is not None
        steps = read_plan(self.stream.path, merge_data=False, only=self.stream.only)
        for kind, item in self._cut(self._stream_steps(steps), _Batch(self.batch_bytes)):
            if kind != "batch":
                yield kind, item, None
                continue
            yield (
                kind,
                item,
                _built_or_none(_Built.of, item, self.keyed, self.separate, self.version, self.joined),
            )

    def _stream_steps(
        self, steps: Iterable[dict[str, Any]], merge: apply_merge_plan.MergePlan | None = None
    ) -> Iterator[tuple[dict[str, Any], int]]:
        """A streamed pass's steps, each with its bytes in a batch, checked against what the preflight
        read (its table, a statement of a kind it looked for, its size under max_allowed_packet) and, for
        a merge, against what a merge refuses (the step then named as the merge names it), else the pass
        stops; their count is the pass's total once they are all read."""
        source = self.stream
        assert source is not None
        count = 0
        for step in steps:
            count += 1
            if merge is not None and merge.refused is not None:
                raise plan_stream.Stopped(f"{_where(step)}: {merge.refused}")
            size, checked = streamable(step, source.tables, source.max_packet)
            if merge is not None:
                merge.name(step)
            yield step, size + (checked or len(LOCKING))
        self.total = count

    def _count(self, steps: int, current: dict[str, Any] | None) -> None:
        """Steps about to be sent: progress at every PROGRESS_EVERY-th step and at the last one."""
        before, self.done = self.done, self.done + steps
        if self.done // PROGRESS_EVERY > before // PROGRESS_EVERY or self.done == self.steps_total:
            self._tell(current)

    def _one(self, cur: Any, step: dict[str, Any]) -> None:
        """A step on its own: its check, then its statement."""
        key = str(step.get("table")).lower()
        read_only = key in self.read_only
        if step.get("check"):
            self._execute(cur, step["check"] + LOCKING, step)
            found = cur.fetchone()[0]
            if not _as_expected(step, found):
                if read_only and key in self.touched:
                    # the row may be one a statement this dry run did not run would have changed
                    self.result.unverified += 1
                    return
                self._conflict(step, found)
                return
        if read_only:
            self.touched.add(key)
            return
        self._applied_one(step, self._execute(cur, step["sql"], step))

    def _send(
        self, cur: Any, batch: _Batch, steps: list[dict[str, Any]], built: _Built | None = None
    ) -> None:
        """Send the steps as one query (apply_batches: groups, each after its savepoint; `built`, when
        the thread of _ahead built it for the tables' UPDATE forms as they still are) and read its
        results in order. Where a result is not what it must be, a plain step's failure is raised as one
        step at a time raises it; anything else (a skipped conflict, a combined group's count) goes back
        to its group's savepoint and runs that group one step at a time, which finds the row, then the
        rest of the batch again."""
        import pymysql

        if built is None or built.version != self.version:
            built = _Built.of(steps, self.keyed, self.separate, self.version, self.joined)
        grouped, pieces = built.groups, built.pieces
        counts: list[tuple[int, int]] = []  # statements and rows affected at each group's start
        again = None  # the group to return to
        piece = pieces[0]
        try:
            cur.execute(built.sql)
            for n, piece in enumerate(pieces):
                if n and not cur.nextset():
                    raise ExecutionFailed(
                        f"the target returned fewer results than the batch at {_where(piece.step)} holds "
                        f"statements; {_applied(self.result)}",
                        self.result,
                    )
                try:
                    again = self._result(cur, piece, grouped[piece.group], counts)
                except RollbackError:
                    _drain(cur)  # the connection answers the rollback only once every result is read
                    raise
                if again is not None:
                    break
        except pymysql.err.MySQLError as exc:
            code = exc.args[0] if exc.args else None
            if self.observer.cancelled():  # the cancel stopped it (KILL QUERY): no step-by-step retry
                raise ExecutionCancelled(
                    f"cancelled while a statement ran ({exc.args[-1] if exc.args else exc}); "
                    f"{_applied(self.result)}",
                    self.result,
                ) from None
            if piece.kind == "savepoint":
                # an engine in the transaction without savepoints (Aria, which a trigger may write to):
                # nothing of this group ran; it and the rest of the pass go one step at a time
                _drain(cur)
                batch.limit = 0
                for group in grouped[piece.group :]:
                    for step in group.steps:
                        self._one(cur, step)
                return
            if grouped[piece.group].shape is None or code == 1213:  # a deadlock rolled everything back
                _drain(cur)
                raise self._refused(exc, piece.sql, piece.step) from None
            again = piece.group
        if again is None:
            if _drain(cur):
                raise ExecutionFailed(
                    f"the batch ending at {_where(steps[-1])} returned more results than it holds statements "
                    f"(a plan line holding several statements?); {_applied(self.result)}",
                    self.result,
                )
            return
        _drain(cur)
        self._execute(cur, f"ROLLBACK TO SAVEPOINT {apply_batches.SAVEPOINT}{again}", grouped[again].steps[0])
        self.result.statements, self.result.rows_affected = counts[again]
        shape = grouped[again].shape
        if shape is not None and shape[0] in ("update", "joined") and shape[2]:
            # the table's UPDATEs one after the other from now on (unique-key swaps fail as one UPDATE)
            self.separate.add(str(grouped[again].steps[0].get("table")).lower())
            self.version += 1  # what _ahead built for this table's UPDATEs is built again
            self._send(cur, batch, grouped[again].steps)
        else:
            for step in grouped[again].steps:
                self._one(cur, step)
        rest = [step for group in grouped[again + 1 :] for step in group.steps]
        if rest:
            self._send(cur, batch, rest)

    def _result(
        self, cur: Any, piece: apply_batches.Piece, group: apply_batches.Group, counts: list[tuple[int, int]]
    ) -> int | None:
        """Check one result of a batch; the group to go back to, if any."""
        result = self.result
        if piece.kind == "savepoint":
            counts.append((result.statements, result.rows_affected))
            return None
        if piece.kind in ("check", "checks"):
            row = cur.fetchone() if cur.description else None
            if row is None:
                raise ExecutionFailed(
                    f"the check at {_where(piece.step)} returned no count; {_applied(result)}", result
                )
            if piece.kind == "checks":
                return None if row[0] == piece.expect else piece.group
            if _as_expected(piece.step, row[0]):
                return None
            if self.on_conflict == "skip":
                return piece.group
            self._conflict(piece.step, row[0])  # raises: the transaction rolls back
        affected = cur.rowcount
        if affected != piece.expect:
            if group.shape is not None:
                return piece.group
            result.statements += 1
            raise self._wrong_count(piece.step, affected)
        size = len(group.steps) if piece.kind == "statements" else 1
        result.statements += size
        result.rows_affected += affected
        return None

    def _conflict(self, step: dict[str, Any], found: int) -> None:
        expect = step["expect"]
        conflict = {
            "file": step.get("file"),
            "pos": step.get("pos"),
            "row": step.get("row"),  # the row of the rows event (the change log's "row")
            "table": step.get("table"),
            "statement": step["sql"],
            "found": found,
            "reason": "the row's key is taken" if expect == 0 else "the row changed since the incident",
        }
        self.result.conflicts.append(conflict)
        if self.on_conflict == "skip":
            self.result.skipped += 1
            return
        raise ExecutionConflict(
            f"conflict at {_where(step)}: {conflict['reason']}; {_applied(self.result)} "
            "(--on-conflict skip leaves such rows alone)",
            self.result,
        )


def value_tables(conn: Any) -> bool:
    """Whether the server takes a table value constructor as a derived table with named columns
    (`WITH v(a, b) AS (VALUES (1, 2), ...)`): MariaDB from 10.3.3. MySQL writes its rows `ROW(...)`
    (8.0.19); its UPDATEs stay CASEs, the form tested on it."""
    server_info = getattr(conn, "get_server_info", None)  # a caller's factory may give another connection
    info = str(server_info() or "") if callable(server_info) else ""
    if "mariadb" not in info.lower():
        return False
    # MariaDB before 11 says 5.5.5- first to clients of the old protocol
    return version_tuple(info.removeprefix("5.5.5-")) >= (10, 3, 3)


def _as_expected(step: dict[str, Any], found: int) -> bool:
    """A check's count as the plan expects it: the key free (0), or the row there (1, or more for a
    keyless table's duplicates)."""
    return found == 0 if step["expect"] == 0 else found >= 1


def _bytes(sql: str) -> int:
    return len(sql) if sql.isascii() else len(sql.encode("utf-8", "surrogateescape"))


def _multi_statements(conn: Any) -> bool:
    """Whether the connection was opened with CLIENT_MULTI_STATEMENTS (connect does; a caller's factory
    may not, and then every step runs on its own)."""
    from pymysql.constants import CLIENT

    return bool(getattr(conn, "client_flag", 0) & CLIENT.MULTI_STATEMENTS)


def _drain(cur: Any) -> bool:
    """Read what is left of a multi-statement query's results (the server stops at an error); whether
    there was any."""
    import pymysql

    left = False
    try:
        while cur.nextset():
            left = True
    except pymysql.err.MySQLError:
        left = True
    return left


@dataclass
class _Built:
    """A batch's groups, their statements and the query they make."""

    groups: list[apply_batches.Group]
    pieces: list[apply_batches.Piece]
    sql: str
    version: int  # of the pass's `separate` it was built with

    @staticmethod
    def of(
        steps: list[dict[str, Any]], keyed: dict[str, str], separate: set[str], version: int, joined: bool
    ) -> _Built:
        grouped = apply_batches.groups(steps, keyed, separate, joined)
        pieces = apply_batches.pieces(grouped, keyed)
        return _Built(grouped, pieces, "\n".join(piece.sql for piece in pieces), version)

    @staticmethod
    def merged(steps: list[dict[str, Any]], keyed: dict[str, str], joined: bool) -> _Built:
        """The merge apply's query of the batch (apply_batches.checked_writes); no pieces when a step is
        not one of a combined group (its table has no primary key, its statement is of no combined form)."""
        grouped = apply_batches.groups(steps, keyed, set(), joined)
        if any(group.shape is None for group in grouped):
            return _Built(grouped, [], "", 0)
        pieces = apply_batches.checked_writes(grouped, keyed)
        return _Built(grouped, pieces, "\n".join(piece.sql for piece in pieces), 0)


def _ahead(
    batches: list[list[dict[str, Any]]], build: Callable[[list[dict[str, Any]]], _Built]
) -> plan_stream.Ahead:
    """The queries of the batches, built in a thread of their own while the server runs the one
    before (the client's CPU beside the server's, not after it: bench/bench_apply.py), in order. A
    batch is built with the UPDATE forms as they were (`version`); a pass that changed them since
    builds it again. A failure here (None) is left for the pass to meet: it builds that batch itself."""

    def produce() -> Iterator[_Built | None]:
        for steps in batches:
            yield _built_or_none(build, steps)

    return plan_stream.Ahead(produce, AHEAD)


def _built_or_none(build: Callable[..., _Built], *args: Any) -> _Built | None:
    """A batch's query built ahead of the pass; None where building it failed: the pass builds that
    batch itself, and meets the error there."""
    try:
        return build(*args)
    except Exception:  # noqa: BLE001 - see above
        return None


class _Batch:
    """Consecutive steps to send as one query (apply_batches makes it), within max_allowed_packet."""

    def __init__(self, limit: int):
        self.limit = limit  # bytes of one query (0: no batches)
        self.steps: list[dict[str, Any]] = []
        self.size = 0

    def size_of(self, step_bytes: int) -> int | None:
        """The step's bytes at most in a query, or None when it must run on its own (no batches, or too
        big): its statement and its check (`step_bytes`), and room for a savepoint and the separators."""
        if not self.limit:
            return None
        size = step_bytes + STEP_OVERHEAD
        return size if size <= self.limit else None

    def fits(self, size: int) -> bool:
        return len(self.steps) < BATCH_STEPS and self.size + size <= self.limit

    def add(self, step: dict[str, Any], size: int) -> None:
        self.steps.append(step)
        self.size += size

    def take(self) -> list[dict[str, Any]]:
        steps, self.steps, self.size = self.steps, [], 0
        return steps


def _taken(batch: _Batch) -> Iterator[tuple[str, Any]]:
    """The batch's steps as a unit, if it holds any (the batch is then empty)."""
    steps = batch.take()
    if steps:
        yield ("batch", steps)


# a unit of the merge apply: its steps, the index of its first in the plan, whether it goes as checked
# writes, and those writes when built ahead (_Pass._merge_spans)
_MergeSpan = tuple[list[dict[str, Any]], int, bool, "_Built | None"]


def _merge_units(
    units: Iterable[tuple[str, Any]], source: apply_merge_plan.MergePlan
) -> Iterator[tuple[list[dict[str, Any]], int, bool]]:
    """The merge's units of a pass's (_cut): each one's steps, the index of its first in the plan, and
    whether it goes as checked writes (a batch whose lines all say merge_same)."""
    at = 0
    for kind, item in units:
        if kind == "tx":
            continue
        steps = [item] if kind == "one" else item
        yield steps, at, kind == "batch" and source.same(at, at + len(steps))
        at += len(steps)


@dataclass
class _StreamSource:
    """A streamed pass's plan, and what its preflight read: the tables (lower-cased) and the target's
    max_allowed_packet; `only`: the plan's lines this pass runs (read_plan), when not all of them."""

    path: str | Path
    tables: set[str]
    max_packet: int
    only: tuple[Sequence[int], int] | None = None


def _rollback_quietly(conn: Any) -> None:
    import pymysql

    try:
        conn.rollback()
    except pymysql.err.MySQLError:
        pass  # a lost connection rolls back on the server by itself


def _close_quietly(conn: Any) -> None:
    import pymysql

    try:
        conn.close()
    except pymysql.err.MySQLError:
        pass


def _attempt(
    factory: Callable[[], Any], one: _Pass, commit: bool, inspect: Callable[[Any], None] | None = None
) -> None:
    """One pass over the plan on a fresh connection; commit at the end or roll everything back.
    inspect, if given, reads the connection after the last statement, inside the transaction."""
    import pymysql

    conn = factory()
    result = one.result
    try:
        conn.begin()
        one.run(conn)
        if inspect is not None:
            inspect(conn)
        if commit:
            one._tell(one.last, committing=one.last or {})  # one transaction: the whole execution
            one.committing = True
            conn.commit()
            result.committed = True
            if one.last is not None:
                result.transactions_applied.append(one.last)
                one._tell(one.last, committed=one.last)
    except ExecutionFailed as exc:
        if one.observer.cancelled() and not one.committing:
            # the cancel stopped the running statement (KILL QUERY) or cut the session: rolled back
            raise ExecutionCancelled(f"cancelled while a statement ran: {exc.one_line()}", result) from None
        raise
    except pymysql.err.MySQLError as exc:
        reason = exc.args[-1] if exc.args else exc
        if one.observer.cancelled() and not one.committing:
            raise ExecutionCancelled(
                f"cancelled while a statement ran ({reason}); {_applied(result)}", result
            ) from None
        raise ExecutionFailed(
            f"the target failed during execution: {reason}; {_applied(result)}", result
        ) from None
    finally:
        if not result.committed:
            _rollback_quietly(conn)
        _close_quietly(conn)


@dataclass
class _Survey:
    """What the preflight needs of every step, gathered in one pass as the plan is read (each pass over
    a big plan's steps costs its start tens of milliseconds), each step's table named db.t there (the
    target's side effects are looked up by that name; a hand-written net plan may say `db`.`t`): each
    step's bytes in a batch (its statement's and its locking check's, with room for the lock clause
    when it has none), the longest statement or locking check (against max_allowed_packet), the
    statements by table and kind (plan_statement_kinds), and the tables (lower-cased)."""

    plan: list[dict[str, Any]]
    sizes: list[int]
    longest: int
    kinds: Counter
    tables: list[str]


def streamable(step: dict[str, Any], tables: set[str], max_packet: int) -> tuple[int, int]:
    """A streamed pass's step checked against what its preflight read: one of `tables` (lower-cased),
    a statement of a kind it looked for, its statement and check under max_allowed_packet (else
    plan_stream.Stopped); their bytes (_sizes)."""
    if str(step.get("table")).lower() not in tables or statement_kind(step["sql"]) not in KINDS:
        raise plan_stream.Stopped(f"{_where(step)} is not of a table and kind the preflight read")
    size, checked = _sizes(step)
    if size >= max_packet - 1 or checked >= max_packet - 1:
        raise plan_stream.Stopped(f"{_where(step)} is over the target's max_allowed_packet")
    return size, checked


def _sizes(step: dict[str, Any]) -> tuple[int, int]:
    """The step's statement's bytes, and its locking check's (0: it has none)."""
    sql, check = step["sql"], step.get("check")
    size = len(sql) if sql.isascii() else _bytes(sql)
    return size, (len(check) if check.isascii() else _bytes(check)) + len(LOCKING) if check else 0


def _survey(steps: Iterable[dict[str, Any]]) -> _Survey:
    plan: list[dict[str, Any]] = []
    sizes: list[int] = []
    counts: dict[tuple[Any, str], int] = {}
    longest = 0
    locking = len(LOCKING)
    for step in steps:
        if str(step["table"]).startswith("`"):  # `db`.`t`, as a hand-written net plan may name it
            step["table"] = apply_merge.plain_name(step["table"])
        plan.append(step)
        size, checked = _sizes(step)
        sizes.append(size + (checked or locking))
        if size > longest or checked > longest:
            longest = max(size, checked)
        pair = (step["table"], statement_kind(step["sql"]))
        counts[pair] = counts.get(pair, 0) + 1
    kinds = Counter({pair: n for pair, n in counts.items() if pair[1] in KINDS})
    return _Survey(plan, sizes, longest, kinds, sorted({str(table).lower() for table, _ in counts}))


def _check_sizes(plan: list[dict[str, Any]], max_packet: int) -> None:
    """Every statement and check must fit in one packet (the query and its command byte, under
    max_allowed_packet): a script run would otherwise fail halfway. Refuses the first that does not."""
    fits = max_packet - 1  # bytes a statement must stay under
    for n, step in enumerate(plan, 1):
        size, checked = _sizes(step)
        if size >= fits or checked >= fits:
            _refuse_size(plan, n, step, size, checked, max_packet)


def _refuse_size(
    plan: list[dict[str, Any]], n: int, step: dict[str, Any], size: int, checked: int, max_packet: int
) -> None:
    """Refuse step n, whose statement or check does not fit in the target's packet."""
    for what, bytes_ in (("", size), ("the check query of ", checked)):
        if bytes_ + 1 >= max_packet:
            raise ExecutionRefused(
                f"{what}statement {n} of {len(plan)} ({step.get('file')}:{step.get('pos')}, {step.get('table')}) "
                f"is {bytes_} bytes, too big for the target's max_allowed_packet of {max_packet} bytes; "
                f"raise it on the target (SET GLOBAL max_allowed_packet = {_packet_for(bytes_)}) and run "
                "again; nothing was run"
            )


def _packet_for(size: int) -> int:
    """A max_allowed_packet (a multiple of 1024) that holds a statement of `size` bytes."""
    return (size + 1024) // 1024 * 1024 + 1024


def _first_at(plan: list[dict[str, Any]]) -> dict[str, str]:
    """db.table (lower-cased) -> the position of its first statement in execution order."""
    first: dict[str, str] = {}
    for step in plan:
        first.setdefault(str(step.get("table")).lower(), f"{step.get('file')}:{step.get('pos')}")
    return first


def _refusals(
    found: SideEffects,
    plan: list[dict[str, Any]],
    commit: bool,
    accept_triggers: bool,
    accept_cascades: bool,
    accepted_tables: set[str],
) -> list[str]:
    """What the caller did not accept. Triggers even in a dry run (they may write to tables a rollback
    does not undo); cascades and non-transactional tables only when committing (a dry run's cascades
    roll back with it, and it never writes to a non-transactional table)."""
    if not found.triggers and not (commit and (found.cascades or found.non_transactional)):
        return []
    first = _first_at(plan)
    reasons = []
    if found.triggers and not accept_triggers:
        t = found.triggers[0]
        more = f" (and {len(found.triggers) - 1} more trigger(s))" if len(found.triggers) > 1 else ""
        reasons.append(
            f"{trigger_warning(t)}; first at {first.get(t['table'].lower())}{more}; "
            "--accept-triggers runs the plan anyway"
        )
    if commit and found.cascades and not accept_cascades:
        c = found.cascades[0]
        more = f" (and {len(found.cascades) - 1} more)" if len(found.cascades) > 1 else ""
        reasons.append(
            f"{cascade_warning(c)}; first at {first.get(c['parent'].lower())}{more}; "
            "--accept-cascades runs the plan anyway"
        )
    missing = [n for n in found.non_transactional if n["table"].lower() not in accepted_tables]
    if commit and missing:
        named = ", ".join(
            f"{n['table']} ({n['engine']}) first at {first.get(n['table'].lower())}" for n in missing
        )
        reasons.append(
            f"non-transactional table(s) {named}: a commit that fails halfway cannot roll back what already "
            f"ran on them; --accept-non-transactional {','.join(n['table'] for n in missing)} accepts that risk"
        )
    return reasons


def _preflight(
    factory: Callable[[], Any],
    plan: list[dict[str, Any]],
    also: list[dict[str, Any]] | None = None,
    survey: _Survey | None = None,
) -> tuple[SideEffects, int, dict[str, str], list[int]]:
    """The target's max_allowed_packet against every statement, and what the statements (and `also`:
    statements a merge's resolutions may run) set off; the max_allowed_packet, the plan's tables with a
    primary key (lower-cased) and its columns (a combined DELETE's ORDER BY), and each step's bytes.
    `survey`: the plan's, when it was read with it (else taken here)."""
    import pymysql

    survey = survey or _survey(plan)
    conn = factory()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT @@max_allowed_packet")
            max_packet = int(cur.fetchone()[0])
        if survey.longest + 1 >= max_packet:
            _check_sizes(plan, max_packet)  # refuses, naming the first step that does not fit
        sizes, tables = survey.sizes, survey.tables
        keyed = _primary_keys(conn, tables)
        kinds = survey.kinds + plan_statement_kinds(also) if also else survey.kinds
        return detect(conn, kinds), max_packet, keyed, sizes
    except pymysql.err.MySQLError as exc:
        reason = exc.args[-1] if exc.args else exc
        raise ExecutionFailed(
            f"cannot read the target's settings and schema: {reason}; nothing was run"
        ) from None
    finally:
        _rollback_quietly(conn)
        _close_quietly(conn)


def _primary_keys(conn: Any, tables: list[str]) -> dict[str, str]:
    """The tables (lower-cased) with a primary key, and its columns, quoted, in order."""
    keyed: dict[str, str] = {}
    if tables:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT LOWER(CONCAT(TABLE_SCHEMA, '.', TABLE_NAME)), COLUMN_NAME "
                "FROM information_schema.KEY_COLUMN_USAGE WHERE CONSTRAINT_NAME = 'PRIMARY' AND "
                "LOWER(CONCAT(TABLE_SCHEMA, '.', TABLE_NAME)) IN "
                f"({', '.join(['%s'] * len(tables))}) ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION",
                tables,
            )
            for table, column in cur.fetchall():
                quoted = quote_ident(str(column))
                keyed[table] = f"{keyed[table]}, {quoted}" if table in keyed else quoted
    return keyed


def _stream_preflight(
    factory: Callable[[], Any], plan_path: str | Path, head: bool = False
) -> tuple[SideEffects, int, dict[str, str], set[str], int | None] | None:
    """The preflight of a streamed pass, from the plan's bytes (plan_stream.scan): the target's
    max_allowed_packet, every statement kind on every table the plan names looked for (more than its
    statements may run: a plan that meets anything at all goes the careful way, which names exactly
    what it meets), the primary keys, the tables (lower-cased), the plan's lines. `head`: from its
    first HEAD_BYTES only (the lines then None). None: the careful path."""
    import pymysql

    conn = factory()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT @@max_allowed_packet")
            max_packet = int(cur.fetchone()[0])
        if max_packet <= BATCH_STEP_ROOM:
            return None
        scanned = plan_stream.scan(plan_path, max_packet - 1, HEAD_BYTES if head else None)
        if scanned is None:
            return None
        lines, tables = scanned
        if any(table.startswith("`") for table in tables):
            return None  # `db`.`t`: the careful path names its tables db.t first (_survey)
        lowered = sorted({table.lower() for table in tables})
        found = detect(conn, Counter({(table, kind): 1 for table in tables for kind in KINDS}))
        if found:
            return None
        return found, max_packet, _primary_keys(conn, lowered), set(lowered), lines
    except pymysql.err.MySQLError:
        return None  # the careful path asks again, and says what failed
    finally:
        _rollback_quietly(conn)
        _close_quietly(conn)


def _refuse_ddl(plan: list[dict[str, Any]]) -> None:
    """A `--ddl reverse` plan holds inverse DDL: it commits implicitly, so neither the dry run nor the
    one checked transaction could hold it. Refused before connecting."""
    steps = [step for step in plan if step.get("type") == "ddl"]
    if not steps:
        return
    ddl, count = steps[0], len(steps)
    raise ExecutionRefused(
        f"refused, nothing was run: the plan holds {count} inverse DDL statement(s) (--ddl reverse), "
        f"the first at {ddl.get('file')}:{ddl.get('pos')}: {str(ddl.get('sql'))[:120]}; DDL commits "
        "implicitly and cannot run inside the checked transaction: review the script and apply it with "
        "the mysql client, or generate it with --ddl keep to execute it here"
    )


def _merge_rows(
    plan: list[dict[str, Any]],
    source: apply_merge_plan.MergePlan | None,
    resolutions: Resolutions | None,
    single_transaction: bool,
) -> list[dict[str, Any]] | None:
    """Refuse what a merge cannot run (resolutions without one too); the statements its resolutions may run
    beyond the plan's (apply_merge.check_resolutions), or None."""
    if source is None:
        if resolutions is not None:
            raise ExecutionRefused(
                "refused, nothing was run: resolutions settle the conflicts of --merge only"
            )
        return None
    if not single_transaction:
        raise ExecutionRefused(
            "refused, nothing was run: --merge applies everything in one transaction, not --per-transaction"
        )
    source.prepare(plan)
    if resolutions is None:
        return []
    with open(source.path, "rb") as f:
        return apply_merge.check_resolutions(source.rows(plan, f), resolutions)


_AGAIN = object()  # _streamed: a pass whose preflight read the plan's head stopped; read it all


def _streamed(
    plan_path: str | Path,
    factory: Callable[[], Any],
    commit: bool,
    check_first: bool,
    inspect: Callable[[Any], None] | None,
    make_pass: Callable[..., _Pass],
    merge: bool,
    per_transaction: bool,
    resolutions: Resolutions | None,
    head: bool,
) -> ExecutionResult | object | None:
    """A dry run or commit (with its dry run first when check_first) whose first batch goes to the
    server before the plan is read (each batch read, cut and built in a thread while the server runs
    the one before), when its tables have nothing the preflight must see first: no triggers, cascading
    foreign keys or non-transactional engine on any of them. A step the preflight did not see stops it
    (plan_stream.Stopped): what ran is rolled back, and None has the careful path take the plan from
    the start. The result is what the careful path's would be. `merge`: the merge apply (a plan the
    pass reads through its own MergePlan) and its `resolutions`, checked against every row first
    (_resolutions_streamed). `per_transaction`: a commit per original transaction, always after its dry
    run (one transaction, streamed too), which meets anything the preflight did not see before a first
    commit could keep part of the plan.

    `head`: the preflight reads only the plan's first HEAD_BYTES (a million-row plan's scan took 0.45 s
    before the first batch could go): a pass that then meets a table that part did not name (or
    anything else it stops at) rolls back what ran, and _AGAIN has the caller start again with a scan of
    the whole plan."""
    preflight = _stream_preflight(factory, plan_path, head)
    if preflight is None:
        return None
    found, max_packet, keyed, tables, lines = preflight
    if resolutions is not None and not _resolutions_streamed(plan_path, resolutions):
        return None
    partial = lines is None
    counted = plan_stream.LineCount(plan_path) if partial else None
    source = _StreamSource(plan_path, tables, max_packet)
    batch_bytes = max(0, min(BATCH_BYTES, max_packet - BATCH_STEP_ROOM))

    def one_pass(result: ExecutionResult, phase: str) -> _Pass:
        return make_pass(
            result,
            phase,
            plan=[],
            per_transaction=per_transaction and phase == "apply",
            read_only=set(),
            non_transactional=set(),
            batch_bytes=batch_bytes,
            keyed=keyed,
            stream=source,
            total=lines,
            counted=counted,
            merge=apply_merge_plan.MergePlan(plan_path) if merge else None,
            resolutions=resolutions,
        )

    try:
        if not commit or check_first or per_transaction:
            dry = ExecutionResult(dry_run=True, side_effects=found.to_dict())
            _attempt(factory, one_pass(dry, "check"), commit=False, inspect=None if commit else inspect)
            if not commit:
                return dry
    except plan_stream.Stopped:
        return _AGAIN if partial else None
    real = ExecutionResult(dry_run=False, side_effects=found.to_dict())
    try:
        _attempt(factory, one_pass(real, "apply"), commit=True)
    except plan_stream.Stopped as exc:
        if not real.transactions_applied:
            return _AGAIN if partial else None
        # the plan read differently than in its dry run a moment before (changed on disk?): the
        # transactions committed stay, and the careful path must not run them again
        raise ExecutionFailed(
            f"the plan could no longer be read as its dry run read it ({exc}); {_applied(real)}", real
        ) from None
    return real


def _resolutions_streamed(plan_path: str | Path, resolutions: Resolutions) -> bool:
    """The merge's resolutions checked against every row of its plan (apply_merge.check_resolutions),
    the plan read a chunk of rows at a time; False where the careful path must read it (a line
    without merge data, or a resolution refused: the careful path then refuses what it refuses first).
    The statements a resolution may run beyond the plan's need no look here: the streamed preflight
    looked for every kind on every table."""
    source = apply_merge_plan.MergePlan(plan_path)
    steps = source.steps()
    start = 0
    try:
        with open(plan_path, "rb") as f:
            while chunk := list(islice(steps, apply_merge_plan.CHUNK)):
                if source.refused is not None:
                    return False
                for step in chunk:
                    source.name(step)
                apply_merge.check_resolutions(source.rows(chunk, f, start), resolutions)
                start += len(chunk)
    except (apply_merge.MergeRefused, ResolutionsError):
        return False
    return True


@_collector_paused
def execute_plan(
    plan_path: str | Path,
    target: Callable[[], Any] | str,
    commit: bool = False,
    single_transaction: bool = True,
    on_conflict: str = "abort",
    *,
    accept_triggers: bool = False,
    accept_cascades: bool = False,
    accept_non_transactional: Iterable[str] = (),
    lock_wait_timeout: int = DEFAULT_LOCK_WAIT_TIMEOUT,
    observer: ExecutionObserver | None = None,
    inspect: Callable[[Any], None] | None = None,
    check_first: bool = True,
    foreign_key_checks: bool = True,
    merge: bool = False,
    resolutions: Resolutions | None = None,
) -> ExecutionResult:
    """Run the plan on the target (a DSN or a connection factory). Dry run unless commit=True.

    Refused before anything runs (ExecutionRefused): a statement over the target's max_allowed_packet;
    triggers the statements fire, unless accept_triggers; when committing, cascading foreign keys
    unless accept_cascades, and non-transactional tables not named in accept_non_transactional.
    The dry run applies everything, checks included, in one transaction and rolls it back (statements
    on non-transactional tables are not run, only their checks): a conflict or a refused statement
    stops the job there, before anything is applied. Commit mode then runs it for real, in one
    transaction unless single_transaction=False (a commit per original transaction). With
    check_first=False a one-transaction commit skips that dry run: it is its own (a conflict or a
    failure rolls it back); the dry run still comes first per transaction, when the plan writes to a
    non-transactional table, or when its statements fire triggers.
    The observer hears the progress of each pass and every per-transaction commit right after it
    happens; when it says cancelled, the open transaction is rolled back (ExecutionCancelled).
    inspect (dry run only) reads the target after the last statement, before the rollback.
    foreign_key_checks=False runs the plan as an incident that ran with foreign_key_checks=0 was
    (Report.no_fk_checks; the script's header says the same).
    merge=True applies a net plan column by column, keeping what changed since (rollback/target/merge_columns.py),
    its conflicts settled by `resolutions`.
    """
    observer = observer or ExecutionObserver()
    if lock_wait_timeout < 1:
        raise RollbackError(f"the lock wait timeout must be at least 1 second (got {lock_wait_timeout})")
    factory = (lambda: connect(target, multi_statements=True)) if isinstance(target, str) else target

    def make_pass(result: ExecutionResult, phase: str, **fields: Any) -> _Pass:
        """A pass of this execution: what all its passes share, and `fields` (the pass's plan, its mode,
        and what its preflight read)."""
        return _Pass(
            on_conflict=on_conflict,
            result=result,
            lock_wait_timeout=lock_wait_timeout,
            observer=observer,
            phase=phase,
            foreign_key_checks=foreign_key_checks,
            **fields,
        )

    if (resolutions is None or merge) and (single_transaction or not merge):
        for head in (True, False):  # the plan's head first; all of it when a pass stopped past it
            streamed = _streamed(
                plan_path,
                factory,
                commit,
                check_first,
                inspect,
                make_pass,
                merge,
                not single_transaction,
                resolutions,
                head,
            )
            if streamed is not _AGAIN:
                break
        if isinstance(streamed, ExecutionResult):
            return streamed
    source = apply_merge_plan.MergePlan(plan_path) if merge else None
    survey = _survey(source.steps() if source is not None else read_plan(plan_path, merge_data=False))
    plan = survey.plan
    _refuse_ddl(plan)
    also = _merge_rows(plan, source, resolutions, single_transaction)
    try:
        found, max_packet, keyed, sizes = _preflight(factory, plan, also, survey)
    except ExecutionFailed as exc:
        if observer.cancelled():  # the cancel stopped the preflight's query (KILL QUERY) or cut its session
            raise ExecutionCancelled(
                f"cancelled: {exc.one_line()}", ExecutionResult(dry_run=not commit)
            ) from None
        raise
    accepted = {t.strip().lower() for t in accept_non_transactional if t.strip()}
    reasons = _refusals(found, plan, commit, accept_triggers, accept_cascades, accepted)
    if reasons:
        raise ExecutionRefused("refused, nothing was run: " + "; ".join(reasons), found.to_dict())
    non_transactional = {t.lower() for t in found.non_transactional_tables}
    alone = non_transactional | {str(t["table"]).lower() for t in found.triggers}
    # room for the packet's header; plans on non-transactional tables run one step at a time, as before
    batch_bytes = 0 if non_transactional else max(0, min(BATCH_BYTES, max_packet - BATCH_STEP_ROOM))

    def one_pass(result: ExecutionResult, per_transaction: bool, read_only: set[str], phase: str) -> _Pass:
        return make_pass(
            result,
            phase,
            plan=plan,
            per_transaction=per_transaction,
            read_only=read_only,
            non_transactional=non_transactional,
            batch_bytes=batch_bytes,
            alone=alone,
            keyed=keyed,
            sizes=sizes,
            merge=source,
            resolutions=resolutions,
        )

    # Committing in one transaction is its own dry run (a conflict rolls it back, nothing applied) unless
    # the caller asks for the check first, or a commit could keep something the check would have stopped:
    # per transaction (earlier commits stay), statements on non-transactional tables, and triggers (which
    # may write anywhere: they keep today's two passes).
    if not commit or check_first or not single_transaction or non_transactional or found.triggers:
        dry = ExecutionResult(dry_run=True, side_effects=found.to_dict())
        dry.read_only_tables = sorted(found.non_transactional_tables)
        _attempt(
            factory,
            one_pass(dry, False, non_transactional, "check"),
            commit=False,
            inspect=None if commit else inspect,
        )
        if not commit:
            return dry
    real = ExecutionResult(dry_run=False, side_effects=found.to_dict())
    _attempt(factory, one_pass(real, not single_transaction, set(), "apply"), commit=True)
    return real
