"""Net plans for the merge execution's tests (issue 28), built from two snapshots of one table.

A table's rows before and after an incident (read with `rows_of`) become one plan line per row whose net
change is not nothing, carrying today's keys (`sql`, `check`, `expect`, ...) and the `"merge"` object a
`--net` plan line carries (rollback/render/net.py writes it; rollback/target/merge_columns.py reads it), for tables of INT
and VARCHAR columns with an INT primary key and unique keys. `rollback flashback --net` writes such plans from a binlog; these stand in
where a test needs only the row images.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from tests.support.mariadb import ScratchServer

Row = dict[str, Any]


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "''") + "'"


def exact(column: str, value: Any) -> str:
    """Binary, NULL-safe: 'a' never matches 'A'."""
    if isinstance(value, str):
        return f"CAST({quote(column)} AS BINARY)<=>CAST({literal(value)} AS BINARY)"
    return f"{quote(column)}<=>{literal(value)}"


def rows_of(server: ScratchServer, table: str, key: str = "id") -> dict[Any, Row]:
    """Every row of `db.t` by its primary key column `key`."""
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {table}")
            names = [d[0] for d in cur.description]
            return {row[names.index(key)]: dict(zip(names, row, strict=True)) for row in cur.fetchall()}
    finally:
        conn.close()


def _key_where(key: str, image: Row) -> str:
    return f"{quote(key)}={literal(image[key])}"


def _row_matches(image: Row) -> str:
    return " AND ".join(exact(name, value) for name, value in image.items())


def _insert(table: str, image: Row, verb: str = "INSERT") -> str:
    names = ", ".join(quote(n) for n in image)
    return f"{verb} INTO {table} ({names}) VALUES ({', '.join(literal(v) for v in image.values())});"


def net_line(
    table: str, key: str, unique: Sequence[str], before: Row | None, after: Row | None, pos: int
) -> dict[str, Any] | None:
    """The plan line of one row's net change (None: no change). `table` quoted `db`.`t`."""
    if before == after:
        return None
    if before is not None and after is not None:
        kind = "update"
        changed = [n for n in after if after[n] != before[n]]
        columns = [
            {
                "name": n,
                "before": before[n],
                "after": after[n],
                "before_sql": literal(before[n]),
                "after_sql": literal(after[n]),
                "matches_after": exact(n, after[n]),
            }
            for n in changed
        ]
        where = _key_where(key, after)
        sets = ", ".join(f"{quote(n)}={literal(v)}" for n, v in before.items())
        sql, check, expect = f"UPDATE {table} SET {sets} WHERE {where};", _row_matches(after), 1
        merge_key = {key: after[key]}
    elif after is not None:
        kind = "insert"
        columns = [
            {
                "name": n,
                "before": None,
                "after": v,
                "before_sql": None,
                "after_sql": literal(v),
                "matches_after": exact(n, v),
            }
            for n, v in after.items()
        ]
        where = _key_where(key, after)
        sql, check, expect = f"DELETE FROM {table} WHERE {where} LIMIT 1;", _row_matches(after), 1
        merge_key = {key: after[key]}
    else:
        assert before is not None
        kind = "delete"
        columns = [
            {
                "name": n,
                "before": v,
                "after": None,
                "before_sql": literal(v),
                "after_sql": None,
                "matches_after": None,
            }
            for n, v in before.items()
        ]
        where = _key_where(key, before)
        sql, expect = _insert(table, before), 0
        merge_key = {key: before[key]}
    free = (
        " OR ".join(f"({_key_where(k, before)})" for k in (key, *unique))
        if before and kind == "delete"
        else None
    )
    if kind == "delete":
        check = free
    merge = {
        "kind": kind,
        "key": merge_key,
        "where": where,
        "columns": columns,
        "row_matches": None if kind == "delete" else _row_matches(after or {}),
        "free_where": free,
        "insert_sql": _insert(table, before) if kind == "delete" and before else None,
        "replace_sql": _insert(table, before, "REPLACE") if kind == "delete" and before else None,
        "delete_sql": f"DELETE FROM {table} WHERE {where} LIMIT 1;" if kind == "insert" else None,
    }
    reverse = {"update": "update", "insert": "delete", "delete": "insert"}[kind]
    return {
        "file": "mysql-bin.000001",
        "pos": pos,
        "table": table,
        "type": kind,
        "reverse": reverse,
        "check": f"SELECT COUNT(*) FROM {table} WHERE {check}",
        "expect": expect,
        "tx": 1,
        "gtid": None,
        "sql": sql,
        "merge": merge,
    }


def write_net_plan(
    path: Path,
    table: str,
    before: dict[Any, Row],
    after: dict[Any, Row],
    key: str = "id",
    unique: Sequence[str] = (),
) -> Path:
    """The net plan of one table's change from `before` to `after` (rows by key), deletes of the range's
    inserts first, then updates, then re-inserts: the order that frees keys before they are taken."""
    db, _, name = table.partition(".")
    quoted = f"{quote(db)}.{quote(name)}"
    lines = []
    order = {"insert": 0, "update": 1, "delete": 2}
    for n, k in enumerate(sorted(set(before) | set(after), key=repr)):
        line = net_line(quoted, key, unique, before.get(k), after.get(k), 1000 + n)
        if line is not None:
            lines.append(line)
    lines.sort(key=lambda line: order[line["merge"]["kind"]])
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path
