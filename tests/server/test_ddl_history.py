"""Undo across DDL on the scratch MariaDB (binlog without column names): the schema history.

An incident (a DELETE, an UPDATE, an INSERT), then a routine migration after it, then more DML.
`--ddl keep` rolls back the incident's range into today's table: the rows come back with the columns
they had, mapped by name, and a column added since gets its default exactly as the ALTER gave it.
`--ddl reverse` over the whole range (incident, migration, later DML) returns schema and data to the
state before the range, checked by CHECKSUM TABLE and the row sets; an irreversible DDL is refused
naming it. `--ddl refuse` (the default) refuses with the statement, its position and the hint.
"""

from __future__ import annotations

import json
import re

import pytest

from rollback.base.errors import DDLInRange, SchemaMismatch, SchemaUnproven
from rollback.target.execute import ExecutionRefused, execute_plan
from tests.support.restore import apply_with_client, flashback, range_args, run_cli, snapshot, span

CREATE = "CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT, b VARCHAR(20), c DATE)"
ROWS = "INSERT INTO {db}.t VALUES (1, 10, 'one', '2026-01-01'), (2, 20, 'two', NULL), (3, 30, 'three', '2026-03-03')"


def _incident(server, db: str, create_elsewhere: bool = False):
    """The table, its rows, then the incident: (its range, the rows before it). `create_elsewhere`:
    the binary log is rotated after the CREATE TABLE, so the range's file does not hold it."""
    server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}", CREATE.format(db=db)])
    server.run_sql([ROWS.format(db=db)])
    if create_elsewhere:
        server.flush_binary_logs()
    before = server.query(f"SELECT id, a, b, c FROM {db}.t ORDER BY id")
    rng = server.run_sql(
        [
            f"DELETE FROM {db}.t WHERE id = 2",
            f"UPDATE {db}.t SET a = a + 1, b = 'changed' WHERE id = 1",
            f"INSERT INTO {db}.t VALUES (4, 40, 'four', '2026-04-04')",
        ]
    )
    return rng, before


# (migration after the incident, the column list to compare today, the expected value of new columns)
KEEP = {
    "add-column-with-default": (
        ["ALTER TABLE {db}.t ADD COLUMN d INT NOT NULL DEFAULT 7 AFTER a"],
        "id, a, b, c",
    ),
    "drop-unrelated-column": (["ALTER TABLE {db}.t DROP COLUMN c"], "id, a, b"),
    "column-reorder": (["ALTER TABLE {db}.t MODIFY b VARCHAR(20) FIRST"], "id, a, b, c"),
    "rename-table": (["RENAME TABLE {db}.t TO {db}.t2"], "id, a, b, c"),
    "modify-wider-string": (["ALTER TABLE {db}.t MODIFY b VARCHAR(200)"], "id, a, b, c"),
    "modify-wider-metadata-minimal": (["ALTER TABLE {db}.t MODIFY a BIGINT"], "id, a, b, c"),
    "rename-column": (["ALTER TABLE {db}.t RENAME COLUMN a TO amount"], "id, amount, b, c"),
}


