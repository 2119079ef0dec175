"""Schema safety on the scratch MariaDB: a schema source is used only when it provably describes the
table as the binlog wrote it, DDL inside the range stops the job in every form, and a dropped or
system-versioned table gets an error that says so.

- With column names in the binlog (binlog_row_metadata=FULL) the names are the truth: the source
  completes them by name; reordered columns restore exactly, renamed or retyped ones are refused.
- Without names, DDL on a changed table after the range (on the server, or in the files after the
  range's last one) refuses the job unless --trust-schema; so does a range whose later binlog cannot
  be read at all.
"""

from __future__ import annotations

import re
import shutil

import pytest

from rollback import Filters, Options, RangeSpec, generate
from rollback.base.errors import DDLInRange, SchemaMismatch, SchemaUnproven
from rollback.schema.tables import ServerSchema, schema_from_file
from tests.support.restore import apply_with_client, flashback, range_args, run_cli


def _rows(server, table: str, columns: str) -> list[tuple]:
    """The rows by named columns (a column order changed since must not change the comparison)."""
    return server.query(f"SELECT {columns} FROM {table} ORDER BY id")


def _incident(server, db: str, create: str, table: str = "t"):
    """A table with rows, then an incident on it: (range, rows by name before the incident)."""
    server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}", create.format(db=db)])
    server.run_sql([f"INSERT INTO {db}.{table} (id, a, b) VALUES (1, 10, 100), (2, 20, 200), (3, 30, 300)"])
    before = _rows(server, f"{db}.{table}", "id, a, b")
    rng = server.run_sql(
        [
            f"UPDATE {db}.{table} SET a = a + 1, b = b + 2 WHERE id = 1",
            f"DELETE FROM {db}.{table} WHERE id = 2",
            f"INSERT INTO {db}.{table} (id, a, b) VALUES (4, 40, 400)",
        ]
    )
    return rng, before


def _one_line_refusal(out, *needles: str) -> str:
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    for needle in needles:
        assert re.search(needle, out.stderr), (needle, out.stderr)
    return out.stderr


# ---- without column names: DDL after the range ---------------------------------------------------------

LATER_DDL = {
    "reorder": "ALTER TABLE {db}.t MODIFY a INT AFTER b",
    "rename": "ALTER TABLE {db}.t CHANGE a renamed INT",
    "drop-and-add": "ALTER TABLE {db}.t DROP COLUMN a, ADD COLUMN a INT",
    "versioned-comment": "/*!100000 ALTER TABLE {db}.t MODIFY b INT FIRST */",
    "swap-by-rename": "RENAME TABLE {db}.t TO {db}.t_old, {db}.t_new TO {db}.t",
}


@pytest.mark.both_ways_off("the table altered and written since the incident")
@pytest.mark.parametrize("kind", sorted(LATER_DDL))
def test_ddl_on_the_table_after_the_range_refuses_a_source_matched_by_position(
    scratch_server, tmp_path, kind
):
    db = f"later_{kind.replace('-', '_')}"
    rng, _before = _incident(scratch_server, db, "CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT, b INT)")
    scratch_server.run_sql([f"CREATE TABLE {db}.t_new (id INT PRIMARY KEY, b INT, a INT)"])
    ddl = LATER_DDL[kind].format(db=db)
    scratch_server.run_sql([ddl])
    # The server's information_schema has the same column count and types: today's check passes.
    with pytest.raises(SchemaUnproven) as refused:
        flashback(scratch_server, rng, tmp_path)
    message = str(refused.value)
    assert f"table {db}.t: DDL after the range at mysql-bin." in message and "--trust-schema" in message
    statement = message.split("since the binlog wrote them: ", 1)[1]
    assert statement.startswith(" ".join(ddl.split())[:60]), message
    assert not (tmp_path / "rollback.render.sql").exists()
    out = run_cli(
        "flashback", *range_args(rng), "--schema-dsn", scratch_server.dsn, "-o", str(tmp_path / "c.sql")
    )
    _one_line_refusal(out, rf"table {db}\.t: DDL after the range at mysql-bin\.\d+:\d+", "--trust-schema")
    # Trusted, the job runs and says so in its header.
    script, _plan, report = flashback(scratch_server, rng, tmp_path, name="trusted", trust_schema=True)
    assert report.schema_check == "not checked: --trust-schema"
    assert "checked: not checked: --trust-schema" in script.read_text()


