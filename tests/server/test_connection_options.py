"""A DSN's connection options, as the `mysql` client names them: `?socket=PATH` reaches the server
through its Unix socket (the CLI's `-S`, a `localhost` with a socket in the option files), and
`?ssl-mode=` with `ssl-ca` / `ssl-cert` / `ssl-key` asks for TLS and checks the server's certificate.
Before, the target's DSN options were read and silently ignored (a certificate check the user asked
for was never made), and the source's were refused. An option not known is refused in one line.

The TLS tests run a second scratch server with certificates made for the run (tests/support/tls.py):
its certificate names `localhost` only, so `VERIFY_IDENTITY` to 127.0.0.1 must fail where
`VERIFY_CA` to the same address passes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.support import REPO
from tests.support.mariadb import ScratchServer
from tests.support.sources import ENGINE, run_cli_in_process
from tests.support.tls import TlsFiles, make_tls_files

DATABASE = "connection_options"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rollback.cli.commands", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def checksum(dsn: str) -> subprocess.CompletedProcess:
    return cli("checksum", dsn, "--table", f"{DATABASE}.t")


def one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("mysql-rollback: error: ") and "internal error" not in done.stderr
    return done.stderr


def with_table(server: ScratchServer) -> None:
    server.run_sql(
        [
            f"CREATE DATABASE IF NOT EXISTS {DATABASE}",
            f"CREATE OR REPLACE TABLE {DATABASE}.t (id INT PRIMARY KEY, v VARCHAR(8))",
            f"INSERT INTO {DATABASE}.t VALUES (1, 'a'), (2, 'b')",
        ]
    )


def statements(script: str) -> list[str]:
    return [line for line in script.splitlines() if line.startswith(("INSERT", "UPDATE", "DELETE"))]


def rows_of(done: subprocess.CompletedProcess) -> int:
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout)["tables"][f"{DATABASE}.t"]["row_count"])


# ---- the Unix socket


def socket_dsn(server: ScratchServer, user: str = "", password: str = "") -> str:
    """The server through its socket; port 1 (nothing listens there): TCP would fail."""
    auth = f"{user or server.user}:{password or server.password}"
    return f"mysql://{auth}@localhost:1/?socket={quote(str(server.socket_path), safe='/')}"


def test_a_target_through_the_servers_socket(scratch_server):
    with_table(scratch_server)
    assert rows_of(checksum(socket_dsn(scratch_server))) == 2
    # the same DSN by TCP (the socket left out) reaches nothing: the socket, not the port, was used
    refused = one_line_error(checksum(socket_dsn(scratch_server).split("?")[0]))
    assert "Connection refused" in refused and "***" in refused and scratch_server.password not in refused


def test_a_source_and_its_schemas_through_the_socket_as_through_tcp(scratch_server, tmp_path: Path, capsys):
    with_table(scratch_server)
    done = scratch_server.run_sql(
        [f"UPDATE {DATABASE}.t SET v = 'x' WHERE id = 1", f"DELETE FROM {DATABASE}.t WHERE id = 2"]
    )
    scripts = []
    for name, server_args in (
        ("tcp", ["--server", scratch_server.dsn]),
        ("dsn", ["--server", socket_dsn(scratch_server)]),
        # the mysql client's options: -S with no host named is the socket, as `mysql -S` is
        (
            "-S",
            [
                "-S",
                str(scratch_server.socket_path),
                "-u",
                scratch_server.user,
                f"-p{scratch_server.password}",
            ],
        ),
    ):
        code, script, err = run_cli_in_process(
            capsys,
            "flashback",
            *server_args,
            *("--start-file", done.start_file, "--start-position", str(done.start_position)),
            *("--stop-file", done.stop_file, "--stop-position", str(done.stop_position)),
            *("--spool", str(tmp_path / name), "--no-defaults"),
            *ENGINE,
        )
        assert code == 0, (name, err)
        scripts.append(script)
    tcp, socket = f"127.0.0.1:{scratch_server.port}", f"{scratch_server.socket_path} (Unix socket)"
    assert (
        f"schema of {socket}; checked: no DDL on the changed table in the binlog of server {socket}"
        in scripts[1]
    )
    assert scripts[1].replace(socket, tcp) == scripts[0] == scripts[2].replace(socket, tcp)
    assert f"INSERT INTO `{DATABASE}`.`t` (`id`, `v`) VALUES (2, 'b');" in scripts[0]
    # the socket's spool is named by the socket's path, not by a host and port it does not use
    assert [p.name for p in (tmp_path / "dsn").iterdir()] == [
        str(scratch_server.socket_path).strip("/").replace("/", "_")
    ]
    # the binlog files on disk, their schemas read through the socket (--schema-dsn)
    code, from_files, err = run_cli_in_process(
        capsys,
        "flashback",
        *map(str, done.files),
        *("--start-position", str(done.start_position), "--stop-position", str(done.stop_position)),
        *("--schema-dsn", socket_dsn(scratch_server), *ENGINE),
    )
    assert code == 0, err
    assert f"schema of {socket};" in from_files and statements(from_files) == statements(scripts[0])


# ---- TLS


@pytest.fixture(scope="module")
def tls_server(scratch_server_factory, tmp_path_factory) -> tuple[ScratchServer, TlsFiles]:
    files = make_tls_files(tmp_path_factory.mktemp("tls"))
    server = scratch_server_factory(
        extra_args=(f"--ssl-ca={files.ca}", f"--ssl-cert={files.cert}", f"--ssl-key={files.key}")
    )
    with_table(server)
    return server, files


def tls_dsn(server: ScratchServer, host: str, query: str) -> str:
    return f"mysql://{server.user}:{server.password}@{host}:{server.port}/?{query}"


def session_tls(dsn: str) -> str:
    """The TLS version of a session opened with the DSN as every connection of the project opens it."""
    from rollback.target.execute import connect

    conn = connect(dsn)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW SESSION STATUS LIKE 'Ssl_version'")
            return str(cur.fetchone()[1])
    finally:
        conn.close()


def test_verified_tls_connects_only_to_the_certificate_the_ca_signed(tls_server):
    server, files = tls_server
    ca = quote(str(files.ca), safe="/")
    # ssl-ca alone is VERIFY_CA (as MySQL 8's client reads it): the chain is checked, not the name
    assert rows_of(checksum(tls_dsn(server, "127.0.0.1", f"ssl-ca={ca}"))) == 2
    assert session_tls(tls_dsn(server, "127.0.0.1", f"ssl-ca={ca}")).startswith("TLSv1")
    # the name too: the certificate is for localhost
    assert rows_of(checksum(tls_dsn(server, "localhost", f"ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"))) == 2
    wrong_name = one_line_error(
        checksum(tls_dsn(server, "127.0.0.1", f"ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"))
    )
    assert "certificate is not valid for '127.0.0.1'" in wrong_name, wrong_name
    other = quote(str(files.other_ca), safe="/")
    wrong_ca = one_line_error(checksum(tls_dsn(server, "localhost", f"ssl-ca={other}")))
    assert "certificate verify failed" in wrong_ca, wrong_ca


def test_required_encrypts_without_a_check_and_disabled_does_not_encrypt(tls_server, scratch_server_factory):
    server, _ = tls_server
    assert session_tls(tls_dsn(server, "127.0.0.1", "ssl-mode=REQUIRED")).startswith("TLSv1")
    assert session_tls(tls_dsn(server, "127.0.0.1", "ssl-mode=DISABLED")) == ""
    # a server without TLS (MariaDB 11.4 and later turn it on by default: off here): REQUIRED
    # refuses to go on in the clear, by TCP and through the socket alike
    clear = scratch_server_factory(extra_args=("--skip-ssl",))
    assert clear.query("SELECT @@have_ssl")[0][0] != "YES"
    with_table(clear)
    for dsn in (f"{clear.dsn}?ssl-mode=REQUIRED", socket_dsn(clear) + "&ssl-mode=REQUIRED"):
        refused = one_line_error(checksum(dsn))
        assert "SSL is required but the server doesn't support it" in refused, refused


def test_a_statement_on_a_socket_or_tls_session_is_stopped_by_a_second_session_alike(
    tls_server, scratch_server
):
    """Cancel's KILL QUERY (kill_queries) opens its second session with the first one's socket and
    TLS: a long statement on either ends within seconds."""
    from rollback import kill_queries

    server, files = tls_server
    for where, dsn in (
        (scratch_server, socket_dsn(scratch_server)),
        (server, tls_dsn(server, "localhost", f"ssl-mode=VERIFY_IDENTITY&ssl-ca={files.ca}")),
    ):
        took: list[float | int] = []
        runner = threading.Thread(target=sleep_on, args=(dsn, took))
        runner.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(
            row[4] == "Query" and "SLEEP(60)" in str(row[7]) for row in where.query("SHOW PROCESSLIST")
        ):
            time.sleep(0.05)
        assert kill_queries(runner.ident or 0) == 1, dsn
        runner.join(15)
        # MariaDB ends the statement with 1317 (Query execution was interrupted), in seconds, not 60
        assert len(took) == 2 and took[0] < 10 and took[1] == 1317, (dsn, took)


def sleep_on(dsn: str, took: list[float | int]) -> None:
    """A minute's statement on a session this thread opens (kill_queries stops a thread's sessions)."""
    import pymysql

    from rollback.target.execute import connect

    conn = connect(dsn)
    started = time.monotonic()
    code = 0
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT SLEEP(60)")
    except pymysql.err.OperationalError as exc:
        code = exc.args[0]
    finally:
        took += [time.monotonic() - started, code]
        conn.close()


def test_options_that_cannot_be_used_are_one_line_each(scratch_server, tmp_path: Path):
    base = scratch_server.dsn
    missing = tmp_path / "no-such-ca.pem"
    for query, says in (
        ("ssl-mdoe=REQUIRED", "server DSN option 'ssl-mdoe' is not known"),
        (
            "ssl-mode=ALWAYS",
            "ssl-mode must be one of DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY",
        ),
        (
            f"ssl-ca={missing}",
            f"cannot read the DSN's TLS files (ssl-ca {missing}): No such file or directory",
        ),
        ("ssl-mode=DISABLED&ssl-ca=/x.pem", "ssl-mode=DISABLED takes no ssl-ca"),
        ("socket=/a&socket=/b", "server DSN option socket is given twice"),
    ):
        assert says in one_line_error(checksum(f"{base}?{query}")), query
