"""What running the reverse statements does beyond the rows they name, read from a server's information_schema.

Replaying row events (what a replica does) changes exactly the logged rows. Our reverse SQL is
executed as statements, so the server adds what statements bring with them:

- triggers fire again (an audit trigger writes its rows a second time, a counter moves): every trigger
  on an affected table whose event is the kind of a reverse statement on it (a reverse INSERT fires
  INSERT triggers, and so on);
- foreign keys with ON DELETE / ON UPDATE CASCADE, SET NULL or SET DEFAULT act on the child tables,
  and what they did originally is not in the binlog (the engine cascades, the server does not log it).
  For an affected *parent* table: a reverse INSERT re-creates parent rows whose original DELETE
  cascaded to their children, which stay deleted (or nulled); a reverse DELETE cascades to the
  children the parent has by then; a reverse UPDATE of a referenced key cascades again (and the
  original UPDATE's SET NULL is not undone). An affected *child* table's reverse statements cascade
  nothing (cascades run parent to child), so only the parent side is reported;
- tables of an engine without transactions (MyISAM, Aria even with TRANSACTIONAL=1, MEMORY, CSV,
  MRG_MyISAM...) keep every change at once: a rollback or a dry run cannot undo them.

`statement_kinds` turns a report's row counts into the statements a rollback runs; `detect` reads
the three from a server for those statements.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# reverse statement per original change (flashback), and per forward change (`sql` mode)
REVERSE = {"insert": "DELETE", "delete": "INSERT", "update": "UPDATE"}
FORWARD = {"insert": "INSERT", "delete": "DELETE", "update": "UPDATE"}
CASCADING_RULES = ("CASCADE", "SET NULL", "SET DEFAULT")
KINDS = ("INSERT", "UPDATE", "DELETE")
SIDE_EFFECTS = "triggers, cascading foreign keys and non-transactional tables"

StatementCounts = Mapping[tuple[str, str], int]  # (db.table, INSERT|UPDATE|DELETE) -> statements


@dataclass
class SideEffects:
    triggers: list[dict[str, Any]] = field(default_factory=list)
    cascades: list[dict[str, Any]] = field(default_factory=list)
    non_transactional: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.triggers or self.cascades or self.non_transactional)

    def to_dict(self) -> dict[str, Any]:
        return {
            "triggers": self.triggers,
            "cascades": self.cascades,
            "non_transactional": self.non_transactional,
        }

    @property
    def non_transactional_tables(self) -> list[str]:
        return [item["table"] for item in self.non_transactional]

    def warnings(self) -> list[str]:
        """One line per trigger, cascading foreign key and non-transactional table."""
        lines = [trigger_warning(t) for t in self.triggers]
        lines += [cascade_warning(c) for c in self.cascades]
        lines += [non_transactional_warning(n) for n in self.non_transactional]
        return lines


def trigger_warning(t: dict[str, Any]) -> str:
    return (
        f"trigger {t['trigger']} ({t['timing']} {t['event']} on {t['table']}) fires again for "
        f"{t['statements']} reverse {t['event']} statement(s): what it writes is not undone by the rollback "
        "(a replica replaying the binlog would not fire it)"
    )


def cascade_warning(c: dict[str, Any]) -> str:
    rule = f"ON {c['on']} {c['rule']}"
    if c["on"] == "DELETE" and c["reverse"] == "INSERT":
        effect = (
            f"the original DELETE of {c['parent_rows']} {c['parent']} row(s) cascaded to {c['child']}, "
            f"which the binlog does not hold: re-inserting the parents does not restore their {c['child']} rows"
        )
    elif c["on"] == "DELETE":
        effect = (
            f"undoing the INSERT of {c['parent_rows']} {c['parent']} row(s) deletes them, which cascades to "
            f"the {c['child']} rows referencing them at that time"
        )
    else:
        effect = (
            f"the {c['parent_rows']} {c['parent']} row(s) updated cascaded to {c['child']} if the referenced "
            "columns changed (not in the binlog), and the reverse UPDATE cascades again"
        )
    return f"foreign key {c['constraint']} ({c['child']} references {c['parent']}) {rule}: {effect}"


def non_transactional_warning(n: dict[str, Any]) -> str:
    return (
        f"{n['table']} is a {n['engine']} table (no transactions): its {n['statements']} reverse statement(s) "
        "cannot be rolled back, by a dry run or by a failed execution"
    )


def statement_kinds(counts: Mapping[tuple[str, str], int], mode: str = "flashback") -> Counter:
    """A report's (db.table, insert|update|delete) -> rows as the statements the script runs."""
    kinds = REVERSE if mode == "flashback" else FORWARD
    out: Counter = Counter()
    for (table, kind), rows in counts.items():
        if kind in kinds and rows:
            out[(table, kinds[kind])] += rows
    return out


def plan_statement_kinds(plan: Iterable[dict[str, Any]]) -> Counter:
    """The statements of an execution plan, by table and kind (read from the statement itself)."""
    kinds = ((step["table"], statement_kind(step["sql"])) for step in plan)
    return Counter(pair for pair in kinds if pair[1] in KINDS)


def statement_kind(sql: str) -> str:
    """A statement's first word, upper-cased (INSERT, UPDATE, DELETE: KINDS; or another)."""
    # a plan's statements start with their kind and a space: that prefix says it without a split
    return _HEADS.get(sql[:7]) or sql.lstrip().split(None, 1)[0].upper()


