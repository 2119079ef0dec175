"""The one DSN parser (rollback/base/dsn.py), and the three places that read DSNs through it."""

from __future__ import annotations

import re
import socket
import ssl
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.config import ConfigError, parse_server
from rollback import ConnectionOptions, DsnError, SourceError, parse_dsn, redact
from rollback.sources.server import ServerAddress
from rollback.target.execute import connect_args
from tests.support.examples import examples


@pytest.mark.parametrize(
    ("dsn", "host", "port", "user", "password", "database"),
    [
        ("mysql://u:p%40ss@db1:3307/", "db1", 3307, "u", "p@ss", ""),
        ("mariadb://flash%40back@db1/sales", "db1", 3306, "flash@back", None, "sales"),
        ("mysql://u:@h/", "h", 3306, "u", "", ""),
        ("mysql://[::1]:3308/", "::1", 3308, "", None, ""),
    ],
)
def test_dsn_parts_are_percent_decoded(dsn, host, port, user, password, database):
    parts = parse_dsn(dsn)
    assert (parts.host, parts.port, parts.user, parts.password, parts.database) == (
        host,
        port,
        user,
        password,
        database,
    )
    assert "p@ss" not in repr(parts)


@pytest.mark.parametrize(
    ("dsn", "message"),
    [
        ("postgres://u@h/", "got scheme 'postgres'"),
        ("mysql://u@h:notaport/", "malformed server DSN"),
        ("db1:3306", "malformed server DSN"),
    ],
)
def test_a_dsn_that_is_not_a_mysql_url_is_one_error_line(dsn, message):
    with pytest.raises(DsnError, match=message):
        parse_dsn(dsn)


def test_the_three_readers_agree_on_one_dsn():
    dsn = "mysql://rb%40ops:p%3Ass@db1.example:3307/"
    address = ServerAddress.parse(dsn)
    server = parse_server("p", dsn, environ={})
    args = connect_args(dsn)
    assert (address.host, address.port, address.user, address.password) == (
        "db1.example",
        3307,
        "rb@ops",
        "p:ss",
    )
    assert (server.host, server.port, server.user, server.password) == ("db1.example", 3307, "rb@ops", "p:ss")
    assert (args["host"], args["port"], args["user"], args["password"]) == (
        "db1.example",
        3307,
        "rb@ops",
        "p:ss",
    )


def test_each_reader_keeps_its_own_rules():
    assert connect_args("mysql://u@h/sales")["database"] == "sales"
    with pytest.raises(SourceError, match="takes no database"):
        ServerAddress.parse("mysql://u@h/sales")
    # a source through its socket: named by the socket (messages, the spool's folder), no host needed
    local = ServerAddress.parse("mysql://u:pw@/?socket=/run/mysqld/mysqld.sock&ssl-mode=DISABLED")
    assert str(local) == "/run/mysqld/mysqld.sock (Unix socket)" and local.name == "run_mysqld_mysqld.sock"
    assert local.session_args() == {
        "host": "localhost",
        "port": 3306,
        "user": "u",
        "password": "pw",
        "unix_socket": "/run/mysqld/mysqld.sock",
        "ssl_disabled": True,
    }
    with pytest.raises(DsnError, match="option 'compress' is not known"):
        ServerAddress.parse("mysql://u@h/?compress=1")
    with pytest.raises(ConfigError, match="server p: malformed"):
        parse_server("p", "mysql://u@h:x/", environ={})


def test_redact_hides_the_password_and_keeps_the_rest():
    assert redact("mysql://u:p%40ss@db1:3306/") == "mysql://u:***@db1:3306/"
    assert redact("mysql://u@db1:3306/") == "mysql://u@db1:3306/"


