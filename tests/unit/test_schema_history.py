"""rollback.schema.history: a table's definitions rebuilt backwards from the schema source (the anchor)
through the DDL, with the table maps settling what a DDL alone cannot say; and the --ddl keep mapping
of old definitions onto today's table (rollback.job.ddl_modes)."""

from __future__ import annotations

from rollback.binlog.constants import ColumnType as T
from rollback.binlog.table_map import TableMap
from rollback.job.ddl_modes import _keep, _lossy
from rollback.schema.history import (
    BEFORE_RANGE,
    DdlEvent,
    Timeline,
    build_timeline,
    fill_from_creates,
    forward_timeline,
)
from rollback.schema.tables import Column, TableSchema, parse_ddl

TYPES = {"int": (T.LONG, 0), "bigint": (T.LONGLONG, 0), "varchar": (T.VARCHAR, 80), "date": (T.DATE, 0)}


def _today(ddl: str) -> TableSchema:
    (schema,) = parse_ddl(ddl, "db")
    return schema


def _map(name: str, *types: str) -> TableMap:
    codes = bytes(TYPES[t][0] for t in types)
    return TableMap(1, 1, "db", name, codes, tuple(TYPES[t][1] for t in types), (True,) * len(types))


def _events(*statements: str) -> list[DdlEvent]:
    return [
        DdlEvent((0, 1000 * (i + 1)), f"mysql-bin.000001:{1000 * (i + 1)}", s, "db")
        for i, s in enumerate(statements)
    ]


def _timeline(
    today: str, statements: list[str], maps: list[tuple[int, TableMap]], seen: str = "t"
) -> Timeline:
    anchor = _today(today)
    events = _events(*statements)

    def maps_between(name, lo, hi):
        return [m for pos, m in maps if m.table == name[1] and lo <= (0, pos) < hi]

    return build_timeline(
        ("db", seen), (0, maps[0][0]) if maps else (0, 0), lambda d, t: anchor, events, maps_between
    )


def _names(timeline: Timeline) -> list[tuple[str, ...] | None]:
    return [e.schema.names if e.schema else None for e in timeline.epochs]


def test_add_column_is_undone_and_today_names_follow_renames():
    timeline = _timeline(
        "CREATE TABLE t (id INT PRIMARY KEY, amount BIGINT, d INT NOT NULL DEFAULT 7, b VARCHAR(20))",
        [
            "ALTER TABLE t ADD COLUMN d INT NOT NULL DEFAULT 7 AFTER a",
            "ALTER TABLE t RENAME COLUMN a TO amount",
            "ALTER TABLE t MODIFY amount BIGINT",
        ],
        [(500, _map("t", "int", "int", "varchar"))],
    )
    assert _names(timeline) == [
        ("id", "a", "b"),
        ("id", "a", "d", "b"),
        ("id", "amount", "d", "b"),
        ("id", "amount", "d", "b"),
    ]
    first = timeline.epochs[0]
    assert first.start == BEFORE_RANGE and first.today == ["id", "amount", "b"]
    assert first.schema is not None and first.schema.primary_key == (0,)
    assert timeline.epochs[2].schema.columns[1].data_type == ""  # type: ignore[union-attr] # before MODIFY: the map says
    assert timeline.at((0, 1500)) is timeline.epochs[1]


def test_rename_table_backwards_gives_the_old_name():
    timeline = _timeline(
        "CREATE TABLE t2 (id INT PRIMARY KEY, a INT)",
        ["RENAME TABLE t TO t2"],
        [(500, _map("t", "int", "int"))],
    )
    assert timeline.anchor == ("db", "t2")
    assert [e.name for e in timeline.epochs] == [("db", "t"), ("db", "t2")]


def test_dropped_column_is_placed_where_the_table_map_types_fit():
    timeline = _timeline(
        "CREATE TABLE t (id INT PRIMARY KEY, b VARCHAR(20))",
        ["ALTER TABLE t DROP COLUMN c"],
        [(500, _map("t", "int", "date", "varchar"))],
    )
    assert _names(timeline)[0] == ("id", "c", "b")
    assert timeline.epochs[0].today == ["id", None, "b"]