@pytest.mark.parametrize("kind", sorted(KEEP))
def test_keep_restores_the_incident_into_todays_table(scratch_server_factory, tmp_path, kind):
    """The server writes no column names (MariaDB's default); a changed integer type needs its old
    signedness, which binlog_row_metadata=MINIMAL carries: that case runs with it."""
    metadata = "MINIMAL" if kind.endswith("metadata-minimal") else None
    scratch_server = scratch_server_factory(row_metadata=metadata) if metadata else scratch_server_factory()
    db = f"keep_{kind.replace('-', '_')}"
    rng, before = _incident(scratch_server, db)
    migration, columns = KEEP[kind]
    scratch_server.run_sql([m.format(db=db) for m in migration])
    table = f"{db}.t2" if kind == "rename-table" else f"{db}.t"
    # more DML after the migration, on other rows: it stays
    scratch_server.run_sql([f"INSERT INTO {table} (id) VALUES (50)"])
    with pytest.raises((SchemaUnproven, SchemaMismatch)):
        flashback(scratch_server, rng, tmp_path)  # --ddl refuse (the default): today's refusal
    script, _plan, report = flashback(scratch_server, rng, tmp_path, name="keep", ddl="keep")
    text = script.read_text()
    assert "-- ddl: keep" in text and f"-- schema timeline of {table}:" in text
    assert report.timelines and report.timelines[0]["table"] == table
    apply_with_client(scratch_server, script)
    expected = [*before, (50, None, None, None)] if kind != "drop-unrelated-column" else None
    got = scratch_server.query(f"SELECT {columns} FROM {table} ORDER BY id")
    if kind == "drop-unrelated-column":
        assert got == [(i, a, b) for i, a, b, _c in before] + [(50, None, None)]
        assert any("not written" in w and f"{db}.t.c" in w for w in report.warnings), report.warnings
    else:
        assert got == expected
    if kind == "add-column-with-default":
        # the restored row got the default the ALTER gave, like every row that existed at the ALTER
        assert scratch_server.query(f"SELECT id, d FROM {table} ORDER BY id") == [
            (1, 7),
            (2, 7),
            (3, 7),
            (50, 7),
        ]


def test_refuse_names_the_ddl_its_position_and_the_other_modes(scratch_server, tmp_path):
    db = "ddl_refuse_in_range"
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}", CREATE.format(db=db)])
    scratch_server.run_sql([ROWS.format(db=db)])
    first = scratch_server.run_sql([f"DELETE FROM {db}.t WHERE id = 2"])
    scratch_server.run_sql([f"ALTER TABLE {db}.t ADD COLUMN d INT DEFAULT 5"])
    last = scratch_server.run_sql([f"UPDATE {db}.t SET d = 6 WHERE id = 1"])
    with pytest.raises(DDLInRange) as refused:
        flashback(scratch_server, span(scratch_server, first, last), tmp_path)
    message = str(refused.value)
    assert f"DDL on {db}.t inside the range at mysql-bin." in message and "ADD COLUMN d" in message
    assert "--ddl keep" in message and "--ddl reverse" in message


REVERSIBLE = [
    "ALTER TABLE {db}.t ADD COLUMN d INT NOT NULL DEFAULT 7 AFTER a",
    "ALTER TABLE {db}.t RENAME COLUMN b TO label",
    "ALTER TABLE {db}.t MODIFY a BIGINT",
    "RENAME TABLE {db}.t TO {db}.t2",
]


