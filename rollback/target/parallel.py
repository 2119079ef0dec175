"""The verified apply over several connections at once, all or nothing across them through XA.

The plan's steps are split into partitions whose rows are independent: the steps of one row (its
primary key, before and after an UPDATE that moves it) stay in one partition, in plan order; a table
with another unique key, a table tied to others by foreign keys (with every table it is tied to),
and a table without a primary key stay whole on one partition. Each partition runs on its own
connection as the one-connection apply runs a plan (rollback/target/execute.py's pass: batched checks and
statements), inside `XA START`; then `XA END` and `XA PREPARE`. Only when every partition is prepared
is the decision to commit recorded, and then each is committed (`XA COMMIT`); a conflict or an error
anywhere before that rolls every partition back (`XA ROLLBACK`): nothing is applied. A partition
that names the wrong rows cannot write them wrongly: every check is still a locking read of the image
the binlog left, so a row shared by two partitions shows up as a conflict or a lock wait, and the
whole apply rolls back.

A death between prepare and commit leaves prepared transactions on the target (MariaDB 10.5+ keeps
them past the client's disconnect). The record written before the first `XA PREPARE` names them (the
global transaction id, the target, the plan's digest, every partition) and says the decision once
it is taken; `recover` matches it with `XA RECOVER` on the target and finishes what it says: commit
when the record says every partition was prepared (the decision was taken: some may already be
committed), roll back otherwise (nothing can have been committed).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import threading
import time
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollback.base.dsn import redact
from rollback.base.errors import RollbackError
from rollback.base.identifiers import quote_ident
from rollback.schema.side_effects import SideEffects
from rollback.sources.resolve import DATA_DIR_ENV
from rollback.target import batches as apply_batches
from rollback.target import plan_stream
from rollback.target.execute import (
    BATCH_BYTES,
    LOCK_ERRORS,
    ExecutionCancelled,
    ExecutionFailed,
    ExecutionObserver,
    ExecutionProgress,
    ExecutionRefused,
    ExecutionResult,
    _close_quietly,
    _Pass,
    _preflight,
    _refusals,
    _refuse_ddl,
    _stream_preflight,
    _StreamSource,
    connect,
    execute_plan,
    plan_lines,
    read_plan,
    streamable,
)

XID_PREFIX = "mysql-rollback-"  # every global transaction id this apply opens starts so
# Test hook: where a parallel apply stops and waits to be killed: "preparing" (one partition prepared,
# no decision recorded) or "prepared" (the decision to commit recorded, nothing committed yet).
PAUSE_AT = "MYSQL_ROLLBACK_XA_PAUSE_AT"
MAX_PARALLEL = 16
log = logging.getLogger("mysql_rollback.execute")


def plan_digest(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# ---- which steps may run apart


@dataclass
class TableFacts:
    """What the target says of the plan's tables (lower-cased db.table)."""

    primary: dict[str, list[str]] = field(default_factory=dict)  # the primary key's columns, quoted
    other_unique: set[str] = field(default_factory=set)  # tables with a unique key besides the primary
    related: list[tuple[str, str]] = field(default_factory=list)  # (child, parent) of each foreign key


def table_facts(factory: Callable[[], Any], tables: Iterable[str]) -> TableFacts:
    """The facts of `tables` (lower-cased db.table), read on a connection of their own."""
    names = sorted(set(tables))
    facts = TableFacts()
    if not names:
        return facts
    marks = ", ".join(["%s"] * len(names))
    full = "LOWER(CONCAT(TABLE_SCHEMA, '.', TABLE_NAME))"
    conn = factory()
    try:
        with conn.cursor() as cur:
            cur.execute(
                f"SELECT {full}, INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
                f"WHERE NON_UNIQUE = 0 AND {full} IN ({marks}) ORDER BY 1, 2, SEQ_IN_INDEX",
                names,
            )
            for table, index, column in cur.fetchall():
                if index == "PRIMARY":
                    facts.primary.setdefault(table, []).append(quote_ident(column))
                else:
                    facts.other_unique.add(table)
            cur.execute(
                f"SELECT {full}, LOWER(CONCAT(REFERENCED_TABLE_SCHEMA, '.', REFERENCED_TABLE_NAME)) "
                "FROM information_schema.KEY_COLUMN_USAGE WHERE REFERENCED_TABLE_NAME IS NOT NULL AND "
                f"({full} IN ({marks}) OR LOWER(CONCAT(REFERENCED_TABLE_SCHEMA, '.', REFERENCED_TABLE_NAME)) "
                f"IN ({marks}))",
                names + names,
            )
            facts.related = [(child, parent) for child, parent in cur.fetchall()]
    finally:
        _close_quietly(conn)
    return facts


