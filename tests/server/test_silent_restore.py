"""Issue 25's classes of a rollback that is silently wrong, each restored exactly (by checksum, through the
`mariadb` client and through --execute) or refused before anything is written."""

from __future__ import annotations

import pytest

from rollback.schema.tables import schema_from_file
from rollback.target.execute import ExecutionFailed, execute_plan
from tests.support.restore import (
    apply_with_client,
    flashback,
    range_args,
    restore_both_ways,
    run_cli,
    snapshot,
    span,
)

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


# ---- class 7: statements that destroyed rows without row events -----------------------------------------

LOST = {
    "truncate": "TRUNCATE TABLE {db}.other",
    "drop-table": "DROP TABLE {db}.other",
    "drop-database": "DROP DATABASE {db}_side",
    "versioned-comment": "/*!100000 TRUNCATE {db}.other */",
}


def _lost_rows_incident(server, db: str, kind: str):
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"DROP DATABASE IF EXISTS {db}_side",
            f"CREATE DATABASE {db}",
            f"CREATE DATABASE {db}_side",
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT)",
            f"CREATE TABLE {db}.other (id INT PRIMARY KEY)",
            f"CREATE TABLE {db}_side.kept (id INT PRIMARY KEY)",
            f"INSERT INTO {db}.t VALUES (1, 1), (2, 2)",
            f"INSERT INTO {db}.other VALUES (1), (2), (3)",
            f"INSERT INTO {db}_side.kept VALUES (1)",
        ]
    )
    return server.run_sql([f"UPDATE {db}.t SET a = a + 10", LOST[kind].format(db=db)])


@pytest.mark.parametrize("kind", sorted(LOST))
def test_rows_destroyed_without_row_events_are_named_and_refused(scratch_server, tmp_path, kind):
    db = f"lost_{kind.replace('-', '_')}"
    rng = _lost_rows_incident(scratch_server, db, kind)
    before = scratch_server.query(f"CHECKSUM TABLE {db}.t EXTENDED")
    out = run_cli(
        "flashback", *range_args(rng), "--schema-dsn", scratch_server.dsn, "-o", str(tmp_path / "r.sql")
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    assert "1 statement(s) in the range destroyed rows without row events" in out.stderr
    assert f"{rng.stop_file}:" in out.stderr and "--accept-lost-rows" in out.stderr
    assert LOST[kind].format(db=db).split()[1] in out.stderr
    assert not (tmp_path / "r.sql").exists()
    assert scratch_server.query(f"CHECKSUM TABLE {db}.t EXTENDED") == before
    # Accepted: the row changes are undone, and the statement is listed in the header and the report.
    script, _plan, report = flashback(scratch_server, rng, tmp_path, accept_lost_rows=True)
    [item] = report.lost_rows
    assert item["file"] == rng.stop_file and item["sql"].startswith(LOST[kind].format(db=db)[:8])
    expected = f"{db}_side.*" if kind == "drop-database" else f"{db}.other"
    assert item["tables"] == [expected]
    header = script.read_text()
    assert f"-- rows lost without row events (--accept-lost-rows): {rng.stop_file}:{item['pos']}: " in header
    apply_with_client(scratch_server, script)
    assert scratch_server.query(f"SELECT id, a FROM {db}.t ORDER BY id") == [(1, 1), (2, 2)]


def test_a_temporary_table_or_one_made_in_the_range_dropped_loses_no_rows(scratch_server, tmp_path):
    db = "lost_temporary"
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT)",
            f"INSERT INTO {db}.t VALUES (1, 1)",
        ]
    )
    rng = scratch_server.run_sql(
        [
            f"CREATE TEMPORARY TABLE {db}.scratch (id INT)",
            f"UPDATE {db}.t SET a = 2",
            f"DROP TEMPORARY TABLE {db}.scratch",
            f"CREATE TABLE {db}.made (id INT)",
            f"DROP TABLE {db}.made",
        ]
    )
    _script, _plan, report = flashback(scratch_server, rng, tmp_path)
    assert report.lost_rows == []