def test_a_ddl_file_is_checked_against_the_files_after_the_range(scratch_server, tmp_path):
    db = "later_file"
    rng, before = _incident(scratch_server, db, "CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT, b INT)")
    ddl = tmp_path / "schema.sql"
    ddl.write_text(scratch_server.query(f"SHOW CREATE TABLE {db}.t")[0][1] + ";\n")
    scratch_server.flush_binary_logs()  # the range's file is closed: the check reads the files after it
    script, _plan, report = flashback(scratch_server, rng, tmp_path, schema=schema_from_file(ddl, db))
    assert report.schema_source == f"DDL file {ddl}"
    assert re.fullmatch(
        rf"no DDL on the changed table in binlog files {rng.stop_file} \.\. mysql-bin\.\d+ in "
        rf"{re.escape(str(scratch_server.binlog_dir))} after {rng.stop_file}:{rng.stop_position} "
        r"up to mysql-bin\.\d+:\d+",
        report.schema_check,
    ), report.schema_check
    assert f"-- schema: DDL file {ddl}; checked: no DDL on the changed table" in script.read_text()
    apply_with_client(scratch_server, script)
    assert _rows(scratch_server, f"{db}.t", "id, a, b") == before

    # A DDL after the range, in a later file: refused, naming it; the file may well be of the
    # incident's time, which --trust-schema says.
    scratch_server.run_sql([f"ALTER TABLE {db}.t MODIFY a INT AFTER b"])
    with pytest.raises(SchemaUnproven, match=r"--trust-schema accepts the DDL file .* if it describes"):
        flashback(scratch_server, rng, tmp_path, name="again", schema=schema_from_file(ddl, db))


def test_files_copied_alone_cannot_prove_the_schema_without_trust(scratch_server, tmp_path):
    db = "alone"
    rng, _before = _incident(scratch_server, db, "CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT, b INT)")
    scratch_server.flush_binary_logs()  # closed: the log goes on in a file not copied
    copies = tmp_path / "copies"
    copies.mkdir()
    for path in rng.files:
        shutil.copy(path, copies / path.name)
    ddl = tmp_path / "schema.sql"
    ddl.write_text(scratch_server.query(f"SHOW CREATE TABLE {db}.t")[0][1] + ";\n")
    args = [
        "flashback",
        *[str(copies / p.name) for p in rng.files],
        "--start-position",
        str(rng.start_position),
        "--stop-position",
        str(rng.stop_position),
        "--schema-file",
        str(ddl),
        "--database",
        db,
    ]
    out = run_cli(*args, "-o", str(tmp_path / "r.sql"))
    _one_line_refusal(
        out,
        rf"cannot prove that the DDL file {re.escape(str(ddl))} describes {db}\.t",
        rf"{rng.stop_file} was closed .* no next file is beside it",
        "--trust-schema accepts",
    )
    assert not (tmp_path / "r.sql").exists()
    trusted = run_cli(*args, "--trust-schema", "-o", str(tmp_path / "r.sql"))
    assert trusted.returncode == 0, trusted.stderr
    assert (
        f"-- schema: DDL file {ddl}; checked: not checked: --trust-schema" in (tmp_path / "r.sql").read_text()
    )


def test_the_server_check_reads_the_servers_binlog_and_names_it_in_the_header(scratch_server, tmp_path):
    db = "server_check"
    rng, before = _incident(scratch_server, db, "CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT, b INT)")
    scratch_server.run_sql([f"CREATE TABLE {db}.other (id INT)", f"ALTER TABLE {db}.other ADD c INT"])
    schema = ServerSchema(scratch_server.connect, "scratch")
    script, _plan, report = flashback(scratch_server, rng, tmp_path, schema=schema)
    assert report.schema_source == "server information_schema of scratch"
    assert re.fullmatch(
        rf"no DDL on the changed table in the binlog of server scratch after {rng.stop_file}:{rng.stop_position} "
        r"up to mysql-bin\.\d+:\d+",
        report.schema_check,
    ), report.schema_check
    assert report.to_dict()["schema_check"] == {
        "source": report.schema_source,
        "checked": report.schema_check,
    }
    apply_with_client(scratch_server, script)
    assert _rows(scratch_server, f"{db}.t", "id, a, b") == before


