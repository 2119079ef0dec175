"""The check that a produced-again plan belongs to the script that was shown."""

from __future__ import annotations

from app.services.outputs import same_statements

PRELUDE = "SET NAMES utf8mb4;\nSET time_zone = '+00:00';\n"


def test_scripts_with_the_same_statements_and_other_headers_are_the_same(tmp_path):
    a, b = tmp_path / "a.sql", tmp_path / "b.sql"
    a.write_text("-- range: /spool/1/mysql-bin.000001\n" + PRELUDE + "DELETE FROM t WHERE id=1;\n")
    b.write_text("-- range: /spool/22/mysql-bin.000001 (longer)\n" + PRELUDE + "DELETE FROM t WHERE id=1;\n")
    assert same_statements(a, b)


def test_one_byte_of_the_statements_differs(tmp_path):
    a, b = tmp_path / "a.sql", tmp_path / "b.sql"
    a.write_text("-- x\n" + PRELUDE + "DELETE FROM t WHERE id=1;\n")
    b.write_text("-- x\n" + PRELUDE + "DELETE FROM t WHERE id=2;\n")
    assert not same_statements(a, b)
    b.write_text("-- x\n" + PRELUDE + "DELETE FROM t WHERE id=1;\nDELETE FROM t WHERE id=2;\n")
    assert not same_statements(a, b)
    b.write_text("DELETE FROM t WHERE id=1;\n")  # no header at all
    assert not same_statements(a, b)