class _Joined:
    """Union-find over the names a step touches (a row's key, or a whole table); a name no join met is
    its own root and takes no room."""

    def __init__(self) -> None:
        self.parent: dict[Any, Any] = {}

    def find(self, item: Any) -> Any:
        parent = self.parent
        root = item
        while (up := parent.get(root, root)) != root:
            root = up
        while item != root:  # every name on the way points at the root
            parent[item], item = root, parent[item]
        return root

    def join(self, a: Any, b: Any) -> None:
        a, b = self.find(a), self.find(b)
        if a != b:
            self.parent[a] = b


def _row_keys(step: dict[str, Any], columns: list[str]) -> list[str] | None:
    """The primary key values (as the plan writes them: `col`=literal, joined by AND) of the rows the
    step touches: the key a re-insert fills or a DELETE frees, an UPDATE's key before and after. None
    when the step is not of the plan's keyed forms."""
    sql, check = str(step["sql"]), step.get("check")
    if not check or not check.startswith(apply_batches.COUNT_FROM) or sql.endswith(" LIMIT 1;"):
        return None
    if step.get("expect") == 0:
        if not sql.startswith("INSERT INTO "):
            return None
        at = check.find(" WHERE ")
        return [check[at + len(" WHERE ") :]] if at >= 0 else None
    at = sql.rfind(" WHERE ")
    if at < 0 or not sql.endswith(";"):
        return None
    old = sql[at + len(" WHERE ") : -1]
    if sql.startswith("DELETE FROM "):
        return [old]
    if not sql.startswith("UPDATE "):
        return None
    start = sql.find(" SET ")
    found = apply_batches.update_sets(sql, start + len(" SET ")) if start > 0 else None
    if found is None:
        return None
    sets = dict(found[0])
    if not any(column in sets for column in columns):
        return [old]
    if not all(column in sets for column in columns):
        return None  # part of the key moves: not a form this split reads
    return [old, " AND ".join(f"{column}={sets[column]}" for column in columns)]


def partition(plan: list[dict[str, Any]], parts: int, facts: TableFacts) -> list[list[dict[str, Any]]]:
    """The plan's steps in `parts` partitions (some may be empty), each in plan order, whose rows no
    other partition touches."""
    out: list[list[dict[str, Any]]] = [[] for _ in range(parts)]
    for step, home in zip(plan, assign(plan, parts, facts).homes, strict=True):
        out[home].append(step)
    return out


@dataclass
class Assigned:
    """Each step's partition (-1: a plan's blank line), and each partition's steps and tables."""

    homes: array[int]
    counts: list[int]
    tables: list[list[str]]


