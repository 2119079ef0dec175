"""The server options of the command line, without a server: -p alone, DSNs built and read back with
every special character, option files as the mysql client reads them, a DSN completed from them, and
the report of a command line argparse refused."""

from __future__ import annotations

import argparse
import json
from urllib.parse import quote

import pytest

from rollback import DsnError, parse_dsn
from rollback.cli import commands as cli
from rollback.cli.connection import PROMPT_FLAG, bare_password, build_dsn, complete_dsn, server_from_options
from rollback.cli.option_files import read_option_files

PASSWORD = "p@ss:w/rd%40#?& x"


def _args(**given) -> argparse.Namespace:
    base = dict(
        host=None,
        port=None,
        user=None,
        password=None,
        socket=None,
        defaults_file=None,
        no_defaults=False,
        login_path=None,
    )
    return argparse.Namespace(**{**base, **given})


def test_p_alone_asks_and_never_takes_the_next_word():
    assert bare_password(["flashback", "-p", "mysql-bin.000001"]) == [
        "flashback",
        PROMPT_FLAG,
        "mysql-bin.000001",
    ]
    assert bare_password(["--password", "-h", "db1"]) == [PROMPT_FLAG, "-h", "db1"]
    assert bare_password(["-psecret", "--password=s"]) == ["-psecret", "--password=s"]
    assert bare_password(["--", "-p"]) == ["--", "-p"]


def test_a_built_dsn_reads_back_every_character():
    dsn = build_dsn("db1", 3307, "ci@x", PASSWORD)
    parts = parse_dsn(dsn)
    assert (parts.host, parts.port, parts.user, parts.password) == ("db1", 3307, "ci@x", PASSWORD)
    assert parse_dsn(build_dsn("::1", 3306, "u", None)).host == "::1"


def test_an_unencoded_special_character_says_how_to_encode_it():
    for dsn in ("mysql://u:p@ss@db1:3306/", "mysql://u:p@s/s@db1:3306/", f"mysql://u:{PASSWORD}@db1/"):
        with pytest.raises(DsnError, match="percent-encoded \\(@ as %40"):
            parse_dsn(dsn)
    assert parse_dsn(f"mysql://u:{quote(PASSWORD, safe='')}@db1/").password == PASSWORD


def test_option_files_as_the_mysql_client_reads_them(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "extra.cnf").write_text("[client]\nport = 3310\n")
    (tmp_path / "my.cnf").write_text(
        "# a comment\n[mysqld]\npassword = not-this-one\n[client]\nuser = first\nuser = ci\n"
        f'password = "{PASSWORD}"\n!includedir {tmp_path / "conf.d"}\n[mysql-rollback]\nhost = db9\n'
    )
    found = read_option_files([tmp_path / "missing.cnf"], tmp_path / "my.cnf")
    assert found.values == {"user": "ci", "password": PASSWORD, "port": "3310", "host": "db9"}
    with pytest.raises(Exception, match="no such file"):
        read_option_files([], tmp_path / "nope.cnf")


def test_options_and_files_make_one_dsn_the_command_line_wins(tmp_path, monkeypatch):
    monkeypatch.delenv("MYSQL_PWD", raising=False)
    (tmp_path / "ci.cnf").write_text(f'[client]\nuser = ci\npassword = "{PASSWORD}"\nhost = db1\n')
    dsn = server_from_options(_args(defaults_file=str(tmp_path / "ci.cnf"), port=3307))
    assert (
        parse_dsn(dsn).password == PASSWORD and parse_dsn(dsn).port == 3307 and parse_dsn(dsn).host == "db1"
    )
    dsn = server_from_options(_args(defaults_file=str(tmp_path / "ci.cnf"), password="given"))
    assert parse_dsn(dsn).password == "given"


def test_a_dsn_without_password_takes_it_from_the_files_for_its_user(tmp_path, monkeypatch):
    (tmp_path / "ci.cnf").write_text(f'[client]\nuser = ci\npassword = "{PASSWORD}"\n')
    monkeypatch.setenv("MYSQL_PWD", "from-env")
    args = _args(defaults_file=str(tmp_path / "ci.cnf"))
    assert parse_dsn(complete_dsn("mysql://ci@db1:3306/shop", args)).password == PASSWORD
    assert parse_dsn(complete_dsn("mysql://ci@db1:3306/shop", args)).database == "shop"
    assert parse_dsn(complete_dsn("mysql://other@db1/", args)).password == "from-env"  # not ci's password
    assert complete_dsn("mysql://ci:own@db1/", args) == "mysql://ci:own@db1/"