@pytest.mark.parametrize("partition_bytes", [None, 600])
def test_reverse_returns_schema_and_data_to_before_the_range(
    scratch_server_factory, tmp_path, partition_bytes
):
    """In one partition and cut into many (the inverse DDL sits between partitions' statements). The
    MODIFY back needs the integer's old signedness: binlog_row_metadata=MINIMAL carries it."""
    scratch_server = scratch_server_factory(row_metadata="MINIMAL")
    db = f"ddl_reverse_all_{partition_bytes or 0}"
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}", CREATE.format(db=db)])
    scratch_server.run_sql([ROWS.format(db=db)])
    create_before = scratch_server.query(f"SHOW CREATE TABLE {db}.t")[0][1]
    state_before = snapshot(scratch_server, [f"{db}.t"])
    first = scratch_server.run_sql([f"DELETE FROM {db}.t WHERE id = 2"])
    scratch_server.run_sql([ddl.format(db=db) for ddl in REVERSIBLE[:2]])
    scratch_server.run_sql(
        [f"UPDATE {db}.t SET d = 8, label = 'x' WHERE id = 1", f"INSERT INTO {db}.t (id, a) VALUES (9, 90)"]
    )
    scratch_server.run_sql([ddl.format(db=db) for ddl in REVERSIBLE[2:]])
    last = scratch_server.run_sql(
        [f"UPDATE {db}.t2 SET a = 12345678901 WHERE id = 3", f"DELETE FROM {db}.t2 WHERE id = 1"]
    )
    script, plan, report = flashback(
        scratch_server,
        span(scratch_server, first, last),
        tmp_path,
        ddl="reverse",
        partition_bytes=partition_bytes,
    )
    assert report.partitions > (3 if partition_bytes else 0)
    text = script.read_text()
    assert f"RENAME TABLE `{db}`.`t2` TO `{db}`.`t`;" in text
    assert f"ALTER TABLE `{db}`.`t` DROP COLUMN `d`;" in text
    # The plan's DDL steps name no table (no row of one is checked); the row steps name theirs.
    steps = [json.loads(line) for line in plan.read_text().splitlines()]
    assert [s["table"] for s in steps if s["type"] == "ddl"] == [None] * 4
    assert {s["table"] for s in steps if s["type"] != "ddl"} == {f"{db}.t", f"{db}.t2"}
    # DDL commits implicitly: the checked execution refuses the plan before connecting, nothing runs.
    state_after = snapshot(scratch_server, [f"{db}.t2"])
    with pytest.raises(
        ExecutionRefused, match=r"4 inverse DDL statement\(s\) \(--ddl reverse\).*mysql client"
    ):
        execute_plan(plan, scratch_server.dsn, commit=True)
    assert snapshot(scratch_server, [f"{db}.t2"]) == state_after
    apply_with_client(scratch_server, script)
    assert scratch_server.query(f"SHOW CREATE TABLE {db}.t")[0][1] == create_before
    assert snapshot(scratch_server, [f"{db}.t"]) == state_before
    assert len(report.timelines) == 1 and len(report.timelines[0]["epochs"]) == 5


IRREVERSIBLE = {
    "drop-column": ("ALTER TABLE {db}.t DROP COLUMN c", "DROP COLUMN"),
    "truncate": ("TRUNCATE TABLE {db}.t", "TRUNCATE"),
}


@pytest.mark.parametrize("kind", sorted(IRREVERSIBLE))
def test_reverse_refuses_an_irreversible_ddl_naming_it(scratch_server, tmp_path, kind):
    db = f"ddl_irreversible_{kind.replace('-', '_')}"
    ddl, named = IRREVERSIBLE[kind]
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}", CREATE.format(db=db)])
    scratch_server.run_sql([ROWS.format(db=db)])
    first = scratch_server.run_sql([f"DELETE FROM {db}.t WHERE id = 2"])
    scratch_server.run_sql([ddl.format(db=db)])
    last = scratch_server.run_sql([f"INSERT INTO {db}.t (id, a) VALUES (9, 90)"])
    with pytest.raises(DDLInRange) as refused:
        flashback(scratch_server, span(scratch_server, first, last), tmp_path, ddl="reverse")
    message = str(refused.value)
    assert named in message and f"{db}.t" in message and "mysql-bin." in message
    assert not (tmp_path / "rollback.render.sql").exists()


def test_keep_reverses_changes_on_both_sides_of_a_ddl_in_the_range(scratch_server, tmp_path):
    """DELETE, ADD COLUMN (with default), more DML, all in the range: every change undone, into today's
    table; the added column keeps what the later DML and the default gave the rows that have it."""
    db = "keep_both_sides"
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}", CREATE.format(db=db)])
    scratch_server.run_sql([ROWS.format(db=db)])
    before = scratch_server.query(f"SELECT id, a, b, c FROM {db}.t ORDER BY id")
    first = scratch_server.run_sql([f"DELETE FROM {db}.t WHERE id = 2"])
    scratch_server.run_sql([f"ALTER TABLE {db}.t ADD COLUMN d INT NOT NULL DEFAULT 7 AFTER a"])
    last = scratch_server.run_sql(
        [f"UPDATE {db}.t SET a = 99, d = 8 WHERE id = 1", f"INSERT INTO {db}.t (id, a, d) VALUES (9, 90, 9)"]
    )
    script, _plan, report = flashback(scratch_server, span(scratch_server, first, last), tmp_path, ddl="keep")
    apply_with_client(scratch_server, script)
    assert scratch_server.query(f"SELECT id, a, b, c FROM {db}.t ORDER BY id") == before
    # d is today's column: the UPDATE's reversal sets it back to what the row had after the ALTER
    assert scratch_server.query(f"SELECT id, d FROM {db}.t ORDER BY id") == [(1, 7), (2, 7), (3, 7)]
    assert [e["ddl"][:40] for e in report.timelines[0]["epochs"]][1].startswith(
        "ALTER TABLE keep_both_sides.t ADD"
    )