def test_dropped_column_that_fits_two_places_is_unknown_naming_the_ddl():
    timeline = _timeline(
        "CREATE TABLE t (id INT PRIMARY KEY, a INT)",
        ["ALTER TABLE t DROP COLUMN c"],
        [(500, _map("t", "int", "int", "int"))],
    )
    first = timeline.epochs[0]
    assert first.schema is None
    assert "DROP COLUMN c" in first.problem and "mysql-bin.000001:1000" in first.problem
    assert "--schema-file" in first.problem


def test_reordered_column_goes_back_to_where_the_map_puts_it():
    timeline = _timeline(
        "CREATE TABLE t (b VARCHAR(20), id INT PRIMARY KEY, c DATE)",
        ["ALTER TABLE t MODIFY b VARCHAR(20) FIRST"],
        [(500, _map("t", "int", "varchar", "date"))],
    )
    assert _names(timeline) == [("id", "b", "c"), ("b", "id", "c")]
    assert timeline.epochs[0].today == ["id", "b", "c"]


def test_unreadable_ddl_on_the_table_makes_what_was_before_it_unknown():
    timeline = _timeline(
        "CREATE TABLE t (id INT PRIMARY KEY, a INT)",
        ["ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4", "ALTER TABLE other ADD COLUMN z INT"],
        [(500, _map("t", "int", "int"))],
    )
    first = timeline.epochs[0]
    assert first.schema is None
    assert "mysql-bin.000001:1000" in first.problem and "CONVERT TO CHARACTER SET" in first.problem
    assert len(timeline.epochs) == 2  # the DDL on another table is no boundary


def test_create_table_in_the_range_ends_the_past():
    timeline = _timeline(
        "CREATE TABLE t (id INT PRIMARY KEY)",
        ["CREATE TABLE t (id INT PRIMARY KEY)"],
        [(1500, TableMap(1, 1, "db", "t", bytes([T.LONG]), (0,), (False,)))],
    )
    assert timeline.epochs[0].schema is None and not timeline.epochs[0].problem
    assert timeline.to_dict()["epochs"][0]["definition"] == "(no such table)"


def test_keep_maps_an_old_definition_onto_todays_table():
    """A map written between the MODIFY and the DROP settles where the dropped column was; the old
    definition then maps onto today's renamed table by column lineage."""
    timeline = _timeline(
        "CREATE TABLE t2 (id INT PRIMARY KEY, amount BIGINT, d INT NOT NULL DEFAULT 7, b VARCHAR(200))",
        [
            "ALTER TABLE t ADD COLUMN d INT NOT NULL DEFAULT 7 AFTER a",
            "ALTER TABLE t CHANGE a amount BIGINT",
            "ALTER TABLE t MODIFY b VARCHAR(200)",
            "ALTER TABLE t DROP COLUMN c",
            "RENAME TABLE t TO t2",
        ],
        [
            (500, _map("t", "int", "int", "date", "varchar")),
            (3500, _map("t", "int", "bigint", "int", "date", "varchar")),
        ],
    )
    tmap = _map("t", "int", "int", "date", "varchar")
    epoch = timeline.epochs[0]
    assert epoch.schema is not None and epoch.schema.names == ("id", "a", "c", "b")
    assert timeline.at((0, 3500)).schema.names == ("id", "amount", "d", "c", "b")  # type: ignore[union-attr]
    kept = _keep(timeline, epoch, epoch.schema, tmap, "db.t at position 500")
    assert isinstance(kept, TableSchema)
    assert (kept.database, kept.table) == ("db", "t2")
    assert kept.names == ("id", "amount", "c", "b")
    assert [c.dropped for c in kept.columns] == [False, False, True, False]
    assert kept.primary_key == (0,)


