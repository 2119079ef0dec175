"""MySQL option files (`my.cnf`, `~/.my.cnf`, `--defaults-file`) and the login-path file, read the way
the `mysql` client reads them: the connection settings of `[client]` (and `[client-mariadb]`,
`[mysql-rollback]`), later files and later lines winning, `!include` and `!includedir` followed.

Values are parsed by PyMySQL's option-file parser (quotes removed). As in the `mysql` client, a
password holding `#` must be quoted in the file (`password="pa#ss"`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rollback import SourceError

GROUPS = ("client", "client-server", "client-mariadb", "mysql-rollback")
KEYS = ("host", "port", "user", "password", "socket")
MAX_INCLUDE_DEPTH = 10


def default_files() -> list[Path]:
    """The files the mysql client reads without --defaults-file, in order (later wins)."""
    home = Path(os.path.expanduser("~"))
    return [Path("/etc/my.cnf"), Path("/etc/mysql/my.cnf"), home / ".my.cnf"]


@dataclass
class OptionFileSettings:
    values: dict[str, str]  # host, port, user, password, socket: the last value found wins
    read: list[str]  # the files read, for error messages


def read_option_files(paths: list[Path], required: Path | None = None) -> OptionFileSettings:
    """The connection settings of `paths` (missing ones skipped) and of `required` (which must exist)."""
    values: dict[str, str] = {}
    read: list[str] = []
    files = [*paths, *([required] if required is not None else [])]
    for path in files:
        if path == required and not path.is_file():
            raise SourceError(f"--defaults-file {path}: no such file")
        if path.is_file():
            _read_into(path, values, read, 0)
    return OptionFileSettings(values, read)


def _read_into(path: Path, values: dict[str, str], read: list[str], depth: int) -> None:
    from pymysql.optionfile import Parser

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"option file {path}: cannot read it ({exc})") from None
    read.append(str(path))
    lines: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if depth < MAX_INCLUDE_DEPTH and stripped.startswith("!include "):
            _read_into(Path(stripped.split(None, 1)[1]), values, read, depth + 1)
        elif depth < MAX_INCLUDE_DEPTH and stripped.startswith("!includedir "):
            folder = Path(stripped.split(None, 1)[1])
            for item in sorted(folder.glob("*.cnf")) if folder.is_dir() else []:
                _read_into(item, values, read, depth + 1)
        elif not stripped.startswith("!"):
            lines.append(line)
    parser = Parser(strict=False)
    try:
        parser.read_string("\n".join(lines), source=str(path))
    except Exception as exc:  # configparser's errors: a line outside a group, a broken header
        raise SourceError(f"option file {path}: {' '.join(str(exc).split())}") from None
    for group in GROUPS:
        if parser.has_section(group):
            for key in KEYS:
                if parser.has_option(group, key):
                    values[key] = parser.get(group, key) or ""


def read_login_path(name: str) -> dict[str, str]:
    """The settings of one login path of `~/.mylogin.cnf` (written by MySQL's mysql_config_editor;
    $MYSQL_TEST_LOGIN_FILE names another file), read with the myloginpath library."""
    try:
        import myloginpath
    except ImportError:
        raise SourceError(
            "--login-path needs the myloginpath package (pip install 'mysql-rollback[login-path]')"
        ) from None
    path = os.environ.get("MYSQL_TEST_LOGIN_FILE") or os.path.expanduser("~/.mylogin.cnf")
    if not os.path.isfile(path):
        raise SourceError(f"--login-path {name}: {path} does not exist (mysql_config_editor writes it)")
    try:
        found = myloginpath.parse(name, path=path)
    except Exception as exc:  # configparser.NoSectionError, a file that does not decrypt
        if type(exc).__name__ == "NoSectionError":
            raise SourceError(f"--login-path {name}: {path} has no such login path") from None
        raise SourceError(f"--login-path {name}: cannot read {path} ({type(exc).__name__})") from None
    return {key: str(value) for key, value in found.items() if key in KEYS and value is not None}