@pytest.mark.parametrize("mode", ["keep", "reverse"])
def test_a_truncate_after_the_ranges_changes_is_refused_under_ddl_keep_and_reverse(
    scratch_server, tmp_path, mode
):
    db = f"lost_after_{mode}"
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT)",
            f"INSERT INTO {db}.t VALUES (1, 1), (2, 2)",
        ]
    )
    rng = scratch_server.run_sql([f"UPDATE {db}.t SET a = a + 10", f"TRUNCATE TABLE {db}.t"])
    out = run_cli(
        "flashback",
        *range_args(rng),
        "--schema-dsn",
        scratch_server.dsn,
        "--ddl",
        mode,
        "-o",
        str(tmp_path / "r.sql"),
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    if mode == "keep":
        assert f"--ddl keep: TRUNCATE of {db}.t inside the range at {rng.stop_file}:" in out.stderr
        assert "the rows it removed are not in the binlog" in out.stderr
    else:  # the reverse of a TRUNCATE is refused first: it cannot be reversed
        assert f"--ddl reverse: DDL on {db}.t at {rng.stop_file}:" in out.stderr
        assert "cannot be reversed (TRUNCATE: the table's rows are not in the binlog)" in out.stderr
    assert not (tmp_path / "r.sql").exists()


# ---- test gaps: the row key, the one-row guard of --execute, the first event's position ----------------


@pytest.mark.parametrize("schema", ["server", "file"])
def test_a_unique_key_over_nullable_columns_does_not_identify_rows(scratch_server, tmp_path, schema):
    """NULLs do not make a row unique: two rows with u NULL are both under UNIQUE (u)."""
    db = f"nullable_unique_{schema}"
    create = f"CREATE TABLE {db}.t (u INT NULL, w INT NULL, v INT, UNIQUE KEY (u), UNIQUE KEY (u, w))"
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            create,
            f"INSERT INTO {db}.t VALUES (NULL, NULL, 1), (NULL, NULL, 2), (NULL, 5, 3), (7, 7, 4)",
        ]
    )
    options = {}
    if schema == "file":
        ddl = tmp_path / "schema.sql"
        ddl.write_text(create + ";\n")
        options["schema"] = schema_from_file(ddl)
    incident = [
        f"UPDATE {db}.t SET v = v + 10 WHERE v IN (1, 3)",
        f"DELETE FROM {db}.t WHERE v = 2",
        f"INSERT INTO {db}.t VALUES (NULL, NULL, 9)",
    ]
    restore_both_ways(scratch_server, [f"{db}.t"], incident, tmp_path, **options)


@pytest.mark.both_ways_off("a schema file that lies about the key: the refusal is the point")
def test_execute_refuses_a_statement_that_touched_more_than_one_row(scratch_server, tmp_path):
    """A schema file that claims a key the table does not have: the reverse UPDATE by that key meets two
    rows while its check (every column) finds the one row. The execution stops on the row count, and
    nothing stays applied."""
    db = "one_row_guard"
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {db}.t (grp INT NOT NULL, v INT)",
            f"INSERT INTO {db}.t VALUES (1, 1), (1, 2), (2, 3)",
        ]
    )
    ddl = tmp_path / "schema.sql"
    ddl.write_text(f"CREATE TABLE {db}.t (grp INT NOT NULL, v INT, PRIMARY KEY (grp));\n")
    rng = scratch_server.run_sql([f"UPDATE {db}.t SET v = 10 WHERE v = 1"])
    after = snapshot(scratch_server, [f"{db}.t"])
    _script, plan, _report = flashback(
        scratch_server, rng, tmp_path, schema=schema_from_file(ddl), trust_schema=True
    )
    with pytest.raises(ExecutionFailed, match=r"affected 2 rows, not 1"):
        execute_plan(plan, scratch_server.dsn, commit=True)
    assert snapshot(scratch_server, [f"{db}.t"]) == after


