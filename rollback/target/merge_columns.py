"""Merge execution of a net plan (issue 28, `execute_plan(..., merge=True)`): undo the incident, keep what
happened since.

Each plan line's `"merge"` object (written with `--net`) names one row's net change. In the transaction
that writes, under a locking read (SELECT ... FOR UPDATE) or in the WHERE of the write itself (which locks
the row it checks), the row is compared with the range's final image, exactly: a net update's changed
columns only (all equal: those columns get their before values back, the others keep whatever they hold
now), a net insert's whole row (as the range left it: deleted), a net delete's keys (all free: the row is
inserted again). Anything else is a conflict with three versions (before, after, now), settled by the
resolutions document (rollback/target/resolutions.py), kept as it is now with on_conflict="skip", or left
unresolved: the caller (rollback/target/execute.py) then aborts, nothing applied.

A batch of plan lines that say `merge_same` (rollback/job/net_script.py) is first sent by the caller as
the strict apply's statements, each finding its rows by their checks (apply_batches.checked_writes), its
`merge` objects read from the plan (rollback/target/merge_plan.py) only when it comes up short; then, and
for every other batch, the rows go here.

Steps go in batches, as the strict apply's: one query of the batch's writes after a savepoint, each write
checking its rows in its own statement (a net update's UPDATE finds its row only exactly as the range left
it, a net insert's DELETE likewise, a net delete's INSERT fails on a taken key), so that nothing changed
since costs no read. A write that comes up short sends the batch back to its savepoint; then the batch's
locking reads (one count per run of one table and kind) decide, and its writes carry the merge's own
checks (only the changed columns); a batch with a conflict runs one step at a time (read, decide, write),
where each read sees what the steps before it left.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from functools import cached_property
from typing import Any, Protocol

from rollback.base.errors import RollbackError
from rollback.base.identifiers import quote_ident, quote_table
from rollback.target.batches import CASE_ROWS
from rollback.target.resolutions import (
    COLUMN,
    CONFLICT_CHOICES,
    KEEP_NOW,
    TAKE_BEFORE,
    WHERE_UNCHANGED,
    Choice,
    Resolutions,
    ResolutionsError,
    row_key,
)

LOCKING = " FOR UPDATE"
SAVEPOINT = "mysql_rollback_merge"
_QUOTED_TABLE = re.compile(r"^`((?:[^`]|``)+)`\.`((?:[^`]|``)+)`$")


class MergeRefused(RollbackError):
    """A merge execution that cannot run as asked: refused before any statement ran."""


class Host(Protocol):
    """What the pass of rollback/target/execute.py lends the merge: its result, its errors, its progress."""

    result: Any
    on_conflict: str
    read_only: set[str]
    non_transactional: set[str]
    keyed: dict[str, str]  # lower-cased tables with a primary key -> its quoted columns

    def _execute(self, cur: Any, sql: str, step: dict[str, Any]) -> int: ...

    def _refused(self, exc: Any, sql: str, step: dict[str, Any]) -> Exception: ...

    def _wrong_count(self, step: dict[str, Any], affected: int) -> Exception: ...

    def _stop_if_asked(self) -> None: ...

    def _count(self, steps: int, current: dict[str, Any] | None) -> None: ...


def plain_name(table: str) -> str:
    """`db`.`t` or db.t (a plan line's table) -> db.t (how conflicts and resolutions name it)."""
    found = _QUOTED_TABLE.match(table)
    if found is None:
        return table
    return f"{found.group(1).replace('``', '`')}.{found.group(2).replace('``', '`')}"


def quoted_name(table: str) -> str:
    """A plan line's table (`db`.`t`, or db.t as the full plans write it) quoted for a query."""
    if _QUOTED_TABLE.match(table):
        return table
    db, _, name = table.partition(".")
    return quote_table(db, name)


def now_value(value: Any) -> Any:
    """A value read from the target as the change log writes values (bytes as hex, DECIMAL as text)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray):
        return {"hex": bytes(value).hex()}
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat(sep=" ") if isinstance(value, datetime) else value.isoformat()
    if isinstance(value, timedelta):
        return str(value)
    return repr(value)


@dataclass
class Row:
    """One plan step of a merge: its row's net change and the queries that read and restore it."""

    step: dict[str, Any]
    table: str  # quoted `db`.`t`, for the queries
    name: str  # db.t
    plan_table: str  # lower-cased, as the plan line names it (the execution's sets of tables use it)
    kind: str  # the net change: update | insert | delete
    merge: dict[str, Any]
    restore: str  # the write when there is no conflict (its check in its WHERE, or an INSERT)
    found: str  # the condition a batch's combined read counts it by (_groups)

    @property
    def columns(self) -> list[dict[str, Any]]:
        return list(self.merge["columns"])

    @cached_property
    def read(self) -> str:
        """The row's own locking read (one step at a time): what the three versions' `now` comes from."""
        merge, columns, table = self.merge, self.merge["columns"], self.table
        if self.kind == "delete":
            return f"SELECT {_names(columns)} FROM {table} WHERE {merge['free_where']}{LOCKING}"
        matches = ", ".join(f"({c['matches_after']})" for c in columns)
        return (
            f"SELECT {matches}, ({merge['row_matches']}), {_names(columns)} FROM {table} "
            f"WHERE {merge['where']}{LOCKING}"
        )


def _names(columns: Sequence[dict[str, Any]]) -> str:
    return ", ".join(quote_ident(str(c["name"])) for c in columns)


def _set(columns: Sequence[dict[str, Any]]) -> str:
    return ", ".join(
        quote_ident(str(c["name"])) + " = " + ("NULL" if c["before_sql"] is None else c["before_sql"])
        for c in columns
    )


def refusal(step: dict[str, Any], merge: Any) -> str | None:
    """Why a plan line cannot run with --merge (no merge data, a kind other than the three), or None."""
    if not isinstance(merge, dict):
        return (
            f"refused, nothing was run: the plan was not written with --net (its line for "
            f"{step.get('file')}:{step.get('pos')} has no merge data); generate it with --net to execute "
            "it with --merge"
        )
    kind = str(merge.get("kind"))
    if kind not in ("update", "insert", "delete"):
        return (
            f"refused, nothing was run: the plan's line for {step.get('file')}:{step.get('pos')} has a merge "
            f"kind {kind!r} (update, insert or delete)"
        )
    return None


def row_of(step: dict[str, Any], merge: dict[str, Any], table: str) -> Row:
    """One plan step's row (`table`: its table quoted, for the queries; the step names it db.t), its merge
    object one `refusal` accepts."""
    plan_table = str(step["table"])
    kind = str(merge["kind"])
    columns = merge["columns"]
    if kind == "update":
        checks = " AND ".join(f"({c['matches_after']})" for c in columns)
        found = f"{merge['where']} AND {checks}"
        restore = f"UPDATE {table} SET {_set(columns)} WHERE {found}"
    elif kind == "insert":
        found = str(merge["row_matches"])
        restore = f"DELETE FROM {table} WHERE {found} LIMIT 1"
    else:
        found = str(merge["free_where"])
        restore = str(merge["insert_sql"]).rstrip().rstrip(";")
    return Row(step, table, plan_table, plan_table.lower(), kind, merge, restore, found)


def check_resolutions(rows: Iterable[Row], resolutions: Resolutions) -> list[dict[str, Any]]:
    """Every `column` choice of the resolutions naming columns its row changed (ResolutionsError: one line),
    and the statement kinds a resolution may run beyond the plan's own, as plan steps (table, sql) for the
    target's side-effect checks: take_before on a re-insert whose key was taken since is a REPLACE, which
    deletes the row holding the key (its DELETE triggers fire, its ON DELETE cascades run)."""
    extra: dict[str, dict[str, Any]] = {}
    for row in rows:
        _check_columns(row, resolutions)
        if row.kind != "delete" or row.plan_table in extra:
            continue
        choice = resolutions.choice_for(row.name, row.merge["key"])
        if choice is not None and choice.choice == TAKE_BEFORE:
            extra[row.plan_table] = {"table": row.step["table"], "sql": "DELETE (REPLACE of a taken key)"}
    return list(extra.values())


def _check_columns(row: Row, resolutions: Resolutions) -> None:
    choice = resolutions.rows.get(row_key(row.name, row.merge["key"]))
    if choice is None or choice.choice != COLUMN:
        return
    entry = resolutions.entries[row_key(row.name, row.merge["key"])]
    if row.kind != "update":
        raise ResolutionsError(
            f"resolutions: {entry}: a 'column' choice settles an update, and the range "
            f"{'inserted' if row.kind == 'insert' else 'deleted'} this row of {row.name}"
        )
    changed = {c["name"] for c in row.columns}
    for column in choice.columns:
        if column not in changed:
            raise ResolutionsError(
                f"resolutions: {entry}: column {column!r} of {row.name} is not one the range changed "
                f"({', '.join(sorted(changed))})"
            )


def empty_counts() -> dict[str, Any]:
    return {
        "restored": 0,
        "kept_later_changes": 0,
        "resolved": dict.fromkeys(CONFLICT_CHOICES, 0),
        "unresolved": 0,
    }


@dataclass
class _Decision:
    """What one row's locking read said, and the writes that follow from it."""

    writes: list[str]
    conflict: dict[str, Any] | None = None
    kept_later: bool = False


def _decide(row: Row, found: list[tuple[Any, ...]], host: Host, resolutions: Resolutions | None) -> _Decision:
    columns = row.columns
    if row.kind == "delete":
        if not found:
            return _Decision([row.restore])
        now = found[0]
        cols = [
            {
                "name": c["name"],
                "before": c["before"],
                "after": None,
                "now": now_value(v),
                "changed_since": True,
            }
            for c, v in zip(columns, now, strict=True)
        ]
        return _conflict(row, cols, True, host, resolutions)
    n = len(columns)  # a net update's and a net insert's columns each have their matches_after
    if len(found) == 1:
        matches, whole, values = found[0][:n], found[0][n], found[0][n + 1 :]
        # a net update: its columns as the range left them; a net insert: the whole row
        if all(matches) and (whole or row.kind == "update"):
            return _Decision([row.restore], kept_later=row.kind == "update" and not whole)
        cols = [
            {
                "name": c["name"],
                "before": c["before"],
                "after": c["after"],
                "now": now_value(v),
                "changed_since": not m,
            }
            for c, m, v in zip(columns, matches, values, strict=True)
        ]
        return _conflict(row, cols, True, host, resolutions)
    cols = [
        {"name": c["name"], "before": c["before"], "after": c["after"], "now": None, "changed_since": True}
        for c in columns
    ]
    return _conflict(row, cols, False, host, resolutions)


def _conflict(
    row: Row, cols: list[dict[str, Any]], present: bool, host: Host, resolutions: Resolutions | None
) -> _Decision:
    step = row.step
    record: dict[str, Any] = {
        "table": row.name,
        "kind": row.kind,
        "file": step.get("file"),
        "pos": step.get("pos"),
        "key": row.merge["key"],
        "columns": cols,
        "now_present": present,
        "resolution": None,
    }
    choice = resolutions.choice_for(row.name, row.merge["key"]) if resolutions is not None else None
    if choice is None and host.on_conflict == "skip":
        choice = Choice(KEEP_NOW)
    if choice is None:
        return _Decision([], record)
    record["resolution"] = choice.to_json()
    return _Decision(_resolved_writes(row, choice, cols, present), record)


def _resolved_writes(row: Row, choice: Choice, cols: list[dict[str, Any]], present: bool) -> list[str]:
    merge = row.merge
    if choice.choice == KEEP_NOW:
        return []
    if row.kind == "delete":
        # the key is taken: only take_before re-inserts, replacing whatever holds the key now
        return [str(merge["replace_sql"]).rstrip().rstrip(";")] if choice.choice == TAKE_BEFORE else []
    if not present:
        return []  # gone since: nothing left to restore or to delete
    if row.kind == "insert":
        # the row changed since the range inserted it: take_before deletes it all the same
        return [str(merge["delete_sql"]).rstrip().rstrip(";")] if choice.choice == TAKE_BEFORE else []
    if choice.choice == TAKE_BEFORE:
        taken = row.columns
    elif choice.choice == WHERE_UNCHANGED:
        unchanged = {c["name"] for c in cols if not c["changed_since"]}
        taken = [c for c in row.columns if c["name"] in unchanged]
    else:
        taken = [c for c in row.columns if choice.columns.get(c["name"]) == TAKE_BEFORE]
    if not taken:
        return []
    return [f"UPDATE {row.table} SET {_set(taken)} WHERE {merge['where']}"]


def _tally(decision: _Decision, host: Host) -> None:
    counts = host.result.merge
    if decision.conflict is None:
        counts["restored"] += 1
        counts["kept_later_changes"] += decision.kept_later
        return
    host.result.conflicts.append(decision.conflict)
    resolution = decision.conflict["resolution"]
    if resolution is None:
        counts["unresolved"] += 1
        return
    choice = resolution if isinstance(resolution, str) else COLUMN
    counts["resolved"][choice] += 1
    if host.on_conflict == "skip" and choice == KEEP_NOW:
        host.result.skipped += 1


def _write(host: Host, cur: Any, row: Row, decision: _Decision) -> None:
    if row.plan_table in host.read_only:
        return  # a dry run's non-transactional table: its reads only
    for sql in decision.writes:
        affected = host._execute(cur, sql, row.step)
        _applied(host, row, affected)
        if decision.conflict is None and affected != 1:
            raise host._wrong_count(row.step, affected)


def _one(host: Host, cur: Any, row: Row, resolutions: Resolutions | None) -> None:
    host._execute(cur, row.read, row.step)
    decision = _decide(row, list(cur.fetchall()), host, resolutions)
    if decision.conflict is None and row.kind == "delete" and row.plan_table not in host.read_only:
        if _inserted(host, cur, row):
            _tally(decision, host)
            return
        # a unique key the plan's free_where does not name (a nullable one) holds the row's value now
        cols = [
            {"name": c["name"], "before": c["before"], "after": None, "now": None, "changed_since": True}
            for c in row.columns
        ]
        decision = _conflict(row, cols, True, host, resolutions)
    _tally(decision, host)
    _write(host, cur, row, decision)


def _inserted(host: Host, cur: Any, row: Row) -> bool:
    """The re-insert of a net delete whose keys the read found free; False when a key is taken after all
    (the statement alone is rolled back: the transaction goes on)."""
    import pymysql

    try:
        affected = int(cur.execute(row.restore))
    except pymysql.err.IntegrityError as exc:
        if exc.args and exc.args[0] == 1062:
            return False
        raise host._refused(exc, row.restore, row.step) from None
    except pymysql.err.MySQLError as exc:
        raise host._refused(exc, row.restore, row.step) from None
    _applied(host, row, affected)
    if affected != 1:
        raise host._wrong_count(row.step, affected)
    return True


def _applied(host: Host, row: Row, affected: int) -> None:
    host.result.statements += 1
    host.result.rows_affected += affected
    if row.plan_table in host.non_transactional:  # stays applied whatever happens next
        kept = host.result.non_transactional_applied
        named = str(row.step.get("table"))
        kept[named] = kept.get(named, 0) + 1


def _drain(cur: Any) -> None:
    import pymysql

    try:
        while cur.nextset():
            pass
    except pymysql.err.MySQLError:
        pass


@dataclass
class _Group:
    """Consecutive rows of a batch of one table and one kind, read by one locking count: every net update's
    changed columns as the range left them, every net insert's row, every net delete's keys free. A count
    other than expected sends the batch one row at a time, where each row's own read finds which."""

    rows: list[Row]
    read: str = ""
    count: int = 0


GROUP_ROWS = 100  # rows of one combined read: a net update's count evaluates every row's condition


def _runs(rows: list[Row], size: int, updates: int | None = None) -> list[list[Row]]:
    """Consecutive rows of one table and one kind, at most `size` a run (`updates`: of net updates)."""
    out: list[list[Row]] = []
    for row in rows:
        last = out[-1] if out else None
        most = updates if updates and row.kind == "update" else size
        if last is None or len(last) >= most or (last[0].kind, last[0].table) != (row.kind, row.table):
            last = []
            out.append(last)
        last.append(row)
    return out


def _groups(rows: list[Row]) -> list[_Group]:
    out = [_Group(run) for run in _runs(rows, GROUP_ROWS)]
    for group in out:
        first = group.rows[0]
        where = ") OR (".join(row.found for row in group.rows)
        counted = "COUNT(*)"
        if first.kind == "update":
            # how many of them hold every other column as the range left it too (the rest: kept_later_changes)
            whole = ") OR (".join(str(row.merge["row_matches"]) for row in group.rows)
            counted = f"COUNT(*), SUM(({whole}))"
        group.read = f"SELECT {counted} FROM {first.table} WHERE ({where}){LOCKING}"
        group.count = 0 if first.kind == "delete" else len(group.rows)
    return out


def _writes(
    rows: list[Row], whole: bool = False, keyed: dict[str, str] | None = None
) -> list[tuple[str, int]]:
    """The writes of a run of one table and kind when nothing conflicts, each with the rows it must affect: a
    run of re-inserts of one column list as one INSERT, a run of deletes as one DELETE, a run of updates of
    the same columns as one UPDATE. whole: a net update's write finds its row only as the range left it,
    every column (`row_matches`), not only its changed columns; keyed: the tables' primary keys, by which
    a run's DELETE goes (a range read, where an OR of many rows may scan a small table)."""
    first = rows[0]
    if first.kind == "delete" and len(rows) > 1:
        heads = [_insert_head(row.restore) for row in rows]
        if heads[0] and all(head == heads[0] for head in heads):
            values = ", ".join(row.restore[len(heads[0]) :] for row in rows)
            return [(f"{heads[0]}{values}", len(rows))]
    if first.kind == "insert" and len(rows) > 1:
        found = ") OR (".join(row.found for row in rows)
        order = (keyed or {}).get(first.plan_table)
        limit = f" ORDER BY {order} LIMIT {len(rows)}" if order else ""
        return [(f"DELETE FROM {first.table} WHERE ({found}){limit}", len(rows))]
    if first.kind == "update" and whole:
        if len(rows) > 1 and _one_update(rows):
            found = ") OR (".join(str(row.merge["row_matches"]) for row in rows)
            return [(f"UPDATE {first.table} SET {_cases(rows)} WHERE ({found})", len(rows))]
        return [
            (f"UPDATE {row.table} SET {_set(row.columns)} WHERE {row.merge['row_matches']}", 1)
            for row in rows
        ]
    if first.kind == "update" and len(rows) > 1 and _one_update(rows):
        found = ") OR (".join(row.found for row in rows)
        return [(f"UPDATE {first.table} SET {_cases(rows)} WHERE ({found})", len(rows))]
    return [(row.restore, 1) for row in rows]


def _cases(rows: list[Row]) -> str:
    """One CASE per changed column: each row's before value, the row found by its key."""
    names = [c["name"] for c in rows[0].merge["columns"]]
    return ", ".join(
        quote_ident(name)
        + " = CASE"
        + "".join(
            f" WHEN ({row.merge['where']}) THEN {row.merge['columns'][i]['before_sql']}" for row in rows
        )
        + " END"
        for i, name in enumerate(names)
    )


# A value one CASE over many rows assigns exactly as the row's own UPDATE would: a number, a string without
# introducer, NULL (a typed literal could take the CASE's common type instead of the column's)
_PLAIN_VALUE = re.compile(r"NULL|-?[0-9]+(\.[0-9]+)?|'([^'\\]|''|\\.)*'")


def _one_update(rows: list[Row]) -> bool:
    """Whether the updates can be one UPDATE: the same columns, plain values, and no column its WHENs
    find rows by (the server sets columns left to right: a later CASE would see the row changed)."""
    names = [c["name"] for c in rows[0].columns]
    quoted = [quote_ident(name) for name in names]
    for row in rows:
        columns = row.merge["columns"]
        if [c["name"] for c in columns] != names:
            return False
        if any(c["before_sql"] is None or not _PLAIN_VALUE.fullmatch(c["before_sql"]) for c in columns):
            return False
        where = str(row.merge["where"])
        if any(name in where for name in quoted):
            return False
    return True


def _insert_head(sql: str) -> str:
    """`INSERT INTO t (cols) VALUES ` of a one-row INSERT, or "" (then it goes alone)."""
    at = sql.find(") VALUES (")
    if at < 0 or not sql.endswith(")") or sql.count(") VALUES (") != 1:
        return ""
    return sql[: at + len(") VALUES ")]


@dataclass
class Writes:
    """A batch's writes as one query after a savepoint (_optimistic), and the rows each must affect."""

    sql: str
    expected: list[int]


def writes_of(rows: list[Row], keyed: dict[str, str]) -> Writes:
    """The batch's writes as the strict apply sends its own: a net update's UPDATE finds its row only exactly
    as the range left it (so none of them kept a later change), a net insert's DELETE likewise, a net
    delete's INSERT fails on any key taken since."""
    runs = _runs(rows, len(rows), CASE_ROWS)
    writes = [write for run in runs for write in _writes(run, True, keyed)]
    sql = f"SAVEPOINT {SAVEPOINT};\n" + ";\n".join(sql for sql, _ in writes) + ";"
    return Writes(sql, [0, *(expect for _, expect in writes)])


def _batch(
    host: Host, cur: Any, rows: list[Row], resolutions: Resolutions | None, built: Writes | None
) -> None:
    """The writes alone, each checking its row in its own statement; where one comes up short, back to the
    savepoint, then the locking reads and the writes again (_checked). A dry run that leaves a table's
    statements out decides by the reads."""
    if not host.read_only and _optimistic(host, cur, rows, built or writes_of(rows, host.keyed)):
        host.result.merge["restored"] += len(rows)  # as _tally counts a row without a conflict
        host.result.statements += len(rows)
        host.result.rows_affected += len(rows)
        return
    _checked(host, cur, rows, resolutions)


def _optimistic(host: Host, cur: Any, rows: list[Row], writes: Writes) -> bool:
    """A savepoint and the batch's writes (writes_of): True when each affected all its rows; else the batch
    is back at its savepoint."""
    if sent(host, cur, writes.sql, writes.expected, rows[0].step, rows[0].restore):
        return True
    host._execute(cur, f"ROLLBACK TO SAVEPOINT {SAVEPOINT}", rows[0].step)
    return False


def sent(host: Host, cur: Any, sql: str, expected: list[int], step: dict[str, Any], named: str) -> bool:
    """Whether each statement of the query affected the rows it must (`expected`, in order). A lock wait
    timeout or a deadlock stops the execution as one step's would (its refusal naming `named` and `step`)."""
    import pymysql

    exact = True
    try:
        cur.execute(sql)
        for n, expect in enumerate(expected):
            if n and not cur.nextset():
                exact = False
                break
            if cur.rowcount != expect:
                exact = False
                break
        _drain(cur)
    except pymysql.err.MySQLError as exc:
        _drain(cur)
        if exc.args and exc.args[0] in (1205, 1213):
            raise host._refused(exc, named, step) from None
        exact = False
    return exact


def _checked(host: Host, cur: Any, rows: list[Row], resolutions: Resolutions | None) -> None:
    """Locking reads in one query, then (no conflict) the writes in another; else one step at a time."""
    import pymysql

    first = rows[0].step
    groups = _groups(rows)
    found: list[list[tuple[Any, ...]]] = []
    try:
        cur.execute(f"SAVEPOINT {SAVEPOINT};\n" + ";\n".join(group.read for group in groups) + ";")
        for _ in groups:
            cur.nextset()
            found.append(list(cur.fetchall()))
        _drain(cur)
    except pymysql.err.MySQLError as exc:
        _drain(cur)
        failed = groups[min(len(found), len(groups) - 1)]  # the read the server stopped at
        raise host._refused(exc, failed.read, failed.rows[0].step) from None
    decisions: list[_Decision] = []
    clean = not host.read_only
    for group, got in zip(groups, found, strict=True):
        clean = clean and got[0][0] == group.count
        # the count of rows whose other columns changed since is what the result says: the first ones take it
        kept = group.count - int(got[0][1] or 0) if group.rows[0].kind == "update" and clean else 0
        decisions.extend(_Decision([row.restore], kept_later=n < kept) for n, row in enumerate(group.rows))
    if not clean:
        for row in rows:
            _one(host, cur, row, resolutions)
        return
    writes = [write for group in groups for write in _writes(group.rows, keyed=host.keyed)]
    query = ";\n".join(sql for sql, _ in writes) + ";"
    if not sent(host, cur, query, [n for _, n in writes], rows[0].step, rows[0].restore):
        host._execute(cur, f"ROLLBACK TO SAVEPOINT {SAVEPOINT}", first)
        for row in rows:
            _one(host, cur, row, resolutions)
        return
    for decision in decisions:
        _tally(decision, host)
    host.result.statements += len(rows)
    host.result.rows_affected += len(rows)


def run(
    host: Host, cur: Any, units: Iterable[tuple[list[Row], Writes | None]], resolutions: Resolutions | None
) -> None:
    """Rows in plan order, in the batches of `units` (a row alone: one step at a time); the caller counts
    them in the progress and sets result.merge (empty_counts) first."""
    for unit, built in units:
        if len(unit) == 1:
            _one(host, cur, unit[0], resolutions)
        else:
            _batch(host, cur, unit, resolutions, built)


def units(
    rows: Iterable[Row],
    batch_steps: int,
    batch_bytes: int,
    alone: Callable[[Row], bool],
    keyed: dict[str, str] | None,
) -> Iterator[tuple[list[Row], Writes | None]]:
    """The rows in the batches they run in (a row alone: one step at a time), within batch_bytes a query,
    each batch with its writes (writes_of) when `keyed` is given (else the batch builds them if it needs them)."""
    batch: list[Row] = []
    size = 0

    def unit(rows: list[Row]) -> tuple[list[Row], Writes | None]:
        return rows, writes_of(rows, keyed) if keyed is not None and len(rows) > 1 else None

    for row in rows:
        merge = row.merge
        # its share of a batch's largest query: the combined read, or a write (one CASE per changed column)
        bytes_ = (
            len(row.found)
            + len(merge["row_matches"] or "")
            + 2 * len(row.restore)
            + len(merge["columns"]) * (len(merge["where"]) + 24)
        )
        if not batch_bytes or alone(row) or bytes_ > batch_bytes:
            if batch:
                yield unit(batch)
            yield unit([row])
            batch, size = [], 0
            continue
        if len(batch) >= batch_steps or size + bytes_ > batch_bytes:
            yield unit(batch)
            batch, size = [], 0
        batch.append(row)
        size += bytes_
    if batch:
        yield unit(batch)


def transaction(step: dict[str, Any]) -> dict[str, Any]:
    return {k: step.get(k) for k in ("tx", "gtid", "file", "pos")}


def conflict_line(conflict: dict[str, Any]) -> str:
    """One conflict in words: where, which row, and each column's three versions."""
    if conflict["kind"] == "delete":
        what = "its key is taken by another row now"
    elif not conflict["now_present"]:
        what = "the row is gone"
    else:
        what = "; ".join(
            f"{c['name']} before {c['before']!r}, after {c['after']!r}, now {c['now']!r}"
            for c in conflict["columns"]
            if c["changed_since"]
        )
    return f"{conflict['file']}:{conflict['pos']} ({conflict['table']} {conflict['key']}, net {conflict['kind']}): {what}"