_HEADS = {f"{kind} ": kind for kind in KINDS}


def detect_with(connect: Callable[[], Any], statements: StatementCounts) -> SideEffects:
    """detect() on a connection of its own."""
    conn = connect()
    try:
        return detect(conn, statements)
    finally:
        conn.close()


def detect(conn: Any, statements: StatementCounts) -> SideEffects:
    """Triggers, cascading foreign keys and non-transactional engines that the statements meet, read
    from the server of an open DB-API connection."""
    found = SideEffects()
    tables = sorted({table for table, _ in statements})
    if not tables:
        return found
    splits = _splits(tables)
    names = {(schema.lower(), name.lower()): f"{schema}.{name}" for schema, name in splits}
    with conn.cursor() as cur:
        rows = _by_schema(cur, _TABLES_SQL, splits)
        triggers = _by_schema(cur, _TRIGGERS_SQL, splits)
        constraints = _by_schema(cur, _CONSTRAINTS_SQL, splits)
    per_table: dict[str, Counter] = {}
    for (table, kind), n in statements.items():
        per_table.setdefault(table, Counter())[kind] += n
    for schema, name, engine, transactional in rows:
        stored = names.get((schema.lower(), name.lower()))
        if stored is None or transactional == "YES":
            continue
        found.non_transactional.append(
            {"table": stored, "engine": engine or "unknown", "statements": sum(per_table[stored].values())}
        )
    for trigger_schema, trigger, schema, name, timing, event in triggers:
        fires_on = names.get((schema.lower(), name.lower()))
        fired = per_table[fires_on][event.upper()] if fires_on is not None else 0
        if fired:
            found.triggers.append(
                {
                    "trigger": f"{trigger_schema}.{trigger}",
                    "table": fires_on,
                    "timing": timing.upper(),
                    "event": event.upper(),
                    "statements": fired,
                }
            )
    for constraint_schema, constraint, child, schema, name, update_rule, delete_rule in constraints:
        parent = names.get((schema.lower(), name.lower()))
        if parent is None:
            continue
        kinds = per_table[parent]
        rules = [("DELETE", delete_rule.upper(), reverse) for reverse in ("INSERT", "DELETE")]
        rules.append(("UPDATE", update_rule.upper(), "UPDATE"))
        for on, rule, reverse in rules:
            if rule in CASCADING_RULES and kinds[reverse]:
                found.cascades.append(
                    {
                        "constraint": f"{constraint_schema}.{constraint}",
                        "child": f"{constraint_schema}.{child}",
                        "parent": parent,
                        "on": on,
                        "rule": rule,
                        "reverse": reverse,
                        "parent_rows": kinds[reverse],
                    }
                )
    found.triggers.sort(key=lambda t: (t["table"], t["event"], t["trigger"]))
    found.cascades.sort(key=lambda c: (c["parent"], c["constraint"], c["on"], c["reverse"]))
    found.non_transactional.sort(key=lambda n: n["table"])
    return found


_TABLES_SQL = (
    "SELECT t.TABLE_SCHEMA, t.TABLE_NAME, t.ENGINE, e.TRANSACTIONS FROM information_schema.TABLES t "
    "LEFT JOIN information_schema.ENGINES e ON e.ENGINE = t.ENGINE "
    "WHERE t.TABLE_TYPE = 'BASE TABLE' AND t.TABLE_SCHEMA = %s AND t.TABLE_NAME IN ({})"
)
_TRIGGERS_SQL = (
    "SELECT TRIGGER_SCHEMA, TRIGGER_NAME, EVENT_OBJECT_SCHEMA, EVENT_OBJECT_TABLE, ACTION_TIMING, "
    "EVENT_MANIPULATION FROM information_schema.TRIGGERS "
    "WHERE EVENT_OBJECT_SCHEMA = %s AND EVENT_OBJECT_TABLE IN ({})"
)
_CONSTRAINTS_SQL = (
    "SELECT CONSTRAINT_SCHEMA, CONSTRAINT_NAME, TABLE_NAME, UNIQUE_CONSTRAINT_SCHEMA, REFERENCED_TABLE_NAME, "
    "UPDATE_RULE, DELETE_RULE FROM information_schema.REFERENTIAL_CONSTRAINTS "
    "WHERE UNIQUE_CONSTRAINT_SCHEMA = %s AND REFERENCED_TABLE_NAME IN ({})"
)


def _splits(tables: list[str]) -> list[tuple[str, str]]:
    """(schema, table) for every way each db.table splits at a dot: names may hold dots, and only the
    split that names a real table matches anything."""
    return [(t[:i], t[i + 1 :]) for t in tables for i, char in enumerate(t) if char == "."]


def _by_schema(cur: Any, sql: str, splits: list[tuple[str, str]]) -> list[tuple]:
    """One query per schema (information_schema reads only the named schema's tables that way).
    Names go as the binlog spells them: information_schema compares case-sensitively on some servers."""
    schemas: dict[str, list[str]] = {}
    for schema, name in splits:
        schemas.setdefault(schema, []).append(name)
    rows: list[tuple] = []
    for schema, tables in sorted(schemas.items()):
        cur.execute(sql.format(", ".join(["%s"] * len(tables))), [schema, *tables])
        rows.extend(cur.fetchall())
    return rows