def test_the_first_event_position_4_is_a_start_and_a_stop(scratch_server, tmp_path):
    db = "first_event"
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT)",
            f"INSERT INTO {db}.t VALUES (1, 1)",
        ]
    )
    rng = scratch_server.run_sql([f"UPDATE {db}.t SET a = 2"], own_file=True)
    (path,) = rng.files
    schema = ("--schema-dsn", scratch_server.dsn)
    whole = run_cli("flashback", str(path), "--start-position", "4", *schema)
    assert whole.returncode == 0, whole.stderr
    assert f"UPDATE `{db}`.`t` SET `a`=1 WHERE `id`=1;" in whole.stdout
    # From the server too: the dump starts at the first event.
    remote = run_cli(
        "flashback", "--server", scratch_server.dsn, "--start-file", path.name, "--start-position", "4"
    )
    assert remote.returncode == 0, remote.stderr
    assert f"UPDATE `{db}`.`t` SET `a`=1 WHERE `id`=1;" in remote.stdout
    # A range that stops at the first event holds nothing: empty (exit 4), not a bad position.
    empty = run_cli("flashback", str(path), "--start-position", "4", "--stop-position", "4", *schema)
    assert empty.returncode == 4, empty.stderr
    assert "selected no row change" in empty.stderr and "boundary" not in empty.stderr


# ---- class 1: transactions whose outcome a later event decides (XA) ------------------------------------


def _xa(db: str, xid: str, sql: str, outcome: str | None) -> list[str]:
    prepared = [f"XA START '{xid}'", sql, f"XA END '{xid}'", f"XA PREPARE '{xid}'"]
    return prepared + ([f"XA {outcome} '{xid}'"] if outcome else [])


def _xa_table(server, db: str) -> str:
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT)",
            f"INSERT INTO {db}.t VALUES (1, 1), (2, 2), (3, 3), (4, 4)",
        ]
    )
    return f"{db}.t"


def test_only_committed_xa_transactions_are_reversed(scratch_server, tmp_path):
    db = "xa_decided"
    table = _xa_table(scratch_server, db)
    incident = [
        *_xa(db, "rolled", f"UPDATE {table} SET a = a + 100 WHERE id <= 2", "ROLLBACK"),
        *_xa(db, "committed", f"UPDATE {table} SET a = a + 10 WHERE id = 3", "COMMIT"),
        "XA START 'one'",
        f"DELETE FROM {table} WHERE id = 4",
        "XA END 'one'",
        "XA COMMIT 'one' ONE PHASE",
        *_xa(db, "rolled-insert", f"INSERT INTO {table} VALUES (9, 9)", "ROLLBACK"),
        f"UPDATE {table} SET a = 0 WHERE id = 1",
    ]
    restore_both_ways(scratch_server, [table], incident, tmp_path)
    rng = scratch_server.run_sql(incident)
    script, _plan, report = flashback(scratch_server, rng, tmp_path, name="notes")
    assert "a` = 101" not in script.read_text() and "`a`=101" not in script.read_text()
    notes = [w for w in report.warnings if "XA ROLLBACK" in w]
    assert len(notes) == 2 and all("never persisted and are left out" in n for n in notes), report.warnings
    apply_with_client(scratch_server, script)


