"""rollback.schema.operations: every DDL form the schema history reads, statement -> operations (sqlglot's MySQL
dialect underneath), and what it refuses to guess."""

from __future__ import annotations

import pytest

from rollback.schema.operations import (
    AddColumn,
    AddKey,
    AlterTable,
    CreateTable,
    DropColumn,
    DropDatabase,
    DropKey,
    DropTable,
    KeepColumns,
    ModifyColumn,
    Position,
    RenameColumn,
    RenameTable,
    TableOptions,
    TruncateTable,
    Unparsed,
    parse_ddl_ops,
)


def _alter(sql: str, db: str = "db"):
    ops = parse_ddl_ops(sql, db)
    assert len(ops) == 1 and isinstance(ops[0], AlterTable), ops
    return ops[0]


@pytest.mark.parametrize(
    ("sql", "table", "name", "type_", "position", "extra"),
    [
        (
            "ALTER TABLE t ADD COLUMN c INT NOT NULL DEFAULT 5 AFTER b",
            ("db", "t"),
            "c",
            "int",
            Position(after="b"),
            {"nullable": False},
        ),
        (
            "ALTER TABLE t ADD c BIGINT UNSIGNED FIRST",
            ("db", "t"),
            "c",
            "bigint",
            Position(first=True),
            {"unsigned": True},
        ),
        (
            "alter table `x`.`T` add column `we``ird` varchar(10) character set latin1 default 'a,b'",
            ("x", "t"),
            "we`ird",
            "varchar",
            Position(),
            {"charset": "latin1"},
        ),
        (
            "ALTER TABLE t ADD COLUMN g INT AS (a + 1) VIRTUAL",
            ("db", "t"),
            "g",
            "int",
            Position(),
            {"generated": True},
        ),
        (
            "ALTER TABLE t ADD COLUMN g INT GENERATED ALWAYS AS (a * 2) STORED",
            ("db", "t"),
            "g",
            "int",
            Position(),
            {"generated": True},
        ),
        (
            "ALTER TABLE t ADD COLUMN h INT INVISIBLE",
            ("db", "t"),
            "h",
            "int",
            Position(),
            {"invisible": True},
        ),
        (
            "ALTER TABLE t ADD COLUMN e ENUM('a','B') DEFAULT 'a'",
            ("db", "t"),
            "e",
            "enum",
            Position(),
            {"enum_values": ("a", "B")},
        ),
        ("ALTER ONLINE TABLE t ADD COLUMN c INT", ("db", "t"), "c", "int", Position(), {}),
        ("ALTER IGNORE TABLE t ADD COLUMN c INT", ("db", "t"), "c", "int", Position(), {}),
        ("ALTER TABLE IF EXISTS t ADD COLUMN IF NOT EXISTS c INT", ("db", "t"), "c", "int", Position(), {}),
        ("/*!80013 ALTER TABLE t ADD COLUMN c INT */", ("db", "t"), "c", "int", Position(), {}),
        (
            "/*M!100301 ALTER TABLE t ADD COLUMN c INT AFTER a */",
            ("db", "t"),
            "c",
            "int",
            Position(after="a"),
            {},
        ),
        (
            "ALTER TABLE t ALGORITHM=INPLACE, LOCK=NONE, ADD COLUMN c INT",
            ("db", "t"),
            "c",
            "int",
            Position(),
            {},
        ),
    ],
)
def test_add_column_forms(sql, table, name, type_, position, extra):
    op = _alter(sql)
    assert op.table == table
    (action,) = op.actions
    assert isinstance(action, AddColumn)
    assert (action.column.name, action.column.data_type, action.position) == (name, type_, position)
    for attribute, value in extra.items():
        assert getattr(action.column, attribute) == value


def test_add_column_keeps_the_definition_as_the_alter_gave_it():
    (action,) = _alter("ALTER TABLE t ADD COLUMN d INT NOT NULL DEFAULT 7 AFTER a").actions
    assert isinstance(action, AddColumn) and action.definition == "d INT NOT NULL DEFAULT 7"