def test_keep_refuses_an_integer_change_whose_old_signedness_the_binlog_lacks(scratch_server, tmp_path):
    """The table maps carry no signedness (NO_LOG) and the range's file holds no CREATE TABLE of it."""
    db = "keep_unsure_sign"
    rng, _before = _incident(scratch_server, db, create_elsewhere=True)
    scratch_server.run_sql([f"ALTER TABLE {db}.t MODIFY a BIGINT"])
    with pytest.raises(SchemaMismatch) as refused:
        flashback(scratch_server, rng, tmp_path, ddl="keep")
    message = str(refused.value)
    assert (
        "whether column `a` was signed" in message
        and "MODIFY a BIGINT" in message
        and "--schema-file" in message
    )


def test_keep_takes_the_old_signedness_from_the_create_table_before_the_range(scratch_server, tmp_path):
    """The same without signedness in the table maps, but the CREATE TABLE is in the range's first
    file before the range: the history built forward from it says the column was a signed INT."""
    db = "keep_sign_from_create"
    rng, before = _incident(scratch_server, db)
    scratch_server.run_sql([f"ALTER TABLE {db}.t MODIFY a BIGINT", f"UPDATE {db}.t SET a = -5 WHERE id = 3"])
    script, _plan, _report = flashback(scratch_server, rng, tmp_path, ddl="keep")
    apply_with_client(scratch_server, script)
    assert scratch_server.query(f"SELECT id, a, b, c FROM {db}.t ORDER BY id") == [
        row if row[0] != 3 else (3, -5, *row[2:]) for row in before
    ]


def test_keep_refuses_a_narrowing_type_change_naming_the_column(scratch_server_factory, tmp_path):
    scratch_server = scratch_server_factory(row_metadata="MINIMAL")
    db = "keep_narrowing"
    rng, _before = _incident(scratch_server, db)
    scratch_server.run_sql([f"ALTER TABLE {db}.t MODIFY a SMALLINT"])
    with pytest.raises(SchemaMismatch) as refused:
        flashback(scratch_server, rng, tmp_path, ddl="keep")
    message = str(refused.value)
    assert "column `a`" in message and "smallint" in message and "--ddl keep" in message


def test_an_unreadable_ddl_on_the_table_is_refused_naming_it_and_its_position(scratch_server, tmp_path):
    db = "keep_unreadable"
    rng, _before = _incident(scratch_server, db)
    scratch_server.run_sql([f"ALTER TABLE {db}.t CONVERT TO CHARACTER SET latin1"])
    with pytest.raises(SchemaMismatch) as refused:
        flashback(scratch_server, rng, tmp_path, ddl="keep")
    message = str(refused.value)
    assert "cannot read" in message and "CONVERT TO CHARACTER SET latin1" in message
    assert "DDL at mysql-bin." in message


def test_reverse_drops_a_table_the_range_created(scratch_server, tmp_path):
    db = "reverse_create"
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}", CREATE.format(db=db)])
    scratch_server.run_sql([ROWS.format(db=db)])
    state_before = snapshot(scratch_server, [f"{db}.t"])
    first = scratch_server.run_sql([f"DELETE FROM {db}.t WHERE id = 3"])
    scratch_server.run_sql([f"CREATE TABLE {db}.audit (id INT PRIMARY KEY, note VARCHAR(20))"])
    last = scratch_server.run_sql(
        [f"INSERT INTO {db}.audit VALUES (1, 'x'), (2, 'y')", f"UPDATE {db}.t SET a = 0"]
    )
    script, _plan, _report = flashback(
        scratch_server, span(scratch_server, first, last), tmp_path, ddl="reverse"
    )
    assert f"DROP TABLE `{db}`.`audit`;" in script.read_text()
    apply_with_client(scratch_server, script)
    assert scratch_server.query(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 'audit'",
        (db,),
    ) == [(0,)]
    assert snapshot(scratch_server, [f"{db}.t"]) == state_before


