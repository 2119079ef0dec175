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
from dataclasses import dataclass, field, replace

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from rollback.base.identifiers import quote_ident
from rollback.schema.tables import Column, _strip_comments, parse_ddl

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
    """An alteration that leaves names, order and types of the columns alone and that the history does
    not follow (table options, foreign keys, ALTER COLUMN ... DEFAULT): `what` is its text. `column`:
    the column whose definition (not its name or type) it changed, "" when none."""

    what: str
    column: str = ""


@dataclass(frozen=True, slots=True)
class AddKey:
    """ADD PRIMARY KEY | [UNIQUE | FULLTEXT | SPATIAL] INDEX: `name` lower case ("primary" for the
    primary key; None when the statement gave none: the server names it after its first column)."""

    name: str | None
    first_column: str
    definition: str  # what ADD takes to create it again (INDEX ix (a, b(3)))


@dataclass(frozen=True, slots=True)
class DropKey:
    name: str  # lower case; "primary" for DROP PRIMARY KEY


@dataclass(frozen=True, slots=True)
class TableOptions:
    """ENGINE=, DEFAULT CHARSET=, COLLATE=, COMMENT=, ROW_FORMAT=...: (kind, its text) in order."""

    options: tuple[tuple[str, str], ...]


AlterAction = (
    AddColumn | DropColumn | ModifyColumn | RenameColumn | KeepColumns | AddKey | DropKey | TableOptions
)

_OPTION_KINDS = {
    "EngineProperty": "engine",
    "CharacterSetProperty": "charset",
    "CollateProperty": "collate",
    "SchemaCommentProperty": "comment",
    "RowFormatProperty": "row_format",
    "AutoIncrementProperty": "auto_increment",
}


def _options(properties: list[exp.Expression]) -> tuple[tuple[str, str], ...]:
    return tuple(
        (_OPTION_KINDS.get(type(p).__name__, type(p).__name__), p.sql(dialect="mysql")) for p in properties
    )


@dataclass(frozen=True, slots=True)
class CreateTable:
    table: TableName
    columns: list[Column] | None  # None: CREATE ... LIKE / AS SELECT without a column list
    primary_key: tuple[int, ...] = ()
    unique_keys: list[tuple[int, ...]] = field(default_factory=list)
    replace: bool = False
    keys: dict[str, str] | None = None  # every key by name (lower case) -> its definition; None: not read
    options: tuple[tuple[str, str], ...] = ()  # the table options it names, as TableOptions has them


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
            names = tree.args.get("tables") or [tree.this]
            return [AlterTable(_name(table, db), [DropKey(_ident(n).lower()) for n in names])]
    if isinstance(tree, exp.Create) and (tree.args.get("kind") or "").upper() == "INDEX":
        index = tree.this
        table = index.args.get("table") if isinstance(index, exp.Index) else None
        if isinstance(table, exp.Table):
            return [AlterTable(_name(table, db), [_create_index(index, bool(tree.args.get("unique")), text)])]
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
    for pair in split_commas(body):
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


def split_commas(text: str) -> list[str]:
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
    """CREATE TABLE: the columns as a DDL file's CREATE TABLE is read (rollback.schema.tables.parse_ddl),
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
    or_replace = bool(tree.args.get("replace"))
    if not isinstance(tree.this, exp.Schema):
        return CreateTable(name, None, replace=or_replace)
    schemas = parse_ddl(text, name[0])
    if not schemas:
        return Unparsed(f"CREATE TABLE without columns read: {_first_line(text)[:80]}")
    found = schemas[0]
    defs = {
        _ident(node.this).lower(): node for node in tree.this.expressions if isinstance(node, exp.ColumnDef)
    }
    columns = [replace(c, definition=column_definition(defs[c.name.lower()])) for c in found.columns]
    keys: dict[str, str] | None = {}
    for node in tree.this.expressions:
        if isinstance(node, exp.ColumnDef):
            for constraint in node.constraints:
                if isinstance(constraint.kind, exp.PrimaryKeyColumnConstraint):
                    _add_key(
                        keys, AddKey("primary", _ident(node.this), f"PRIMARY KEY ({node.this.sql('mysql')})")
                    )
                elif isinstance(constraint.kind, exp.UniqueColumnConstraint):
                    column = node.this.sql("mysql")
                    _add_key(keys, AddKey(None, _ident(node.this), f"UNIQUE ({column})"))
            continue
        key = _key(node)
        if isinstance(key, AddKey):
            _add_key(keys, key)
        elif "FOREIGN KEY" not in key.what.upper():
            keys = None  # a key the history cannot follow: no key of this table is known exactly
            break
    properties = tree.args.get("properties")
    options = _options(list(properties.expressions)) if isinstance(properties, exp.Properties) else ()
    return CreateTable(name, columns, found.primary_key, found.unique_keys, or_replace, keys, options)


def _add_key(keys: dict[str, str] | None, key: AddKey) -> None:
    """Record `key` as the server does: an unnamed key takes its first column's name (then _2, _3...)."""
    if keys is None:
        return
    name = key.name or server_key_name(keys, key.first_column)
    keys[name] = key.definition if key.name else named_key(key.definition, name)


def server_key_name(keys: dict[str, str], first_column: str) -> str:
    """The name MySQL and MariaDB give an unnamed key (make_unique_key_name): its first column's,
    else with _2, _3... appended until free."""
    name = first_column.lower()
    if name not in keys and name != "primary":
        return name
    k = 2
    while f"{name}_{k}" in keys:
        k += 1
    return f"{name}_{k}"


