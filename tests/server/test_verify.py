"""The CI workflow: `checksum` before the change, `flashback --plan`, then `verify` on a copy of the
data. A faithful copy verifies (exit 0, one passing JUnit case per table); a tampered copy fails with
the table and the first differing key (exit 5); a copy where a row the rollback touches changed is a
conflict (exit 3); --keep leaves the copy restored."""

from __future__ import annotations

import json
from xml.etree import ElementTree

import pytest

from rollback.cli import commands as cli
from rollback.target.checksum import load
from tests.support.restore import range_args, snapshot

DB = "vfy"
TABLES = [f"{DB}.orders", f"{DB}.notes"]


@pytest.fixture(scope="module")
def incident(scratch_server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("verify")
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.orders (id INT PRIMARY KEY, status VARCHAR(10), total DECIMAL(8,2), "
            "at DATETIME(3), doc BLOB)",
            # No key, and values equal under the column's collation: only bytes tell the rows apart.
            f"CREATE TABLE {DB}.notes (body VARCHAR(20) COLLATE utf8mb4_general_ci, n DOUBLE)",
            f"INSERT INTO {DB}.orders VALUES "
            + ", ".join(
                f"({i}, 'paid', {i}.25, '2026-01-0{i % 9 + 1} 10:00:00.123', x'00ff{i:02x}')"
                for i in range(1, 21)
            ),
            f"INSERT INTO {DB}.notes VALUES ('abc', 0.1), ('ABC', 0.1), ('abc ', 1e300), (NULL, NULL)",
        ]
    )
    before = tmp / "before.json"
    assert cli.main([*_checksum_args(scratch_server), "-o", str(before)]) == 0
    snap = snapshot(scratch_server, TABLES)
    rng = scratch_server.run_sql(
        [
            f"DELETE FROM {DB}.orders WHERE id > 12",
            f"UPDATE {DB}.orders SET status = 'void', total = 0 WHERE id <= 3",
            f"DELETE FROM {DB}.notes WHERE body = 'ABC' COLLATE utf8mb4_bin",
            f"UPDATE {DB}.notes SET n = 2 WHERE body = 'abc ' COLLATE utf8mb4_bin",
        ]
    )
    plan = tmp / "plan.jsonl"
    flashback = ["flashback", *range_args(rng), "--schema-dsn", scratch_server.dsn]
    assert cli.main([*flashback, "--plan", str(plan), "-o", str(tmp / "r.sql")]) == 0
    return {"before": before, "plan": plan, "snapshot": snap, "tmp": tmp}


def _checksum_args(server) -> list[str]:
    return ["checksum", server.dsn, "--database", DB]


def _verify(server, incident, *extra: str) -> tuple[int, dict, ElementTree.Element]:
    report, junit = incident["tmp"] / "report.json", incident["tmp"] / "junit.xml"
    code = cli.main(
        [
            "verify",
            "--plan",
            str(incident["plan"]),
            "--target",
            server.dsn,
            "--expected",
            str(incident["before"]),
            "--report",
            str(report),
            "--junit",
            str(junit),
            *extra,
        ]
    )
    return code, json.loads(report.read_text()), ElementTree.parse(junit).getroot()


def test_checksum_file_records_every_row(incident):
    tables = load(str(incident["before"]))
    assert sorted(tables) == sorted(TABLES)
    assert tables[f"{DB}.orders"].key == ["id"] and tables[f"{DB}.orders"].row_count == 20
    assert tables[f"{DB}.notes"].key == [] and tables[f"{DB}.notes"].row_count == 4
    assert len(tables[f"{DB}.notes"].digests) == 4  # 'abc', 'ABC', 'abc ' are three different rows


def test_verify_restores_every_table_and_rolls_back(scratch_server, incident):
    after = snapshot(scratch_server, TABLES)
    code, report, junit = _verify(scratch_server, incident)
    assert code == 0, report
    assert report["result"] == "restored" and report["exit_code"] == 0
    assert [(t["table"], t["status"]) for t in report["tables"]] == [
        (f"{DB}.notes", "restored"),
        (f"{DB}.orders", "restored"),
    ]
    # utf8mb4_bin pads spaces: the last UPDATE changed both 'abc' and 'abc '
    assert report["execution"]["statements"] == 8 + 3 + 1 + 2
    cases = junit.findall("testcase")
    assert sorted(c.get("name") for c in cases) == sorted(TABLES)
    assert junit.get("failures") == "0" and not junit.findall(".//failure")
    assert snapshot(scratch_server, TABLES) == after  # rolled back: the copy is as it was


def test_tampered_copy_names_the_table_and_first_key(scratch_server, incident, capsys):
    conn = scratch_server.connect()
    try:
        with conn.cursor() as cur:
            # rows the rollback does not touch: no conflict, but the restored state differs
            cur.execute(f"UPDATE {DB}.orders SET total = 99 WHERE id IN (7, 9)")
            cur.execute(f"INSERT INTO {DB}.notes VALUES ('Abc', 0.1)")
        conn.commit()
        capsys.readouterr()
        code, report, junit = _verify(scratch_server, incident)
        assert code == 5
        verdicts = {t["table"]: t for t in report["tables"]}
        assert verdicts[f"{DB}.orders"]["status"] == "differs"
        assert verdicts[f"{DB}.orders"]["first_difference"] == {"kind": "changed", "key": {"id": "7"}}
        assert verdicts[f"{DB}.notes"]["status"] == "differs"
        assert "1 unexpected" in verdicts[f"{DB}.notes"]["reason"]
        assert len(junit.findall(".//failure")) == 2
        err = capsys.readouterr().err
        assert "vfy.orders: differs (2 row(s) differ; first: the row id=7 is changed)" in err
        assert "not restored: vfy.notes, vfy.orders" in err
    finally:
        with conn.cursor() as cur:
            cur.execute(f"UPDATE {DB}.orders SET total = id + 0.25 WHERE id IN (7, 9)")
            cur.execute(f"DELETE FROM {DB}.notes WHERE body = 'Abc' COLLATE utf8mb4_bin")
        conn.commit()
        conn.close()


def test_conflict_is_reported_and_nothing_applied(scratch_server, incident, capsys):
    conn = scratch_server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(
                f"UPDATE {DB}.orders SET status = 'refund' WHERE id = 2"
            )  # a row the rollback restores
        conn.commit()
        after = snapshot(scratch_server, TABLES)
        code, report, junit = _verify(scratch_server, incident)
        assert code == 3
        assert report["result"] == "error" and "conflict" in report["error"]
        assert junit.find("testcase").get("name") == "apply the rollback"
        assert "conflict" in capsys.readouterr().err
        assert snapshot(scratch_server, TABLES) == after
    finally:
        with conn.cursor() as cur:
            cur.execute(f"UPDATE {DB}.orders SET status = 'void' WHERE id = 2")
        conn.commit()
        conn.close()


def test_bad_checksum_file_is_one_line(scratch_server, incident, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    code = cli.main(
        ["verify", "--plan", str(incident["plan"]), "--target", scratch_server.dsn, "--expected", str(bad)]
    )
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "not a checksum file" in err


def test_keep_commits_and_restores_the_snapshot(scratch_server, incident):
    # last: it leaves the copy restored
    code, report, _ = _verify(scratch_server, incident, "--keep")
    assert code == 0 and report["kept"] and report["execution"]["committed"]
    assert snapshot(scratch_server, TABLES) == incident["snapshot"]