def test_an_xa_transaction_decided_outside_the_range_is_named(scratch_server, tmp_path):
    db = "xa_undecided"
    table = _xa_table(scratch_server, db)
    before = snapshot(scratch_server, [table])
    prepared = scratch_server.run_sql(
        [
            f"UPDATE {table} SET a = 7 WHERE id = 1",
            *_xa(db, "later", f"DELETE FROM {table} WHERE id = 2", None),
        ]
    )
    out = run_cli(
        "flashback", *range_args(prepared), "--schema-dsn", scratch_server.dsn, "-o", str(tmp_path / "r.sql")
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    assert "1 XA transaction(s) prepared in the range have no XA COMMIT or XA ROLLBACK in it" in out.stderr
    assert "X'6c61746572',X'',1 (gtid " in out.stderr and f"at {prepared.start_file}:" in out.stderr
    assert not (tmp_path / "r.sql").exists()
    committed = scratch_server.run_sql(["XA COMMIT 'later'", f"UPDATE {table} SET a = 8 WHERE id = 3"])
    # The range of its outcome alone: its changes are before it, and the note says so.
    _script, _plan, report = flashback(scratch_server, committed, tmp_path, name="outcome")
    assert any(
        "XA COMMIT X'6c61746572',X'',1 commits a transaction prepared before" in w for w in report.warnings
    )
    # The range from the prepare to the outcome: every change undone.
    script, plan, _report = flashback(scratch_server, span(scratch_server, prepared, committed), tmp_path)
    apply_with_client(scratch_server, script)
    assert snapshot(scratch_server, [table]) == before


# ---- class 8: objects that are not plain tables ----------------------------------------------------------


@pytest.mark.parametrize("metadata", [None, "FULL"])
def test_a_sequence_in_the_range_is_refused_before_anything_is_written(
    scratch_server_factory, tmp_path, metadata
):
    server = scratch_server_factory(row_metadata=metadata)
    db = "sequences"
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE SEQUENCE {db}.seq",
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY)",
        ]
    )
    before = snapshot(server, [f"{db}.t"])
    rng = server.run_sql(
        [
            f"INSERT INTO {db}.t VALUES (NEXTVAL({db}.seq)), (NEXTVAL({db}.seq))",
            f"SELECT SETVAL({db}.seq, 500)",
        ]
    )
    # With FULL metadata the binlog's column names tell; otherwise the schema server's table type does.
    schema = [] if metadata == "FULL" else ["--schema-dsn", server.dsn]
    out = run_cli("flashback", *range_args(rng), *schema, "-o", str(tmp_path / "r.sql"))
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    assert f"table {db}.seq at position " in out.stderr and "is a SEQUENCE" in out.stderr
    assert "--table" in out.stderr
    assert not (tmp_path / "r.sql").exists()
    # The other tables alone restore.
    only = ["-t", f"{db}.t", "--allow-partial-transactions"]
    rest = run_cli("flashback", *range_args(rng), *schema, *only, "-o", str(tmp_path / "t.sql"))
    assert rest.returncode == 0, rest.stderr
    apply_with_client(server, tmp_path / "t.sql")
    assert snapshot(server, [f"{db}.t"]) == before


# ---- the script header compares the largest statement with the schema server's max_allowed_packet -------


def test_the_header_warns_when_the_largest_statement_exceeds_max_allowed_packet(
    scratch_server_factory, tmp_path
):
    server = scratch_server_factory(extra_args=("--max-allowed-packet=65536",))
    db = "packet"
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {db}.t (doc LONGTEXT)",
            f"INSERT INTO {db}.t VALUES (REPEAT('x', 40000))",
        ]
    )
    # Keyless: the reverse UPDATE sets the old text and compares the new one in hex, about 120 kB.
    rng = server.run_sql([f"UPDATE {db}.t SET doc = REPEAT('y', 40000)"])
    script, _plan, report = flashback(server, rng, tmp_path)
    size = report.largest_statement["bytes"]
    assert size > 65536
    [warning] = [w for w in report.warnings if "max_allowed_packet" in w]
    assert f"the largest statement ({size} bytes, {db}.t at {rng.start_file}:" in warning
    assert "does not fit the schema server's max_allowed_packet (65536)" in warning
    assert f"-- warning: {warning}" in script.read_text()
    small = server.run_sql([f"UPDATE {db}.t SET doc = 'z'"])
    _script, _plan, report = flashback(server, small, tmp_path, name="small")
    assert not [w for w in report.warnings if "max_allowed_packet" in w]


# ---- class 3: identifier case on a server with case-sensitive names (lower_case_table_names=0) ----------


