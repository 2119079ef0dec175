"""docs/ci.md's commands, run as written by bash against the scratch server: checksum, the change,
flashback from the server's binlog, verify; then the same with a change the rollback cannot undo
alone (a row changed outside the range), which must fail with exit 5 and say which table."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.support import REPO

DB = "shop"


def ci_commands() -> str:
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    assert len(blocks) == 1, "docs/ci.md has one bash block: the commands of both pipelines"
    return blocks[0]


@pytest.fixture
def shop(scratch_server):
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.orders (id INT PRIMARY KEY, status VARCHAR(10), total DECIMAL(8,2))",
            f"CREATE TABLE {DB}.customers (id INT PRIMARY KEY, name VARCHAR(40))",
            f"INSERT INTO {DB}.orders VALUES " + ", ".join(f"({i}, 'paid', {i}.50)" for i in range(1, 31)),
            f"INSERT INTO {DB}.customers VALUES (1, 'Ada'), (2, 'Bob')",
        ]
    )


def _run(scratch_server, tmp_path: Path, change: str) -> subprocess.CompletedProcess:
    (tmp_path / "change.sql").write_text(change)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYSQL_ROLLBACK_")}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        HOME=str(tmp_path),
        MYSQL_ROLLBACK_DATA_DIR=str(tmp_path / "data"),
        MYSQL_PWD=scratch_server.password,
        SCRATCH_USER=scratch_server.user,
        SCRATCH_HOST=scratch_server.host,
        SCRATCH_PORT=str(scratch_server.port),
    )
    return subprocess.run(
        ["bash", "-c", ci_commands()], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )


def test_the_ci_commands_verify_a_rollback(scratch_server, shop, tmp_path):
    done = _run(
        scratch_server,
        tmp_path,
        "DELETE FROM orders WHERE id > 20;\nUPDATE orders SET status = 'void' WHERE id <= 5;\n"
        "UPDATE customers SET name = 'Eve' WHERE id = 2;\n",
    )
    assert done.returncode == 0, done.stderr
    verify = json.loads((tmp_path / "verify.json").read_text())
    assert verify["result"] == "restored"
    assert [(t["table"], t["status"]) for t in verify["tables"]] == [
        (f"{DB}.customers", "restored"),
        (f"{DB}.orders", "restored"),
    ]
    flashback = json.loads((tmp_path / "flashback.json").read_text())
    assert {(c["table"], c["type"], c["rows"]) for c in flashback["counts"]} == {
        (f"{DB}.orders", "delete", 10),
        (f"{DB}.orders", "update", 5),
        (f"{DB}.customers", "update", 1),
    }
    suite = ElementTree.parse(tmp_path / "verify.xml").getroot()
    assert suite.get("tests") == "2" and suite.get("failures") == "0"
    assert scratch_server.password not in done.stdout + done.stderr


def test_the_ci_commands_fail_when_a_table_is_not_restored(scratch_server, shop, tmp_path):
    # The change also alters a row through a path the binlog range does not hold (sql_log_bin=0):
    # the rollback cannot restore it, and verify must say which table and key.
    done = _run(
        scratch_server,
        tmp_path,
        "DELETE FROM orders WHERE id > 25;\nUPDATE customers SET name = 'Eve' WHERE id = 2;\n"
        "SET SESSION sql_log_bin = 0;\nUPDATE orders SET total = 0 WHERE id = 7;\n",
    )
    assert done.returncode == 5, done.stderr
    assert f"{DB}.orders" in done.stderr and "not restored" in done.stderr
    verify = json.loads((tmp_path / "verify.json").read_text())
    assert verify["result"] == "differs" and verify["exit_code"] == 5
    statuses = {t["table"]: t for t in verify["tables"]}
    assert statuses[f"{DB}.customers"]["status"] == "restored"
    assert statuses[f"{DB}.orders"]["first_difference"] == {"kind": "changed", "key": {"id": "7"}}
    suite = ElementTree.parse(tmp_path / "verify.xml").getroot()
    assert suite.get("failures") == "1"