def test_drop_modify_change_rename_column():
    op = _alter(
        "ALTER TABLE t DROP COLUMN a, DROP b, MODIFY c BIGINT NOT NULL AFTER d, CHANGE e f TEXT FIRST, RENAME COLUMN g TO H"
    )
    drop_a, drop_b, modify, change, rename = op.actions
    assert (drop_a, drop_b) == (DropColumn("a"), DropColumn("b"))
    assert isinstance(modify, ModifyColumn) and (modify.old, modify.column.name, modify.position) == (
        "c",
        "c",
        Position(after="d"),
    )
    assert modify.column.data_type == "bigint" and not modify.column.nullable
    assert isinstance(change, ModifyColumn) and (change.old, change.column.name, change.position) == (
        "e",
        "f",
        Position(first=True),
    )
    assert rename == RenameColumn("g", "H")


def test_modify_without_position_keeps_the_place():
    (action,) = _alter("ALTER TABLE t MODIFY COLUMN c VARCHAR(200)").actions
    assert (
        isinstance(action, ModifyColumn)
        and action.position is None
        and action.column.column_type == "varchar(200)"
    )


@pytest.mark.parametrize(
    "sql",
    [
        "ALTER TABLE t DROP FOREIGN KEY f",
        "ALTER TABLE t ALTER COLUMN c SET DEFAULT 3",
        "ALTER TABLE t FORCE",
        "CREATE UNIQUE INDEX i ON t (a, b(3) DESC)",
    ],
)
def test_option_changes_keep_the_columns_and_name_themselves(sql):
    op = _alter(sql)
    assert op.table == ("db", "t") and all(isinstance(a, KeepColumns) and a.what for a in op.actions)


@pytest.mark.parametrize(
    "sql, action",
    [
        ("ALTER TABLE t ADD INDEX i (a)", AddKey("i", "a", "INDEX i (a)")),
        ("ALTER TABLE t ADD UNIQUE KEY u (a, b)", AddKey("u", "a", "UNIQUE u (a, b)")),
        ("ALTER TABLE t ADD UNIQUE (b)", AddKey(None, "b", "UNIQUE (b)")),
        ("ALTER TABLE t ADD PRIMARY KEY (a)", AddKey("primary", "a", "PRIMARY KEY (a)")),
        ("ALTER TABLE t ADD CONSTRAINT c2 UNIQUE (a)", AddKey("c2", "a", "UNIQUE `c2` (a)")),
        ("ALTER TABLE t DROP PRIMARY KEY", DropKey("primary")),
        ("ALTER TABLE t DROP INDEX I", DropKey("i")),
        ("ALTER TABLE t DROP KEY i", DropKey("i")),
        ("CREATE INDEX i ON t (a, b)", AddKey("i", "a", "INDEX i (a, b)")),
        ("CREATE UNIQUE INDEX i ON t (a)", AddKey("i", "a", "UNIQUE INDEX i (a)")),
        ("DROP INDEX i ON t", DropKey("i")),
    ],
)
def test_key_changes_are_read_with_their_names_and_definitions(sql, action):
    op = _alter(sql)
    assert op.table == ("db", "t") and op.actions == [action]


def test_table_options_are_read_by_kind_with_their_text():
    assert _alter("ALTER TABLE t ENGINE=Aria, COMMENT 'x', ALGORITHM=INPLACE").actions == [
        TableOptions((("engine", "ENGINE=Aria"), ("comment", "COMMENT='x'")))
    ]
    (create,) = parse_ddl_ops(
        "CREATE TABLE t (a INT) ENGINE=InnoDB DEFAULT CHARSET=latin1 COLLATE=latin1_bin", "db"
    )
    assert isinstance(create, CreateTable) and create.options == (
        ("engine", "ENGINE=InnoDB"),
        ("charset", "DEFAULT CHARACTER SET=latin1"),
        ("collate", "COLLATE=latin1_bin"),
    )


