"""Names as a statement writes them: every identifier the engine puts into SQL is quoted here."""

from __future__ import annotations


def quote_ident(name: str) -> str:
    """A database, table, column, key or savepoint name in backquotes, its own backquotes doubled."""
    return "`" + name.replace("`", "``") + "`"


def quote_table(database: str, table: str) -> str:
    """`db`.`t`."""
    return f"{quote_ident(database)}.{quote_ident(table)}"
