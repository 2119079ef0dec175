"""parse_ddl on SHOW CREATE TABLE output (MariaDB 10.11 and MySQL 8 as they print it), and check_schema."""

from __future__ import annotations

import pytest

from rollback.base.errors import SchemaMismatch
from rollback.binlog.constants import ColumnType as T
from rollback.binlog.table_map import TableMap
from rollback.schema.tables import Column, SchemaResolver, StaticSchema, TableSchema, check_schema, parse_ddl

# Printed by MariaDB 10.11 for the restore proof's table of every type (tests/server/test_flashback_workloads.py).
MARIADB_TYPES = """CREATE TABLE `keyed` (
  `id` int(11) NOT NULL,
  `tiu` tinyint(3) unsigned DEFAULT NULL,
  `d52` decimal(5,2) unsigned DEFAULT NULL,
  `f` float DEFAULT NULL,
  `ts` timestamp NULL DEFAULT NULL,
  `ch` char(10) DEFAULT NULL,
  `l1` varchar(20) CHARACTER SET latin1 COLLATE latin1_swedish_ci DEFAULT NULL,
  `cyr` varchar(10) CHARACTER SET cp1251 COLLATE cp1251_general_ci DEFAULT NULL,
  `u16` varchar(10) CHARACTER SET utf16 COLLATE utf16_general_ci DEFAULT NULL,
  `bin` binary(6) DEFAULT NULL,
  `vb` varbinary(40) DEFAULT NULL,
  `tx` text DEFAULT NULL,
  `bl` blob DEFAULT NULL,
  `e` enum('a','b','c d','it''s') DEFAULT NULL,
  `st` set('x','y','z?','w') DEFAULT NULL,
  `j` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`j`)),
  `g` geometry DEFAULT NULL,
  `ip` inet6 DEFAULT NULL,
  `uu` uuid DEFAULT NULL,
  `gv` int(11) GENERATED ALWAYS AS (`i` + 1) VIRTUAL,
  `gp` varchar(330) GENERATED ALWAYS AS (concat(ifnull(`vc`,'-'),'!')) STORED,
  `inv` int(11) INVISIBLE DEFAULT 7,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"""

MARIADB_LATIN1 = """CREATE TABLE `l1` (
  `a` varchar(5) DEFAULT NULL,
  `b` text CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci DEFAULT NULL,
  `c` char(2) CHARACTER SET latin1 COLLATE latin1_bin DEFAULT NULL,
  `odd ``q` int(11) NOT NULL,
  PRIMARY KEY (`odd ``q`)
) ENGINE=InnoDB DEFAULT CHARSET=latin1 COLLATE=latin1_swedish_ci"""

MARIADB_GENERATED = """CREATE TABLE `gen` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `x` int(11) NOT NULL,
  `y` int(11) GENERATED ALWAYS AS (`x` * 2) STORED,
  `z` int(11) GENERATED ALWAYS AS (`x` + 1) VIRTUAL INVISIBLE,
  PRIMARY KEY (`id`),
  UNIQUE KEY `uq` (`x`,`id`),
  KEY `x` (`x`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"""

# MySQL 8.0 prints invisible columns in a versioned comment, a column collation without its charset,
# functional key parts in double parentheses and a generated invisible primary key (GIPK).
MYSQL8 = """CREATE TABLE `orders` (
  `my_row_id` bigint unsigned NOT NULL AUTO_INCREMENT /*!80023 INVISIBLE */,
  `code` varchar(12) COLLATE utf8mb4_bin NOT NULL,
  `note` varchar(50) DEFAULT 'NOT NULL, (really)',
  `total` decimal(10,2) NOT NULL,
  `doc` json DEFAULT NULL,
  `secret` int DEFAULT NULL /*!80023 INVISIBLE */,
  `total_x2` decimal(11,2) GENERATED ALWAYS AS ((`total` * 2)) VIRTUAL,
  PRIMARY KEY (`my_row_id`),
  UNIQUE KEY `fn` ((abs(`total`))),
  UNIQUE KEY `code_prefix` (`code`(4)),
  UNIQUE KEY `code` (`code`),
  KEY `note` (`note`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci"""


def one(text: str, database: str = "db") -> TableSchema:
    schemas = parse_ddl(text, database)
    assert len(schemas) == 1
    return schemas[0]


def by_name(schema: TableSchema) -> dict[str, Column]:
    return {c.name: c for c in schema.columns}


def test_mariadb_show_create_table_of_every_type():
    schema = one(MARIADB_TYPES)
    assert (schema.database, schema.table, schema.source) == ("db", "keyed", "ddl")
    cols = by_name(schema)
    assert list(cols)[:3] == ["id", "tiu", "d52"] and len(cols) == 22
    assert schema.primary_key == (0,) and schema.row_key == (0,)
    assert [c.name for c in schema.columns if c.unsigned] == ["tiu", "d52"]
    assert [c.name for c in schema.columns if c.generated] == ["gv", "gp"]
    assert [c.name for c in schema.columns if c.invisible] == ["inv"]
    assert not cols["id"].nullable and cols["ts"].nullable and cols["gv"].nullable
    assert cols["e"].enum_values == ("a", "b", "c d", "it's") and cols["e"].set_values is None
    assert cols["st"].set_values == ("x", "y", "z?", "w")
    charsets = {n: c.charset for n, c in cols.items()}
    assert charsets["ch"] == "utf8mb4"  # the table's default: SHOW CREATE TABLE leaves it out
    assert charsets["tx"] == charsets["e"] == charsets["j"] == charsets["gp"] == "utf8mb4"
    assert (charsets["l1"], charsets["cyr"], charsets["u16"]) == ("latin1", "cp1251", "utf16")
    assert charsets["bin"] == charsets["vb"] == charsets["bl"] == "binary"
    assert charsets["id"] is None and charsets["f"] is None and charsets["g"] is None
    assert (cols["j"].data_type, cols["ip"].data_type, cols["uu"].data_type) == ("longtext", "inet6", "uuid")


