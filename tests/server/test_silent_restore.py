"""Issue 25's classes of a rollback that is silently wrong, each restored exactly (by checksum, through the
`mariadb` client and through --execute) or refused before anything is written."""

from __future__ import annotations

import pytest

from rollback.schema import schema_from_file
from tests.support.restore import restore_both_ways

# ---- class 2: columns the server stamps on every update ------------------------------------------------

STAMPED = {
    "ts": "CREATE TABLE {db}.ts (id INT PRIMARY KEY, a INT, "
    "t TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP)",
    "ts6": "CREATE TABLE {db}.ts6 (id INT PRIMARY KEY, a INT, "
    "t TIMESTAMP(6) NULL DEFAULT NULL ON UPDATE CURRENT_TIMESTAMP(6))",
    "dt3": "CREATE TABLE {db}.dt3 (id INT PRIMARY KEY, a INT, t DATETIME(3) ON UPDATE CURRENT_TIMESTAMP(3))",
    # keyless: the WHERE compares every column, the stamp included
    "nokey": "CREATE TABLE {db}.nokey (id INT, a INT, t DATETIME(6) DEFAULT NOW(6) ON UPDATE NOW(6), "
    "u TIMESTAMP(2) NULL ON UPDATE CURRENT_TIMESTAMP(2))",
    # explicit_defaults_for_timestamp=OFF: the first TIMESTAMP gets DEFAULT and ON UPDATE without asking
    "implicit": "CREATE TABLE {db}.implicit (id INT PRIMARY KEY, a INT, t TIMESTAMP)",
}
FROZEN = "SET timestamp = 1700000000.654321"  # NOW() of the incident's session


@pytest.mark.parametrize("schema", ["server", "file"])
@pytest.mark.parametrize("explicit", ["ON", "OFF"])
def test_a_reverse_update_sets_the_columns_the_server_stamps(scratch_server, tmp_path, explicit, schema):
    db = f"stamped_{explicit.lower()}_{schema}"
    server = scratch_server
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"SET SESSION explicit_defaults_for_timestamp = {explicit}",
            *(create.format(db=db) for create in STAMPED.values()),
        ]
    )
    tables = [f"{db}.{name}" for name in STAMPED]
    # The rows were last stamped at the very time the incident runs: its stamps change nothing, so the
    # reverse UPDATE leaves them out unless it knows the server stamps them.
    server.run_sql(
        [FROZEN]
        + [f"INSERT INTO {table} (id, a) VALUES (1, 10), (2, 20)" for table in tables]
        + [f"UPDATE {table} SET a = a * 3" for table in tables]
    )
    stamps = server.query(f"SELECT t FROM {db}.ts6 ORDER BY id")
    assert [str(t) for (t,) in stamps] == ["2023-11-14 22:13:20.654321"] * 2
    options = {}
    if schema == "file":
        ddl = tmp_path / "schema.sql"
        ddl.write_text(
            "".join(server.query(f"SHOW CREATE TABLE {table}")[0][1] + ";\n" for table in tables).replace(
                "CREATE TABLE `", f"CREATE TABLE `{db}`.`"
            )
        )
        options["schema"] = schema_from_file(ddl)
    incident = [FROZEN] + [f"UPDATE {table} SET a = a + 1 WHERE id = 2" for table in tables]
    restore_both_ways(server, tables, incident, tmp_path, **options)


# ---- class 4: integer-backed types at their widest and at their edges, on keyless tables ---------------

SET64 = ",".join(f"'m{i}'" for i in range(64))
ENUM300 = ",".join(f"'e{i}'" for i in range(300))
EDGES = {  # column -> (definition, its values in the low, high and middle rows)
    "s": (f"SET({SET64})", ("''", "'m63'", "'" + ",".join(f"m{i}" for i in range(64)) + "'")),
    "s_low": (f"SET({SET64})", ("'m0'", "'m62'", "'m0,m62,m63'")),
    "e": (f"ENUM({ENUM300})", ("'e0'", "'e299'", "'e255'")),
    "e_mid": (f"ENUM({ENUM300})", ("'e256'", "'e127'", "'e128'")),
    "b1": ("BIT(1)", ("b'0'", "b'1'", "b'1'")),
    "b64": ("BIT(64)", ("b'0'", f"b'{'1' * 64}'", f"b'1{'0' * 63}'")),
    "b63": ("BIT(63)", ("b'1'", f"b'{'1' * 63}'", f"b'1{'0' * 62}'")),
    "ti": ("TINYINT", ("-128", "127", "-1")),
    "tu": ("TINYINT UNSIGNED", ("0", "255", "128")),
    "si": ("SMALLINT", ("-32768", "32767", "-1")),
    "su": ("SMALLINT UNSIGNED", ("0", "65535", "32768")),
    "mi": ("MEDIUMINT", ("-8388608", "8388607", "-1")),
    "mu": ("MEDIUMINT UNSIGNED", ("0", "16777215", "8388608")),
    "i": ("INT", ("-2147483648", "2147483647", "-1")),
    "iu": ("INT UNSIGNED", ("0", "4294967295", "2147483648")),
    "bi": ("BIGINT", ("-9223372036854775808", "9223372036854775807", "-1")),
    "bu": ("BIGINT UNSIGNED", ("0", "18446744073709551615", "9223372036854775808")),
    "y": ("YEAR", ("0", "2155", "1901")),
}


def test_integer_backed_types_at_their_edges_identify_keyless_rows(scratch_server, tmp_path):
    db = "edges"
    server = scratch_server
    columns = ", ".join(f"`{name}` {definition}" for name, (definition, _values) in EDGES.items())
    names = ", ".join(f"`{name}`" for name in EDGES)

    def row(n: int, which: int) -> str:
        return f"({n}, {', '.join(values[which] for _definition, values in EDGES.values())})"

    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {db}.t (n INT, {columns})",
            f"INSERT INTO {db}.t (n, {names}) VALUES {', '.join(row(n, n % 3) for n in range(6))}",
        ]
    )
    # Every statement identifies its row by all its columns: one value compared wrongly matches nothing.
    incident = [
        f"UPDATE {db}.t SET n = n + 100",
        f"DELETE FROM {db}.t WHERE n IN (101, 105)",
        f"INSERT INTO {db}.t (n, {names}) VALUES {row(7, 1)}, {row(8, 0)}, {row(9, 2)}",
    ]
    restore_both_ways(server, [f"{db}.t"], incident, tmp_path)
