"""Classes tried beyond issue 25's ten, as a careful DBA would try them on MariaDB 10.11: record the tables,
run the incident, roll it back through the `mariadb` client and through --execute, compare by checksum and
rows (restore_both_ways). Each held once its test was written; they stay as regression tests."""

from __future__ import annotations

import pytest

from tests.support.restore import range_args, restore_both_ways, run_cli

CASES = {
    # a key changed only in letter case, or in trailing spaces, where the collation calls both equal
    "collation-equal-keys": (
        [
            "CREATE TABLE {db}.ci (k VARCHAR(20) PRIMARY KEY, v INT) COLLATE utf8mb4_general_ci",
            "INSERT INTO {db}.ci VALUES ('abc', 1), ('Straße', 2), ('x', 3)",
        ],
        [
            "UPDATE {db}.ci SET k = 'ABC' WHERE k = 'abc'",
            "UPDATE {db}.ci SET k = 'x  ', v = 30 WHERE k = 'x'",
            "UPDATE {db}.ci SET v = 20 WHERE k = 'strasse'",
            "DELETE FROM {db}.ci WHERE k = 'ABC'",
        ],
    ),
    # stored and virtual generated columns, one of them indexed and unique
    "generated-columns": (
        [
            "CREATE TABLE {db}.g (id INT PRIMARY KEY, a INT, b VARCHAR(10), "
            "s INT AS (a * 2) STORED, v VARCHAR(12) AS (CONCAT(b, '!')) VIRTUAL, UNIQUE KEY (v))",
            "INSERT INTO {db}.g (id, a, b) VALUES (1, 1, 'one'), (2, 2, 'two'), (3, 3, 'three')",
        ],
        [
            "UPDATE {db}.g SET a = a + 10, b = UPPER(b)",
            "DELETE FROM {db}.g WHERE id = 2",
            "INSERT INTO {db}.g (id, a, b) VALUES (4, 4, 'four')",
        ],
    ),
    # application-time periods: DELETE ... FOR PORTION OF splits a row into an UPDATE and INSERTs
    "portion-of-a-period": (
        [
            "CREATE TABLE {db}.p (id INT, s DATE, e DATE, price INT, PERIOD FOR valid(s, e), "
            "PRIMARY KEY (id, valid WITHOUT OVERLAPS))",
            "INSERT INTO {db}.p VALUES (1, '2024-01-01', '2024-12-31', 100), (2, '2024-01-01', '2025-01-01', 7)",
        ],
        [
            "DELETE FROM {db}.p FOR PORTION OF valid FROM '2024-03-01' TO '2024-04-01' WHERE id = 1",
            "UPDATE {db}.p FOR PORTION OF valid FROM '2024-06-01' TO '2024-07-01' SET price = 0 WHERE id = 2",
        ],
    ),
    # zero dates and invalid ENUM values (index 0) stored under a lax sql_mode, rolled back under a strict one
    "zero-dates-and-empty-enum": (
        [
            "SET SESSION sql_mode = ''",
            "CREATE TABLE {db}.z (d DATE, dt DATETIME, e ENUM('a', 'b'), n INT)",  # keyless: every column in WHERE
            "INSERT INTO {db}.z VALUES ('0000-00-00', '0000-00-00 00:00:00', 'zz', 1), "
            "('2024-02-30', '2024-01-01 10:00:00', 'a', 2)",
        ],
        [
            "SET SESSION sql_mode = ''",
            "UPDATE {db}.z SET n = n + 100",
            "DELETE FROM {db}.z WHERE n = 102",
            "SET SESSION sql_mode = DEFAULT",
        ],
    ),
    # DECIMAL and BIT keys: 1.10 is 1.1; a BIT key compared as a number
    "decimal-and-bit-keys": (
        [
            "CREATE TABLE {db}.d (k DECIMAL(7,2) PRIMARY KEY, v INT)",
            "INSERT INTO {db}.d VALUES (1.10, 1), (-0.01, 2), (9999.99, 3)",
            "CREATE TABLE {db}.b (k BIT(3) PRIMARY KEY, v INT)",
            "INSERT INTO {db}.b VALUES (b'000', 0), (b'101', 5), (b'111', 7)",
        ],
        [
            "UPDATE {db}.d SET k = k + 1, v = v * 10",
            "DELETE FROM {db}.d WHERE k < 1",
            "UPDATE {db}.b SET k = k ^ b'001', v = v + 1 ORDER BY k DESC",
            "DELETE FROM {db}.b WHERE v = 1",
        ],
    ),
    # MariaDB's own data types, whose binlog bytes are their storage: INET6, UUID (stored with its
    # groups swapped), and a spatial column with its SRID
    "inet6-uuid-geometry": (
        [
            "CREATE TABLE {db}.m (id INT PRIMARY KEY, ip INET6, u UUID, g GEOMETRY, pt POINT NOT NULL, "
            "UNIQUE KEY (u))",
            "INSERT INTO {db}.m VALUES (1, '::1', '123e4567-e89b-12d3-a456-426655440000', "
            "ST_GeomFromText('LINESTRING(0 0, 1 1)'), POINT(1, 2)), "
            "(2, '2001:db8::ff00:42:8329', '00000000-0000-0000-0000-000000000001', NULL, POINT(-1.5, 1e300))",
            "CREATE TABLE {db}.mk (u UUID, ip INET6, pt POINT)",  # keyless: every column in the WHERE
            "INSERT INTO {db}.mk VALUES ('123e4567-e89b-12d3-a456-426655440000', '::a00:1', POINT(3, 4)), "
            "(UUID(), '::ffff:1.2.3.4', NULL)",
        ],
        [
            "UPDATE {db}.m SET ip = '::2', u = 'ffffffff-0000-1111-2222-333333333333', pt = POINT(9, 9) "
            "WHERE id = 1",
            "DELETE FROM {db}.m WHERE id = 2",
            "UPDATE {db}.mk SET ip = '::3'",
            "DELETE FROM {db}.mk WHERE pt IS NULL",
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_class_tried_beyond_the_ten_restores_both_ways(scratch_server, tmp_path, case):
    setup, incident = CASES[case]
    db = "adv_" + case.replace("-", "_")
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}"])
    scratch_server.run_sql([sql.format(db=db) for sql in setup])
    tables = [f"{db}.{name}" for (name,) in scratch_server.query(f"SHOW TABLES FROM {db}")]
    restore_both_ways(scratch_server, tables, [sql.format(db=db) for sql in incident], tmp_path)


def test_a_table_renamed_after_the_incident_is_refused_naming_it(scratch_server, tmp_path):
    db = "adv_renamed"
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)",
            f"INSERT INTO {db}.t VALUES (1, 1), (2, 2)",
        ]
    )
    rng = scratch_server.run_sql([f"DELETE FROM {db}.t WHERE id = 2"])
    scratch_server.run_sql([f"RENAME TABLE {db}.t TO {db}.t_old"])
    script = tmp_path / "rollback.render.sql"
    out = run_cli("flashback", *range_args(rng), "--schema-dsn", scratch_server.dsn, "-o", str(script))
    assert out.returncode != 0 and out.stderr.count("\n") == 1, out.stderr
    assert f"{db}.t" in out.stderr and "Traceback" not in out.stderr
    assert not script.exists()
