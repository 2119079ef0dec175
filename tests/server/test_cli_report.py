"""--report and --junit of `flashback --execute` as a CI job reads them: a dry run that applies every
statement (exit 0, two passing cases), then a row changed since the incident (exit 3: the conflict
named in the report, the execution case failing, nothing applied)."""

from __future__ import annotations

import json
from xml.etree import ElementTree

from tests.support.restore import range_args, snapshot
from tests.support.sources import run_cli_in_process

DB = "rep"


def test_flashback_execute_reports_its_execution_and_conflicts(scratch_server, tmp_path, capsys):
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(10))",
            f"INSERT INTO {DB}.t VALUES " + ", ".join(f"({i}, 'v{i}')" for i in range(1, 11)),
        ]
    )
    rng = scratch_server.run_sql(f"DELETE FROM {DB}.t WHERE id > 4")
    report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    args = [
        "flashback",
        *range_args(rng),
        "--schema-dsn",
        scratch_server.dsn,
        "--engine",
        "local",
        "-o",
        str(tmp_path / "rollback.render.sql"),
        "--execute",
        "--target",
        scratch_server.dsn,
        "--report",
        str(report),
        "--junit",
        str(junit),
    ]
    code, _out, err = run_cli_in_process(capsys, *args)
    assert code == 0, err
    facts = json.loads(report.read_text())
    assert facts["result"] == "ok" and facts["counts"] == [{"table": f"{DB}.t", "type": "delete", "rows": 6}]
    assert (
        facts["execution"]["statements"] == 6 and facts["execution"]["dry_run"] and facts["conflicts"] == []
    )
    assert facts["range_read"]["start_position"] == rng.start_position and facts["range_read"]["events"] > 0
    suite = ElementTree.parse(junit).getroot()
    assert [c.get("name") for c in suite.findall("testcase")] == [
        "generate the script",
        "execute on the target",
    ]
    assert suite.get("failures") == "0"

    scratch_server.run_sql(f"INSERT INTO {DB}.t VALUES (7, 'new')")  # the key a reverse INSERT needs
    before = snapshot(scratch_server, [f"{DB}.t"])
    code, _out, err = run_cli_in_process(capsys, *args)
    assert code == 3 and err.count("mysql-rollback: error:") == 1, err
    facts = json.loads(report.read_text())
    assert facts["result"] == "incomplete" and facts["exit_code"] == 3 and "conflict" in facts["error"]
    assert len(facts["conflicts"]) == 1 and "7" in json.dumps(facts["conflicts"][0])
    suite = ElementTree.parse(junit).getroot()
    failed = [c.get("name") for c in suite.findall("testcase") if c.find("failure") is not None]
    assert failed == ["execute on the target"]
    assert snapshot(scratch_server, [f"{DB}.t"]) == before  # nothing applied