@pytest.mark.parametrize("schema", ["server", "binlog"])
def test_filters_match_names_exactly_where_the_server_does(scratch_server_factory, tmp_path, schema):
    # Without a schema server the names come from FULL metadata, and no server says they fold.
    server = scratch_server_factory(row_metadata="FULL" if schema == "binlog" else None)
    assert server.query("SELECT @@lower_case_table_names") == [(0,)]
    lower, upper = f"case_{schema}", f"Case_{schema}"
    server.run_sql(
        [
            *(f"DROP DATABASE IF EXISTS {db}" for db in (lower, upper)),
            *(f"CREATE DATABASE {db}" for db in (lower, upper)),
            *(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT)" for db in (lower, upper)),
            *(f"INSERT INTO {db}.t VALUES (1, 1)" for db in (lower, upper)),
        ]
    )
    rng = server.run_sql([f"UPDATE {db}.t SET a = 2" for db in (lower, upper)])
    source = ["--schema-dsn", server.dsn] if schema == "server" else []
    tables = [f"{lower}.t", f"{upper}.t"]
    after = snapshot(server, tables)
    for wanted, filters in ((lower, ["-d", lower]), (upper, ["-t", f"{upper}.t"])):
        out = run_cli("flashback", *range_args(rng), *source, *filters)
        assert out.returncode == 0, out.stderr
        assert f"`{wanted}`.`t`" in out.stdout
        assert [db for db in (lower, upper) if f"`{db}`.`t`" in out.stdout] == [wanted]
    # A name that exists only in another case selects nothing, and the error suggests the names.
    wrong = run_cli("flashback", *range_args(rng), *source, "-d", lower.upper())
    assert wrong.returncode == 4, wrong.stderr
    assert wrong.stderr.count("\n") == 1 and "Traceback" not in wrong.stderr, wrong.stderr
    assert (
        f"database filter {lower.upper()} names no database with changes: did you mean {upper} or {lower}?"
        in (wrong.stderr)
    )
    assert "lower_case_table_names=0" in wrong.stderr
    table = run_cli("flashback", *range_args(rng), *source, "-t", f"{lower}.T")
    assert table.returncode == 4 and f"did you mean {upper}.t or {lower}.t?" in table.stderr, table.stderr
    assert snapshot(server, tables) == after


# ---- class 10: hidden columns the server adds (UNIQUE ... USING HASH) ------------------------------------


def test_tables_with_hidden_hash_columns_restore_exactly(scratch_server, tmp_path):
    db = "long_unique"
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {db}.keyed (id INT PRIMARY KEY, doc TEXT, n INT, UNIQUE KEY (doc))",
            # no row key: every column but the hidden ones identifies the row
            f"CREATE TABLE {db}.keyless (doc TEXT, b BLOB, n INT, UNIQUE KEY (doc), UNIQUE KEY (b, n) USING HASH)",
            *(f"INSERT INTO {db}.keyed VALUES ({i}, REPEAT('d{i}', 300), {i})" for i in range(1, 5)),
            *(f"INSERT INTO {db}.keyless VALUES (REPEAT('k{i}', 300), 'b{i}', {i})" for i in range(1, 5)),
        ]
    )
    assert len(scratch_server.query(f"SHOW CREATE TABLE {db}.keyless")[0][1].split("USING HASH")) == 3
    incident = [f"UPDATE {db}.{t} SET n = n + 10 WHERE n <= 2" for t in ("keyed", "keyless")] + [
        f"DELETE FROM {db}.keyed WHERE id = 3",
        f"DELETE FROM {db}.keyless WHERE n = 3",
        f"INSERT INTO {db}.keyed VALUES (9, 'new', 9)",
        f"INSERT INTO {db}.keyless VALUES ('new', 'b9', 9)",
    ]
    restore_both_ways(scratch_server, [f"{db}.keyed", f"{db}.keyless"], incident, tmp_path)


# ---- class 9: incidents run with foreign_key_checks=0 ----------------------------------------------------


