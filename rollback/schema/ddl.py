"""Which tables a DDL statement changes: what the DDL guards of a job compare with the tables it changed.

A statement as the binlog holds it (a QUERY event's text and its default database) -> `DdlTargets`:
the tables whose columns, rows or existence it may change, the databases it drops whole, or, for
a statement this reader does not know, every identifier it names (a table it names is assumed
touched: unknown means touched, never untouched).

MySQL and MariaDB execute the content of a versioned comment (`/*!80013 ... */`, `/*M!100301 ... */`)
when their version is at least the number; the server that logged the statement did, so the content
counts as text. Other comments do not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# Quoted identifiers (with `` inside), strings, versioned-comment openers, comments, words, punctuation.
_TOKEN = re.compile(
    r"""
      (?P<qid>`(?:[^`]|``)*`)
    | (?P<str>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
    | (?P<vopen>/\*M?!\d*)
    | (?P<comment>/\*.*?\*/|\#[^\n]*|--(?:[ \t][^\n]*)?(?=\n|$))
    | (?P<vclose>\*/)
    | (?P<word>[\w$]+)
    | (?P<punct>[.,;()=])
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class _Tok:
    text: str  # an identifier's name (unquoted), or a word / punctuation as written
    quoted: bool

    @property
    def upper(self) -> str:
        return "" if self.quoted else self.text.upper()


def _tokens(sql: str) -> list[_Tok]:
    out: list[_Tok] = []
    for m in _TOKEN.finditer(sql):
        kind = m.lastgroup
        text = m.group()
        if kind == "qid":
            out.append(_Tok(text[1:-1].replace("``", "`"), True))
        elif kind == "str":
            # With ANSI_QUOTES a double-quoted text is an identifier: kept as one, never as a keyword.
            out.append(_Tok(text[1:-1], True))
        elif kind in ("word", "punct"):
            out.append(_Tok(text, False))
        # versioned-comment markers vanish (their content stays); other comments are dropped
    return out


