"""Start-up is a large part of a small range's run: a plain command imports what it uses, nothing more
(the door's names load on first use, the service's commands only when asked for, structlog at the
first log line, the server and DDL libraries where a server or a --where is used)."""

from __future__ import annotations

import subprocess
import sys

from tests.support import REPO


def test_a_plain_flashback_imports_neither_structlog_nor_the_service(corpus_dir, tmp_path):
    binlog = corpus_dir / "blackbeam__rust_mysql_common/test-data/binlogs/mariadb-bin.000001"
    probe = (
        "import sys; from rollback.cli.commands import main; "
        f"code = main(['flashback', {str(binlog)!r}, '--engine', 'local', '-o', {str(tmp_path / 'r.sql')!r}]); "
        "heavy = ('structlog', 'rich', 'pydantic', 'app.cli', 'sqlglot', 'pyspark', 'pymysql'); "
        "print(code, sorted(m for m in heavy if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO)
    assert done.stdout.split("\n")[-2] == "0 []", done.stdout + done.stderr
    assert (tmp_path / "r.sql").read_text().count("INSERT INTO") + (tmp_path / "r.sql").read_text().count(
        "DELETE FROM"
    )


def test_the_other_packages_commands_still_load_when_asked_for_or_listed(capsys):
    import pytest

    from rollback.cli.commands import build_parser, main

    assert "serve" not in build_parser("flashback")._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for argv in (["--help"], ["serve", "--help"], ["db", "--help"]):
        with pytest.raises(SystemExit) as done:
            main(argv)
        assert done.value.code == 0
    text = capsys.readouterr().out
    assert "serve" in text and "--port" in text and "upgrade" in text
