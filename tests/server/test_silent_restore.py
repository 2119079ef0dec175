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