@dataclass(slots=True)
class DdlTargets:
    """What a DDL statement may change. Names are lower case; a table's database is '' when the
    statement names none and the event has no default database (then it matches any database)."""

    tables: set[tuple[str, str]] = field(default_factory=set)
    databases: set[str] = field(default_factory=set)  # dropped whole
    unknown: bool = False  # a statement this reader does not know: `names` holds every identifier
    names: set[str] = field(default_factory=set)
    default_db: str = ""

    def touches(self, database: str, table: str) -> bool:
        database, table = database.lower(), table.lower()
        if database in self.databases:
            return True
        if any(t == table and d in ("", database) for d, t in self.tables):
            return True
        if self.unknown:
            return table in self.names and (database in self.names or self.default_db in ("", database))
        return False

    def to_dict(self) -> dict[str, Any]:
        return {
            "tables": sorted(f"{d}.{t}" if d else t for d, t in self.tables),
            "databases": sorted(self.databases),
            "unknown": self.unknown,
            "names": sorted(self.names) if self.unknown else [],
            "default_db": self.default_db,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DdlTargets:
        tables = set()
        for name in d["tables"]:
            db, _, table = name.rpartition(".")
            tables.add((db, table))
        return cls(tables, set(d["databases"]), d["unknown"], set(d["names"]), d["default_db"])


# Statements that change no table's columns or rows.
_HARMLESS_OBJECTS = frozenset(
    {
        "VIEW",
        "TRIGGER",
        "PROCEDURE",
        "FUNCTION",
        "EVENT",
        "USER",
        "ROLE",
        "SERVER",
        "LOGFILE",
        "TABLESPACE",
        "RESOURCE",
        "SPATIAL_REFERENCE_SYSTEM",
        "PACKAGE",
        "AGGREGATE",
        "DEFINER",
        "ALGORITHM",
        "SQL",
        "INSTANCE",
        "UNDO",
    }
)
_HARMLESS_HEADS = frozenset({"GRANT", "REVOKE", "ANALYZE", "OPTIMIZE", "REPAIR", "CHECK", "FLUSH"})
_TABLE_MODIFIERS = frozenset({"ONLINE", "OFFLINE", "IGNORE", "TEMPORARY", "GLOBAL", "LOCAL"})
_INDEX_KINDS = frozenset({"UNIQUE", "FULLTEXT", "SPATIAL", "VECTOR", "ONLINE", "OFFLINE"})


class _Reader:
    def __init__(self, tokens: list[_Tok], default_db: str):
        self.toks = tokens
        self.i = 0
        self.default_db = default_db

    def peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.toks[j].upper if j < len(self.toks) else ""

    def take(self, *words: str) -> bool:
        """Consume the words in order if they are next."""
        for k, word in enumerate(words):
            if self.peek(k) != word:
                return False
        self.i += len(words)
        return True

    def skip(self, words: frozenset[str]) -> None:
        while self.peek() in words and self.peek():
            self.i += 1

    def name(self) -> tuple[str, str] | None:
        """A table name, maybe db-qualified: (database, table) in lower case."""
        if self.i >= len(self.toks):
            return None
        first = self.toks[self.i]
        if not first.quoted and not re.fullmatch(r"[\w$]+", first.text):
            return None
        self.i += 1
        if self.peek() == "." and self.i + 1 < len(self.toks):
            second = self.toks[self.i + 1]
            self.i += 2
            return first.text.lower(), second.text.lower()
        return self.default_db, first.text.lower()

    def names_list(self) -> list[tuple[str, str]]:
        """name [, name ...]"""
        out = []
        while True:
            got = self.name()
            if got is None:
                break
            out.append(got)
            if not self.take(","):
                break
        return out

    def rest_words(self) -> list[str]:
        return [t.upper for t in self.toks[self.i :]]


def ddl_targets(sql: str, default_db: str | None = None, with_rows: bool = False) -> DdlTargets:
    """The tables (and databases) a DDL statement may change, read conservatively. `with_rows`: the
    statement opened a transaction that goes on with row events (how MariaDB logs CREATE ... SELECT:
    the CREATE TABLE without its SELECT, then the rows)."""
    tokens = _tokens(sql)
    db = (default_db or "").lower()
    targets = DdlTargets(default_db=db)
    r = _Reader(tokens, db)
    head = r.peek()
    r.i += 1
    if head in _HARMLESS_HEADS:
        return targets
    if head == "ALTER":
        r.skip(_TABLE_MODIFIERS)
        if r.take("TABLE"):
            r.take("IF", "EXISTS")
            table = r.name()
            if table is None:
                return _unknown(targets, tokens)
            targets.tables.add(table)
            _alter_renames(r, targets)
            return targets
        if r.peek() in ("SEQUENCE",):
            r.i += 1
            r.take("IF", "EXISTS")
            table = r.name()
            if table is not None:
                targets.tables.add(table)
                return targets
            return _unknown(targets, tokens)
        if r.peek() in ("DATABASE", "SCHEMA") or r.peek() in _HARMLESS_OBJECTS:
            return targets  # a database's defaults, a view, a user...: no table's columns or rows
        return _unknown(targets, tokens)
    if head == "DROP":
        r.skip(_TABLE_MODIFIERS)
        if r.take("TABLE") or r.take("TABLES") or r.take("SEQUENCE"):
            r.take("IF", "EXISTS")
            targets.tables.update(r.names_list())
            return targets
        if r.take("DATABASE") or r.take("SCHEMA"):
            r.take("IF", "EXISTS")
            name = r.name()
            if name is None:
                return _unknown(targets, tokens)
            targets.databases.add(name[1])
            return targets
        if r.take("INDEX") or r.take("KEY"):
            return _index_on(r, targets, tokens, "IF", "EXISTS")
        if r.peek() in _HARMLESS_OBJECTS:
            return targets
        return _unknown(targets, tokens)
    if head == "RENAME":
        if r.take("TABLE") or r.take("TABLES"):
            # a TO b, c TO d: every name on either side (RENAME a TO b, c TO a swaps them)
            while True:
                r.take("IF", "EXISTS")
                old = r.name()
                if old is None or not r.take("TO"):
                    return _unknown(targets, tokens)
                new = r.name()
                if new is None:
                    return _unknown(targets, tokens)
                targets.tables.update((old, new))
                if not r.take(","):
                    return targets
        if r.peek() in _HARMLESS_OBJECTS:
            return targets
        return _unknown(targets, tokens)
    if head == "TRUNCATE":
        r.take("TABLE")
        table = r.name()
        if table is None:
            return _unknown(targets, tokens)
        targets.tables.add(table)
        return targets
    if head == "CREATE":
        replace = r.take("OR", "REPLACE")
        r.skip(_TABLE_MODIFIERS)
        if r.take("TABLE") or r.take("SEQUENCE"):
            r.take("IF", "NOT", "EXISTS")
            table = r.name()
            if table is None:
                return _unknown(targets, tokens)
            # A plain CREATE TABLE changes no existing table: one the range changed exists unless a
            # DROP or RENAME (which the guards see) removed it first. OR REPLACE drops the table it
            # replaces; ... SELECT writes rows that come from the DDL (MySQL 8 logs it as
            # CREATE TABLE ... START TRANSACTION, MariaDB as a CREATE TABLE followed by the rows).
            rest = r.rest_words()
            if replace or with_rows or "SELECT" in rest or _follows(rest, "START", "TRANSACTION"):
                targets.tables.add(table)
            return targets
        r.skip(_INDEX_KINDS)
        if r.take("INDEX") or r.take("KEY"):
            return _index_on(r, targets, tokens, "IF", "NOT", "EXISTS")
        if r.peek() in ("DATABASE", "SCHEMA") or r.peek() in _HARMLESS_OBJECTS:
            return targets
        return _unknown(targets, tokens)
    return _unknown(targets, tokens)


def created_table(sql: str, default_db: str | None = None) -> str | None:
    """The table a CREATE TABLE statement makes, as DdlTargets.to_dict names it; None for another statement."""
    r = _Reader(_tokens(sql), (default_db or "").lower())
    if r.peek() != "CREATE":
        return None
    r.i += 1
    r.take("OR", "REPLACE")
    r.skip(_TABLE_MODIFIERS)
    if not r.take("TABLE"):
        return None
    r.take("IF", "NOT", "EXISTS")
    table = r.name()
    if table is None:
        return None
    return f"{table[0]}.{table[1]}" if table[0] else table[1]


def _index_on(r: _Reader, targets: DdlTargets, tokens: list[_Tok], *if_clause: str) -> DdlTargets:
    """CREATE/DROP INDEX [IF [NOT] EXISTS] name ON table: the table."""
    r.take(*if_clause)
    r.name()
    if r.take("ON"):
        table = r.name()
        if table is not None:
            targets.tables.add(table)
            return targets
    return _unknown(targets, tokens)


def _follows(words: list[str], first: str, second: str) -> bool:
    return any(a == first and b == second for a, b in zip(words, words[1:], strict=False))


def _alter_renames(r: _Reader, targets: DdlTargets) -> None:
    """ALTER TABLE t ... RENAME [TO|AS] u, ... EXCHANGE PARTITION p WITH TABLE u: u changes too."""
    toks = r.toks
    j = r.i
    while j < len(toks):
        word = toks[j].upper
        if word == "RENAME" and j + 1 < len(toks) and toks[j + 1].upper not in ("COLUMN", "INDEX", "KEY"):
            r.i = j + 1
            if not (r.take("TO") or r.take("AS")):
                r.take("=")
            name = r.name()
            if name is not None:
                targets.tables.add(name)
            j = r.i
            continue
        if word == "WITH" and j + 1 < len(toks) and toks[j + 1].upper == "TABLE":
            r.i = j + 2
            name = r.name()
            if name is not None:
                targets.tables.add(name)
            j = r.i
            continue
        j += 1


def _unknown(targets: DdlTargets, tokens: list[_Tok]) -> DdlTargets:
    targets.tables.clear()
    targets.databases.clear()
    targets.unknown = True
    targets.names = {t.text.lower() for t in tokens if t.quoted or re.fullmatch(r"[\w$]+", t.text)}
    return targets


def shorten(sql: str, limit: int = 200) -> str:
    """A statement on one line, cut to `limit` characters (for messages)."""
    text = " ".join(sql.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