def assign(steps: Iterable[dict[str, Any] | None], parts: int, facts: TableFacts) -> Assigned:
    """partition's split, each step's partition (a None, a plan's blank line, in none). The names a
    step touches are kept as their hashes: two names with one hash put their rows in one partition,
    which is never wrong (only less parallel)."""
    joined = _Joined()
    tied = {table for pair in facts.related for table in pair}
    for child, parent in facts.related:
        joined.join(hash(("table", child)), hash(("table", parent)))
    whole = facts.other_unique | tied
    tables: dict[str, int] = {}
    firsts = array("q")  # each step's first name
    table_of = array("i")  # each step's table (its index in `tables`), -1: a blank line, -2 - n: a row
    for step in steps:
        if step is None:
            firsts.append(0)
            table_of.append(-1)
            continue
        spelled = str(step.get("table"))
        table = spelled.lower()
        n = tables.setdefault(spelled, len(tables))
        columns = facts.primary.get(table)
        keys = _row_keys(step, columns) if columns and table not in whole else None
        if keys is None:
            whole.add(table)
            firsts.append(hash(("table", table)))
            table_of.append(n)
            continue
        first = hash(("row", table, keys[0]))
        for key in keys[1:]:
            joined.join(first, hash(("row", table, key)))
        firsts.append(first)
        table_of.append(-2 - n)
    names = [spelled.lower() for spelled in tables]
    for first, n in zip(firsts, table_of, strict=True):
        if n <= -2 and names[-2 - n] in whole:  # a table that went whole once goes whole
            joined.join(first, hash(("table", names[-2 - n])))
    roots = array("q", (joined.find(first) for first in firsts))
    sizes: dict[int, int] = {}  # in the order of their first step
    for root, n in zip(roots, table_of, strict=True):
        if n != -1:
            sizes[root] = sizes.get(root, 0) + 1
    total = sum(sizes.values())
    # consecutive runs of the plan, not every n-th row: a run's keys are mostly near one another, so two
    # partitions' locks meet only where their runs do (an insert next to a key another partition locked
    # waits for it, and a prepared branch keeps its locks until the commit)
    home: dict[int, int] = {}
    part = load = placed = 0
    for root, size in sizes.items():
        # a fair share of what is left: a whole table bigger than its share leaves less to the others
        if part < parts - 1 and load >= (total - placed + load) / (parts - part):
            part, load = part + 1, 0
        home[root] = part
        load += size
        placed += size
    del sizes
    homes = array("b", (-1 if n == -1 else home[root] for root, n in zip(roots, table_of, strict=True)))
    counts = [0] * parts
    found: list[set[int]] = [set() for _ in range(parts)]
    for part, n in zip(homes, table_of, strict=True):
        if part >= 0:
            counts[part] += 1
            found[part].add(n if n >= 0 else -2 - n)
    spellings = list(tables)
    return Assigned(homes, counts, [sorted(spellings[n] for n in found[part]) for part in range(parts)])


# ---- the record and what the target holds


def default_record_dir() -> Path:
    """Where the CLI keeps its records: `$MYSQL_ROLLBACK_DATA_DIR/xa`, else the user's state directory
    (not the temporary one: a prepared transaction outlives a reboot, and so must its record)."""
    data_dir = os.environ.get(DATA_DIR_ENV)
    if data_dir:
        return Path(data_dir) / "xa"
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "mysql-rollback" / "xa"


def record_path(directory: str | Path, gtrid: str) -> Path:
    return Path(directory) / f"{gtrid}.json"


def write_record(directory: str | Path, record: dict[str, Any]) -> None:
    """The record, replaced whole (renamed over the old one) and flushed to disk before returning."""
    path = record_path(directory, record["gtrid"])
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)


def read_records(directory: str | Path) -> list[dict[str, Any]]:
    folder = Path(directory)
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob(f"{XID_PREFIX}*.json")):
        try:
            out.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return out


def prepared_xids(conn: Any) -> dict[str, list[str]]:
    """gtrid -> its prepared branches (bqual) on the target, for this apply's transactions only."""
    out: dict[str, list[str]] = {}
    with conn.cursor() as cur:
        cur.execute("XA RECOVER")
        for _format, gtrid_length, _bqual_length, data in cur.fetchall():
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
            gtrid, bqual = text[:gtrid_length], text[gtrid_length:]
            if gtrid.startswith(XID_PREFIX):
                out.setdefault(gtrid, []).append(bqual)
    return {gtrid: sorted(branches) for gtrid, branches in out.items()}


def _xid(gtrid: str, bqual: str) -> str:
    return f"'{gtrid}', '{bqual}'"


@dataclass
class Recovered:
    gtrid: str
    action: str  # committed | rolled back | nothing prepared | left prepared
    branches: list[str]
    line: str