def named_key(definition: str, name: str) -> str:
    """An unnamed key's definition with the name the server gave it (before its column list)."""
    at = definition.index("(")
    quoted = quote_ident(name)
    return f"{definition[:at].rstrip()} {quoted} {definition[at:]}"


def _key(node: exp.Expression) -> AddKey | KeepColumns:
    """A key definition of ADD or of a CREATE TABLE's list, as an AddKey; anything else (a foreign
    key, a check) as KeepColumns naming it."""
    text = node.sql(dialect="mysql")
    inner = node
    name: str | None = None
    if isinstance(node, exp.Constraint):
        name = _ident(node.this).lower() or None
        inner = node.expressions[0] if len(node.expressions) == 1 else node
    if isinstance(inner, exp.PrimaryKey):
        return AddKey(
            "primary",
            _ident(inner.expressions[0]) if inner.expressions else "",
            f"PRIMARY KEY {_cols(inner)}",
        )
    if isinstance(inner, exp.IndexColumnConstraint):
        own = _ident(inner.this).lower() or None
        first = inner.expressions[0] if inner.expressions else None
        return AddKey(own or name, _ident(first.this if isinstance(first, exp.ColumnPrefix) else first), text)
    if isinstance(inner, exp.UniqueColumnConstraint) and isinstance(inner.this, exp.Schema):
        own = _ident(inner.this.this).lower() or None
        first = inner.this.expressions[0] if inner.this.expressions else None
        body = inner.sql(dialect="mysql")
        return AddKey(own or name, _ident(first), body if own or not name else named_key(body, name))
    return KeepColumns(text)


def _create_index(index: exp.Index, unique: bool, text: str) -> AddKey | KeepColumns:
    """CREATE [UNIQUE] INDEX name ON t (...) as the ADD it is; FULLTEXT, SPATIAL and options not followed."""
    params = index.args.get("params")
    columns = (params.args.get("columns") if isinstance(params, exp.IndexParameters) else None) or []
    plain = re.match(r"^\s*CREATE\s+(?:UNIQUE\s+)?INDEX\s", text, re.IGNORECASE) and not re.search(
        r"\b(?:USING|COMMENT|ALGORITHM|LOCK|KEY_BLOCK_SIZE|WITH\s+PARSER)\b", text, re.IGNORECASE
    )
    plain_columns = columns and all(
        isinstance(c, exp.Ordered) and isinstance(c.this, exp.Column) and not c.args.get("desc")
        for c in columns
    )
    if not plain_columns or not plain:
        return KeepColumns(_first_line(text)[:120])
    parts = [
        c.this.sql(dialect="mysql") if isinstance(c, exp.Ordered) else c.sql(dialect="mysql") for c in columns
    ]
    name = index.this.sql(dialect="mysql")
    first = columns[0].this
    kind = "UNIQUE INDEX" if unique else "INDEX"
    return AddKey(_ident(index.this).lower(), _ident(first), f"{kind} {name} ({', '.join(parts)})")


def _cols(node: exp.Expression) -> str:
    return "(" + ", ".join(e.sql(dialect="mysql") for e in node.expressions) + ")"


def column_from_def(node: exp.ColumnDef) -> Column:
    """A column definition of an ALTER as the schema's Column, read from its DDL text as a CREATE
    TABLE column is (one reader of column definitions)."""
    definition = _definition(node)
    schemas = parse_ddl(f"CREATE TABLE _t ({definition})")
    column = schemas[0].columns[0]
    column.definition = column_definition(node)
    return column


def column_definition(node: exp.ColumnDef) -> str:
    """The column's definition after its name, as the statement gave it (type, character set,
    collation, NULL, default, comment, generation), without a place and without inline keys (a key
    is a key of the table: the history follows it apart)."""
    clean = node.copy()
    clean.set("position", None)
    clean.set("exists", None)
    kept = [
        c
        for c in clean.constraints
        if not isinstance(c.kind, exp.PrimaryKeyColumnConstraint | exp.UniqueColumnConstraint)
    ]
    clean.set("constraints", kept)
    full = clean.sql(dialect="mysql")
    head = clean.this.sql(dialect="mysql")
    return full[len(head) :].strip() if full.startswith(head) else full


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
_KEEPS_COLUMNS = (exp.AlterIndex, exp.ForceProperty)


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
        elif isinstance(action, exp.Drop) and (action.args.get("kind") or "").upper() in ("INDEX", "KEY"):
            actions.extend(DropKey(_ident(c).lower()) for c in action.args.get("tables") or [action.this])
        elif isinstance(action, exp.DropPrimaryKey):
            actions.append(DropKey("primary"))
        elif isinstance(action, exp.AddConstraint) and len(action.expressions) == 1:
            actions.append(_key(action.expressions[0]))
        elif isinstance(action, exp.AlterColumn):
            actions.append(KeepColumns(action.sql(dialect="mysql"), _ident(action.this).lower()))
        elif isinstance(action, exp.Drop | exp.AddConstraint):
            actions.append(KeepColumns(action.sql(dialect="mysql")))
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
            actions.append(KeepColumns(action.sql(dialect="mysql")))
        else:
            return [Unparsed(f"ALTER TABLE action not read: {_first_line(action.sql(dialect='mysql'))[:80]}")]
    options = [
        o
        for o in tree.args.get("options") or []
        if not isinstance(o, exp.AlgorithmProperty | exp.LockProperty)  # how to alter, not what
    ]
    if options:
        actions.append(TableOptions(_options(options)))
    elif not actions and renamed is None:
        actions.append(KeepColumns("table options " + _first_line(tree.sql("mysql"))[:80]))
    ops: list[TableOp] = [AlterTable(table, actions)] if actions else []
    if renamed is not None:
        ops.append(RenameTable(table, renamed))
    return ops
