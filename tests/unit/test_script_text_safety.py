"""Filter values with control characters are refused by the CLI before anything runs: they could
break out of a script comment."""

from __future__ import annotations

import pytest

from rollback.cli import commands as cli

ATTACK = "DROP DATABASE sentinel_db;"  # were it ever run


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--database", "a\nb"),
        ("--table", f"db.t\n{ATTACK}"),
        ("--table", "db.t\u2028x"),
        ("--type", "insert\r"),
        ("--gtid", "0-1-5\n"),
        ("--start-datetime", "2024-01-01 00:00:00\x00"),
        ("--stop-datetime", "2024-01-01 00:00:00\x1b[2J"),
    ],
)
def test_cli_refuses_filter_values_with_control_characters(tmp_path, capsys, option, value):
    binlog = tmp_path / "mysql-bin.000001"
    binlog.write_bytes(b"\xfebin")
    code = cli.main(["flashback", str(binlog), option, value, "-o", str(tmp_path / "r.sql")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("mysql-rollback: error: ") and option in err
    assert "control character" in err and "Traceback" not in err
    assert not (tmp_path / "r.sql").exists()