def test_cli_ddl_keep_and_its_refusal_hint(scratch_server, tmp_path):
    db = "keep_cli"
    rng, before = _incident(scratch_server, db)
    scratch_server.run_sql([f"ALTER TABLE {db}.t ADD COLUMN d INT DEFAULT 3 FIRST"])
    args = ["flashback", *range_args(rng), "--schema-dsn", scratch_server.dsn, "-o", str(tmp_path / "r.sql")]
    refused = run_cli(*args)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "--ddl keep" in refused.stderr and "Traceback" not in refused.stderr
    done = run_cli(*args, "--ddl", "keep")
    assert done.returncode == 0, done.stderr
    apply_with_client(scratch_server, tmp_path / "r.sql")
    assert scratch_server.query(f"SELECT id, a, b, c FROM {db}.t ORDER BY id") == before
    bad = run_cli(*args, "--ddl", "sideways")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_full_metadata_names_must_agree_with_the_history(scratch_server_factory, tmp_path):
    """With FULL metadata (MariaDB binlog_row_metadata=FULL) the history's names at each table map's
    position equal the names the map carries; --ddl keep writes the rows into today's columns."""
    server = scratch_server_factory(row_metadata="FULL")
    db = "keep_full_metadata"
    rng, before = _incident(server, db)
    server.run_sql([f"ALTER TABLE {db}.t RENAME COLUMN a TO amount, DROP COLUMN c"])
    script, _plan, report = flashback(server, rng, tmp_path, ddl="keep")
    apply_with_client(server, script)
    assert server.query(f"SELECT id, amount, b FROM {db}.t ORDER BY id") == [
        (i, a, b) for i, a, b, _c in before
    ]
    epochs = report.timelines[0]["epochs"]
    assert epochs[0]["definition"] == f"{db}.t(id int, a int, b varchar, c date)"


RICH = (
    "CREATE TABLE {db}.r (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, "
    "b VARCHAR(20) CHARACTER SET latin1 COLLATE latin1_bin NOT NULL DEFAULT 'x' COMMENT 'label', "
    "c DATE DEFAULT '2026-01-01' COMMENT 'day', e ENUM('a','b') NOT NULL DEFAULT 'b', "
    "m DECIMAL(8,2) UNSIGNED DEFAULT 1.50, ts DATETIME(3) NULL, n TINYINT UNSIGNED NOT NULL DEFAULT 3, "
    "KEY by_b (b), UNIQUE KEY (c, id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='rich'"
)
RICH_ROWS = (
    "INSERT INTO {db}.r (b, c, e, m, ts, n) VALUES ('one', '2026-02-02', 'a', 12.25, '2026-02-02 10:00:00.125', 200), "
    "('two', NULL, 'b', NULL, NULL, 0), ('three', '2026-03-03', 'a', 999999.99, '2026-03-03 00:00:00.000', 250)"
)
# MODIFY/CHANGE of every kind of column (each losing its charset, default, comment or NULL as the
# statement does), key changes, then a rename of the table: all undone by --ddl reverse.
RICH_DDL = [
    "ALTER TABLE {db}.r MODIFY b VARCHAR(100)",
    "ALTER TABLE {db}.r CHANGE c day DATETIME NULL AFTER e",
    "ALTER TABLE {db}.r MODIFY e ENUM('a','b','c'), MODIFY m DECIMAL(12,4) DEFAULT 0",
    "ALTER TABLE {db}.r MODIFY ts DATETIME(6) NULL DEFAULT CURRENT_TIMESTAMP(6), MODIFY n SMALLINT",
    "ALTER TABLE {db}.r ADD INDEX by_m (m), DROP INDEX by_b, ADD UNIQUE (n, id)",
    "CREATE INDEX by_e ON {db}.r (e, id)",
    "ALTER TABLE {db}.r DROP INDEX c",
    "ALTER TABLE {db}.r COMMENT='poorer', DEFAULT CHARSET=latin1, ENGINE=Aria",
    "RENAME TABLE {db}.r TO {db}.r2",
]


