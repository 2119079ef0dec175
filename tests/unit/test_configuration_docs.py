"""The configuration table (docs/reference/configuration.md) against the code: every MYSQL_ROLLBACK_* variable the code reads is
documented, nothing documented is gone, and where the CLI and the service share a setting they share
its default, the one the table states."""

from __future__ import annotations

import re

import pytest

from tests.support import REPO

PREFIX = "MYSQL_ROLLBACK_"
NAME = re.compile(r"MYSQL_ROLLBACK_[A-Z0-9_]*")
# The code's own files (not tests/: the suite's variables are CONTRIBUTING.md's), the image included.
SOURCES = ("rollback", "app", "scripts")
SUFFIXES = {".py", ".sh", ".html", ".js", ""}


def _code_files():
    for top in SOURCES:
        for path in sorted((REPO / top).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES and "__pycache__" not in path.parts:
                yield path
    yield REPO / "Dockerfile"


def names_in_code() -> set[str]:
    """Every variable named in the code, and every setting pydantic reads as PREFIX + field name.
    A name ending in `_` is a family (`MYSQL_ROLLBACK_PASSWORD_<NAME>`); the bare prefix is none."""
    from app.core.config import Settings

    found = {m for path in _code_files() for m in NAME.findall(path.read_text(errors="replace"))}
    found |= {PREFIX + field.upper() for field in Settings.model_fields}
    found.discard(PREFIX)
    return found


def readme_table() -> dict[str, str]:
    """variable -> its default cell, from the table of docs/reference/configuration.md."""
    section = (REPO / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `" + PREFIX) and len(cells) >= 3:
            name = re.sub(r"<[^>]*>", "", cells[0].strip("`"))  # MYSQL_ROLLBACK_PASSWORD_<NAME> -> family
            rows[name] = cells[-1]
    return rows


def test_every_variable_the_code_reads_is_in_the_readme_table_and_no_other():
    documented = set(readme_table())
    families = [name for name in documented if name.endswith("_")]
    # an instance of a family (MYSQL_ROLLBACK_PASSWORD_PROD1 in an example) counts as the family
    code = {next((f for f in families if n.startswith(f) and n != f), n) for n in names_in_code()}
    assert not code - documented, (
        f"read by the code but not in the configuration table: {sorted(code - documented)}"
    )
    assert not documented - code, f"in the configuration table but read nowhere: {sorted(documented - code)}"


def _default(name: str) -> str:
    cell = readme_table()[name]
    match = re.match(r"`([^`]*)`", cell)
    assert match, f"the table gives {name} no default in backticks: {cell!r}"
    return match.group(1)


def test_cli_and_service_share_the_engine_default(monkeypatch):
    from app.core.config import Settings
    from rollback.cli.commands import build_parser

    monkeypatch.delenv("MYSQL_ROLLBACK_ENGINE", raising=False)
    cli = build_parser().parse_args(["flashback", "x"]).engine
    service = Settings.model_fields["engine"].default
    assert cli == service == _default("MYSQL_ROLLBACK_ENGINE")
    monkeypatch.setenv("MYSQL_ROLLBACK_ENGINE", "local")
    assert build_parser().parse_args(["flashback", "x"]).engine == Settings().engine == "local"


def test_cli_and_service_share_the_spark_master_default(monkeypatch):
    from app.core.config import Settings
    from rollback.pipeline.session import DEFAULT_MASTER, spark_master

    monkeypatch.delenv("MYSQL_ROLLBACK_SPARK_MASTER", raising=False)
    assert spark_master() == Settings.model_fields["spark_master"].default == DEFAULT_MASTER
    assert DEFAULT_MASTER == _default("MYSQL_ROLLBACK_SPARK_MASTER")


def test_cli_and_service_spool_under_the_same_data_dir(monkeypatch, tmp_path):
    from app.core.config import Settings
    from rollback import default_spool_dir

    monkeypatch.setenv("MYSQL_ROLLBACK_DATA_DIR", str(tmp_path))
    assert default_spool_dir() == Settings().spool_dir == tmp_path / "spool"
    assert str(Settings.model_fields["data_dir"].default) == _default("MYSQL_ROLLBACK_DATA_DIR").removeprefix(
        "./"
    )


@pytest.mark.parametrize(
    "name, value",
    [
        ("MYSQL_ROLLBACK_LOG_FORMAT", "DEFAULT_LOG_FORMAT"),
        ("MYSQL_ROLLBACK_LOG_LEVEL", "DEFAULT_LOG_LEVEL"),
    ],
)
def test_log_settings_defaults_are_documented(name, value, monkeypatch):
    """The CLI and the service read these through the same function (rollback.base.logs.log_settings)."""
    from rollback.base import logs

    monkeypatch.delenv(name, raising=False)
    assert getattr(logs, value) == _default(name)
    assert logs.log_settings({}) == (logs.DEFAULT_LOG_FORMAT, logs.DEFAULT_LOG_LEVEL)


def test_spark_log_level_default_is_documented():
    from rollback.pipeline.session import DEFAULT_SPARK_LOG_LEVEL

    assert DEFAULT_SPARK_LOG_LEVEL == _default("MYSQL_ROLLBACK_SPARK_LOG_LEVEL")