def test_create_table_keeps_each_columns_definition_and_the_keys_as_the_server_names_them():
    (create,) = parse_ddl_ops(
        "CREATE TABLE t (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, b VARCHAR(3) CHARACTER SET latin1 "
        "COLLATE latin1_bin DEFAULT 'x' COMMENT 'it''s' UNIQUE, c DECIMAL(10,2) UNSIGNED, KEY ix (b), "
        "UNIQUE KEY (c), KEY (b, c)) ENGINE=InnoDB",
        "db",
    )
    assert isinstance(create, CreateTable) and create.columns is not None
    assert [c.definition for c in create.columns] == [
        "INT NOT NULL AUTO_INCREMENT",
        "VARCHAR(3) CHARACTER SET latin1 COLLATE latin1_bin DEFAULT 'x' COMMENT 'it''s'",
        "DECIMAL(10, 2) UNSIGNED",
    ]
    assert create.keys == {
        "primary": "PRIMARY KEY (id)",
        "b": "UNIQUE `b` (b)",
        "ix": "INDEX ix (b)",
        "c": "UNIQUE `c` (c)",
        "b_2": "INDEX `b_2` (b, c)",
    }


def test_a_modified_columns_definition_is_kept_without_its_place():
    (op,) = parse_ddl_ops(
        "ALTER TABLE t CHANGE b bb ENUM('a','B') CHARSET utf8mb4 NOT NULL DEFAULT 'B' COMMENT 'c' FIRST", "db"
    )
    assert isinstance(op, AlterTable)
    (action,) = op.actions
    assert isinstance(action, ModifyColumn) and action.position == Position(first=True)
    assert action.column.definition == "ENUM('a', 'B') CHARACTER SET utf8mb4 NOT NULL DEFAULT 'B' COMMENT 'c'"


def test_tables_created_dropped_renamed_truncated():
    assert parse_ddl_ops("RENAME TABLE a TO b, other.c TO `d`", "db") == [
        RenameTable(("db", "a"), ("db", "b")),
        RenameTable(("other", "c"), ("db", "d")),
    ]
    assert parse_ddl_ops("ALTER TABLE a RENAME TO x.b", "db") == [RenameTable(("db", "a"), ("x", "b"))]
    add_then_rename = parse_ddl_ops("ALTER TABLE a ADD COLUMN z INT, RENAME TO b", "db")
    assert isinstance(add_then_rename[0], AlterTable) and add_then_rename[1] == RenameTable(
        ("db", "a"), ("db", "b")
    )
    assert parse_ddl_ops("DROP TABLE IF EXISTS a, x.b /* generated by server */", "db") == [
        DropTable(("db", "a")),
        DropTable(("x", "b")),
    ]
    assert parse_ddl_ops("TRUNCATE TABLE t", "db") == [TruncateTable(("db", "t"))]
    assert parse_ddl_ops("TRUNCATE t", "db") == [TruncateTable(("db", "t"))]
    assert parse_ddl_ops("DROP DATABASE IF EXISTS `Shop`", "db") == [DropDatabase("shop")]
    (create,) = parse_ddl_ops(
        "CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY, v VARCHAR(10) NOT NULL, UNIQUE KEY (v))", "db"
    )
    assert isinstance(create, CreateTable) and create.table == ("db", "t")
    assert [c.name for c in create.columns or []] == ["id", "v"] and create.primary_key == (0,)
    (like,) = parse_ddl_ops("CREATE TABLE t2 LIKE t", "db")
    assert isinstance(like, CreateTable) and like.columns is None
    (replaced,) = parse_ddl_ops("CREATE OR REPLACE TABLE t (a INT)", "db")
    assert isinstance(replaced, CreateTable) and replaced.replace


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE VIEW v AS SELECT 1",
        "CREATE DATABASE x",
        "GRANT SELECT ON *.* TO u",
        "DROP TRIGGER tr",
        "CREATE USER u",
    ],
)
def test_statements_on_no_table_give_nothing(sql):
    assert parse_ddl_ops(sql, "db") == []


@pytest.mark.parametrize(
    "sql",
    [
        "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4",
        "ALTER TABLE t PARTITION BY HASH(a) PARTITIONS 4",
        "ALTER TABLE t ADD COLUMN (a INT, b INT)",
        "ALTER TABLE t EXCHANGE PARTITION p WITH TABLE u",
    ],
)
def test_what_the_parser_cannot_read_is_unparsed_never_a_guess(sql):
    ops = parse_ddl_ops(sql, "db")
    assert len(ops) == 1 and isinstance(ops[0], Unparsed) and ops[0].reason