def test_a_range_read_from_a_server_with_a_schema_file_is_checked_on_that_servers_binlog(
    scratch_server, tmp_path
):
    """--server spools the range alone: the log after it is the server's, read there."""
    db = "spooled_check"
    rng, _before = _incident(scratch_server, db, "CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT, b INT)")
    ddl = tmp_path / "schema.sql"
    ddl.write_text(scratch_server.query(f"SHOW CREATE TABLE {db}.t")[0][1] + ";\n")
    args = [
        "flashback",
        *("--server", scratch_server.dsn, "--start-file", rng.start_file, "--stop-file", rng.stop_file),
        *("--start-position", str(rng.start_position), "--stop-position", str(rng.stop_position)),
        *("--spool", str(tmp_path / "spool"), "--schema-file", str(ddl), "-d", db, "--engine", "local"),
    ]
    out = run_cli(*args, "-o", str(tmp_path / "r.sql"))
    assert out.returncode == 0, out.stderr
    header = (tmp_path / "r.sql").read_text()
    assert re.search(
        rf"-- schema: DDL file {re.escape(str(ddl))}; checked: no DDL on the changed table in "
        rf"the binlog of server 127\.0\.0\.1:{scratch_server.port} after "
        rf"{rng.stop_file}:{rng.stop_position} up to mysql-bin\.\d+:\d+\n",
        header,
    ), header
    # The spooled files alone prove nothing: the spool holds the server's log only up to the range.
    spooled = sorted((tmp_path / "spool").glob("*/mysql-bin.*[0-9]"))
    assert [p.name for p in spooled] == [p.name for p in rng.files]
    alone = [*map(str, spooled), *args[args.index("--start-position") : args.index("--spool")]]
    out = run_cli("flashback", *alone, "--schema-file", str(ddl), "-o", str(tmp_path / "alone.sql"))
    _one_line_refusal(
        out, rf"{rng.stop_file} is a spooled copy of part of a server's binary log", "--trust-schema"
    )
    # read from SHOW BINLOG EVENTS (the spool holds nothing after the range): `use db; ALTER TABLE t ...`
    scratch_server.run_sql(["ALTER TABLE t MODIFY a INT AFTER b"], database=db)
    out = run_cli(*args, "-o", str(tmp_path / "r2.sql"))
    _one_line_refusal(
        out,
        rf"table {db}\.t: DDL after the range at mysql-bin\.\d+:\d+ may have changed .*: ALTER TABLE t MODIFY",
        "--trust-schema",
    )


def test_another_servers_binlog_of_the_same_name_is_not_taken_for_the_range(
    scratch_server, scratch_server_factory, tmp_path
):
    """A schema server whose binary log has a file of the range's name, but another server's file:
    its binlog proves nothing; the files next to the range's do."""
    other = scratch_server_factory(row_image="MINIMAL")
    db = "two_servers"
    rng, _before = _incident(scratch_server, db, "CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT, b INT)")
    other.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}"])
    other.run_sql([f"CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT, b INT)"])
    wanted = int(rng.stop_file.rsplit(".", 1)[1])
    while int(other.binlog_position()[0].rsplit(".", 1)[1]) < wanted:
        other.flush_binary_logs()
    assert rng.stop_file in [row[0] for row in other.query("SHOW BINARY LOGS")]
    _script, _plan, report = flashback(
        scratch_server, rng, tmp_path, schema=ServerSchema(other.connect, "other")
    )
    assert "binlog of server other" not in report.schema_check
    assert f"in {scratch_server.binlog_dir}" in report.schema_check, report.schema_check


# ---- with column names (binlog_row_metadata=FULL) -----------------------------------------------------


@pytest.fixture(scope="module")
def full_server(scratch_server_factory):
    return scratch_server_factory(row_metadata="FULL")