def recover(
    factory: Callable[[], Any], records: list[dict[str, Any]], target: str = "the target"
) -> list[Recovered]:
    """Finish what a parallel apply that died between prepare and commit left prepared on the target,
    as each record says; one Recovered (with its line) per record and per prepared transaction the
    records do not name (left alone: whoever opened it decides)."""
    import pymysql

    conn = factory()
    out: list[Recovered] = []
    try:
        conn.autocommit(
            True
        )  # XA COMMIT and XA ROLLBACK of another session's xid refuse inside a transaction
        prepared = prepared_xids(conn)
        with conn.cursor() as cur:
            for record in records:
                gtrid = record["gtrid"]
                branches = prepared.pop(gtrid, [])
                named = f"parallel apply {gtrid} (plan {str(record.get('plan'))[:12]}, {target})"
                if not branches:
                    done = "its commit had been decided" if record.get("decision") == "commit" else "none"
                    out.append(
                        Recovered(
                            gtrid,
                            "nothing prepared",
                            [],
                            f"{named}: no prepared branch left ({done}); nothing to do",
                        )
                    )
                    continue
                commit = record.get("decision") == "commit"
                for bqual in branches:
                    try:
                        cur.execute(f"XA {'COMMIT' if commit else 'ROLLBACK'} {_xid(gtrid, bqual)}")
                    except pymysql.err.MySQLError as exc:
                        reason = exc.args[-1] if exc.args else exc
                        raise RollbackError(
                            f"{named}: XA {'COMMIT' if commit else 'ROLLBACK'} of branch {bqual} failed: {reason}"
                        ) from None
                total = len(record.get("partitions") or [])
                if commit:
                    line = (
                        f"{named}: committed {len(branches)} prepared branch(es) {', '.join(branches)} of "
                        f"{total}: the record says every branch was prepared and the commit decided"
                    )
                else:
                    line = (
                        f"{named}: rolled back {len(branches)} prepared branch(es) {', '.join(branches)} of "
                        f"{total}: the record says the commit was not decided (not every branch was "
                        "prepared); nothing of it is applied"
                    )
                out.append(Recovered(gtrid, "committed" if commit else "rolled back", branches, line))
        for gtrid, branches in prepared.items():
            out.append(
                Recovered(
                    gtrid,
                    "left prepared",
                    branches,
                    f"prepared XA transaction {gtrid} (branches {', '.join(branches)}) on {target} has no record "
                    "here: left as it is (its rows stay locked until someone runs XA COMMIT or XA ROLLBACK)",
                )
            )
    except pymysql.err.MySQLError as exc:
        reason = exc.args[-1] if exc.args else exc
        raise RollbackError(f"cannot read the prepared XA transactions of {target}: {reason}") from None
    finally:
        _close_quietly(conn)
    return out


# ---- the apply


class _Branch:
    """One partition on its own connection, in its XA transaction."""

    def __init__(
        self, factory: Callable[[], Any], gtrid: str, bqual: str, one: _Pass, stopped: threading.Event
    ):
        self.factory = factory
        self.stopped = stopped
        self.xid = _xid(gtrid, bqual)
        self.bqual = bqual
        self.one = one
        self.conn: Any = None
        self.state = "idle"  # idle | active | prepared | committed | rolled back
        self.error: BaseException | None = None

    def run(self, prepare: bool, may_prepare: Callable[[], bool]) -> None:
        """XA START, the partition's steps, XA END, and XA PREPARE when asked (and still wanted)."""
        try:
            self.conn = self.factory()
            with self.conn.cursor() as cur:
                # no gap locks: partitions lock only the rows they name (a check on a free key of one
                # must not block another's insert next to it); a taken key still fails the insert
                cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
                cur.execute(f"XA START {self.xid}")
                self.state = "active"
            self.one.run(self.conn)
            with self.conn.cursor() as cur:
                cur.execute(f"XA END {self.xid}")
                self.state = "ended"
                if prepare and may_prepare():
                    cur.execute(f"XA PREPARE {self.xid}")
                    self.state = "prepared"
        except BaseException as exc:  # noqa: BLE001 - handed to the coordinator, which raises it
            self.error = exc
            if not isinstance(exc, ExecutionCancelled):
                self.stopped.set()

    def finish(self, commit: bool) -> None:
        import pymysql

        verb = "COMMIT" if commit else "ROLLBACK"
        if self.conn is None:
            return
        try:
            with self.conn.cursor() as cur:
                if self.state == "active":
                    try:
                        cur.execute(f"XA END {self.xid}")
                    except pymysql.err.MySQLError:
                        pass  # the server ended it already (a deadlock rolls the branch back)
                if self.state in ("active", "ended", "prepared"):
                    cur.execute(f"XA {verb} {self.xid}")
            self.state = "committed" if commit else "rolled back"
        except pymysql.err.MySQLError:
            if commit:
                raise
            # not prepared: closing the session rolls it back; prepared: it stays so, and its record too
        finally:
            _close_quietly(self.conn)


