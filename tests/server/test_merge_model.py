"""Merge execution against a reference model (issue 28): random incidents, random later writes, random
resolutions, on the scratch server.

Each example draws a table's rows before the incident, after it, and now (the after rows written over
since), writes the net plan of before -> after (tests/support/merge_plans.py), loads `now` into the table
and executes the plan with merge=True. The model below says from the three versions and the resolution
what each row must be; the table must hold exactly that (or, for an unresolved conflict, the execution
must stop with nothing applied). The strict execution of the same plan must still stop on a conflict
exactly where a row is not as the incident left it, and restore the pre-incident rows where none is.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollback import ExecutionConflict, execute_plan, parse_resolutions
from tests.support.merge_plans import write_net_plan

pytestmark = pytest.mark.both_ways_off("rows change after the incident on purpose: the merge keeps them")

COLUMNS = ("a", "b", "c")
CHOICES = ("keep_now", "take_before", "take_before_where_unchanged")
IDS = range(1, 6)
Rows = dict[int, dict[str, Any]]

values = st.one_of(st.none(), st.integers(0, 2))
row_values = st.fixed_dictionaries({c: values for c in COLUMNS})
tables = st.dictionaries(st.sampled_from(list(IDS)), row_values, max_size=len(IDS))


def _rows(drawn: dict[int, dict[str, Any]]) -> Rows:
    return {i: {"id": i, **r} for i, r in drawn.items()}


@st.composite
def changed(draw: Any, base: Rows) -> Rows:
    """`base` with some rows deleted, some columns changed and some rows inserted."""
    out: Rows = {}
    for i in IDS:
        row = base.get(i)
        what = draw(st.sampled_from(["keep", "change", "change", "change", "delete", "insert"]))
        if row is None:
            if what == "insert":
                out[i] = {"id": i, **draw(row_values)}
            continue
        if what == "delete":
            continue
        if what == "change":
            row = {k: draw(values) if k in COLUMNS and draw(st.booleans()) else v for k, v in row.items()}
        out[i] = dict(row)
    return out


def model(
    before: Rows, after: Rows, now: Rows, choices: dict[int, Any], default: str | None
) -> tuple[Rows | None, bool]:
    """What the merge leaves (None: it stops, nothing applied), and whether the strict apply conflicts.
    `choices`: a row's own choice (a `column` choice as {column: choice}), else `default`."""
    out = {i: dict(r) for i, r in now.items()}
    unresolved = strict_conflict = False
    for i in set(before) | set(after):
        b, a, n = before.get(i), after.get(i), now.get(i)
        if b == a:
            continue
        strict_conflict |= n != a
        choice = choices.get(i, default)
        if b is not None and a is not None:  # net update: compare the changed columns only
            changed = [c for c in COLUMNS if b[c] != a[c]]
            if n is not None and all(n[c] == a[c] for c in changed):
                out[i] = {**n, **{c: b[c] for c in changed}}
                continue
            if choice is None:
                unresolved = True
            elif n is not None and choice == "take_before":
                out[i] = {**n, **{c: b[c] for c in changed}}
            elif n is not None and choice == "take_before_where_unchanged":
                out[i] = {**n, **{c: b[c] for c in changed if n[c] == a[c]}}
            elif n is not None and isinstance(choice, dict):
                out[i] = {**n, **{c: b[c] for c in changed if choice.get(c) == "take_before"}}
        elif a is not None:  # net insert: the row must be as the incident left it
            if n == a:
                del out[i]
            elif choice is None:
                unresolved = True
            elif n is not None and choice == "take_before":
                del out[i]
        else:  # net delete: its key must be free
            assert b is not None
            if n is None:
                out[i] = dict(b)
            elif choice is None:
                unresolved = True
            elif choice == "take_before":
                out[i] = dict(b)
    return (None if unresolved else out), strict_conflict


