"""Settings: servers by name with passwords from the DSN or the environment, tokens, the TOML file."""

from __future__ import annotations

import pytest

from app.core.config import ConfigError, Settings, parse_server, parse_tokens, password_env_name
from app.services.jobs import Scrubber
from rollback import parse_dsn


def test_a_server_password_comes_from_the_dsn_or_from_its_environment_variable():
    server = parse_server("prod-1", "mysql://flash%40back:p%40ss@db1:3307/", environ={})
    assert (server.host, server.port, server.user, server.password) == ("db1", 3307, "flash@back", "p@ss")
    assert server.dsn == "mysql://flash%40back:p%40ss@db1:3307/"
    env = {password_env_name("prod-1"): "from-env"}
    assert password_env_name("prod-1") == "MYSQL_ROLLBACK_PASSWORD_PROD_1"
    assert parse_server("prod-1", "mysql://u@db1/", environ=env).password == "from-env"
    assert parse_server("prod-1", "mysql://u:in-dsn@db1/", environ=env).password == "from-env"
    local = parse_server("x", {"dsn": "mysql://u@h/", "binlog_dir": "/var/lib/mysql"}, environ={})
    assert str(local.binlog_dir) == "/var/lib/mysql"


def test_no_rendering_of_a_server_shows_its_password():
    server = parse_server("p", "mysql://u:s3cret-pw@h:3306/", environ={})
    for text in (repr(server), str(server.public()), server.public_dsn):
        assert "s3cret-pw" not in text
    assert Scrubber({"p": server})("cannot connect with s3cret-pw") == "cannot connect with ***"


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("bad name", "mysql://u@h/", "server name"),
        ("p", "postgres://u@h/", "mysql://"),
        ("p", 3, "DSN must be a string"),
        ("p", {"dsn": "mysql://u@h/", "extra": 1}, "give"),
        ("p", "mysql://u@h:notaport/", "malformed"),
        ("p", "mysql://u@h/?sslmode=verify-full", "server p: server DSN option 'sslmode' is not known"),
        ("p", "mysql://u@/", "the DSN must look like"),
    ],
)
def test_bad_server_entries_are_refused_with_a_message_naming_the_server(name, value, message):
    with pytest.raises(ConfigError, match=message):
        parse_server(name, value, environ={})


def test_tokens_are_name_role_token_and_refuse_unknown_roles_and_short_tokens():
    tokens = parse_tokens("ci:operator:0123456789abcdef, dba:admin:fedcba9876543210")
    assert [(t.name, t.role) for t in tokens] == [("ci", "operator"), ("dba", "admin")]
    assert "0123456789abcdef" not in repr(tokens[0])
    with pytest.raises(ConfigError, match="role"):
        parse_tokens("x:root:0123456789abcdef")
    with pytest.raises(ConfigError, match="16"):
        parse_tokens("x:admin:short")
    with pytest.raises(ConfigError, match="name:role:token"):
        parse_tokens("x-admin-0123456789abcdef")