def test_a_refused_command_line_still_writes_its_report(tmp_path, capsys):
    report = tmp_path / "r.json"
    with pytest.raises(SystemExit) as stopped:
        cli.main(["flashback", "--no-such-flag", "--report", str(report)])
    assert stopped.value.code == 2
    facts = json.loads(report.read_text())
    assert facts["command"] == "flashback" and facts["exit_code"] == 2 and facts["result"] == "refused"
    assert "--no-such-flag" in facts["error"] and facts["refusals"] == [facts["error"]]
    assert capsys.readouterr().err.count("\n") == 1


def test_stop_never_is_refused_before_any_connection(tmp_path, capsys):
    code = cli.main(
        ["sql", "-h", "127.0.0.1", "-P", "1", "-u", "x", "--start-file", "f.000001", "--stop-never"]
    )
    assert code == 2
    assert capsys.readouterr().err.startswith("mysql-rollback: error: --stop-never: mysql-rollback reverses")


def test_a_socket_is_used_as_mysql_uses_it_and_never_moves_a_tcp_default(tmp_path, monkeypatch):
    monkeypatch.delenv("MYSQL_PWD", raising=False)
    sock = "/run/mysqld/mysqld.sock"
    # Debian's /etc/mysql/mariadb.cnf names the socket in [client-server]: alone it changes nothing
    (tmp_path / "debian.cnf").write_text(f"[client-server]\nsocket = {sock}\n")
    files = str(tmp_path / "debian.cnf")
    assert server_from_options(_args(defaults_file=files, user="u", port=3307)) == "mysql://u@127.0.0.1:3307/"
    # the host `localhost` goes through it, as in mysql ...
    assert server_from_options(_args(defaults_file=files, user="u", host="localhost")) == (
        f"mysql://u@localhost:3306/?socket={sock}"
    )
    # ... unless the command line gives a port: TCP to it, as MariaDB's client does (a tunnel, a
    # container's published port on this machine are not the local server)
    assert server_from_options(_args(defaults_file=files, user="u", host="localhost", port=3307)) == (
        "mysql://u@localhost:3307/"
    )
    # -S with no host named is the socket, and wins over an option file's host ...
    (tmp_path / "db1.cnf").write_text("[client]\nhost = db1\n")
    for given in (
        _args(no_defaults=True, user="u", socket="/tmp/s.sock"),
        _args(defaults_file=str(tmp_path / "db1.cnf"), user="u", socket="/tmp/s.sock"),
    ):
        assert server_from_options(given) == "mysql://u@localhost:3306/?socket=/tmp/s.sock"
    # ... but -S and another host on the command line name two servers: refused, not one chosen
    with pytest.raises(DsnError, match="-S names a local server's socket and -h db1 another server"):
        server_from_options(_args(no_defaults=True, user="u", socket="/tmp/s.sock", host="db1"))


def test_a_completed_dsn_keeps_its_database_and_its_options(tmp_path, monkeypatch):
    monkeypatch.setenv("MYSQL_PWD", PASSWORD)
    done = complete_dsn(
        "mysql://ci@localhost/shop?socket=/tmp/s.sock&ssl-mode=REQUIRED", _args(no_defaults=True)
    )
    parts = parse_dsn(done)
    assert (parts.password, parts.database, parts.query) == (
        PASSWORD,
        "shop",
        "socket=/tmp/s.sock&ssl-mode=REQUIRED",
    )


def test_a_completed_socket_dsn_is_localhost_and_a_bad_option_is_refused_before_any_work(monkeypatch):
    monkeypatch.setenv("MYSQL_PWD", "pw")
    assert complete_dsn("mysql://ci@/?socket=/tmp/s.sock", _args(no_defaults=True)) == (
        "mysql://ci:pw@localhost:3306/?socket=/tmp/s.sock"
    )
    with pytest.raises(DsnError, match="option 'sslmode' is not known"):
        complete_dsn("mysql://ci:own@db1/?sslmode=require", _args(no_defaults=True))
