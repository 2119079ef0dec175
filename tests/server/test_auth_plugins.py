"""An account that authenticates with MariaDB's ed25519 plugin works like any other: its package
(pynacl) is one of the project's dependencies, as cryptography is for MySQL's sha256_password and
caching_sha2_password over a session without TLS. Without the package, the user gets one clear line,
not an internal error (PyMySQL raises a RuntimeError there, which every connection now turns into a
connection error)."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.support import REPO

DATABASE = "auth_plugins"
# the CLI as a user runs it, on an interpreter where pynacl cannot be imported
WITHOUT_PYNACL = (
    "import sys; sys.modules['nacl'] = None; "
    "from rollback.cli.commands import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.fixture
def ed25519_dsn(scratch_server) -> Iterator[str]:
    """The DSN of a new account that authenticates with ed25519, on a two-row table."""
    name, password = f"ed_{secrets.token_hex(4)}", secrets.token_hex(8)
    conn = scratch_server.connect()
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute("SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'ed25519'")
        if not cur.fetchone()[0]:
            cur.execute("INSTALL SONAME 'auth_ed25519'")
        cur.execute(f"CREATE USER '{name}'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('{password}')")
        cur.execute(f"GRANT SELECT ON {DATABASE}.* TO '{name}'@'%'")
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
        cur.execute(f"CREATE OR REPLACE TABLE {DATABASE}.t (id INT PRIMARY KEY, v VARCHAR(8))")
        cur.execute(f"INSERT INTO {DATABASE}.t VALUES (1, 'a'), (2, 'b')")
    conn.close()
    yield f"mysql://{name}:{password}@{scratch_server.host}:{scratch_server.port}/"
    conn = scratch_server.connect()
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute(f"DROP USER '{name}'@'%'")
        cur.execute(f"DROP DATABASE {DATABASE}")
    conn.close()


def checksum(dsn: str, *prefix: str) -> subprocess.CompletedProcess:
    command = [sys.executable, *(prefix or ("-m", "rollback.cli.commands")), "checksum", dsn]
    return subprocess.run(
        [*command, "--table", f"{DATABASE}.t"], capture_output=True, text=True, cwd=REPO, timeout=120
    )


def test_an_ed25519_account_connects_as_any_other(ed25519_dsn):
    done = checksum(ed25519_dsn)
    assert done.returncode == 0, done.stderr
    tables = json.loads(done.stdout)["tables"]
    assert list(tables) == [f"{DATABASE}.t"] and tables[f"{DATABASE}.t"]["row_count"] == 2, tables


def test_a_missing_authentication_package_is_one_line_naming_it(ed25519_dsn):
    done = checksum(ed25519_dsn, "-c", WITHOUT_PYNACL)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("mysql-rollback: error: "), done.stderr
    assert "cannot authenticate" in done.stderr and "'pynacl' package is required" in done.stderr
    assert "internal error" not in done.stderr and "secret" not in done.stderr