@pytest.fixture(scope="module")
def model_table(scratch_server):
    db = f"mm_{uuid.uuid4().hex[:8]}"
    scratch_server.query(f"CREATE DATABASE {db}")
    scratch_server.query(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT, b INT, c INT) ENGINE=InnoDB")
    yield f"{db}.t"
    scratch_server.query(f"DROP DATABASE {db}")


def _load(server: Any, table: str, rows: Rows) -> None:
    conn = server.connect()
    with conn.cursor() as cur:
        cur.execute(f"DELETE FROM {table}")
        if rows:
            cur.executemany(
                f"INSERT INTO {table} (id, a, b, c) VALUES (%s, %s, %s, %s)",
                [(r["id"], r["a"], r["b"], r["c"]) for r in rows.values()],
            )
    conn.close()


def _read(conn: Any, table: str) -> Rows:
    with conn.cursor() as cur:
        cur.execute(f"SELECT id, a, b, c FROM {table}")
        return {r[0]: dict(zip(("id", *COLUMNS), r, strict=True)) for r in cur.fetchall()}


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_the_merge_leaves_what_the_model_says(scratch_server, model_table, tmp_path, data):
    table = model_table
    before = _rows(data.draw(tables, label="before"))
    after = data.draw(changed(before), label="after")
    now = data.draw(changed(after), label="now")
    default = data.draw(st.sampled_from([None, *CHOICES]), label="default")
    choices: dict[int, Any] = {}
    entries = []
    for i in sorted(set(before) | set(after)):
        b, a = before.get(i), after.get(i)
        changed_columns = [c for c in COLUMNS if b and a and b[c] != a[c]]
        picked = data.draw(st.sampled_from(["default", *CHOICES, *(["column"] if changed_columns else [])]))
        if picked == "default":
            continue
        entry: dict[str, Any] = {"table": table, "key": {"id": i}, "choice": picked}
        if picked == "column":
            entry["columns"] = {
                c: data.draw(st.sampled_from(["keep_now", "take_before"])) for c in changed_columns
            }
        choices[i] = entry.get("columns", picked)
        entries.append(entry)
    plan = write_net_plan(tmp_path / f"{uuid.uuid4().hex}.plan.jsonl", table, before, after)
    want, strict_conflict = model(before, after, now, choices, default)

    _load(scratch_server, table, now)
    seen: list[Rows] = []
    if strict_conflict:
        with pytest.raises(ExecutionConflict):
            execute_plan(plan, scratch_server.dsn)
    else:
        execute_plan(plan, scratch_server.dsn, inspect=lambda conn: seen.append(_read(conn, table)))
        touched = {i for i in set(before) | set(after) if before.get(i) != after.get(i)}
        restored = {i: r for i, r in now.items() if i not in touched} | {
            i: before[i] for i in touched if i in before
        }
        assert seen == [restored]

    # the merge without resolutions, as a dry run: the streamed pass, which reads the plan as it runs
    bare, _ = model(before, after, now, {}, None)
    if bare is None:
        with pytest.raises(ExecutionConflict, match="without a resolution"):
            execute_plan(plan, scratch_server.dsn, merge=True)
    else:
        merged: list[Rows] = []
        execute_plan(
            plan, scratch_server.dsn, merge=True, inspect=lambda conn: merged.append(_read(conn, table))
        )
        assert merged == [bare]

    resolutions = parse_resolutions({"default": default, "rows": entries})
    conn = scratch_server.connect()
    if want is None:
        with pytest.raises(ExecutionConflict, match="without a resolution"):
            execute_plan(plan, scratch_server.dsn, commit=True, merge=True, resolutions=resolutions)
        assert _read(conn, table) == now
    else:
        result = execute_plan(plan, scratch_server.dsn, commit=True, merge=True, resolutions=resolutions)
        assert _read(conn, table) == want
        assert len(result.conflicts) == sum(result.merge["resolved"].values())
        assert result.merge["restored"] + len(result.conflicts) == sum(
            1 for i in set(before) | set(after) if before.get(i) != after.get(i)
        )
    conn.close()