def test_an_incident_without_foreign_key_checks_is_undone_with_them_off_too(scratch_server, tmp_path):
    db = "fk_off"
    server = scratch_server
    server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {db}.parent (id INT PRIMARY KEY)",
            f"CREATE TABLE {db}.child (id INT PRIMARY KEY, parent_id INT, "
            f"FOREIGN KEY (parent_id) REFERENCES {db}.parent (id))",
            f"INSERT INTO {db}.parent VALUES (1), (2)",
            f"INSERT INTO {db}.child VALUES (10, 1), (11, 1), (20, 2)",
        ]
    )
    tables = [f"{db}.parent", f"{db}.child"]
    before = snapshot(server, tables)
    # The parent first: undone newest first, the children come back before it.
    rng = server.run_sql(
        [
            "SET SESSION foreign_key_checks = 0",
            f"DELETE FROM {db}.parent WHERE id = 1",
            f"DELETE FROM {db}.child WHERE parent_id = 1",
        ]
    )
    after = snapshot(server, tables)
    script, plan, report = flashback(server, rng, tmp_path)
    assert report.no_fk_checks == {
        "file": rng.start_file,
        "pos": report.no_fk_checks["pos"],
        "table": f"{db}.parent",
    }
    text = script.read_text()
    assert "-- foreign_key_checks: the incident ran with foreign_key_checks=0 (first at " in text
    assert text.index("SET SESSION foreign_key_checks = 0;") < text.index("BEGIN;")
    # Without the incident's setting the server refuses the child, and nothing stays applied ...
    with pytest.raises(ExecutionFailed, match="foreign key constraint fails"):
        execute_plan(plan, server.dsn, commit=True)
    assert snapshot(server, tables) == after
    # ... with it (what --execute and the service pass from the report), the plan restores the rows.
    execute_plan(plan, server.dsn, commit=True, foreign_key_checks=report.no_fk_checks is None)
    assert snapshot(server, tables) == before
    # and so does the script through the client, from the incident's state again
    server.run_sql(
        ["SET SESSION foreign_key_checks = 0", *(f"DELETE FROM {db}.{t}" for t in ("child", "parent"))]
    )
    server.run_sql(
        [
            "SET SESSION foreign_key_checks = 0",
            f"INSERT INTO {db}.parent VALUES (2)",
            f"INSERT INTO {db}.child VALUES (20, 2)",
        ]
    )
    assert snapshot(server, tables) == after
    apply_with_client(server, script)
    assert snapshot(server, tables) == before
    # the command line's --execute passes the incident's setting on by itself
    server.run_sql(
        ["SET SESSION foreign_key_checks = 0", *(f"DELETE FROM {db}.{t}" for t in ("child", "parent"))]
    )
    server.run_sql(["SET SESSION foreign_key_checks = 0", f"INSERT INTO {db}.parent VALUES (2)"])
    server.run_sql([f"INSERT INTO {db}.child VALUES (20, 2)"])
    assert snapshot(server, tables) == after
    done = run_cli(
        "flashback",
        *range_args(rng),
        "--schema-dsn",
        server.dsn,
        "--execute",
        "--target",
        server.dsn,
        "--commit",
    )
    assert done.returncode == 0, done.stderr
    assert snapshot(server, tables) == before


# ---- class 5: approximate-number keys ---------------------------------------------------------------------


def test_float_and_double_keys_identify_their_rows(scratch_server, tmp_path):
    db = "float_keys"
    values = ["0.1", "-2.5e-40", "3.4028234e38", "1.17549435e-38", "123456.789", "-0.3"]
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {db}.f (k FLOAT PRIMARY KEY, a INT)",
            f"CREATE TABLE {db}.u (k FLOAT NOT NULL, a INT, UNIQUE KEY (k))",
            f"CREATE TABLE {db}.d (k DOUBLE PRIMARY KEY, a INT)",
            *(f"INSERT INTO {db}.{t} VALUES ({v}, {n})" for t in "fud" for n, v in enumerate(values)),
        ]
    )
    incident = [f"UPDATE {db}.{t} SET a = a + 100" for t in "fud"]
    incident += [f"DELETE FROM {db}.{t} WHERE a = 103" for t in "fud"]
    incident += [f"INSERT INTO {db}.{t} VALUES (0.7, 7)" for t in "fud"]
    restore_both_ways(scratch_server, [f"{db}.{t}" for t in "fud"], incident, tmp_path)
