"""Workloads shared by the restore proofs and the engine comparisons: the benchmark of seed document
000 (t1/t2/t3 and its update steps) and a random mixed workload over three tables of many types."""

from __future__ import annotations

import random

import pytest

# ---- the benchmark of seed document 000: t1/t2/t3 with 32,550 rows and its update steps ----

T1_ROWS, T2_ROWS = 32_550, 32_689
NUMBERS = "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {count}) "


@pytest.fixture(scope="module")
def seed_db(scratch_server):
    scratch_server.run_sql(["DROP DATABASE IF EXISTS seed", "CREATE DATABASE seed"])
    scratch_server.run_sql(
        [
            "SET SESSION max_recursive_iterations = 100000",
            "CREATE TABLE t1 (id INTEGER, c1 CHAR(200), c2 CHAR(200), c3 CHAR(200), last_modified TIMESTAMP(6))",
            "ALTER TABLE t1 MODIFY COLUMN id INT AUTO_INCREMENT PRIMARY KEY",
            "CREATE TABLE t2 (id INTEGER AUTO_INCREMENT PRIMARY KEY, last_modified TIMESTAMP(6))",
            "INSERT INTO t1 (c1, c2, c3, last_modified) "
            + NUMBERS.format(count=T1_ROWS)
            + "SELECT CONCAT('a', i), IF(i % 7 = 0, NULL, 'b'), '', "
            "TIMESTAMP'2024-01-01 00:00:00' + INTERVAL i * 1000003 MICROSECOND FROM n",
            "INSERT INTO t2 (last_modified) "
            + NUMBERS.format(count=T2_ROWS)
            + "SELECT TIMESTAMP'2023-06-30 23:59:59.5' + INTERVAL i SECOND FROM n",
        ],
        database="seed",
    )
    return "seed"


SEED_STEPS = [
    ["update t1 set last_modified=last_modified + interval 1 second"],
    ["update t2 set last_modified=last_modified + interval 1 second"],
    [
        "create table t3 (id integer auto_increment primary key, flag char(1))",
        "insert into t3 (flag) select 'x' from t1",
    ],
    ["update t3 set flag='y'"],
    [
        "alter table t3 add column c1 char(200) default 'a'",
        "alter table t3 add column c2 char(200) default 'b'",
        "alter table t3 add column c3 char(200) default 'c'",
    ],
    ["update t3 set c1='a',c2='b',c3='c'"],  # matches every row, changes none: nothing to undo
    ["update t3 set c1='c',c2='b',c3='a'"],
    ["update t3 set flag='z'"],
]
ALTER_STEP = 4


# ---- a random mixed workload: pk (every type), nopk (duplicate rows), uniq (a NOT NULL unique key) ----

TABLES = {
    "pk": """CREATE TABLE {db}.pk (
        id INT PRIMARY KEY, name VARCHAR(40) CHARACTER SET utf8mb4, amount DECIMAL(12,3), f FLOAT, d DOUBLE,
        ts TIMESTAMP(3) NULL, dt DATETIME(6), tm TIME(2), dte DATE, yr YEAR, b BIT(10),
        e ENUM('a','b','c'), s SET('x','y','z'), bin VARBINARY(20), l1 VARCHAR(20) CHARACTER SET latin1,
        j LONGTEXT, blb BLOB, u BIGINT UNSIGNED, neg TINYINT)""",
    "nopk": "CREATE TABLE {db}.nopk (a INT, b VARCHAR(10), c DOUBLE)",
    "uniq": "CREATE TABLE {db}.uniq (code CHAR(8) NOT NULL, v INT, UNIQUE KEY (code))",
}


def checksums(server, db):
    return {t: server.query(f"CHECKSUM TABLE {db}.{t} EXTENDED")[0][1] for t in TABLES}


def rows(server, db):
    return {t: sorted(map(repr, server.query(f"SELECT * FROM {db}.{t}"))) for t in TABLES}


def _literal(v):
    return "NULL" if v is None else repr(v)


def workload(rng: random.Random, db: str, n: int, start_id: int) -> list[str]:
    statements = []
    ids = []
    next_id = start_id
    for _ in range(n):
        op = rng.random()
        if op < 0.45 or not ids:
            next_id += 1
            ids.append(next_id)
            name = rng.choice(
                ["plain", "it's", 'quote"s', "emoji 😀", "tab\there", "back\\\\slash", "", None]
            )
            statements.append(
                f"INSERT INTO {db}.pk VALUES ({next_id}, {_literal(name)}, {rng.randint(-(10**8), 10**8)}/1000, "
                f"{rng.uniform(-1e6, 1e6)}, {rng.uniform(-1e300, 1e300)}, '2024-03-01 10:00:00.123', "
                f"'2024-02-29 23:59:59.999999', '-12:30:01.5', '0000-00-00', 2024, b'1010101010', "
                f"'{rng.choice('abc')}', 'x,z', 0x00270a5c{rng.randint(0, 255):02x}, 'caf\\xe9', "
                f'\'{{"k": [1, 2.5, "s"]}}\', REPEAT(0x00ff, {rng.randint(0, 300)}), 18446744073709551615, -128)'
            )
            statements.append(f"INSERT INTO {db}.nopk VALUES ({rng.randint(1, 5)}, 'dup', 1.5)")
            statements.append(
                f"INSERT IGNORE INTO {db}.uniq VALUES ('k{rng.randint(1, 50)}', {rng.randint(1, 9)})"
            )
        elif op < 0.75:
            target = rng.choice(ids)
            statements.append(
                f"UPDATE {db}.pk SET name = CONCAT(IFNULL(name, ''), 'x'), amount = amount + 1, f = f * 2, "
                f"ts = NULL, e = 'b' WHERE id = {target}"
            )
            statements.append(f"UPDATE {db}.nopk SET c = c + 1 WHERE a = {rng.randint(1, 5)} LIMIT 1")
            statements.append(f"UPDATE {db}.uniq SET v = v + 1 WHERE code = 'k{rng.randint(1, 50)}'")
        elif op < 0.85:
            old = rng.choice(ids)
            next_id += 1
            statements.append(f"UPDATE {db}.pk SET id = {next_id} WHERE id = {old}")
            ids[ids.index(old)] = next_id
        else:
            victim = ids.pop(rng.randrange(len(ids)))
            statements.append(f"DELETE FROM {db}.pk WHERE id = {victim}")
            statements.append(f"DELETE FROM {db}.nopk WHERE a = {rng.randint(1, 5)} LIMIT 1")
    return statements