def test_settings_come_from_the_environment_over_a_toml_file(tmp_path, monkeypatch):
    config = tmp_path / "rollback.toml"
    config.write_text(
        'data_dir = "/srv/rollback"\nworkers = 3\n[servers]\nprod1 = "mysql://u:pw@db1:3306/"\n'
        '[servers.local]\ndsn = "mysql://u@127.0.0.1/"\nbinlog_dir = "/var/lib/mysql"\n'
    )
    for key in list(__import__("os").environ):
        if key.startswith("MYSQL_ROLLBACK_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("MYSQL_ROLLBACK_CONFIG", str(config))
    monkeypatch.setenv("MYSQL_ROLLBACK_WORKERS", "5")
    settings = Settings()
    assert str(settings.data_dir) == "/srv/rollback" and settings.workers == 5
    servers = settings.server_configs()
    assert servers["prod1"].password == "pw" and str(servers["local"].binlog_dir) == "/var/lib/mysql"
    assert settings.database_url == "sqlite:////srv/rollback/jobs.sqlite3"
    monkeypatch.setenv("MYSQL_ROLLBACK_SERVERS", "[1, 2]")
    with pytest.raises(ConfigError, match="JSON object"):
        Settings().server_configs()


def test_size_settings_read_like_the_clis_sizes(monkeypatch):
    monkeypatch.setenv("MYSQL_ROLLBACK_AUTO_SPARK_BYTES", "256M")
    monkeypatch.setenv("MYSQL_ROLLBACK_AUTO_SPARK_BYTES_WARM", "64MiB")
    monkeypatch.setenv("MYSQL_ROLLBACK_MAX_UPLOAD_BYTES", "2G")
    monkeypatch.setenv("MYSQL_ROLLBACK_PARTITION_BYTES", "1048576")
    settings = Settings()
    assert settings.auto_spark_bytes == 256 << 20
    assert settings.auto_spark_bytes_warm == 64 << 20
    assert settings.max_upload_bytes == 2 << 30
    assert settings.partition_bytes == 1 << 20
    monkeypatch.setenv("MYSQL_ROLLBACK_AUTO_SPARK_BYTES", "lots")
    with pytest.raises(ValueError, match="'lots' is not a size such as 64M"):
        Settings()
    monkeypatch.setenv("MYSQL_ROLLBACK_AUTO_SPARK_BYTES", "0")
    with pytest.raises(ValueError, match="a size must be positive"):
        Settings()


def test_serve_names_a_bad_setting_once_in_one_line(monkeypatch, tmp_path):
    from app.cli import _settings

    monkeypatch.setenv("MYSQL_ROLLBACK_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("MYSQL_ROLLBACK_AUTO_SPARK_BYTES_WARM", "12X")
    with pytest.raises(SystemExit) as stop:
        _settings()
    assert str(stop.value) == (
        "mysql-rollback: error: MYSQL_ROLLBACK_AUTO_SPARK_BYTES_WARM: '12X' is not a size such as 64M"
    )
    monkeypatch.delenv("MYSQL_ROLLBACK_AUTO_SPARK_BYTES_WARM")
    monkeypatch.setenv("MYSQL_ROLLBACK_WORKERS", "0")
    with pytest.raises(SystemExit) as stop:
        _settings()
    assert str(stop.value) == "mysql-rollback: error: MYSQL_ROLLBACK_WORKERS must be between 1 and 64"


def test_a_server_keeps_its_socket_and_tls_options_in_its_dsn_and_shows_no_path():
    server = parse_server(
        "local", "mysql://u:pw@/?unix_socket=/run/mysqld/mysqld.sock&ssl_ca=/etc/ca.pem", environ={}
    )
    # the options in the mysql client's spelling; ssl-ca alone means VERIFY_CA
    options = "?socket=/run/mysqld/mysqld.sock&ssl-mode=VERIFY_CA&ssl-ca=/etc/ca.pem"
    assert (server.host, server.options) == ("localhost", options)
    assert server.dsn == f"mysql://u:pw@localhost:3306/{options}"
    # what viewers see (the API's server list, the web form): no path on the service host
    assert (
        server.public()["options"] == "socket, ssl-mode=VERIFY_CA, ssl-ca" and server.where == "Unix socket"
    )
    assert "/etc/ca.pem" not in str(server.public()) and "mysqld.sock" not in str(server.public())
    assert parse_server("p", "mysql://u@db1:3307/", environ={}).where == "db1:3307"


def test_an_ipv6_server_is_written_back_with_its_brackets():
    server = parse_server("v6", "mysql://u:pw@[::1]:3307/", environ={})
    assert server.host == "::1" and server.where == "[::1]:3307"
    assert server.dsn == "mysql://u:pw@[::1]:3307/" and parse_dsn(server.dsn).host == "::1"


def test_an_error_names_a_servers_socket_and_tls_files_by_their_option_not_their_path(tmp_path):
    from app.services.redact import Redactor

    server = parse_server(
        "local", "mysql://u:pw@/?socket=/run/my%20sql/m.sock&ssl-ca=/etc/ca.pem", environ={}
    )
    redact = Redactor({"local": server}, Settings(data_dir=tmp_path))
    said = redact(f"cannot connect to {server.dsn}: cannot read /etc/ca.pem; socket /run/my sql/m.sock")
    assert said == (
        "cannot connect to mysql://u:***@localhost:3306/?socket=<local's socket>&ssl-mode=VERIFY_CA"
        "&ssl-ca=<local's ssl-ca>: cannot read <local's ssl-ca>; socket <local's socket>"
    )