def _deadlocked(error: BaseException) -> bool:
    import pymysql

    if isinstance(error, pymysql.err.MySQLError):
        return bool(error.args) and error.args[0] in (1213, 1614)  # a deadlock; XA_RBDEADLOCK
    return isinstance(error, ExecutionFailed) and str(error).startswith(LOCK_ERRORS[1213])


def _pause_here(point: str) -> None:
    if os.environ.get(PAUSE_AT) == point:
        while True:
            time.sleep(1)


def _merged(results: list[ExecutionResult], into: ExecutionResult) -> ExecutionResult:
    for part in results:
        into.statements += part.statements
        into.rows_affected += part.rows_affected
        into.skipped += part.skipped
        into.conflicts.extend(part.conflicts)
    into.conflicts.sort(key=lambda c: (str(c.get("file")), -int(c.get("pos") or 0)))
    return into


def _observed(
    observer: ExecutionObserver, total: int, phase: str, lock: threading.Lock
) -> Callable[..., None]:
    """Progress of all partitions as one: each partition's observer adds its own steps. `lock`: the one
    every call of the caller's observer holds while the partitions run (an observer keeps state between
    calls, and one told out of turn writes an older record over a newer one: the XA record lost)."""
    done = [0]

    def told(part: list[int], state: ExecutionProgress) -> None:
        with lock:
            done[0] += state.statements_done - part[0]
            part[0] = state.statements_done
            observer.progress(ExecutionProgress(phase, done[0], total, 0, state.transaction))

    return told


class _PartObserver(ExecutionObserver):
    """One partition's observer: its progress added to the others', and a stop when the caller cancels
    or another partition failed (nothing of this one could be committed then)."""

    def __init__(self, parent: ExecutionObserver, told: Callable[..., None], failed: threading.Event):
        self.parent = parent
        self.told = told
        self.failed = failed
        self.mine = [0]

    def progress(self, state: ExecutionProgress) -> None:
        if state.committing is None and state.committed is None:
            self.told(self.mine, state)

    def cancelled(self) -> bool:
        return self.failed.is_set() or self.parent.cancelled()


@dataclass
class _Split:
    """The plan split for the branches: what the preflight found, the primary keys, the target's
    max_allowed_packet, and each non-empty partition's _Pass fields (its steps and their bytes, or the
    lines of the plan it streams and their count), steps and tables."""

    found: SideEffects
    keyed: dict[str, str]
    max_packet: int
    fields: list[dict[str, Any]]
    counts: list[int]
    tables: list[list[str]]


def _streamed_split(
    factory: Callable[[], Any], plan_path: str | Path, parallel: int, where: str
) -> _Split | None:
    """The split without the plan held: the preflight from the plan's bytes (execute.py's streamed
    pass's), then one read of its lines for the rows each step touches (parallel.assign); each branch
    then streams the plan's lines of its partition. None where the streamed pass would not run (the
    careful split then reads the plan, and refuses what it must)."""
    preflight = _stream_preflight(factory, plan_path)
    if preflight is None:
        return None
    found, max_packet, keyed, tables, _ = preflight
    _refuse_leftovers(factory, where)
    facts = table_facts(factory, tables)

    def checked() -> Iterator[dict[str, Any] | None]:
        for step in plan_lines(plan_path, merge_data=False):
            if step is not None:
                streamable(step, tables, max_packet)
            yield step

    try:
        assigned = assign(checked(), parallel, facts)
    except plan_stream.Stopped:
        return None
    parts = [n for n, count in enumerate(assigned.counts) if count]
    fields = [
        {
            "plan": [],
            "stream": _StreamSource(plan_path, tables, max_packet, (assigned.homes, n)),
            "total": assigned.counts[n],
        }
        for n in parts
    ]
    return _Split(
        found,
        keyed,
        max_packet,
        fields,
        [assigned.counts[n] for n in parts],
        [assigned.tables[n] for n in parts],
    )


