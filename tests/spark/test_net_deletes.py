"""--net without a plan on Spark: a table the range only deletes from is not folded; its plain
statements, written by the partitions (executors), give the bytes of the fold of every change."""

from __future__ import annotations

from rollback import Filters, Options, generate
from rollback.schema.tables import ServerSchema
from tests.support.jobs import UNSPLIT, apply_script, range_of, run, same_without_plan
from tests.support.restore import snapshot


def test_a_table_only_deleted_from_gives_the_folded_bytes_on_both_engines(scratch_server, tmp_path, spark):
    db = "net_deletes"
    scratch_server.run_sql([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}"], database="mysql")
    for table in ("d", "o"):
        scratch_server.run_sql(
            [
                f"""CREATE TABLE {db}.{table} (id INT PRIMARY KEY, code INT NOT NULL UNIQUE,
                    amount DECIMAL(12,2), note VARCHAR(60) CHARACTER SET utf8mb4, created DATETIME(6))""",
                f"""INSERT INTO {db}.{table} SELECT seq, seq, seq / 100, CONCAT('row ', seq, ' ü'),
                    TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND FROM seq_1_to_400""",
            ],
            database="mysql",
        )
    tables = [f"{db}.d", f"{db}.o"]
    before = snapshot(scratch_server, tables)
    rng = scratch_server.run_sql(
        [
            "DELETE FROM d WHERE id <= 100",
            "UPDATE o SET code = 9999 WHERE id = 5",
            "INSERT INTO o (id, code, note) VALUES (1000, 5, 'takes 5')",
            "DELETE FROM d WHERE id BETWEEN 150 AND 300",
            "UPDATE o SET note = 'late' WHERE id = 5",  # waits for row 1000's reverse
            "UPDATE o SET amount = amount + 1 WHERE id > 350",
            "DELETE FROM d WHERE id > 380",
        ],
        database=db,
    )
    schema = ServerSchema(scratch_server.connect)
    folded = run(range_of(rng), tmp_path, "folded", schema=schema, net=True, partition_bytes=UNSPLIT)
    assert folded.report.statements == 100 + 151 + 20 + 2 + 50
    for name, engine in (("local", "local"), ("spark", "spark")):
        out = run(
            range_of(rng),
            tmp_path,
            name,
            plan=False,
            schema=schema,
            net=True,
            engine=engine,
            partition_bytes=2 << 10,
        )
        assert out.report.engine == engine and out.report.partitions > 3
        assert same_without_plan(out, folded)
        # without the change log, the DELETEs of `d` are written from the images' bytes, and their
        # images are kept as those bytes (partition._net_deletes_from_images)
        alone = tmp_path / f"{name}-alone.sql"
        options = Options(engine=engine, schema=schema, net=True, partition_bytes=2 << 10)
        assert generate(range_of(rng), Filters(), options, alone).partitions > 3
        assert alone.read_bytes() == folded.script
    apply_script(scratch_server, out.script)
    assert snapshot(scratch_server, tables) == before