def test_reverse_puts_every_modified_column_and_key_back_exactly(scratch_server, tmp_path):
    """The CREATE TABLE is in the range's first file, before the range: the history holds each column's
    definition as it ran (type, charset, collation, default, NULL, comment) and the keys with the names
    the server gave them. Schema (SHOW CREATE TABLE) and data (CHECKSUM TABLE, rows) come back exactly,
    applied with the mysql client."""
    db = "ddl_reverse_exact"
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}", RICH.format(db=db)])
    scratch_server.run_sql([RICH_ROWS.format(db=db)])
    create_before = scratch_server.query(f"SHOW CREATE TABLE {db}.r")[0][1]
    state_before = snapshot(scratch_server, [f"{db}.r"])
    first = scratch_server.run_sql([f"UPDATE {db}.r SET b = 'uno', m = 1.00 WHERE id = 1"])
    for k, ddl in enumerate(RICH_DDL):
        scratch_server.run_sql([ddl.format(db=db)])
        table = f"{db}.r2" if "RENAME" in ddl else f"{db}.r"
        scratch_server.run_sql([f"UPDATE {table} SET n = n + 1 WHERE id = {1 + k % 3}"])
    last = scratch_server.run_sql(
        [f"DELETE FROM {db}.r2 WHERE id = 2", f"INSERT INTO {db}.r2 (b, day, e) VALUES ('new', NOW(), 'c')"]
    )
    script, _plan, report = flashback(
        scratch_server, span(scratch_server, first, last), tmp_path, ddl="reverse"
    )
    text = script.read_text()
    assert (
        f"ALTER TABLE `{db}`.`r` CHANGE COLUMN `day` `c` DATE DEFAULT '2026-01-01' COMMENT 'day' AFTER `b`;"
        in text
    )
    assert "DROP INDEX `by_m`" in text and "ADD INDEX by_b (b)" in text and "DROP INDEX `n`" in text
    apply_with_client(scratch_server, script)
    # The AUTO_INCREMENT counter is not part of the definition: a rollback never lowers it (the id the
    # undone INSERT took stays used, as after any deleted row).
    counter = re.compile(r" AUTO_INCREMENT=\d+")
    create_after = scratch_server.query(f"SHOW CREATE TABLE {db}.r")[0][1]
    assert counter.sub("", create_after) == counter.sub("", create_before)
    assert snapshot(scratch_server, [f"{db}.r"]) == state_before
    assert len(report.timelines[0]["epochs"]) == len(RICH_DDL) + 1


def test_reverse_creates_an_empty_dropped_table_again_and_drops_one_it_created(scratch_server, tmp_path):
    """`spare` was created (and altered) before the range and never written: its DROP in the range is
    undone by its CREATE and ALTER as the server ran them. `tmp` is created and dropped in the range: both
    undone (nothing left); `copy` (CREATE TABLE ... LIKE) is dropped. Another table's rows in the range
    are restored too."""
    db = "ddl_reverse_drop_empty"
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}", CREATE.format(db=db)])
    scratch_server.run_sql(
        [
            f"CREATE TABLE {db}.spare (id BIGINT UNSIGNED PRIMARY KEY, note TEXT COMMENT 'n') ENGINE=InnoDB",
            f"ALTER TABLE {db}.spare ADD COLUMN at DATETIME DEFAULT '2026-01-01 00:00:00', ADD KEY (at)",
            ROWS.format(db=db),
        ]
    )
    spare_before = scratch_server.query(f"SHOW CREATE TABLE {db}.spare")[0][1]
    state_before = snapshot(scratch_server, [f"{db}.t"])
    first = scratch_server.run_sql([f"DELETE FROM {db}.t WHERE id = 1"])
    scratch_server.run_sql(
        [
            f"DROP TABLE {db}.spare",
            f"CREATE TABLE {db}.tmp (k INT PRIMARY KEY)",
            f"ALTER TABLE {db}.tmp ADD COLUMN v INT",
            f"DROP TABLE {db}.tmp",
            f"CREATE TABLE {db}.copy LIKE {db}.t",
        ]
    )
    last = scratch_server.run_sql([f"UPDATE {db}.t SET b = 'later' WHERE id = 2"])
    script, _plan, _report = flashback(
        scratch_server, span(scratch_server, first, last), tmp_path, ddl="reverse"
    )
    apply_with_client(scratch_server, script)
    assert scratch_server.query(f"SHOW CREATE TABLE {db}.spare")[0][1] == spare_before
    assert scratch_server.query(f"SELECT COUNT(*) FROM {db}.spare") == [(0,)]
    assert scratch_server.query(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME IN ('tmp', 'copy')",
        (db,),
    ) == [(0,)]
    assert snapshot(scratch_server, [f"{db}.t"]) == state_before


