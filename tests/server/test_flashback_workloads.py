"""Restore proofs: after a workload, our rollback SQL (applied with the plain `mariadb` client) returns
every table to its exact state (CHECKSUM TABLE ... EXTENDED and rows) on the scratch MariaDB."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

import pytest

from rollback.base.errors import ConflictError, DDLInRange, IrreversibleChange, SchemaMismatch
from rollback.schema.tables import schema_from_file
from rollback.target.execute import execute_plan
from tests.support.restore import apply_with_client, digest, flashback, range_args, run_cli, snapshot, span
from tests.support.workloads import ALTER_STEP, SEED_STEPS, T1_ROWS, T2_ROWS


def _seed_tables(server) -> list[str]:
    have = {r[0] for r in server.query("SHOW TABLES FROM seed")}
    return [f"seed.{t}" for t in ("t1", "t2", "t3") if t in have]


def test_seed_benchmark_steps_roll_back_newest_step_first(scratch_server, seed_db, tmp_path):
    before: list[dict] = []
    ranges = []
    for step in SEED_STEPS:
        before.append(digest(scratch_server, _seed_tables(scratch_server)))
        # As in the seed, every step has a binlog file of its own (`flush logs` between steps).
        ranges.append(scratch_server.run_sql(step, database=seed_db, own_file=True))
    assert scratch_server.query("SELECT COUNT(*), MIN(flag), MAX(c1) FROM seed.t3") == [(T1_ROWS, "z", "c")]

    # A range spanning the ALTERs is refused, naming the DDL and its position.
    with pytest.raises(DDLInRange, match=r"seed\.t3 .* at mysql-bin\.\d+:\d+: alter table t3 add column c1"):
        flashback(scratch_server, span(scratch_server, ranges[3], ranges[6]), tmp_path, name="spanning")
    assert not (tmp_path / "spanning.sql").exists()

    statements = {0: T1_ROWS, 1: T2_ROWS, 2: T1_ROWS, 3: T1_ROWS, 5: 0, 6: T1_ROWS, 7: T1_ROWS}
    for index in range(len(SEED_STEPS) - 1, -1, -1):
        if index == ALTER_STEP:
            # DDL is not ours to undo: the DBA reverts it by hand, as the refusal above tells them to.
            scratch_server.run_sql(["ALTER TABLE seed.t3 DROP COLUMN c1, DROP COLUMN c2, DROP COLUMN c3"])
        else:
            empty = statements[index] == 0  # a step that logged no row change: allowed, not an error
            # t3's ALTERs (undone by hand above) follow the ranges of steps 2 and 3 in the binlog: that
            # the server's t3 is again the table those ranges wrote only the DBA knows, who says so.
            script, _plan, report = flashback(
                scratch_server,
                ranges[index],
                tmp_path,
                name=f"step{index}",
                allow_empty=empty,
                trust_schema=index in (2, 3),
            )
            assert report.statements == statements[index], SEED_STEPS[index]
            apply_with_client(scratch_server, script)
            # The 32k single-row statements of a reverse script fill the binlog; like the seed, rotate it.
            scratch_server.flush_binary_logs()
        after = digest(scratch_server, _seed_tables(scratch_server))
        if index <= 2:  # the CREATE TABLE of step 2 stays (DDL is not undone); its rows are gone
            assert after.pop("seed.t3")[1] == 0
        assert after == before[index], f"step {index}: {SEED_STEPS[index]}"


# ---- helpers ------------------------------------------------------------------------------------------


def assert_restores(server, tmp_path, tables, workload, database=None, name="rollback", tcp=False, **options):
    """Snapshot, run the workload, roll back exactly its range with `mariadb < script`, compare."""
    before = snapshot(server, tables)
    rng = server.run_sql(workload, database=database)
    changed = snapshot(server, tables)
    assert changed != before, "the workload changed nothing"
    script, _plan, report = flashback(server, rng, tmp_path, name=name, **options)
    apply_with_client(server, script, tcp)
    assert snapshot(server, tables) == before
    return script, report


# ---- row shapes: keys, no keys, duplicates, key changes ---------------------------------------------

SHAPES = {
    "keyed": "CREATE TABLE shapes.keyed (id INT PRIMARY KEY, v INT, note VARCHAR(20))",
    "composite": "CREATE TABLE shapes.composite (a INT, b VARCHAR(5), v INT, PRIMARY KEY (a, b))",
    "nokey": "CREATE TABLE shapes.nokey (a INT, b VARCHAR(10), f FLOAT, d DOUBLE, z BINARY(4))",
    "uniq": "CREATE TABLE shapes.uniq (code CHAR(8) NOT NULL, alt INT NULL, v INT, UNIQUE KEY (alt), "
    "UNIQUE KEY (code))",
}
SHAPE_TABLES = [f"shapes.{t}" for t in SHAPES]


@pytest.fixture()
def shapes(scratch_server):
    scratch_server.run_sql(["DROP DATABASE IF EXISTS shapes", "CREATE DATABASE shapes", *SHAPES.values()])
    scratch_server.run_sql(
        [
            "INSERT INTO shapes.keyed VALUES " + ", ".join(f"({i}, {i * 10}, 'n{i}')" for i in range(1, 21)),
            "INSERT INTO shapes.composite VALUES "
            + ", ".join(f"({i}, '{b}', {i})" for i in range(1, 6) for b in ("x", "y")),
            # duplicates: identical rows, and rows equal but for a FLOAT/DOUBLE that is not exact in binary
            "INSERT INTO shapes.nokey VALUES (1, 'dup', 0.1, 0.1, 'a'), (1, 'dup', 0.1, 0.1, 'a'), "
            "(1, 'dup', 0.1, 0.1, 'a'), (2, NULL, NULL, NULL, NULL), (2, NULL, NULL, NULL, NULL), "
            "(3, 'x', 3.4028234e38, -1e-300, 0x00270000), (3, 'x', 1.17549435e-38, 2.2250738585072014e-308, '')",
            "INSERT INTO shapes.uniq VALUES "
            + ", ".join(f"('k{i}', {i if i % 2 else 'NULL'}, {i})" for i in range(10)),
        ]
    )
    return "shapes"


def test_delete_without_where_is_restored(scratch_server, shapes, tmp_path):
    assert_restores(
        scratch_server,
        tmp_path,
        SHAPE_TABLES,
        [f"DELETE FROM {t}" for t in SHAPE_TABLES],
    )


def test_multi_row_updates_that_change_primary_keys_are_undone(scratch_server, shapes, tmp_path):
    script, _ = assert_restores(
        scratch_server,
        tmp_path,
        SHAPE_TABLES,
        [
            "UPDATE shapes.keyed SET id = id + 1 ORDER BY id DESC",
            "UPDATE shapes.keyed SET id = id * 2, v = v + 1 WHERE id > 5 ORDER BY id DESC",
            "UPDATE shapes.composite SET a = a + 1 ORDER BY a DESC, b DESC",
            "UPDATE shapes.composite SET b = CONCAT(b, b) WHERE a > 2",
            "UPDATE shapes.uniq SET code = CONCAT(code, 'z'), v = v * 2",
            "UPDATE shapes.keyed SET id = 1000 + id",
        ],
    )
    # Rows are identified by their key only: the primary key, and for `uniq` its NOT NULL unique key.
    text = script.read_text()
    assert "UPDATE `shapes`.`keyed` SET `id`=21, `v`=200 WHERE `id`=42;" in text
    assert "UPDATE `shapes`.`uniq` SET `code`='k9', `v`=9 WHERE `code`='k9z';" in text


def test_rows_updated_several_times_in_one_transaction_and_across_transactions(
    scratch_server, shapes, tmp_path
):
    assert_restores(
        scratch_server,
        tmp_path,
        SHAPE_TABLES,
        [
            "BEGIN",
            "UPDATE shapes.keyed SET v = v + 1 WHERE id = 5",
            "UPDATE shapes.keyed SET v = v + 1, note = 'twice' WHERE id = 5",
            "UPDATE shapes.keyed SET id = 50 WHERE id = 5",
            "UPDATE shapes.keyed SET note = NULL WHERE id = 50",
            "DELETE FROM shapes.keyed WHERE id = 50",
            "INSERT INTO shapes.keyed VALUES (5, -1, 'reborn')",
            "INSERT INTO shapes.keyed VALUES (50, -2, 'new')",
            "UPDATE shapes.nokey SET a = a + 10 WHERE a = 1 LIMIT 1",
            "UPDATE shapes.nokey SET a = a + 10 WHERE a = 11",
            "COMMIT",
            "UPDATE shapes.keyed SET v = 0 WHERE id = 5",
            "UPDATE shapes.keyed SET v = 1 WHERE id = 5",
            "UPDATE shapes.keyed SET v = v * 3",
            "DELETE FROM shapes.keyed WHERE id = 5",
            "UPDATE shapes.uniq SET v = v + 1 WHERE code = 'k1'",
            "UPDATE shapes.uniq SET v = v + 1 WHERE code = 'k1'",
            "BEGIN",
            "UPDATE shapes.composite SET v = v + 1",
            "UPDATE shapes.composite SET v = v + 1",
            "ROLLBACK",  # never logged: nothing to undo
        ],
    )


def test_table_without_key_and_with_duplicate_rows(scratch_server, shapes, tmp_path):
    script, _ = assert_restores(
        scratch_server,
        tmp_path,
        SHAPE_TABLES,
        [
            "UPDATE shapes.nokey SET b = 'one' WHERE a = 1 LIMIT 1",
            "UPDATE shapes.nokey SET f = f * 2, d = d * 2 WHERE a = 1",
            "UPDATE shapes.nokey SET b = 'n' WHERE a = 2",
            "DELETE FROM shapes.nokey WHERE a = 2 LIMIT 1",
            "UPDATE shapes.nokey SET a = 30 WHERE a = 3",
            "INSERT INTO shapes.nokey VALUES (1, 'dup', 0.2, 0.2, 'a'), (1, 'dup', 0.2, 0.2, 'a')",
            "DELETE FROM shapes.nokey WHERE a = 30",
        ],
    )
    # Every statement on the keyless table names all its columns NULL-safely and touches one row.
    lines = [ln for ln in script.read_text().splitlines() if "`nokey`" in ln]
    assert lines and all("LIMIT 1;" in ln or ln.startswith("INSERT") for ln in lines)
    assert any("`f`<=>NULL" in ln for ln in lines)


def test_not_null_unique_key_identifies_rows(scratch_server, shapes, tmp_path):
    script, _ = assert_restores(
        scratch_server,
        tmp_path,
        ["shapes.uniq"],
        [
            "UPDATE shapes.uniq SET v = NULL",
            "UPDATE shapes.uniq SET alt = 100 + v WHERE alt IS NULL",
            "DELETE FROM shapes.uniq WHERE code IN ('k3', 'k4')",
            "INSERT INTO shapes.uniq VALUES ('k3', 3, 33)",
            "UPDATE shapes.uniq SET code = 'k4' WHERE code = 'k3'",
        ],
    )
    lines = [ln for ln in script.read_text().splitlines() if "`uniq`" in ln]
    assert all("LIMIT 1" not in ln for ln in lines)
    assert lines[:2] == [
        "UPDATE `shapes`.`uniq` SET `code`='k3' WHERE `code`='k4';",
        "DELETE FROM `shapes`.`uniq` WHERE `code`='k3';",
    ]


# ---- every column type ---------------------------------------------------------------------------------

# (name, type, an extreme value, an ordinary one); NULLs come in a row of their own.
COLUMN_TYPES = [
    ("ti", "TINYINT", "-128", "1"),
    ("tiu", "TINYINT UNSIGNED", "255", "2"),
    ("si", "SMALLINT", "-32768", "3"),
    ("siu", "SMALLINT UNSIGNED", "65535", "4"),
    ("mi", "MEDIUMINT", "-8388608", "5"),
    ("miu", "MEDIUMINT UNSIGNED", "16777215", "6"),
    ("i", "INT", "-2147483648", "7"),
    ("iu", "INT UNSIGNED", "4294967295", "8"),
    ("bi", "BIGINT", "-9223372036854775808", "9"),
    ("biu", "BIGINT UNSIGNED", "18446744073709551615", "10"),
    ("d65", "DECIMAL(65,30)", "-" + "9" * 35 + "." + "9" * 30, "0.000000000000000000000000000001"),
    ("d10", "DECIMAL(10,0)", "-9999999999", "0"),
    ("d52", "DECIMAL(5,2) UNSIGNED", "999.99", "0.01"),
    ("f", "FLOAT", "-3.4028234e38", "0.1"),
    ("dbl", "DOUBLE", "-1.7976931348623157e308", "0.1"),
    ("b1", "BIT(1)", "b'1'", "b'0'"),
    ("b10", "BIT(10)", "b'1111111111'", "b'0000000001'"),
    ("b64", "BIT(64)", "0xffffffffffffffff", "b'0'"),
    ("y", "YEAR", "2155", "0"),
    ("dt", "DATE", "'9999-12-31'", "'0000-00-00'"),
    ("t0", "TIME", "'-838:59:59'", "'00:00:00'"),
    ("t3", "TIME(3)", "'838:59:58.999'", "'-00:00:01.500'"),
    ("t6", "TIME(6)", "'-00:00:00.000001'", "'12:34:56.789012'"),
    ("dtm", "DATETIME", "'9999-12-31 23:59:59'", "'0000-00-00 00:00:00'"),
    ("dtm6", "DATETIME(6)", "'1000-01-01 00:00:00.000001'", "'2024-02-29 23:59:59.999999'"),
    # written under time_zone '+05:30': stored (and logged) as UTC 2038-01-18 21:44:07 and 1970-01-01 00:00:01.001
    ("ts", "TIMESTAMP NULL", "'2038-01-19 03:14:07'", "'2024-03-31 01:30:00'"),
    ("ts3", "TIMESTAMP(3) NULL", "'1970-01-01 05:30:01.001'", "'2024-10-27 00:30:00.5'"),
    ("ch", "CHAR(10)", "'ten chars!'", "''"),
    ("vc", "VARCHAR(300)", "REPEAT('é😀', 75)", "'trailing  '"),
    ("l1", "VARCHAR(20) CHARACTER SET latin1", "_latin1 0x636166e920809f81", "'plain'"),
    ("l1c", "CHAR(6) CHARACTER SET latin1", "'a''b\\\\'", "''"),
    ("asc_", "VARCHAR(10) CHARACTER SET ascii", "'tab\\there'", "''"),
    ("cyr", "VARCHAR(10) CHARACTER SET cp1251", "'Привет'", "''"),
    ("u16", "VARCHAR(10) CHARACTER SET utf16", "'😀 utf16'", "''"),
    ("bin", "BINARY(6)", "0x0027005c0000", "''"),
    ("vb", "VARBINARY(40)", "0x00275c0a0d1a00ff", "''"),
    ("tt", "TINYTEXT", "'tiny 😀'", "''"),
    ("tx", "TEXT", "REPEAT('text ', 100)", "''"),
    ("mt", "MEDIUMTEXT", "REPEAT('m', 70000)", "''"),
    ("lt", "LONGTEXT", "'long\\ntext\\0with NUL'", "''"),
    ("tb", "TINYBLOB", "0x00", "''"),
    ("bl", "BLOB", "0x27", "''"),
    ("mb", "MEDIUMBLOB", "REPEAT(0x00ff27, 30000)", "''"),
    ("lb", "LONGBLOB", "0x5c275c00", "''"),
    ("e", "ENUM('a','b','c d','it''s')", "'it''s'", "'a'"),
    ("st", "SET('x','y','z?','w')", "'x,z?,w'", "''"),
    ("j", "JSON", """'{"a": [1, 2.5e300, "\\\\u00e9\\\\""], "b": {"c": null}, "d": true}'""", "'[]'"),
    (
        "g",
        "GEOMETRY",
        "ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0),(5 5,7 5,7 7,5 7,5 5))')",
        "ST_GeomFromText('GEOMETRYCOLLECTION(POINT(0 0), LINESTRING(0 0, 1 1))')",
    ),
    ("pt", "POINT", "ST_GeomFromText('POINT(1.5 -2.25)')", "ST_GeomFromText('POINT(0 0)')"),
    ("ip", "INET6", "'2001:db8::ff00:42:8329'", "'::'"),
    ("uu", "UUID", "'f81d4fae-7dec-11d0-a765-00a0c91e6bf6'", "'00000000-0000-0000-0000-000000000000'"),
    ("gv", "INT AS (i + 1) VIRTUAL", "DEFAULT", "DEFAULT"),
    ("gp", "VARCHAR(330) AS (CONCAT(IFNULL(vc, '-'), '!')) PERSISTENT", "DEFAULT", "DEFAULT"),
    ("inv", "INT INVISIBLE DEFAULT 7", None, None),  # not in an INSERT without a column list
]
TYPE_COLUMNS = ", ".join(f"{name} {sql}" for name, sql, _, _ in COLUMN_TYPES)
VISIBLE = [c for c in COLUMN_TYPES if c[2] is not None]
TYPE_NAMES = ", ".join(c[0] for c in VISIBLE if c[2] != "DEFAULT")
EXTREME = ", ".join(c[2] for c in VISIBLE)
ORDINARY = ", ".join(c[3] for c in VISIBLE)
NULLS = ", ".join("DEFAULT" if c[2] == "DEFAULT" else "NULL" for c in VISIBLE)


def _type_tables(db: str) -> list[str]:
    return [
        f"CREATE TABLE {db}.keyed (id INT PRIMARY KEY, {TYPE_COLUMNS})",
        f"CREATE TABLE {db}.nokey (id INT, {TYPE_COLUMNS})",  # rows found by every column, FLOAT and JSON too
    ]


def _type_rows(db: str, ids: tuple[int, int, int]) -> list[str]:
    out = ["SET time_zone = '+05:30'"]  # the session zone must not leak into TIMESTAMP values
    for table in ("keyed", "nokey"):
        for k, values in zip(ids, (EXTREME, ORDINARY, NULLS), strict=True):
            out.append(f"INSERT INTO {db}.{table} VALUES ({k}, {values})")
    return out


def _type_workload(db: str) -> list[str]:
    return [
        *_type_rows(db, (4, 5, 6)),
        f"INSERT INTO {db}.nokey VALUES (3, {EXTREME})",  # two rows with id 3, then a duplicate of one
        f"INSERT INTO {db}.nokey (id, {TYPE_NAMES}, inv) SELECT id, {TYPE_NAMES}, inv FROM {db}.nokey WHERE id = 1",
        f"UPDATE {db}.keyed SET ts = ts + INTERVAL 1 HOUR, ts3 = '2024-06-01 12:00:00.5', "
        "dtm6 = dtm6 - INTERVAL 1 DAY, f = f / 3, dbl = dbl / 3, j = JSON_SET(IFNULL(j, '{}'), '$.new', 'x'), "
        "inv = inv + 1, vc = CONCAT(IFNULL(vc, ''), '+'), bin = 0x27, l1 = 'Ã\\xff', b64 = b64 >> 1, e = 'b', "
        "st = 'w', pt = ST_GeomFromText('POINT(3 4)') WHERE id IN (1, 2, 5)",
        f"UPDATE {db}.nokey SET ts = NULL, f = 1.17549435e-38, bin = 0x00, ip = '::1', uu = UUID() WHERE id = 1",
        f"UPDATE {db}.nokey SET vc = 'dup', inv = 0 WHERE id = 3",
        f"DELETE FROM {db}.keyed WHERE id = 1",
        f"DELETE FROM {db}.nokey WHERE id IN (1, 3) LIMIT 2",
        f"UPDATE {db}.keyed SET id = 10 WHERE id = 2",
        f"UPDATE {db}.nokey SET id = id + 100, inv = id, vc = NULL, ts3 = NULL",
        f"DELETE FROM {db}.keyed WHERE id <> 5",
        f"DELETE FROM {db}.nokey WHERE id > 104",
    ]


def test_every_column_type_with_nulls_charsets_and_session_time_zone(scratch_server, tmp_path):
    db = "typed"
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}", *_type_tables(db)])
    scratch_server.run_sql(_type_rows(db, (1, 2, 3)))
    script, _report = assert_restores(
        scratch_server, tmp_path, [f"{db}.keyed", f"{db}.nokey"], _type_workload(db), tcp=True
    )
    text = script.read_text()
    # Generated columns are never written; invisible ones are.
    assert "`gv`=" not in text and "`gp`=" not in text and "`inv`=" in text
    inserts = [ln for ln in text.splitlines() if ln.startswith("INSERT")]
    assert inserts and all("`gv`" not in ln and "`gp`" not in ln and "`inv`" in ln for ln in inserts)
    # TIMESTAMPs are written as UTC under the script's own time zone.
    assert text.index("SET time_zone = '+00:00';") < text.index("BEGIN;")
    assert "'2038-01-18 21:44:07'" in text and "'1970-01-01 00:00:01.001'" in text


# ---- a randomised workload: 10,000+ row changes over 5 tables ----------------------------------------

RANDOM_TABLES = {
    "r1": "CREATE TABLE rnd.r1 (id INT PRIMARY KEY, a INT, s VARCHAR(30), f FLOAT, ts TIMESTAMP(6) NULL)",
    "r2": "CREATE TABLE rnd.r2 (k1 INT, k2 CHAR(4), v DECIMAL(10,2), d DOUBLE, PRIMARY KEY (k1, k2))",
    "r3": "CREATE TABLE rnd.r3 (a INT, b VARCHAR(8) CHARACTER SET latin1, c DOUBLE)",
    "r4": "CREATE TABLE rnd.r4 (code VARCHAR(12) NOT NULL, n INT, doc BLOB, UNIQUE KEY (code))",
    "r5": "CREATE TABLE rnd.r5 (id BIGINT UNSIGNED PRIMARY KEY, e ENUM('x','y','z'), j JSON, bits BIT(12), "
    "dt DATETIME(3), bin VARBINARY(16))",
}
WORDS = ["a", "it's", "é😀", "x\\\\y", "", "Ünïcode", "tab\\t", "0x27"]  # as SQL text: backslash escapes


@dataclass
class _Keys:
    """The keys the tables hold, so that random statements stay valid."""

    r1: set[int] = field(default_factory=set)
    r2: set[tuple[int, str]] = field(default_factory=set)
    r5: set[int] = field(default_factory=set)
    next_id: int = 1


def _random_workload(rng: random.Random, operations: int, model: _Keys) -> list[str]:
    """Statements for at least `operations` row changes (as the model counts them), some in transactions."""
    out: list[str] = []
    r1, r2, r5 = model.r1, model.r2, model.r5
    r3_values = range(1, 9)
    next_id = model.next_id
    changes = 0

    def word() -> str:
        return "'" + rng.choice(WORDS).replace("'", "''") + "'"

    while changes < operations:
        in_transaction = rng.random() < 0.3  # else each statement is its own transaction
        if in_transaction:
            out.append("BEGIN")
        for _ in range(rng.randint(1, 6)):
            op = rng.randrange(12)
            if op == 0 or not r1:
                rows = []
                for _ in range(rng.randint(1, 40)):
                    r1.add(next_id)
                    rows.append(
                        f"({next_id}, {rng.randint(-999, 999)}, {word()}, {rng.uniform(-1e9, 1e9)}, "
                        f"FROM_UNIXTIME({rng.randint(1, 2**31 - 1)}.{rng.randint(0, 999999):06d}))"
                    )
                    next_id += 1
                out.append("INSERT INTO rnd.r1 VALUES " + ", ".join(rows))
                changes += len(rows)
            elif op == 1:
                some = rng.sample(sorted(r1), min(len(r1), rng.randint(1, 30)))
                out.append(
                    f"UPDATE rnd.r1 SET a = a + 1, f = f / 3, s = CONCAT(s, 'u'), ts = NULL "
                    f"WHERE id IN ({', '.join(map(str, some))})"
                )
                changes += len(some)
            elif op == 2:
                victim = rng.choice(sorted(r1))
                r1.discard(victim)
                r1.add(next_id)
                out.append(f"UPDATE rnd.r1 SET id = {next_id} WHERE id = {victim}")
                next_id += 1
                changes += 1
            elif op == 3:
                some = rng.sample(sorted(r1), min(len(r1), rng.randint(1, 10)))
                r1.difference_update(some)
                out.append(f"DELETE FROM rnd.r1 WHERE id IN ({', '.join(map(str, some))})")
                changes += len(some)
            elif op == 4:
                keys = {
                    (rng.randint(1, 60), rng.choice(["ab", "cd", "é", ""])) for _ in range(rng.randint(1, 20))
                }
                fresh = keys - r2
                r2 |= fresh
                if fresh:
                    rows = [
                        f"({k1}, '{k2}', {rng.randint(-99999, 99999) / 100}, {rng.random()})"
                        for k1, k2 in fresh
                    ]
                    out.append("INSERT INTO rnd.r2 VALUES " + ", ".join(rows))
                    changes += len(rows)
            elif op == 5 and r2:
                k1 = rng.choice(sorted(r2))[0]
                hit = [k for k in r2 if k[0] == k1]
                out.append(f"UPDATE rnd.r2 SET v = v * -1, d = d + 1 WHERE k1 = {k1}")
                if rng.random() < 0.5:
                    out.append(f"DELETE FROM rnd.r2 WHERE k1 = {k1}")
                    r2.difference_update(hit)
                    changes += len(hit)
                changes += len(hit)
            elif op == 6:
                rows = [
                    f"({rng.choice(r3_values)}, 'dup', {rng.choice([0.5, 0.1, 1e300])})" for _ in range(25)
                ]
                out.append("INSERT INTO rnd.r3 VALUES " + ", ".join(rows))
                changes += len(rows)
            elif op == 7:
                out.append(
                    f"UPDATE rnd.r3 SET c = c * 2, b = 'upd' WHERE a = {rng.choice(r3_values)} LIMIT 3"
                )
                out.append(f"DELETE FROM rnd.r3 WHERE a = {rng.choice(r3_values)} LIMIT 2")
                changes += 5  # at most; the count is checked on the binlog below
            elif op == 8:
                code = f"c{rng.randint(1, 300)}"
                out.append(
                    f"INSERT INTO rnd.r4 VALUES ('{code}', {rng.randint(0, 9)}, REPEAT(0x00ff27, {rng.randint(0, 50)})) "
                    "ON DUPLICATE KEY UPDATE n = IFNULL(n, 0) + 1, doc = NULL"
                )
                changes += 1
            elif op == 9:
                code = f"c{rng.randint(1, 300)}"
                out.append(f"REPLACE INTO rnd.r4 VALUES ('{code}', NULL, 0x{rng.randbytes(8).hex()})")
                out.append(
                    f"UPDATE rnd.r4 SET code = CONCAT(code, 'r') WHERE code = 'c{rng.randint(1, 300)}'"
                )
                changes += 2
            elif op == 10:
                rows = []
                for _ in range(rng.randint(1, 30)):
                    key = rng.randint(0, 2**64 - 1)
                    if key in r5:
                        continue
                    r5.add(key)
                    enum = rng.choice(["NULL", "'x'", "'z'"])
                    rows.append(
                        f'({key}, {enum}, \'{{"n": {rng.randint(0, 99)}, "s": [1, "é"]}}\', '
                        f"{rng.randint(0, 4095)}, '2024-01-0{rng.randint(1, 9)} 10:00:00.{rng.randint(0, 999):03d}', "
                        f"X'{rng.randbytes(rng.randint(0, 16)).hex()}')"
                    )
                if rows:
                    out.append("INSERT INTO rnd.r5 VALUES " + ", ".join(rows))
                    changes += len(rows)
            elif r5:
                some = rng.sample(sorted(r5), min(len(r5), rng.randint(1, 20)))
                out.append(
                    "UPDATE rnd.r5 SET j = JSON_SET(j, '$.n', 7), bits = bits ^ 0xfff, e = 'y', dt = dt + INTERVAL 1 DAY "
                    f"WHERE id IN ({', '.join(map(str, some))})"
                )
                changes += len(some)
        if in_transaction:
            out.append("COMMIT")
    model.next_id = next_id
    return out


def test_randomised_workload_of_ten_thousand_operations_over_five_tables(scratch_server, tmp_path):
    scratch_server.run_sql(["DROP DATABASE IF EXISTS rnd", "CREATE DATABASE rnd", *RANDOM_TABLES.values()])
    keys = _Keys()
    scratch_server.run_sql(_random_workload(random.Random(7), 500, keys))
    workload = _random_workload(random.Random(8), 11_000, keys)  # the model counts a few too many
    tables = [f"rnd.{t}" for t in RANDOM_TABLES]
    before = snapshot(scratch_server, tables)
    rng = scratch_server.run_sql(workload)
    changed = snapshot(scratch_server, tables)
    script, _plan, report = flashback(scratch_server, rng, tmp_path)
    assert sum(report.counts.values()) >= 10_000
    assert {table for table, _kind in report.counts} == set(tables)
    assert {kind for _table, kind in report.counts} == {"insert", "update", "delete"}
    apply_with_client(scratch_server, script)
    assert snapshot(scratch_server, tables) == before
    # `mysql-rollback sql`: the same range forward, in binlog order, replays the workload exactly.
    forward, _plan, _report = flashback(scratch_server, rng, tmp_path, name="forward", mode="forward")
    apply_with_client(scratch_server, forward)
    assert snapshot(scratch_server, tables) == changed


# ---- binlog_row_metadata=FULL: the binlog names the columns, no other schema source --------------------


def test_full_row_metadata_restores_with_the_schema_from_the_binlog_alone(scratch_server_factory, tmp_path):
    server = scratch_server_factory(row_metadata="FULL")
    db = "meta"
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            *_type_tables(db),
            f"CREATE TABLE {db}.`odd ``name``` (`col``1` INT UNSIGNED NOT NULL, `ü` VARCHAR(5), UNIQUE KEY (`col``1`))",
        ]
    )
    server.run_sql(
        _type_rows(db, (1, 2, 3)) + [f"INSERT INTO {db}.`odd ``name``` VALUES (4294967295, 'é'), (1, NULL)"]
    )
    tables = [f"{db}.keyed", f"{db}.nokey", f"{db}.`odd ``name```"]
    script, report = assert_restores(
        server,
        tmp_path,
        tables,
        _type_workload(db)
        + [
            f"UPDATE {db}.`odd ``name``` SET `col``1` = `col``1` - 1, `ü` = 'ü'",
            f"DELETE FROM {db}.`odd ``name```",
        ],
        schema=None,
    )
    text = script.read_text()
    assert "`meta`.`odd ``name```" in text and "`col``1`" in text
    assert "'it''s'" in text  # ENUM by its name: the binlog carries the members


# ---- options: --schema-file, --full-where, --allow-partial ---------------------------------------------


def test_schema_file_of_show_create_table_restores_every_type(scratch_server, tmp_path):
    db = "typed_ddl"
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}", *_type_tables(db)])
    scratch_server.run_sql(_type_rows(db, (1, 2, 3)))
    ddl = tmp_path / "schema.sql"
    ddl.write_text(
        ";\n".join(scratch_server.query(f"SHOW CREATE TABLE {db}.{t}")[0][1] for t in ("keyed", "nokey"))
        + ";\n"
    )
    script, _report = assert_restores(
        scratch_server,
        tmp_path,
        [f"{db}.keyed", f"{db}.nokey"],
        _type_workload(db),
        schema=schema_from_file(ddl, default_database=db),
    )
    text = script.read_text()
    assert "`gv`=" not in text and "`gp`=" not in text  # generated: known from the DDL, never written
    inserts = [ln for ln in text.splitlines() if ln.startswith("INSERT")]
    assert inserts and all("`gv`" not in ln and "`gp`" not in ln for ln in inserts)
    assert "'Привет'" in text  # the cp1251 column is readable: its charset is in the DDL


def test_schema_whose_column_count_differs_is_a_mismatch_naming_table_and_position(scratch_server, tmp_path):
    scratch_server.run_sql(
        ["CREATE DATABASE IF NOT EXISTS mm", "CREATE OR REPLACE TABLE mm.t (id INT PRIMARY KEY, v INT)"]
    )
    rng = scratch_server.run_sql(["INSERT INTO mm.t VALUES (1, 1)", "UPDATE mm.t SET v = 2"])
    ddl = tmp_path / "old.sql"
    ddl.write_text("CREATE TABLE `mm`.`t` (id INT PRIMARY KEY, v INT, added_later INT);")
    with pytest.raises(
        SchemaMismatch, match=r"table mm\.t at position \d+: the binlog has 2 columns, the ddl schema has 3"
    ):
        flashback(scratch_server, rng, tmp_path, schema=schema_from_file(ddl))
    out = run_cli("flashback", *range_args(rng), "--schema-file", str(ddl))
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert re.search(r"table mm\.t at position \d+", out.stderr) and "Traceback" not in out.stderr


@pytest.mark.both_ways_off("a row changed since the incident: the full WHERE leaves it alone")
def test_full_where_matches_every_column_so_a_row_changed_since_is_not_clobbered(scratch_server, tmp_path):
    scratch_server.run_sql(
        [
            "CREATE DATABASE IF NOT EXISTS fw",
            "CREATE OR REPLACE TABLE fw.t (id INT PRIMARY KEY, v INT, note VARCHAR(10), f FLOAT)",
            "INSERT INTO fw.t VALUES (1, 10, 'a', 0.1), (2, 20, NULL, 0.2), (3, 30, 'c', NULL)",
        ]
    )
    before = snapshot(scratch_server, ["fw.t"])
    rng = scratch_server.run_sql(["UPDATE fw.t SET v = v + 1", "DELETE FROM fw.t WHERE id = 3"])
    scratch_server.run_sql(["UPDATE fw.t SET note = 'later' WHERE id = 2"])  # after the incident
    keyed, _plan, _ = flashback(scratch_server, rng, tmp_path, name="keyed")
    full, plan, _ = flashback(scratch_server, rng, tmp_path, name="full", full_where=True)
    assert "WHERE `id`=2;" in keyed.read_text()
    assert (
        "UPDATE `fw`.`t` SET `v`=20 WHERE `id`<=>2 AND `v`<=>21 AND `note`<=>NULL AND `f`<=>0.20000000298023224e0 "
        "LIMIT 1;" in full.read_text()
    )
    apply_with_client(scratch_server, full)
    rows = scratch_server.query("SELECT id, v, note FROM fw.t ORDER BY id")
    assert rows == [(1, 10, "a"), (2, 21, "later"), (3, 30, "c")]  # row 2 changed since: left alone
    # The plan of the same script reports it as a conflict instead.
    scratch_server.run_sql(["UPDATE fw.t SET v = 11 WHERE id = 1", "DELETE FROM fw.t WHERE id = 3"])
    with pytest.raises(ConflictError, match=r"fw\.t"):
        execute_plan(plan, scratch_server.dsn, commit=True)
    scratch_server.run_sql(["UPDATE fw.t SET note = NULL WHERE id = 2"])
    execute_plan(plan, scratch_server.dsn, commit=True)
    assert snapshot(scratch_server, ["fw.t"]) == before


def test_allow_partial_emits_the_restorable_part_and_lists_the_rest(scratch_server_factory, tmp_path):
    server = scratch_server_factory(row_image="MINIMAL")
    server.run_sql(
        [
            "CREATE DATABASE IF NOT EXISTS ap",
            "CREATE OR REPLACE TABLE ap.keyed (id INT PRIMARY KEY, v INT)",
            "CREATE OR REPLACE TABLE ap.nokey (a INT, b INT)",
            "INSERT INTO ap.keyed VALUES (1, 1), (2, 2), (3, 3)",
            "INSERT INTO ap.nokey VALUES (1, 1), (2, 2)",
        ]
    )
    before = snapshot(server, ["ap.keyed", "ap.nokey"])
    rng = server.run_sql(
        [
            "INSERT INTO ap.keyed VALUES (4, 4)",  # restorable: DELETE by key
            "UPDATE ap.keyed SET v = 20 WHERE id = 2",  # MINIMAL: the old v is not logged
            "DELETE FROM ap.keyed WHERE id = 3",  # MINIMAL: only the key is logged
            "UPDATE ap.nokey SET b = 0",  # no key: the whole before image is logged, restorable
        ]
    )
    with pytest.raises(IrreversibleChange, match=r"2 row change\(s\) cannot be restored"):
        flashback(server, rng, tmp_path, name="strict")
    script, _plan, report = flashback(server, rng, tmp_path, allow_partial=True)
    assert report.irreversible_count == 2
    assert [(i["type"], i["table"], i["missing"]) for i in report.irreversible] == [
        ("update", "ap.keyed", ["v"]),
        ("delete", "ap.keyed", ["v"]),
    ]
    text = script.read_text()
    assert text.count("-- irreversible:") == 2 and "-- irreversible: delete on ap.keyed" in text
    apply_with_client(server, script)
    now = snapshot(server, ["ap.keyed", "ap.nokey"])
    assert now["ap.nokey"] == before["ap.nokey"]
    assert server.query("SELECT id, v FROM ap.keyed ORDER BY id") == [
        (1, 1),
        (2, 20),
    ]  # 4 gone; 2, 3 not restorable
    out = run_cli(
        "flashback",
        *range_args(rng),
        "--schema-dsn",
        server.dsn,
        "--allow-partial",
        "-o",
        str(tmp_path / "p.sql"),
    )
    assert out.returncode == 3 and "2 row change(s) could not be restored" in out.stderr
    assert (tmp_path / "p.sql").read_text().count("-- irreversible:") == 2