def _careful_split(
    factory: Callable[[], Any],
    plan_path: str | Path,
    parallel: int,
    commit: bool,
    accept_cascades: bool,
    where: str,
) -> _Split:
    """The split of the plan read whole: refused (ExecutionRefused) where execute_plan refuses, and
    where XA cannot hold it: statements that fire triggers, non-transactional tables."""
    plan = list(read_plan(plan_path))
    _refuse_ddl(plan)
    found, max_packet, keyed, sizes = _preflight(factory, plan)
    size_of = {id(step): size for step, size in zip(plan, sizes, strict=True)}  # each step's batch bytes
    reasons = _refusals(found, plan, commit, False, accept_cascades, set())
    if found.triggers:
        reasons = [r for r in reasons if "--accept-triggers" not in r] + [
            f"the statements fire triggers ({found.triggers[0]['table']}): a parallel apply cannot tell "
            "which rows they write; run without --parallel"
        ]
    if found.non_transactional:
        reasons = [r for r in reasons if "--accept-non-transactional" not in r] + [
            f"non-transactional table {found.non_transactional[0]['table']}: XA cannot roll it back; "
            "run without --parallel"
        ]
    if reasons:
        raise ExecutionRefused("refused, nothing was run: " + "; ".join(reasons), found.to_dict())
    _refuse_leftovers(factory, where)
    facts = table_facts(factory, {str(step.get("table")).lower() for step in plan})
    parts = [part for part in partition(plan, parallel, facts) if part]
    return _Split(
        found,
        keyed,
        max_packet,
        [{"plan": steps, "sizes": [size_of[id(step)] for step in steps]} for steps in parts],
        [len(steps) for steps in parts],
        [sorted({str(step.get("table")) for step in steps}) for steps in parts],
    )