REFUSED = {
    # (DDL in the range, what the refusal names)
    "table-with-rows": ("DROP TABLE {db}.other", "DROP TABLE: the table had rows"),
    "engine": ("ALTER TABLE {db}.t ENGINE=MyISAM", "ENGINE=MyISAM: the table's engine before it is not in"),
    "comment": ("ALTER TABLE {db}.t COMMENT='why'", "COMMENT='why': the table's comment before it is not in"),
    "default": ("ALTER TABLE {db}.t ALTER COLUMN a SET DEFAULT 5", "ALTER COLUMN a SET DEFAULT 5"),
    "foreign-key": (
        "ALTER TABLE {db}.t ADD CONSTRAINT fk FOREIGN KEY (a) REFERENCES {db}.other (id)",
        "FOREIGN KEY",
    ),
}


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_reverse_refuses_what_it_cannot_put_back_naming_it(scratch_server, tmp_path, kind):
    db = f"ddl_reverse_refused_{kind.replace('-', '_')}"
    ddl, named = REFUSED[kind]
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}", CREATE.format(db=db)])
    scratch_server.run_sql(
        [
            ROWS.format(db=db),
            f"CREATE TABLE {db}.other (id INT PRIMARY KEY)",
            f"INSERT INTO {db}.other VALUES (10), (20), (30)",
        ]
    )
    first = scratch_server.run_sql([f"DELETE FROM {db}.t WHERE id = 2"])
    scratch_server.run_sql([ddl.format(db=db)])
    last = scratch_server.run_sql([f"UPDATE {db}.t SET b = 'x' WHERE id = 1"])
    with pytest.raises(DDLInRange) as refused:
        flashback(scratch_server, span(scratch_server, first, last), tmp_path, ddl="reverse")
    message = str(refused.value)
    assert named in message and "--ddl reverse" in message and "mysql-bin." in message, message
    assert not (tmp_path / "rollback.render.sql").exists()


def test_reverse_refuses_a_modify_whose_old_definition_the_binlog_read_lacks(
    scratch_server_factory, tmp_path
):
    """The CREATE TABLE lies in an earlier binlog file: the old default and comment are nowhere read,
    so the MODIFY is refused, not put back approximately (even with signedness in the table maps)."""
    scratch_server = scratch_server_factory(row_metadata="MINIMAL")
    db = "ddl_reverse_modify_unknown"
    rng, _before = _incident(scratch_server, db, create_elsewhere=True)
    scratch_server.run_sql([f"ALTER TABLE {db}.t MODIFY a BIGINT"])
    last = scratch_server.run_sql([f"UPDATE {db}.t SET a = 1 WHERE id = 1"])
    with pytest.raises(DDLInRange) as refused:
        flashback(scratch_server, span(scratch_server, rng, last), tmp_path, ddl="reverse")
    assert "MODIFY/CHANGE COLUMN `a`: its definition before it is not in the binlog read" in str(
        refused.value
    )
