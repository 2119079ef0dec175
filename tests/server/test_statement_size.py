"""The report names the largest reverse statement (bytes, table, file:pos): a statement larger than the
target's max_allowed_packet would fail halfway through a script run with the plain client."""

from __future__ import annotations

import json

import pytest

from rollback import Filters, Options, generate
from rollback.base.render_text import comment_line
from rollback.schema.tables import ServerSchema
from tests.support.restore import apply_with_client, flashback, range_spec, snapshot


@pytest.fixture(scope="module")
def db(scratch_server):
    scratch_server.run_sql(
        [
            "DROP DATABASE IF EXISTS sizes",
            "CREATE DATABASE sizes",
            "CREATE TABLE sizes.blobs (a INT, doc LONGBLOB)",  # keyless: the image is written out twice
            "CREATE TABLE sizes.texts (id INT PRIMARY KEY, t TEXT CHARACTER SET utf8mb4)",
            "INSERT INTO sizes.blobs VALUES (1, REPEAT(0x00ff, 150000)), (2, 'small')",
            "INSERT INTO sizes.texts VALUES (1, REPEAT('a', 100)), (2, REPEAT('€', 60)), (3, 'x')",
        ]
    )
    return "sizes"


def _largest_in_plan(plan) -> dict:
    """The first of the longest statements of a plan, measured here from its lines."""
    best: dict | None = None
    for line in plan.read_bytes().decode().split("\n")[:-1]:
        step = json.loads(line)
        size = len(step["sql"].encode())
        if best is None or size > best["bytes"] or (size == best["bytes"] and step["pos"] < best["pos"]):
            best = {"bytes": size, "table": step["table"], "file": step["file"], "pos": step["pos"]}
    assert best is not None
    return best


def test_largest_statement_is_reported_in_the_report_and_the_script_header(scratch_server, db, tmp_path):
    tables = ["sizes.blobs", "sizes.texts"]
    before = snapshot(scratch_server, tables)
    rng = scratch_server.run_sql(
        [
            "DELETE FROM sizes.texts WHERE id = 1",  # 100 characters, 100 bytes
            "DELETE FROM sizes.texts WHERE id = 2",  # 60 characters, 180 bytes
            "UPDATE sizes.blobs SET a = a + 10",  # a 300 kB image in SET and in WHERE
        ]
    )
    script, plan, report = flashback(scratch_server, rng, tmp_path)
    largest = report.largest_statement
    assert largest == _largest_in_plan(plan)
    assert largest["table"] == "sizes.blobs" and largest["bytes"] > 2 * 300_000
    assert report.to_dict()["largest_statement"] == largest
    header = script.read_text(encoding="utf-8").split("SET NAMES")[0].split("\n")
    line = f"largest statement: {largest['bytes']} bytes (sizes.blobs at {largest['file']}:{largest['pos']})"
    assert comment_line(line) in header
    # The generated full-image path (no plan) measures the same statements.
    fast = tmp_path / "fast.sql"
    again = generate(
        range_spec(rng), Filters(), Options(engine="local", schema=ServerSchema(scratch_server.connect)), fast
    )
    assert again.largest_statement == largest and fast.read_bytes() == script.read_bytes()
    apply_with_client(scratch_server, script)
    assert snapshot(scratch_server, tables) == before

    # Counted in bytes, not characters: 60 euro signs outweigh 100 letters.
    rng = scratch_server.run_sql(
        ["DELETE FROM sizes.texts WHERE id = 1", "DELETE FROM sizes.texts WHERE id = 2"]
    )
    _script, plan, report = flashback(scratch_server, rng, tmp_path, name="texts")
    assert report.largest_statement == _largest_in_plan(plan)
    assert "€" in next(
        json.loads(line)["sql"]
        for line in plan.read_text(encoding="utf-8").splitlines()
        if json.loads(line)["pos"] == report.largest_statement["pos"]
    )


def test_nothing_selected_has_no_largest_statement(scratch_server, db, tmp_path):
    rng = scratch_server.run_sql(["DELETE FROM sizes.texts WHERE id = 3"])
    script, _plan, report = flashback(
        scratch_server, rng, tmp_path, filters=Filters(types={"insert"}), allow_empty=True
    )
    assert report.statements == 0 and report.largest_statement is None
    assert report.to_dict()["largest_statement"] is None
    assert "largest statement" not in script.read_text(encoding="utf-8")