def test_table_default_charset_quoted_names_and_collation_only_columns():
    schema = one(MARIADB_LATIN1)
    cols = by_name(schema)
    assert list(cols) == ["a", "b", "c", "odd `q"]
    assert [c.charset for c in schema.columns] == ["latin1", "utf8mb4", "latin1", None]
    assert schema.primary_key == (3,)


def test_generated_and_invisible_columns_and_keys():
    schema = one(MARIADB_GENERATED)
    cols = by_name(schema)
    assert [c.name for c in schema.columns if c.generated] == ["y", "z"]
    assert [c.name for c in schema.columns if c.invisible] == ["z"]
    assert schema.primary_key == (0,) and schema.unique_keys == [(1, 0)]
    assert cols["id"].unsigned and not cols["x"].nullable


def test_mysql8_invisible_comments_collations_functional_and_prefix_keys():
    schema = one(MYSQL8)
    cols = by_name(schema)
    assert [c.name for c in schema.columns if c.invisible] == ["my_row_id", "secret"]
    assert [c.name for c in schema.columns if c.generated] == ["total_x2"]
    assert cols["code"].charset == "utf8mb4" and cols["note"].charset == "utf8mb4"
    assert cols["note"].nullable  # 'NOT NULL' inside its default string is not a constraint
    assert cols["doc"].data_type == "json"
    assert schema.primary_key == (0,)
    # The functional key and the prefix key cannot identify a row by column values: only `code` counts.
    assert schema.unique_keys == [(1,)]


def test_keys_inline_nullable_unique_and_the_shortest_not_null_unique():
    schema = one(
        """CREATE TABLE t (
            a INT NULL, b INT NOT NULL, c VARCHAR(5) NOT NULL UNIQUE, d INT NOT NULL,
            UNIQUE KEY (a), UNIQUE KEY wide (b, d), INDEX (d)
        )"""
    )
    assert schema.primary_key == ()
    assert schema.unique_keys == [(2,), (1, 3)]  # `a` is nullable: not a row key
    assert schema.row_key == (2,)
    pk = one("CREATE TABLE p (id INT PRIMARY KEY, v INT)")
    assert pk.primary_key == (0,) and not pk.columns[0].nullable
    none = one("CREATE TABLE n (a INT, b TEXT, UNIQUE KEY (a))")
    assert none.row_key == () and none.unique_keys == []


def test_several_statements_qualified_names_comments_and_lookup():
    text = f"""
    -- the schema at the incident's time
    /* two databases */
    CREATE TABLE IF NOT EXISTS `shop`.`orders` (id INT PRIMARY KEY, total DECIMAL(10,2));
    CREATE TABLE shop.`odd ``table` (`x;y` INT, `(z)` VARCHAR(3)) DEFAULT CHARSET=latin1;
    {MARIADB_GENERATED};
    CREATE TABLE copy LIKE gen;
    """
    schemas = parse_ddl(text, "main")
    assert [(s.database, s.table) for s in schemas] == [
        ("shop", "orders"),
        ("shop", "odd `table"),
        ("main", "gen"),
    ]
    odd = schemas[1]
    assert odd.names == ("x;y", "(z)") and odd.columns[1].charset == "latin1"
    static = StaticSchema(schemas)
    found = static.lookup("SHOP", "ORDERS")
    assert found is not None and found.table == "orders"
    assert static.lookup("main", "gen") is schemas[2]
    assert static.lookup("other", "orders") is None


def test_enum_and_set_members_with_parentheses_commas_quotes_and_backslashes():
    schema = one(
        r"CREATE TABLE t (e ENUM('a)', 'b,c', 'it''s', 'back\\slash', ''), s SET('(', ')') NOT NULL)"
    )
    assert schema.columns[0].enum_values == ("a)", "b,c", "it's", "back\\slash", "")
    assert schema.columns[1].set_values == ("(", ")") and not schema.columns[1].nullable


def _table_map(types: bytes, meta: tuple[int, ...]) -> TableMap:
    return TableMap(7, 1, "db", "t", types, meta, (True,) * len(types))


def test_check_schema_names_table_and_position_when_the_column_count_differs():
    tmap = _table_map(bytes([T.LONG, T.VARCHAR]), (0, 40))
    schema = one("CREATE TABLE t (id INT, name VARCHAR(10), extra INT)")
    with pytest.raises(
        SchemaMismatch, match=r"table db\.t at position 1234: the binlog has 2 columns, the ddl schema has 3"
    ):
        check_schema(schema, tmap, 1234)
    with pytest.raises(SchemaMismatch, match=r"db\.t at position 99"):
        SchemaResolver(StaticSchema([schema])).resolve(tmap, 99)


def test_check_schema_names_the_column_whose_type_differs():
    tmap = _table_map(bytes([T.LONG, T.VARCHAR]), (0, 40))
    schema = one("CREATE TABLE t (id INT, name DATETIME)")
    with pytest.raises(
        SchemaMismatch, match=r"column 2 `name` is datetime in the ddl schema but type code 15"
    ):
        check_schema(schema, tmap, 5)
    check_schema(one("CREATE TABLE t (id INT, name VARCHAR(10))"), tmap, 5)  # agrees: no error


def test_inline_key_shorthands():
    schema = one("CREATE TABLE k (a INT NOT NULL UNIQUE KEY, b INT KEY, c INT COMMENT 'primary key')")
    assert schema.primary_key == (1,) and schema.unique_keys == [(0,)]
    assert schema.columns[2].nullable