def test_full_metadata_restores_exactly_after_the_columns_were_reordered(full_server, tmp_path):
    """The source completes the binlog's columns by name: the generated column stays generated and the
    reordered plain column is written, though their positions changed since the incident."""
    db = "full_reorder"
    rng, before = _incident(
        full_server, db, "CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT, g INT AS (a * 2) VIRTUAL, b INT)"
    )
    full_server.run_sql([f"ALTER TABLE {db}.t MODIFY b INT AFTER a"])  # now id, a, b, g
    script, _plan, report = flashback(full_server, rng, tmp_path)
    assert report.schema_check == "names from the binlog"
    assert "-- schema: binlog metadata + server information_schema; checked: names from the binlog" in (
        script.read_text()
    )
    apply_with_client(full_server, script)
    assert _rows(full_server, f"{db}.t", "id, a, b, g") == [(i, a, b, a * 2) for i, a, b in before]


@pytest.mark.parametrize(
    ("ddl", "column"),
    [
        (
            "ALTER TABLE {db}.t RENAME COLUMN a TO c",
            r"column 2 `a` of the binlog is not in the server schema",
        ),
        ("ALTER TABLE {db}.t DROP COLUMN a", r"column 2 `a` of the binlog is not in the server schema"),
        (
            "ALTER TABLE {db}.t DROP COLUMN a, ADD COLUMN a VARCHAR(10)",
            r"column 2 `a` is varchar in the server",
        ),
    ],
)
def test_full_metadata_refuses_a_column_renamed_dropped_or_retyped_since(full_server, tmp_path, ddl, column):
    db = "full_changed"
    rng, _before = _incident(full_server, db, "CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT, b INT)")
    full_server.run_sql([ddl.format(db=db)])
    with pytest.raises(SchemaMismatch, match=rf"table {db}\.t at position \d+: {column}"):
        flashback(full_server, rng, tmp_path)
    out = run_cli("flashback", *range_args(rng), "--schema-dsn", full_server.dsn)
    _one_line_refusal(out, rf"table {db}\.t at position \d+: {column}", "--schema-file")


# ---- DDL inside the range -------------------------------------------------------------------------------

IN_RANGE = {
    "versioned-alter": "/*!100000 ALTER TABLE {db}.t ADD COLUMN z INT */",
    "versioned-mariadb": "/*M!100301 ALTER TABLE {db}.t ADD COLUMN z INT */",
    "drop-database": "DROP DATABASE {db}",
    "drop-table-long-list": "DROP TABLE "
    + ", ".join(f"{{db}}.filler_table_{i:02d}" for i in range(30))
    + ", {db}.t",
    "rename-swap": "RENAME TABLE {db}.t TO {db}.t_old, {db}.t_new TO {db}.t",
    "create-or-replace-select": "CREATE OR REPLACE TABLE {db}.t SELECT * FROM {db}.t_new",
    "truncate": "TRUNCATE TABLE {db}.t",
    # a new table whose rows the DDL writes: the rollback could delete them, not the table
    "create-select": "CREATE TABLE {db}.t_copy SELECT * FROM {db}.t",
}


@pytest.mark.parametrize("kind", sorted(IN_RANGE))
def test_ddl_inside_the_range_after_a_change_stops_the_job_naming_it(scratch_server, tmp_path, kind):
    db = f"inrange_{kind.replace('-', '_')}"
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT, b INT)",
            f"CREATE TABLE {db}.t_new (id INT PRIMARY KEY, a INT, b INT)",
            *[f"CREATE TABLE {db}.filler_table_{i:02d} (x INT)" for i in range(30)],
            f"INSERT INTO {db}.t VALUES (1, 1, 1)",
        ]
    )
    ddl = IN_RANGE[kind].format(db=db)
    rng = scratch_server.run_sql([f"UPDATE {db}.t SET a = 2", ddl])
    table = "t_copy" if kind == "create-select" else "t"
    with pytest.raises(
        DDLInRange, match=rf"DDL on {db}\.{table} inside the range at mysql-bin\.\d+:\d+: "
    ) as refused:
        flashback(scratch_server, rng, tmp_path)
    assert " ".join(ddl.split()[:2]) in str(refused.value)  # the server may rewrite the rest
    out = run_cli("flashback", *range_args(rng), "--schema-dsn", scratch_server.dsn)
    _one_line_refusal(out, rf"DDL on {db}\.{table} inside the range at mysql-bin\.\d+:\d+")


