"""How the command line names a server: a DSN (`mysql://user:password@host:port/`), or the options
of the `mysql` client, mysqlbinlog and binlog2sql (`-h -P -u -p`, `--defaults-file`, `--login-path`),
with the password from the command line, a login path, an option file, `$MYSQL_PWD`, or a prompt.

Every server the CLI talks to goes through `complete_dsn`: a DSN without a password takes one from
the same sources, so `--target mysql://root@scratch/` with `~/.my.cnf` works like `mysql -u root`.
The DSN built here percent-encodes user and password, so any character works in them.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from rollback import DEFAULT_HOST, ConnectionOptions, DsnError, build_dsn, parse_dsn
from rollback.cli.option_files import default_files, read_login_path, read_option_files

PROMPT = "\x00prompt"  # `-p` or `--password` without a value: ask on the terminal
PROMPT_FLAG = "--password-prompt"  # what a bare -p becomes before argparse sees it (see bare_password)


def add_connection_options(parser: argparse.ArgumentParser, what: str) -> None:
    """-h/-P/-u/-p and the option-file options; `what` says which server they name."""
    group = parser.add_argument_group(
        "connection (as the mysql client takes it)",
        f"Name {what}. The password comes from -pPASSWORD / --password=PASSWORD (visible in ps: avoid), "
        "a login path, an option file ([client] password=...), $MYSQL_PWD, or -p alone, which asks for it.",
    )
    group.add_argument("-h", "--host", help=f"host name or address (default {DEFAULT_HOST})")
    group.add_argument("-P", "--port", type=int, help="TCP port (default 3306)")
    group.add_argument("-u", "--user", help="user name")
    group.add_argument(
        "-S",
        "--socket",
        metavar="PATH",
        help="connect through this Unix socket file instead of TCP (as mysql -S)",
    )
    group.add_argument(
        "-p",
        "--password",
        metavar="PASSWORD",
        help="-pPASSWORD or --password=PASSWORD (attached, as in mysql); -p alone asks on the terminal",
    )
    group.add_argument(
        PROMPT_FLAG, dest="password", action="store_const", const=PROMPT, help=argparse.SUPPRESS
    )
    group.add_argument(
        "--defaults-file", metavar="FILE", help="read [client] options from this file only (not ~/.my.cnf)"
    )
    group.add_argument("--no-defaults", action="store_true", help="read no option file")
    group.add_argument(
        "--login-path", metavar="NAME", help="read options of NAME from ~/.mylogin.cnf (mysql_config_editor)"
    )


def bare_password(argv: Sequence[str]) -> list[str]:
    """`-p` or `--password` standing alone asks for the password, as in mysql: the next word is never
    taken as the password (argparse would take it), so `-p mysql-bin.000042` still names a file."""
    out: list[str] = []
    rest = False
    for arg in argv:
        if not rest and arg in ("-p", "--password"):
            out.append(PROMPT_FLAG)
        else:
            rest = rest or arg == "--"
            out.append(arg)
    return out


def connection_given(args: argparse.Namespace) -> bool:
    """Whether -h/-P/-u/-p or a login path was given (option files alone do not name a server)."""
    return any(
        getattr(args, name, None) is not None
        for name in ("host", "port", "user", "password", "socket", "login_path")
    )


def server_named(args: argparse.Namespace) -> bool:
    """Whether a server is named where one is needed (-R, --start-file, fetch): by -h/-P/-u/-p or a login
    path, or by a host in the option files (`--defaults-file`, `~/.my.cnf`), as mysqlbinlog -R takes it.
    With local binlog files the option files alone name no server: they would silently add one."""
    return connection_given(args) or _settings(args).host is not None


@dataclass
class _Credentials:
    host: str | None = None
    port: int | None = None
    user: str | None = None
    password: str | None = None
    socket: str | None = None


def _settings(args: argparse.Namespace) -> _Credentials:
    """Option files, then the login path, then the command line: later wins, as in mysql."""
    found: dict[str, str] = {}
    if not getattr(args, "no_defaults", False):
        defaults_file = getattr(args, "defaults_file", None)
        if defaults_file:
            found.update(read_option_files([], Path(defaults_file)).values)
        else:
            found.update(read_option_files(default_files()).values)
    login_path = getattr(args, "login_path", None)
    if login_path:
        found.update(read_login_path(login_path))
    port_text = found.get("port")
    try:
        port = int(port_text) if port_text else None
    except ValueError:
        raise DsnError(f"option file: port {port_text!r} is not a number") from None
    creds = _Credentials(
        found.get("host"), port, found.get("user"), found.get("password"), found.get("socket")
    )
    if getattr(args, "host", None) is not None:
        creds.host = args.host
    if getattr(args, "port", None) is not None:
        creds.port = args.port
    if getattr(args, "user", None) is not None:
        creds.user = args.user
    if getattr(args, "password", None) is not None:
        creds.password = args.password
    if getattr(args, "socket", None) is not None:
        creds.socket = args.socket
    return creds


def terminal_available() -> bool:
    """Whether a prompt can be shown and answered: the controlling terminal (as mysql asks, even when
    standard input is a pipe), else standard input when it is a terminal."""
    try:
        os.close(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY))
        return True
    except OSError:
        return sys.stdin.isatty()


def _password(creds: _Credentials, args: argparse.Namespace) -> str | None:
    if creds.password == PROMPT:
        if not terminal_available():
            raise DsnError("-p without a value asks for the password, but there is no terminal to ask on")
        args.password = getpass.getpass("Enter password: ")  # asked once, for every server of the command
        return str(args.password)
    if creds.password is None:
        return os.environ.get("MYSQL_PWD")
    return creds.password


def server_from_options(args: argparse.Namespace) -> str:
    """The DSN named by -h/-P/-u/-p, the login path and the option files."""
    creds = _settings(args)
    # -S names a local server's socket: it wins over a host of the option files, not over another
    # host on the command line. An option file's socket is used for the host `localhost` (as mysql
    # uses it) unless the command line gives a port (then TCP, as MariaDB's client does since 10.6).
    # Neither moves the default, TCP to 127.0.0.1 (the `socket` line of Debian's
    # /etc/mysql/mariadb.cnf does not move `-P 3307` to a local socket).
    given_socket = getattr(args, "socket", None)
    given_host = getattr(args, "host", None)
    if given_socket is not None and given_host not in (None, "localhost"):
        raise DsnError(
            f"-S names a local server's socket and -h {given_host} another server: give one of them"
        )
    if given_socket is not None:
        socket = given_socket
    elif creds.host == "localhost" and creds.socket and getattr(args, "port", None) is None:
        socket = creds.socket
    else:
        socket = None
    return build_dsn(
        "localhost" if socket else creds.host or DEFAULT_HOST,
        creds.port or 3306,
        creds.user if creds.user is not None else getpass.getuser(),
        _password(creds, args),
        query=ConnectionOptions(socket=socket or "").query,
    )


def complete_dsn(dsn: str, args: argparse.Namespace) -> str:
    """`dsn` as given when it holds a password; else with the password of -p, the login path, the
    option files or $MYSQL_PWD (when the DSN's user is theirs or they name none)."""
    parts = parse_dsn(dsn)
    options = ConnectionOptions.of(parts)  # an option that cannot be used: refused before any work
    if parts.password is not None:
        return dsn
    creds = _settings(args)
    if creds.user is not None and parts.user and creds.user != parts.user:
        creds.password = args.password if getattr(args, "password", None) is not None else None
    password = _password(creds, args)
    if password is None:
        return dsn
    query = "?" + parts.query if parts.query else ""
    return build_dsn(
        options.host(parts.host), parts.port, parts.user, password, quote(parts.database, safe=""), query
    )
