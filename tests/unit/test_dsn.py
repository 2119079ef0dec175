"""The one DSN parser (rollback/base/dsn.py), and the three places that read DSNs through it."""

from __future__ import annotations

import pytest

from app.core.config import ConfigError, parse_server
from rollback import DsnError, SourceError, parse_dsn, redact
from rollback.sources.server import ServerAddress
from rollback.target.execute import connect_args


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
    with pytest.raises(ConfigError, match="server p: malformed"):
        parse_server("p", "mysql://u@h:x/", environ={})


def test_redact_hides_the_password_and_keeps_the_rest():
    assert redact("mysql://u:p%40ss@db1:3306/") == "mysql://u:***@db1:3306/"
    assert redact("mysql://u@db1:3306/") == "mysql://u@db1:3306/"