# ---- a table dropped since, a system-versioned table ----------------------------------------------------


def test_a_table_dropped_since_is_named_as_missing_at_the_source(scratch_server, tmp_path):
    db = "dropped_since"
    rng, before = _incident(scratch_server, db, "CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT, b INT)")
    definition = scratch_server.query(f"SHOW CREATE TABLE {db}.t")[0][1]
    scratch_server.run_sql([f"DROP TABLE {db}.t"])
    with pytest.raises(
        SchemaMismatch, match=rf"table {db}\.t at position \d+ no longer exists at the schema source"
    ):
        flashback(scratch_server, rng, tmp_path)
    out = run_cli("flashback", *range_args(rng), "--schema-dsn", scratch_server.dsn)
    stderr = _one_line_refusal(
        out,
        rf"table {db}\.t at position \d+ no longer exists at the schema source \(server information_schema of "
        rf"127\.0\.0\.1:{scratch_server.port}\); give its definition as of the incident with --schema-file",
    )
    assert "--schema-dsn" not in stderr
    empty = tmp_path / "empty.sql"
    empty.write_text("CREATE TABLE unrelated (x INT);\n")
    out = run_cli("flashback", *range_args(rng), "--schema-file", str(empty))
    stderr = _one_line_refusal(
        out,
        rf"table {db}\.t at position \d+: the schema file {re.escape(str(empty))} has no CREATE TABLE for it",
    )
    assert "--schema-file" not in stderr.split("has no CREATE TABLE")[1]
    # Its definition as of the incident, trusted over the DROP after the range, restores it.
    old = tmp_path / "old.sql"
    old.write_text(definition + ";\n")
    script = tmp_path / "r.sql"
    out = run_cli(*["flashback", *range_args(rng), "--schema-file", str(old), "-d", db, "-o", str(script)])
    _one_line_refusal(
        out, rf"table {db}\.t: DDL after the range at mysql-bin\.\d+:\d+ may have changed .*: DROP TABLE"
    )
    out = run_cli(
        "flashback",
        *range_args(rng),
        "--schema-file",
        str(old),
        "-d",
        db,
        "--trust-schema",
        "-o",
        str(script),
    )
    assert out.returncode == 0, out.stderr
    scratch_server.run_sql([f"USE {db}", definition])
    scratch_server.run_sql([f"INSERT INTO {db}.t VALUES (1, 11, 102), (3, 30, 300), (4, 40, 400)"])
    apply_with_client(scratch_server, script)
    assert _rows(scratch_server, f"{db}.t", "id, a, b") == before


VERSIONED = "CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT, b INT) WITH SYSTEM VERSIONING"


def test_a_system_versioned_table_is_refused_with_a_message_about_versioning(scratch_server, tmp_path):
    db = "versioned"
    rng, _before = _incident(scratch_server, db, VERSIONED)
    with pytest.raises(SchemaMismatch, match=rf"table {db}\.t at position \d+ is system-versioned"):
        flashback(scratch_server, rng, tmp_path)
    out = run_cli("flashback", *range_args(rng), "--schema-dsn", scratch_server.dsn)
    _one_line_refusal(out, rf"table {db}\.t at position \d+ is system-versioned \(WITH SYSTEM VERSIONING\)")
    ddl = tmp_path / "v.sql"
    ddl.write_text(scratch_server.query(f"SHOW CREATE TABLE {db}.t")[0][1] + ";\n")
    with pytest.raises(SchemaMismatch, match=rf"table {db}\.t at position \d+ is system-versioned"):
        flashback(scratch_server, rng, tmp_path, schema=schema_from_file(ddl, db))


def test_a_system_versioned_table_with_full_metadata_is_refused_too(full_server, tmp_path):
    db = "versioned_full"
    rng, _before = _incident(full_server, db, VERSIONED)
    with pytest.raises(SchemaMismatch, match=rf"table {db}\.t at position \d+ is system-versioned"):
        flashback(full_server, rng, tmp_path)
    with pytest.raises(SchemaMismatch, match=rf"table {db}\.t at position \d+ looks system-versioned"):
        flashback(full_server, rng, tmp_path, schema=None)


