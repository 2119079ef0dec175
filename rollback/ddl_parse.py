"""DDL statements as the schema history applies them: sqlglot's MySQL dialect -> small operations.

`parse_ddl_ops(sql, default_db)` reads one statement of a QUERY event and returns what it does to
table definitions: create, drop, rename or truncate a table, or alter one (add, drop, modify,
change, rename columns, with FIRST/AFTER). Keys, options and index changes leave the columns as
they are (`KeepColumns`). A statement that changes no table (a view, a user, a grant) gives [].

Versioned comments (`/*!80013 ... */`, `/*M!100301 ... */`) are executed text for the server that
logged them and are read as text here; MariaDB's `ALTER ONLINE|IGNORE TABLE` and `IF EXISTS` forms
are read too. A statement sqlglot cannot read (it falls back to a bare command) is `Unparsed`: the
history refuses it when it touches a table it needs.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from rollback.schema import Column, _strip_comments, parse_ddl

# sqlglot logs a warning when it falls back to a bare command; that is an `Unparsed` here, said once.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

TableName = tuple[str, str]  # (database, table), lower case; database "" when neither named nor default


@dataclass(frozen=True, slots=True)
class Position:
    """FIRST, AFTER a column, or at the end (neither)."""

    first: bool = False
    after: str | None = None


@dataclass(frozen=True, slots=True)
class AddColumn:
    column: Column
    position: Position
    definition: str  # the column's definition as the statement gave it (for a reverse's message)


@dataclass(frozen=True, slots=True)
class DropColumn:
    name: str


@dataclass(frozen=True, slots=True)
class ModifyColumn:
    """MODIFY c ... and CHANGE old new ...: `old` is the name before, `column` the new definition."""

    old: str
    column: Column
    position: Position | None  # None: the column keeps its place
    definition: str


@dataclass(frozen=True, slots=True)
class RenameColumn:
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class KeepColumns:
    """An alteration that leaves names, order and types of the columns alone (keys, options, defaults)."""

    what: str


AlterAction = AddColumn | DropColumn | ModifyColumn | RenameColumn | KeepColumns


@dataclass(frozen=True, slots=True)
class CreateTable:
    table: TableName
    columns: list[Column] | None  # None: CREATE ... LIKE / AS SELECT without a column list
    primary_key: tuple[int, ...] = ()
    unique_keys: list[tuple[int, ...]] = field(default_factory=list)
    replace: bool = False


@dataclass(frozen=True, slots=True)
class DropTable:
    table: TableName


@dataclass(frozen=True, slots=True)
class RenameTable:
    old: TableName
    new: TableName


@dataclass(frozen=True, slots=True)
class TruncateTable:
    table: TableName


@dataclass(frozen=True, slots=True)
class AlterTable:
    table: TableName
    actions: list[AlterAction]


@dataclass(frozen=True, slots=True)
class DropDatabase:
    database: str


@dataclass(frozen=True, slots=True)
class Unparsed:
    """A statement the parser cannot read as one of the above."""

    reason: str


TableOp = CreateTable | DropTable | RenameTable | TruncateTable | AlterTable | DropDatabase | Unparsed

_MODIFIERS = re.compile(r"^\s*ALTER\s+(?:(?:ONLINE|OFFLINE|IGNORE)\s+)+TABLE\b", re.IGNORECASE)
_RENAME_TABLE = re.compile(r"^\s*RENAME\s+TABLES?\b", re.IGNORECASE)
_NO_TABLE = re.compile(
    r"^\s*(?:CREATE|ALTER|DROP)\s+(?:OR\s+REPLACE\s+)?(?:DEFINER\s*=\s*\S+\s+)?(?:SQL\s+SECURITY\s+\w+\s+)?"
    r"(?:ALGORITHM\s*=\s*\w+\s+)?(?:VIEW|TRIGGER|PROCEDURE|FUNCTION|EVENT|USER|ROLE|SERVER|DATABASE|SCHEMA)\b"
    r"|^\s*(?:GRANT|REVOKE|ANALYZE|OPTIMIZE|REPAIR|CHECK|FLUSH)\b",
    re.IGNORECASE,
)
_DROP_DATABASE = re.compile(r"^\s*DROP\s+(?:DATABASE|SCHEMA)\s+(?:IF\s+EXISTS\s+)?(`(?:[^`]|``)+`|\w+)", re.I)


def parse_ddl_ops(sql: str, default_db: str | None = None) -> list[TableOp]:
    """What one DDL statement does to table definitions, in order."""
    text = _strip_comments(sql).strip().rstrip(";").strip()
    db = (default_db or "").lower()
    dropped = _DROP_DATABASE.match(text)
    if dropped:
        name = dropped.group(1)
        return [DropDatabase((name[1:-1].replace("``", "`") if name.startswith("`") else name).lower())]
    if _NO_TABLE.match(text):
        return []
    text = _MODIFIERS.sub("ALTER TABLE", text)
    if _RENAME_TABLE.match(text):
        return _rename_tables(text, db)
    if re.match(r"^\s*CREATE\b", text, re.IGNORECASE) and re.search(r"\bTABLE\b", text[:80], re.IGNORECASE):
        return [_create(text, db)]
    try:
        tree = sqlglot.parse_one(text, read="mysql", error_level=sqlglot.ErrorLevel.RAISE)
    except ParseError as exc:
        return [Unparsed(_first_line(str(exc)))]
    if isinstance(tree, exp.Command):
        return [Unparsed(f"not a statement the schema history reads: {_first_line(text)[:80]}")]
    if isinstance(tree, exp.Alter) and (tree.args.get("kind") or "").upper() == "TABLE":
        return _alter(tree, db)
    if isinstance(tree, exp.Drop) and (tree.args.get("kind") or "").upper() == "TABLE":
        return [DropTable(_name(t, db)) for t in tree.args.get("tables") or [tree.this]]
    if isinstance(tree, exp.TruncateTable):
        return [TruncateTable(_name(t, db)) for t in tree.expressions]
    if isinstance(tree, exp.Drop) and (tree.args.get("kind") or "").upper() in ("INDEX", "KEY"):
        table = tree.args.get("cluster")
        table = table.this if isinstance(table, exp.OnProperty) else table
        if isinstance(table, exp.Table):
            return [AlterTable(_name(table, db), [KeepColumns("DROP INDEX")])]
    if isinstance(tree, exp.Create) and (tree.args.get("kind") or "").upper() == "INDEX":
        index = tree.this
        table = index.args.get("table") if isinstance(index, exp.Index) else None
        if isinstance(table, exp.Table):
            return [AlterTable(_name(table, db), [KeepColumns("CREATE INDEX")])]
    return [Unparsed(f"not a statement the schema history reads: {_first_line(text)[:80]}")]


def _first_line(text: str) -> str:
    return " ".join(text.split())[:200]


def _ident(node: exp.Expression | str | None) -> str:
    if node is None:
        return ""
    if isinstance(node, str):
        return node
    if isinstance(node, exp.Identifier):
        return str(node.this)
    if isinstance(node, exp.Column):
        return str(node.name)
    return str(node.name)


def _name(table: exp.Expression, db: str) -> TableName:
    assert isinstance(table, exp.Table)
    return ((table.db or db).lower(), table.name.lower())


def _rename_tables(text: str, db: str) -> list[TableOp]:
    """RENAME TABLE a TO b, c TO d: sqlglot has no statement for it; each pair is read as ALTER ... RENAME."""
    body = _RENAME_TABLE.sub("", text, count=1)
    ops: list[TableOp] = []
    for pair in _split_commas(body):
        m = re.fullmatch(r"\s*(.+?)\s+TO\s+(.+?)\s*", pair, re.IGNORECASE | re.DOTALL)
        if not m:
            return [Unparsed(f"RENAME TABLE pair not read: {_first_line(pair)}")]
        try:
            old = sqlglot.parse_one(m.group(1), read="mysql", into=exp.Table)
            new = sqlglot.parse_one(m.group(2), read="mysql", into=exp.Table)
        except ParseError as exc:
            return [Unparsed(_first_line(str(exc)))]
        ops.append(RenameTable(_name(old, db), _name(new, db)))
    return ops


def _split_commas(text: str) -> list[str]:
    parts, depth, start, quote = [], 0, 0, ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "`'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _create(text: str, db: str) -> TableOp:
    """CREATE TABLE: the columns as a DDL file's CREATE TABLE is read (rollback.schema.parse_ddl),
    the name and form through sqlglot."""
    try:
        tree = sqlglot.parse_one(text, read="mysql", error_level=sqlglot.ErrorLevel.RAISE)
    except ParseError as exc:
        return Unparsed(_first_line(str(exc)))
    if not isinstance(tree, exp.Create):
        return Unparsed(f"not a CREATE TABLE sqlglot reads: {_first_line(text)[:80]}")
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    if not isinstance(target, exp.Table):
        return Unparsed(f"CREATE without a table name: {_first_line(text)[:80]}")
    name = _name(target, db)
    replace = bool(tree.args.get("replace"))
    if not isinstance(tree.this, exp.Schema):
        return CreateTable(name, None, replace=replace)
    schemas = parse_ddl(text, name[0])
    if not schemas:
        return Unparsed(f"CREATE TABLE without columns read: {_first_line(text)[:80]}")
    found = schemas[0]
    return CreateTable(name, found.columns, found.primary_key, found.unique_keys, replace)


def column_from_def(node: exp.ColumnDef) -> Column:
    """A column definition of an ALTER as the schema's Column, read from its DDL text as a CREATE
    TABLE column is (one reader of column definitions)."""
    definition = _definition(node)
    schemas = parse_ddl(f"CREATE TABLE _t ({definition})")
    column = schemas[0].columns[0]
    return column


def _position(node: exp.ColumnDef) -> Position | None:
    pos = node.args.get("position")
    if not isinstance(pos, exp.ColumnPosition):
        return None
    where = str(pos.args.get("position") or "").upper()
    if where == "FIRST":
        return Position(first=True)
    return Position(after=_ident(pos.this).lower() or None)


def _definition(node: exp.ColumnDef) -> str:
    clean = node.copy()
    clean.set("position", None)
    clean.set("exists", None)
    return clean.sql(dialect="mysql")


# ALTER TABLE actions on keys, constraints, defaults and table options: the columns stay as they are.
_KEEPS_COLUMNS = (exp.AlterColumn, exp.AddConstraint, exp.AlterIndex, exp.DropPrimaryKey, exp.ForceProperty)


def _alter(tree: exp.Alter, db: str) -> list[TableOp]:
    """The column actions in order, then a RENAME TO (MySQL renames after the other actions)."""
    table = _name(tree.this, db)
    actions: list[AlterAction] = []
    renamed: TableName | None = None
    for action in tree.args.get("actions") or []:
        if isinstance(action, exp.ColumnDef):
            actions.append(
                AddColumn(column_from_def(action), _position(action) or Position(), _definition(action))
            )
        elif isinstance(action, exp.Drop) and (action.args.get("kind") or "").upper() == "COLUMN":
            actions.extend(DropColumn(_ident(c).lower()) for c in action.args.get("tables") or [action.this])
        elif isinstance(action, exp.Drop):
            actions.append(KeepColumns(f"DROP {action.args.get('kind') or ''}".strip()))
        elif isinstance(action, exp.ModifyColumn):
            definition = action.this
            assert isinstance(definition, exp.ColumnDef)
            old = _ident(action.args.get("rename_from")) or _ident(definition.this)
            actions.append(
                ModifyColumn(
                    old.lower(), column_from_def(definition), _position(definition), _definition(definition)
                )
            )
        elif isinstance(action, exp.RenameColumn):
            actions.append(RenameColumn(_ident(action.this).lower(), _ident(action.args.get("to"))))
        elif isinstance(action, exp.AlterRename):
            renamed = _name(action.this, db)
        elif isinstance(action, _KEEPS_COLUMNS):
            actions.append(KeepColumns(type(action).__name__))
        else:
            return [Unparsed(f"ALTER TABLE action not read: {_first_line(action.sql(dialect='mysql'))[:80]}")]
    if not actions and renamed is None:
        actions.append(KeepColumns("table options"))  # ENGINE=, COMMENT=, ...: what sqlglot reads of them
    ops: list[TableOp] = [AlterTable(table, actions)] if actions else []
    if renamed is not None:
        ops.append(RenameTable(table, renamed))
    return ops
