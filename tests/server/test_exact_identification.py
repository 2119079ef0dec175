"""Row identification is byte-exact: a row that differs from the binlog's image only in case, accents,
trailing spaces (collations, PAD SPACE), ENUM index or JSON text is never taken for it, neither by the
reverse statements (applied with the plain `mariadb` client) nor by the conflict checks of execution."""

from __future__ import annotations

import pytest

from rollback import Filters, Options, generate
from rollback.base.errors import ConflictError
from rollback.schema.tables import ServerSchema
from rollback.target.execute import execute_plan
from tests.support.restore import apply_with_client, flashback, range_spec, snapshot

DB = "exact"
COLUMNS = (
    "v VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, "
    "c CHAR(8) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, "
    "t TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci, "
    "l VARCHAR(10) CHARACTER SET latin1 COLLATE latin1_swedish_ci, "
    "e ENUM('', 'a'), s SET('x', 'y'), j JSON, n INT"
)
BASE = {"v": "'abc'", "c": "'ab'", "t": "'text'", "l": "'e'", "e": "'a'", "s": "'x'", "j": "'{\"a\": 1}'"}

# (case, column, the incident row's value, a value equal to it under the column's comparison rules)
CASES = [
    ("varchar_case", "v", "'abc'", "'ABC'"),
    ("varchar_accent", "v", "'abc'", "'ábc'"),
    ("varchar_trailing_space", "v", "'abc'", "'abc '"),
    ("char_case", "c", "'ab'", "'AB'"),
    ("text_accent", "t", "'text'", "'tèxt'"),
    ("text_trailing_space", "t", "'text'", "'text  '"),
    ("latin1_accent", "l", "'e'", "_latin1 0xe9"),
    ("latin1_case", "l", "'e'", "'E'"),
    ("enum_empty_member_and_error_value", "e", "''", "0"),
    ("json_trailing_space", "j", "'{\"a\": 1}'", "'{\"a\": 1} '"),
]

NON_STRICT = (
    "SET SESSION sql_mode = ''"  # the ENUM error value (index 0) is storable only outside strict mode
)


def _row(column: str, value: str, n: int) -> str:
    values = dict(BASE, **{column: value})
    return ", ".join(values[k] for k in BASE) + f", {n}"


@pytest.fixture(scope="module")
def db(scratch_server):
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {DB}", f"CREATE DATABASE {DB}"])
    return DB


def _scripts_with_and_without_plan(server, rng, tmp_path, name):
    """The script with a plan (generic renderer, checks) and without (the generated full-image path)."""
    script, plan, _report = flashback(server, rng, tmp_path, name=name)
    fast = tmp_path / f"{name}.fast.sql"
    generate(range_spec(rng), Filters(), Options(engine="local", schema=ServerSchema(server.connect)), fast)
    assert fast.read_bytes() == script.read_bytes()
    return script, plan


@pytest.mark.parametrize(("case", "column", "value", "lookalike"), CASES, ids=[c[0] for c in CASES])
def test_keyless_rows_that_only_compare_equal_are_left_alone(
    scratch_server, db, tmp_path, case, column, value, lookalike
):
    table = f"{db}.{case}"
    # The lookalikes come first in the table's (hidden row id) order: a collation match finds them first.
    scratch_server.run_sql(
        [
            NON_STRICT,
            f"CREATE TABLE {table} ({COLUMNS})",
            f"INSERT INTO {table} VALUES ({_row(column, lookalike, 2)}), ({_row(column, lookalike, 3)})",
            f"INSERT INTO {table} VALUES ({_row(column, value, 1)}), ({_row(column, value, 4)})",
        ]
    )
    incident = [
        NON_STRICT,
        f"UPDATE {table} SET n = 2 WHERE n = 1",  # reversed by an UPDATE ... LIMIT 1
        f"INSERT INTO {table} VALUES ({_row(column, value, 3)})",  # reversed by a DELETE ... LIMIT 1
        f"DELETE FROM {table} WHERE n = 4",
    ]
    before = snapshot(scratch_server, [table])
    rng = scratch_server.run_sql(incident)
    assert snapshot(scratch_server, [table]) != before
    script, _plan = _scripts_with_and_without_plan(scratch_server, rng, tmp_path, case)
    apply_with_client(scratch_server, script)
    assert snapshot(scratch_server, [table]) == before

    # The same through verified execution: its checks and statements are as exact.
    rng = scratch_server.run_sql(incident)
    _script, plan = _scripts_with_and_without_plan(scratch_server, rng, tmp_path, case + "-again")
    result = execute_plan(plan, scratch_server.dsn, commit=True)
    assert result.committed and not result.conflicts
    assert snapshot(scratch_server, [table]) == before


@pytest.mark.parametrize(
    ("name", "ddl", "change_since"),
    [
        ("keyed_int", "id INT PRIMARY KEY, v VARCHAR(20), n INT", "v = 'ABC'"),
        ("keyed_text", "id VARCHAR(8) PRIMARY KEY, v VARCHAR(20), n INT", "id = 'C3'"),
        ("keyless", "id INT, v VARCHAR(20), n INT", "v = 'abc '"),
    ],
)
@pytest.mark.both_ways_off("rows changed since the incident: the conflict is the point")
def test_a_row_whose_case_or_padding_changed_since_is_a_conflict(
    scratch_server, db, tmp_path, name, ddl, change_since
):
    table = f"{db}.conflict_{name}"
    key = "'c3'" if name == "keyed_text" else "3"
    scratch_server.run_sql([f"CREATE TABLE {table} ({ddl})", f"INSERT INTO {table} VALUES ({key}, 'abc', 1)"])
    rng = scratch_server.run_sql([f"UPDATE {table} SET n = 2"])
    scratch_server.run_sql([f"UPDATE {table} SET {change_since}"])  # after the incident
    later = snapshot(scratch_server, [table])
    _script, plan = _scripts_with_and_without_plan(scratch_server, rng, tmp_path, name)
    with pytest.raises(ConflictError, match=rf"conflict at .*{table}.*the row changed since the incident"):
        execute_plan(plan, scratch_server.dsn, commit=True)
    assert snapshot(scratch_server, [table]) == later


def test_enum_and_set_members_that_differ_only_in_case_are_restored(scratch_server, db, tmp_path):
    table = f"{db}.members"
    scratch_server.run_sql(
        [
            f"CREATE TABLE {table} (id INT PRIMARY KEY, e ENUM('A', 'a') COLLATE utf8mb4_bin, "
            "s SET('X', 'x') COLLATE utf8mb4_bin)",
            f"INSERT INTO {table} VALUES (1, 'A', 'X'), (2, 'a', 'x,X')",
        ]
    )
    before = snapshot(scratch_server, [table])
    rng = scratch_server.run_sql(
        [f"UPDATE {table} SET e = 'a', s = 'x' WHERE id = 1", f"DELETE FROM {table}"]
    )
    script, _plan = _scripts_with_and_without_plan(scratch_server, rng, tmp_path, "members")
    apply_with_client(scratch_server, script)
    assert snapshot(scratch_server, [table]) == before
    assert scratch_server.query(f"SELECT e + 0, s + 0 FROM {table} ORDER BY id") == [(1, 1), (2, 3)]