def _as_make_url_reads_it(text: str) -> object:
    """What the parser read from a DSN when it was SQLAlchemy's make_url (the same checks after it)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(text)
        port = url.port
    except (ArgumentError, ValueError):
        return "advice" if text.count("@") > 1 else "malformed"
    if url.drivername not in ("mysql", "mariadb"):
        return f"scheme {url.drivername!r}"
    database = url.database or ""
    if "@" in (url.host or "") or "@" in database.split("#", 1)[0]:
        return "advice"
    password = url.password if url.password is None else str(url.password)
    options = bool(url.query) or "#" in database
    return (url.host or "", port or 3306, url.username or "", password, database.split("#", 1)[0], options)


def _as_parse_dsn_reads_it(text: str) -> object:
    try:
        parts = parse_dsn(text)
    except DsnError as exc:
        message = str(exc)
        if "more than one '@'" in message:
            return "advice"
        if message.startswith("malformed"):
            return "malformed"
        return "scheme " + message.split("got scheme ", 1)[1][:-1]
    return (parts.host, parts.port, parts.user, parts.password, parts.database, parts.options)


_PIECES = ["mysql://", "mariadb://", "pg://", "u", "p", ":", "@", "/", "?", "#", "[", "]", "::1", "3306"]
_PIECES += ["h", "db", "%40", "%3A", "a=1", "&", "x", "\n", " ", "+", "0", "-1"]


@settings(max_examples=examples(2000), deadline=None)
@given(st.booleans(), st.lists(st.sampled_from(_PIECES), min_size=1, max_size=10))
def test_the_parser_reads_every_dsn_as_make_url_did(scheme, pieces):
    """parse_dsn no longer imports SQLAlchemy (its import was most of an apply's start-up): it must
    read every text as make_url did, parts, refusals and all."""
    text = ("mysql://" if scheme else "") + "".join(pieces)
    assert _as_parse_dsn_reads_it(text) == _as_make_url_reads_it(text)


def test_parsing_a_dsn_does_not_import_sqlalchemy():
    code = "import sys; from rollback import parse_dsn; parse_dsn('mysql://u@h/'); print('sqlalchemy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_the_preferred_tls_context_is_built_at_the_first_handshake_once(monkeypatch):
    # PyMySQL builds a session's "preferred" context before it knows whether the server offers TLS:
    # against a server without TLS (most apply targets) it is never built now
    from rollback.base import dsn

    monkeypatch.setattr(dsn, "_preferred_tls", None)
    first = dsn.open_connection(host="127.0.0.1", port=1, defer_connect=True)
    second = dsn.open_connection(host="127.0.0.1", port=1, defer_connect=True)
    assert first.ctx is second.ctx and isinstance(first.ctx, dsn._PreferredTls)
    assert first.ctx._context is None  # not built by the sessions' start
    built = []

    def build(options):
        built.append(options)
        context = ssl.create_default_context()
        context.check_hostname = False
        return context

    lazy = dsn._PreferredTls(build)
    one, other = socket.socketpair()
    with one, other:
        for end in (one, other):
            wrapped = lazy.wrap_socket(end, server_hostname="db", do_handshake_on_connect=False)
            assert isinstance(wrapped, ssl.SSLSocket)
    assert built == [{}]  # once, at the first handshake


@pytest.mark.parametrize(
    "query, expected",
    [
        ("", ConnectionOptions()),
        ("socket=/run/mysqld/mysqld.sock", ConnectionOptions(socket="/run/mysqld/mysqld.sock")),
        ("unix_socket=/tmp/a%20b.sock", ConnectionOptions(socket="/tmp/a b.sock")),
        ("ssl-mode=disabled", ConnectionOptions(ssl_mode="DISABLED")),
        ("ssl_mode=Required", ConnectionOptions(ssl_mode="REQUIRED")),
        # as MySQL 8's client reads them: a CA alone checks the chain, a client certificate alone asks for TLS
        ("ssl-ca=/ca.pem", ConnectionOptions(ssl_mode="VERIFY_CA", ssl_ca="/ca.pem")),
        (
            "ssl-cert=/c.pem&ssl-key=/k.pem",
            ConnectionOptions(ssl_mode="REQUIRED", ssl_cert="/c.pem", ssl_key="/k.pem"),
        ),
        (
            "ssl-mode=VERIFY_IDENTITY&ssl-ca=/ca.pem",
            ConnectionOptions(ssl_mode="VERIFY_IDENTITY", ssl_ca="/ca.pem"),
        ),
    ],
)
def test_connection_options_read_as_the_mysql_client_names_them(query, expected):
    options = ConnectionOptions.of(parse_dsn(f"mysql://u@h/?{query}" if query else "mysql://u@h/"))
    assert options == expected
    assert ConnectionOptions.of(parse_dsn("mysql://u@h/" + options.query)) == options  # written back the same


@pytest.mark.parametrize(
    "query, message",
    [
        ("charset=latin1", "server DSN option 'charset' is not known (known: socket, ssl-mode, ssl-ca"),
        ("ssl-mode=verify_full", "ssl-mode must be one of DISABLED, PREFERRED, REQUIRED"),
        ("socket=", "server DSN option socket has no value"),
        ("ssl-ca=/a&ssl_ca=/b", "server DSN option ssl-ca is given twice"),
        ("ssl-mode=PREFERRED&ssl-ca=/a", "ssl-mode=PREFERRED takes no ssl-ca"),
        ("ssl-key=/k.pem", "ssl-key needs ssl-cert"),
        # a CA named is a check expected: REQUIRED makes none (the mysql client only warns there)
        (
            "ssl-mode=REQUIRED&ssl-ca=/ca.pem",
            "ssl-mode=REQUIRED checks no certificate, so it takes no ssl-ca",
        ),
    ],
)
def test_a_connection_option_that_cannot_be_used_is_refused(query, message):
    with pytest.raises(DsnError, match=re.escape(message)):
        ConnectionOptions.of(parse_dsn(f"mysql://u@h/?{query}"))


def test_connection_options_become_pymysql_arguments_and_one_tls_context_per_setting(tmp_path):
    assert connect_args("mysql://u@/?socket=/s.sock")["unix_socket"] == "/s.sock"
    assert connect_args("mysql://u@/?socket=/s.sock")["host"] == "localhost"
    assert connect_args("mysql://u@h/?ssl-mode=DISABLED")["ssl_disabled"] is True
    assert "ssl" not in connect_args("mysql://u@h/") and "ssl_disabled" not in connect_args("mysql://u@h/")
    required = connect_args("mysql://u@h/?ssl-mode=REQUIRED")["ssl"]
    assert required.verify_mode == ssl.CERT_NONE and not required.check_hostname
    identity = connect_args("mysql://u@h/?ssl-mode=VERIFY_IDENTITY")["ssl"]  # the system's CAs
    assert identity.verify_mode == ssl.CERT_REQUIRED and identity.check_hostname
    verify_ca = connect_args("mysql://u@h/?ssl-mode=VERIFY_CA")["ssl"]
    assert verify_ca.verify_mode == ssl.CERT_REQUIRED and not verify_ca.check_hostname
    assert connect_args("mysql://u@h/?ssl-mode=REQUIRED")["ssl"] is required  # built once
    with pytest.raises(
        SourceError, match=re.escape(f"cannot read the DSN's TLS files (ssl-ca {tmp_path}/x.pem)")
    ):
        connect_args(f"mysql://u@h/?ssl-ca={tmp_path}/x.pem")


def test_what_a_services_viewer_sees_of_the_options_names_no_path():
    options = ConnectionOptions.parse("?socket=/run/m.sock&ssl-ca=/etc/ca.pem&ssl-cert=/c.pem&ssl-key=/k.pem")
    assert options.summary == "socket, ssl-mode=VERIFY_CA, ssl-ca, ssl-cert, ssl-key"
    assert ConnectionOptions().summary == "" and ConnectionOptions.parse("") == ConnectionOptions()