def execute_parallel(
    plan_path: str | Path,
    target: Callable[[], Any] | str,
    parallel: int,
    commit: bool = False,
    on_conflict: str = "abort",
    *,
    accept_cascades: bool = False,
    lock_wait_timeout: int = 10,
    observer: ExecutionObserver | None = None,
    foreign_key_checks: bool = True,
    record_dir: str | Path | None = None,
) -> ExecutionResult:
    """The plan applied over `parallel` connections (rollback/target/execute.py's execute_plan over several),
    all or nothing through XA. Refused (ExecutionRefused) before anything runs where execute_plan
    refuses, and where XA cannot hold it: statements that fire triggers, non-transactional tables.
    The record (ExecutionProgress.xa, and a file in record_dir if given) is written before the first
    XA PREPARE and again when the commit is decided; the file is removed once every branch is
    committed or rolled back. A plan whose tables have nothing the preflight must see first is never
    held whole: each branch streams its partition's lines (_streamed_split)."""
    observer = observer or ExecutionObserver()
    if not 1 <= parallel <= MAX_PARALLEL:
        raise RollbackError(f"--parallel must be between 1 and {MAX_PARALLEL} (got {parallel})")
    factory = (lambda: connect(target, multi_statements=True)) if isinstance(target, str) else target
    where = redact(target) if isinstance(target, str) else "the target"
    split = _streamed_split(factory, plan_path, parallel, where) or _careful_split(
        factory, plan_path, parallel, commit, accept_cascades, where
    )
    found, keyed, total = split.found, split.keyed, sum(split.counts)
    digest = plan_digest(plan_path)
    gtrid = f"{XID_PREFIX}{digest[:12]}-{secrets.token_hex(4)}"
    batch_bytes = max(0, min(BATCH_BYTES, split.max_packet - 1024))
    phase = "apply" if commit else "check"
    observing = threading.Lock()
    told = _observed(observer, total, phase, observing)
    branches = []
    stopped = threading.Event()  # a partition failed: the others stop at their next batch
    for n, fields in enumerate(split.fields):
        one = _Pass(
            on_conflict=on_conflict,
            result=ExecutionResult(dry_run=not commit),
            per_transaction=False,
            lock_wait_timeout=lock_wait_timeout,
            read_only=set(),
            non_transactional=set(),
            observer=_PartObserver(observer, told, stopped),
            phase=phase,
            batch_bytes=batch_bytes,
            keyed=keyed,
            foreign_key_checks=foreign_key_checks,
            **fields,
        )
        branches.append(_Branch(factory, gtrid, f"p{n}", one, stopped))
    record: dict[str, Any] = {
        "gtrid": gtrid,
        "target": where,
        "plan": digest,
        "decision": "none",
        "partitions": [
            {"bqual": branch.bqual, "steps": steps, "tables": tables}
            for branch, steps, tables in zip(branches, split.counts, split.tables, strict=True)
        ],
    }
    result = ExecutionResult(dry_run=not commit, side_effects=found.to_dict())
    result.non_transactional_applied = {}
    written = [False]
    gate = threading.Lock()

    def may_prepare() -> bool:
        """The record exists before the first XA PREPARE; none prepares once another has failed."""
        with gate:
            if any(b.error is not None for b in branches):
                return False
            if not written[0]:
                with observing:
                    _record(observer, record_dir, record, phase, total)
                written[0] = True
            return True

    threads = [
        threading.Thread(target=b.run, args=(commit, may_prepare), name=f"mysql-rollback-xa-{b.bqual}")
        for b in branches
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    errors = [b.error for b in branches if b.error is not None]
    # the partition that failed, not those it stopped (unless the caller cancelled)
    failed = next((e for e in errors if not isinstance(e, ExecutionCancelled)), errors[0] if errors else None)
    if failed is not None or not commit:
        for b in branches:
            b.finish(commit=False)
        if written[0] and not any(b.state == "prepared" for b in branches):
            _forget(record_dir, gtrid)
        _merged([b.one.result for b in branches], result)
        if failed is None:
            return result
        if _deadlocked(failed):
            # two partitions' locks met (gap locks InnoDB takes even in READ COMMITTED, where a key's
            # old row is still there, delete-marked): nothing was applied, so one connection does it all
            log.warning("the parallel apply's connections deadlocked (nothing applied): applying on one")
            return execute_plan(
                plan_path,
                target,
                commit=commit,
                on_conflict=on_conflict,
                accept_cascades=accept_cascades,
                lock_wait_timeout=lock_wait_timeout,
                observer=observer,
                check_first=False,
                foreign_key_checks=foreign_key_checks,
            )
        if isinstance(failed, RollbackError):
            raise failed
        if isinstance(failed, plan_stream.Stopped):
            raise ExecutionFailed(
                f"the plan changed while it was applied ({failed}); nothing was applied"
            ) from None
        reason = failed.args[-1] if failed.args else failed
        raise ExecutionFailed(
            f"the target failed during the parallel apply: {reason}; nothing was applied"
        ) from None
    _pause_here("preparing")
    record["decision"] = "commit"
    _record(observer, record_dir, record, phase, total)
    _pause_here("prepared")
    for b in branches:
        try:
            b.finish(commit=True)
        except Exception as exc:  # noqa: BLE001 - the decision stands: recover() finishes it
            reason = exc.args[-1] if getattr(exc, "args", None) else exc
            raise ExecutionFailed(
                f"XA COMMIT of branch {b.bqual} of {gtrid} failed after the commit was decided: {reason}; "
                f"the other branches commit through `mysql-rollback xa-recover --target ...` (the record "
                "says commit)"
            ) from None
    _forget(record_dir, gtrid)
    result.committed = True
    _merged([b.one.result for b in branches], result)
    observer.progress(ExecutionProgress(phase, total, total, result.rows_affected, None, xa=record))
    return result


def _record(
    observer: ExecutionObserver, directory: str | Path | None, record: dict[str, Any], phase: str, total: int
) -> None:
    if directory is not None:
        write_record(directory, record)
    observer.progress(ExecutionProgress(phase, total, total, 0, None, xa=dict(record)))


def _forget(directory: str | Path | None, gtrid: str) -> None:
    if directory is not None:
        record_path(directory, gtrid).unlink(missing_ok=True)


def _refuse_leftovers(factory: Callable[[], Any], where: str) -> None:
    """A target that still holds a prepared branch of an earlier parallel apply: its rows stay locked
    until it is finished, and its record says how."""
    import pymysql

    conn = factory()
    try:
        left = prepared_xids(conn)
    except pymysql.err.MySQLError:
        return  # XA RECOVER needs a privilege the user may not have; the apply still runs
    finally:
        _close_quietly(conn)
    if left:
        gtrid, branches = next(iter(left.items()))
        raise ExecutionRefused(
            f"refused, nothing was run: {where} still holds {len(branches)} prepared branch(es) of the parallel "
            f"apply {gtrid} that died between prepare and commit; `mysql-rollback xa-recover --target ...` "
            "commits or rolls them back as its record says"
        )