def test_a_gtid_range_counts_the_ddl_it_selects_not_the_ddl_before_it_in_its_files(scratch_server, tmp_path):
    """A GTID range reads whole files: a DDL of the file before the selected transactions is not in
    the range; one the GTIDs select is, though it comes before the table's changes."""
    db = "gtid_ddl"
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}"])
    truncated = scratch_server.run_sql(
        [f"CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT)", f"TRUNCATE TABLE {db}.t"]
    )
    changes = scratch_server.run_sql([f"INSERT INTO {db}.t VALUES (1, 1)", f"UPDATE {db}.t SET a = 2"])
    files = [str(p) for p in scratch_server.binlog_files() if p.name >= truncated.start_file]
    files = files[: files.index(str(changes.files[-1])) + 1]
    domain, server_id, _ = changes.gtid_before.split("-")

    def run(first: int, name: str):
        last = int(changes.gtid_after.split("-")[2])
        rng = RangeSpec(files, gtid=f"{domain}-{server_id}-{first}..{domain}-{server_id}-{last}")
        return generate(
            rng,
            Filters(),
            Options(engine="local", schema=ServerSchema(scratch_server.connect)),
            tmp_path / name,
        )

    report = run(int(changes.gtid_before.split("-")[2]) + 1, "changes.sql")
    assert report.statements == 2
    with pytest.raises(DDLInRange, match=rf"DDL on {db}\.t inside the range at .*TRUNCATE .* cannot undo it"):
        run(int(truncated.gtid_after.split("-")[2]), "with-truncate.sql")


def test_a_later_event_past_max_allowed_packet_is_read_over_replication(scratch_server_factory, tmp_path):
    """SHOW BINLOG EVENTS cannot show a file holding an event larger than the server's
    max_allowed_packet ("Wrong offset or I/O error"): the proof reads the log from there over the
    replication protocol, as the range is read, and still finds the DDL behind that event."""
    import pymysql

    server = scratch_server_factory(row_metadata="MINIMAL")  # no column names: the proof is needed
    db = "big_later"
    server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}"])
    server.run_sql(
        [
            "CREATE TABLE t (id INT PRIMARY KEY, a INT)",
            "INSERT INTO t VALUES (1, 1), (2, 2)",
            "CREATE TABLE big (b LONGBLOB)",
        ],
        database=db,
    )
    rng = server.run_sql(["UPDATE t SET a = a + 1"], database=db, own_file=True)
    later = server.run_sql(["INSERT INTO big VALUES (REPEAT('x', 3 << 20))"], database=db)
    args = [
        "flashback",
        *("--server", server.dsn, "--start-file", rng.start_file, "--stop-file", rng.stop_file),
        *("--start-position", str(rng.start_position), "--stop-position", str(rng.stop_position)),
        *("--spool", str(tmp_path / "spool"), "-d", db, "--engine", "local"),
    ]
    ((packet,),) = server.query("SELECT @@GLOBAL.max_allowed_packet")
    server.run_sql(["SET GLOBAL max_allowed_packet = 1048576"])
    try:
        with pytest.raises(pymysql.err.MySQLError, match="Wrong offset or I/O error|max_allowed_packet"):
            server.query(f"SHOW BINLOG EVENTS IN '{later.start_file}'")
        out = run_cli(*args, "-o", str(tmp_path / "r.sql"))
        assert out.returncode == 0, out.stderr
        header = (tmp_path / "r.sql").read_text()
        assert f"(from {later.start_file}:4 over the replication protocol)" in header, header
        server.run_sql(["ALTER TABLE t MODIFY a INT FIRST"], database=db)  # same columns, another order
        out = run_cli(*args, "-o", str(tmp_path / "r2.sql"))
        _one_line_refusal(
            out,
            rf"table {db}\.t: DDL after the range at {re.escape(later.start_file)}:\d+ may have changed .*MODIFY a INT FIRST",
        )
    finally:
        server.run_sql([f"SET GLOBAL max_allowed_packet = {int(packet)}"])