def test_keep_refuses_a_narrowing_type_change():
    assert _lossy(T.LONGLONG, 0, False, Column("a", "int")) != ""
    assert _lossy(T.LONG, 0, False, Column("a", "bigint")) == ""
    assert _lossy(T.LONG, 0, True, Column("a", "int", unsigned=False)) != ""
    assert _lossy(T.LONG, 0, True, Column("a", "bigint", unsigned=False)) == ""
    assert _lossy(T.VARCHAR, 800, False, Column("b", "varchar", column_type="varchar(20)")) != ""
    assert _lossy(T.VARCHAR, 80, False, Column("b", "varchar", column_type="varchar(200)")) == ""
    assert "integer" in _lossy(T.LONG, 0, False, Column("a", "varchar", column_type="varchar(20)"))
    assert "signed" in _lossy(T.LONG, 0, False, Column("a", "bigint", unsigned=True))
    assert _lossy(T.DATETIME2, 0, False, Column("a", "date")) != ""
    assert _lossy(T.DATETIME2, 0, False, Column("a", "datetime")) == ""
    assert _lossy(T.VARCHAR, 80, False, Column("b", "text")) == ""
    assert "latin1" in _lossy(T.VARCHAR, 80, False, Column("b", "varchar", charset="latin1"), "utf8mb4")
    assert _lossy(T.VARCHAR, 80, False, Column("b", "varchar", charset="utf8mb4"), "latin1") == ""


def test_the_history_built_forward_follows_keys_as_the_server_names_and_rewrites_them():
    events = _events(
        "CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(3), KEY (a, b), UNIQUE KEY u (b))",
        "ALTER TABLE t ADD INDEX (a)",  # the server names it a_2: `a` is taken
        "ALTER TABLE t CHANGE b bb VARCHAR(9) DEFAULT 'x' COMMENT 'c'",
        "ALTER TABLE t DROP COLUMN a",  # gone from every key; a key left with no column is dropped
    )
    forward = forward_timeline(0, events)
    assert forward is not None
    keys = [e.schema.keys if e.schema else None for e in forward.epochs[1:]]
    assert keys[0] == {"primary": "PRIMARY KEY (id)", "a": "INDEX `a` (a, b)", "u": "UNIQUE u (b)"}
    assert keys[1] is not None and keys[1]["a_2"] == "INDEX `a_2` (a)"
    assert keys[2] is not None and keys[2]["a"] == "INDEX `a` (a, `bb`)" and keys[2]["u"] == "UNIQUE u (`bb`)"
    assert keys[3] == {"primary": "PRIMARY KEY (id)", "a": "INDEX `a` (`bb`)", "u": "UNIQUE u (`bb`)"}
    columns = forward.epochs[3].schema.columns if forward.epochs[3].schema else []
    assert [(c.name, c.definition) for c in columns] == [
        ("id", "INT"),
        ("a", "INT"),
        ("bb", "VARCHAR(9) DEFAULT 'x' COMMENT 'c'"),
    ]


def test_definitions_walked_back_from_the_anchor_are_completed_from_a_create_table():
    """The anchor (information_schema) has no defaults or comments; the CREATE TABLE does, and the MODIFY
    in the range leaves the column's old type to the history built forward."""
    statements = [
        "CREATE TABLE t (id INT PRIMARY KEY, a INT DEFAULT 5 COMMENT 'five')",
        "ALTER TABLE t MODIFY a BIGINT",
    ]
    timeline = _timeline(
        "CREATE TABLE t (id int NOT NULL, a bigint DEFAULT NULL, PRIMARY KEY (id))",
        statements,
        [(1500, _map("t", "int", "int")), (2500, _map("t", "int", "bigint"))],
    )
    fill_from_creates(timeline, _events(*statements))
    before = timeline.at((0, 1500)).schema
    assert before is not None and [(c.name, c.data_type, c.definition) for c in before.columns] == [
        ("id", "int", "INT"),
        ("a", "int", "INT DEFAULT 5 COMMENT 'five'"),
    ]
    assert before.keys == {"primary": "PRIMARY KEY (id)"}
