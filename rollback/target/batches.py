"""The queries of one batch of plan steps (rollback/target/execute.py sends each batch as one multi-statement
query and reads its results in order).

A batch is cut into groups, each after a savepoint of its own, so that whatever a group's results say
can be undone to its start and run again one step at a time. A group is either

- plain: consecutive steps, each its check (a locking read) then its statement, one result each; or
- combined: consecutive steps of one table with a primary key and one statement kind whose checks are all of the
  plan's own forms: one locking read counting the rows of every check at once (`... WHERE (c1) OR
  (c2) ...`: the keys must all be free before re-inserts, every row there as the binlog left it
  before deletes and updates), then one multi-row INSERT, one `DELETE ... WHERE (k1) OR (k2) ...`, or
  one UPDATE of the columns they all set (`SET c = CASE WHEN (k1) THEN v1 ... END ... WHERE (k1) OR
  ...`, when every value is a plain literal; else the UPDATEs one after the other). A key that repeats in a group cuts it (a row changed twice keeps
  its order), and so does a change of table or kind.

  On a server with table value constructors (MariaDB 10.3.3 and later: `joined`), a group of UPDATEs whose
  checks are all of the plain forms below is one joined UPDATE instead: its rows' checked values and new
  values as one `VALUES` table, joined to the target through its primary key, each check's comparison
  against its own row's value (`ON t.k <=> v.o0 AND CAST(t.b AS BINARY) <=> v.o1 ...`), the SET from
  the same row. The server finds each row by its key and compares it once, where a CASE of n rows costs
  it about n * n / 2 comparisons (bench/README.md).

  Two combined forms need no read of their own, which the server would otherwise pay for on every row
  twice: a CASE UPDATE's WHERE is its steps' checks (`WHERE (c1) OR (c2) ...` through the primary key:
  each row is locked, compared with the image the binlog left and changed in one go), and re-inserts
  whose checks name their rows by exactly the target's primary key are checked by the INSERT itself (a
  key that is taken fails it with a duplicate-key error; a check by other columns keeps its read).

In a combined group every check reads a row no other step of the group changes (each check names its
row by key, and no two keys are alike), so that counting them before the statements, at once, says what
counting each right before its statement would; a count other than the expected one, a statement
count other than the group's size, or a statement the server refuses, sends the group back to its
savepoint and one step at a time, where the row that differs is found and named exactly as before.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

LOCKING = " FOR UPDATE"
COUNT_FROM = "SELECT COUNT(*) FROM "
SAVEPOINT = "mysql_rollback_"  # + the group's number in its batch
# A combined read or UPDATE asks for the primary key, as the single steps use it: a table scan locks
# rows the plan does not name. A DELETE takes no index hint (on MariaDB 10.11 a syntax error, which sent
# every combined DELETE back to one step at a time); ORDER BY its key with a LIMIT of its rows has the
# optimizer read the keys it names, where a small table would be scanned, every row locked.
BY_KEY = " FORCE INDEX (PRIMARY)"
# Rows of one CASE UPDATE: the server tries a row's WHENs in turn, so a CASE of n rows costs it about
# n * n / 2 comparisons; 50 took the 100k incident's 16,667 UPDATEs 0.46-0.57 s of server CPU against
# 0.6-0.98 s in CASEs of 500 (bench/README.md).
CASE_ROWS = 50
# Rows of one joined UPDATE: the 100k incident's 16,667 UPDATEs took the server 0.36-0.40 s in joins of
# 200 rows, 0.34-0.39 s in joins of 1,000 and 0.32 s in joins of 5,000 (CASEs of 50: 0.51-0.52 s).
JOIN_ROWS = 1000
TARGET = "rollback_target"  # the joined UPDATE's names for its target and its table of values
ROWS = "rollback_rows"


@dataclass
class Piece:
    """One statement of a batch's query and what its result must be."""

    kind: str  # savepoint | check | statement (one step's) | checks | statements (a combined group's)
    group: int
    step: dict[str, Any]  # the step it is of (a combined group's first step)
    sql: str
    expect: int = 1  # checks: the count; statements: the rows affected


@dataclass
class Group:
    steps: list[dict[str, Any]] = field(default_factory=list)
    shape: tuple[str, str, str] | None = None  # (kind, table, INSERT head) of a combined group, else plain
    keys: set[str] = field(default_factory=set)  # of a combined group's rows (_key)
    # a combined UPDATE group's SET columns, and its steps, each as its values and its WHERE (by key)
    columns: tuple[str, ...] = ()
    updates: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    # a joined UPDATE group: each check's column, its comparison's left side and its value's kind
    # (None until a row of the group compares a value that is not NULL), and each step's checked values
    checked: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    found: list[tuple[str, ...]] = field(default_factory=list)
    form: _CheckForm | None = None  # the check form of the row that started a joined group, if any
    # the kinds of the SET values of the last row of `form` it took (_signature): a row of `form` with the
    # same fits as that one did (a NULL fits any kind, and a column's kind, once known, stays)
    kinds: str = ""


def _key(step: dict[str, Any], kind: str) -> str:
    """Text that names the step's row by its key: a re-insert's key check; the WHERE (by key) that ends
    a DELETE or an UPDATE (from its last " WHERE ", which for one key is always the same text)."""
    if kind.endswith("insert"):
        return str(step["check"])
    sql = str(step["sql"])
    return sql[sql.rindex(" WHERE ") :]


def _ident_end(text: str, at: int) -> int:
    """Where the backquoted identifier at `at` ends (after its closing quote), or -1."""
    if not text.startswith("`", at):
        return -1
    i = at + 1
    while True:
        i = text.find("`", i)
        if i < 0:
            return -1
        if text.startswith("``", i):
            i += 2
            continue
        return i + 1


def _table_end(text: str, at: int) -> int:
    """Where `db`.`table` at `at` ends, or -1."""
    end = _ident_end(text, at)
    if end < 0 or not text.startswith(".", end):
        return -1
    return _ident_end(text, end + 1)


def _insert_head(sql: str, table: str) -> str | None:
    """`INSERT INTO table (cols) VALUES ` of an INSERT the plan writes, when the rest is one row."""
    at = len("INSERT INTO ") + len(table)
    if not sql.startswith(" (", at) or not sql.endswith(");"):
        return None
    at += 2
    while True:
        at = _ident_end(sql, at)
        if at < 0:
            return None
        if sql.startswith(", ", at):
            at += 2
            continue
        if sql.startswith(") VALUES (", at):
            return sql[: at + len(") VALUES ")]
        return None


@dataclass(frozen=True)
class _Form:
    pattern: re.Pattern[str]
    columns: tuple[str, ...]
    shape: tuple[str, str, str]
    starts: tuple[str, ...]  # `column`= of each SET column

    def sets_key(self, where: str) -> bool:
        """Whether a WHERE by key (`k1`=v1 AND `k2`=v2) compares one of the SET columns (_names_column
        of each, in one startswith and, for a key of more than one column, one search each)."""
        return where.startswith(self.starts) or (
            " AND " in where and any(_names_column(where, column) for column in self.columns)
        )


class _Table:
    """What the steps of one table share: the check's prefix, the statements' heads, the last INSERT head
    and UPDATE form seen. A plan's steps of one table share them, so a step is mostly recognised by a few
    startswith() (shape is the apply's busiest function on big plans)."""

    __slots__ = (
        "prefix",
        "table",
        "insert",
        "delete",
        "update",
        "head",
        "form",
        "by_key",
        "checks",
        "check_form",
    )

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.table = prefix[len(COUNT_FROM) : -len(" WHERE ")]
        self.insert = f"INSERT INTO {self.table}"
        self.delete = f"DELETE FROM {self.table} WHERE "
        self.update = f"UPDATE {self.table} SET "
        self.head = ""
        # The last UPDATE form: a pattern that reads a statement of that form in one match as
        # update_sets would (each value atomic: the one match update_sets' regex takes), its SET columns
        # and the group shape it gives. One attribute, read once: the passes of a parallel apply share
        # this cache from their threads, and a pattern must never meet another form's columns.
        self.form: _Form | None = None
        # the primary key's columns, and what a re-insert's check is when it names its row by exactly
        # that key (built on first need)
        self.by_key: tuple[str, re.Pattern[str]] | None = None
        # a joined UPDATE's check: a pattern per number of comparisons (_check_terms)
        self.checks: dict[int, re.Pattern[str]] = {}
        self.check_form: _CheckForm | None = None  # the last one learned (one attribute, as `form`)


_seen: dict[str, _Table] = {}
_VALUE = r"((?>NULL|-?[0-9]+(?:\.[0-9]+)?|'(?:[^']|'')*'))"


def shape(
    step: dict[str, Any], keyed: Mapping[str, str], separate: set[str], joined: bool = False
) -> tuple[str, str, str] | None:
    """(kind, table, INSERT head) of a step a combined group may take, or None (a plain step). `keyed`:
    the lower-cased tables with a primary key (and its columns), which the plan's checks and statements
    name rows by; `separate`: those whose UPDATEs go one after the other (groups); `joined`: the server
    has table value constructors. The kind: insert (checked by the INSERT itself), checked_insert (by
    its read), delete, update (a CASE UPDATE, or one after the other without a head) or joined."""
    return _shape(step, keyed, separate, joined)[0]


def _update_parts(seen: _Table, sql: str) -> tuple[_Form, tuple[str, ...], str] | None:
    """An UPDATE's form, SET values and WHERE (by key), or None unless every value is a plain literal
    (update_sets)."""
    form = seen.form
    if form is not None:
        found = form.pattern.fullmatch(sql)
        if found is not None:
            values = found.groups()
            return form, values[:-1], values[-1]
    parsed = update_sets(sql, len(seen.update))
    if parsed is None:
        return None
    sets, where = parsed
    columns = tuple(column for column, _ in sets)
    pattern = (
        re.escape(seen.update) + ", ".join(re.escape(c) + "=" + _VALUE for c in columns) + " WHERE (.*);"
    )
    form = seen.form = _Form(
        re.compile(pattern, re.DOTALL),
        columns,
        ("update", seen.table, ", ".join(columns)),
        tuple(f"{column}=" for column in columns),
    )
    return form, tuple(value for _, value in sets), sql[where + len(" WHERE ") : -1]


_PLAIN_STEP: tuple[None, None] = (None, None)

# The values of each kind (_kind), as a check or a SET writes them
_KIND_PATTERNS = {
    "number": r"-?[0-9]+(?:\.[0-9]+)?",
    "text": r"'(?:[^']|'')*'",
    "bytes": r"_binary 0x[0-9a-f]+|_binary''",
}

# One comparison of a check as the plan writes it (rollback/render/sql.py exact_comparison), when the
# joined UPDATE may compare it against a column of a VALUES table: its left side (the column, or its
# bytes, or an ENUM's or SET's index), which names the column (group 2 or 3), and a value whose kind the
# VALUES table keeps for the whole column (group 4): NULL, a number, a quoted text (temporal values, a
# MariaDB JSON document) or bytes in hex. FLOAT and DOUBLE values (an exponent), BIT values, other
# introducers and the compound forms (MySQL's JSON, a signed zero) are none of these: their UPDATEs stay
# CASEs.
_NAME = r"`(?:[^`]|``)+`"
_TERM = (
    rf"(CAST\(({_NAME})(?:\+0 AS UNSIGNED| AS BINARY)\)|({_NAME})(?:\+0)?)"
    rf"<=>(NULL|{'|'.join(_KIND_PATTERNS.values())})"
)
_TERMS = 4  # groups of a _TERM


def _check_terms(seen: _Table, check: str) -> list[tuple[str, str, str]] | None:
    """(left side, column, value) of each comparison of a check of plain forms (_TERM), or None."""
    n = check.count("<=>")
    pattern = seen.checks.get(n)
    if pattern is None:
        pattern = seen.checks[n] = re.compile(re.escape(seen.prefix) + " AND ".join([_TERM] * n), re.DOTALL)
    found = pattern.fullmatch(check)
    if found is None:
        return None
    parts = found.groups()
    return [(parts[i], parts[i + 1] or parts[i + 2], parts[i + 3]) for i in range(0, len(parts), _TERMS)]


def _kind(value: str) -> str | None:
    """The kind of a check's or a SET's plain value (None for NULL): one column of a VALUES table holds
    values of one kind, so that the server types it as each value alone would be typed."""
    first = value[0]
    if first == "N":
        return None
    if first == "'":
        return "text"
    if first == "_":
        return "bytes"
    return "number"


@dataclass(frozen=True, eq=False)
class _CheckForm:
    """A table's check as its joined UPDATEs compare it, learned from a check without NULL: each column's
    left side and the kind of its values (`checked`, as Group.checked holds them), for the primary key
    `key`. `pattern` reads a check of that form in one match, each value a group (None: NULL), where
    _check_terms reads its comparisons one by one (the apply's busiest function on big plans)."""

    key: str
    pattern: re.Pattern[str]
    checked: tuple[tuple[str, str, str], ...]


def _learn(seen: _Table, terms: list[tuple[str, str, str]], key: str) -> _CheckForm | None:
    """The check form of a check's comparisons, or None when one compares NULL (its kind is unknown)."""
    parts = []
    checked = []
    for left, column, value in terms:
        kind = _kind(value)
        if kind is None:
            return None
        values = _KIND_PATTERNS[kind]
        if left == column:
            parts.append(f"{re.escape(column)}<=>((?:{values})|NULL)")
        else:
            parts.append(f"(?:{re.escape(left)}<=>((?:{values}))|{re.escape(column)}<=>NULL)")
        checked.append((column, left, kind))
    pattern = re.compile(re.escape(seen.prefix) + " AND ".join(parts), re.DOTALL)
    return _CheckForm(key, pattern, tuple(checked))


def _names_column(where: str, column: str) -> bool:
    """Whether a WHERE by key (`k1`=v1 AND `k2`=v2) compares `column`."""
    return where.startswith(f"{column}=") or f" AND {column}=" in where


def _by_key(seen: _Table, key: str) -> re.Pattern[str]:
    """What a re-insert's check is when it names its row by exactly the primary key `key` (its columns,
    quoted, comma-separated): `SELECT COUNT(*) FROM t WHERE `k1`=v1 AND `k2`=v2`, each value a literal."""
    by_key = seen.by_key
    if by_key is None or by_key[0] != key:  # another target's table of that name
        parts = " AND ".join(re.escape(column) + "=" + _VALUE for column in key.split(", "))
        by_key = seen.by_key = (key, re.compile(re.escape(seen.prefix) + parts, re.DOTALL))
    return by_key[1]


# A joined UPDATE's check: the table's check form it matched (or None) and its values, or its comparisons
_Joined = tuple["_CheckForm | None", tuple[str, ...], "list[tuple[str, str, str]] | None"]
_Update = tuple[tuple[str, ...], tuple[str, ...], str, "_Joined | None"]


def _shape(
    step: dict[str, Any], keyed: Mapping[str, str], separate: set[str], joined: bool = False
) -> tuple[tuple[str, str, str] | None, _Update | None]:
    """shape, and a combined UPDATE's columns, values, WHERE and (joined) its check's comparisons."""
    sql, check, expect = step["sql"], step.get("check"), step.get("expect")
    name = str(step.get("table"))
    if not check or not check.startswith(COUNT_FROM) or name.lower() not in keyed:
        return _PLAIN_STEP
    seen = _seen.get(name)
    if seen is None or not check.startswith(seen.prefix):
        end = _table_end(check, len(COUNT_FROM))
        if end < 0 or not check.startswith(" WHERE ", end):
            return _PLAIN_STEP
        seen = _seen[name] = _Table(check[: end + len(" WHERE ")])
    table = seen.table
    if expect == 0 and sql.startswith(seen.insert):
        head = seen.head
        if not (head and sql.startswith(head) and sql.endswith(");")):
            head = _insert_head(sql, table) or ""
            if not head:
                return _PLAIN_STEP
            seen.head = head
        if _by_key(seen, keyed[name.lower()]).fullmatch(check) is None:
            return ("checked_insert", table, head), None
        return ("insert", table, head), None
    if expect != 1 or sql.endswith(" LIMIT 1;"):  # LIMIT 1: a keyless table, whose checks count duplicates
        return _PLAIN_STEP
    if sql.startswith(seen.delete) and sql.endswith(";"):
        return ("delete", table, ""), None
    if sql.startswith(seen.update) and sql.endswith(";"):
        parts = _update_parts(seen, sql) if name.lower() not in separate else None
        # The server assigns a row's columns left to right, each CASE seeing the columns set before it:
        # one that sets a column of the key its WHENs find rows by goes one statement a row.
        if parts is None or parts[0].sets_key(parts[2]):
            return ("update", table, ""), None
        form, values, where = parts
        if joined:
            found = _joined_check(seen, check, keyed[name.lower()])
            if found is not None:
                return ("joined", table, form.shape[2]), (form.columns, values, where, found)
        return form.shape, (form.columns, values, where, None)
    return _PLAIN_STEP


def _joined_check(seen: _Table, check: str, key: str) -> _Joined | None:
    """A check a joined UPDATE can compare its row by, through the primary key `key`, or None: read by the
    table's check form when it matches (and taught to the table when it has none, or another), else
    comparison by comparison."""
    form = seen.check_form
    if form is not None and form.key == key:
        found = form.pattern.fullmatch(check)
        if found is not None:
            return form, found.groups("NULL"), None
    terms = _check_terms(seen, check)
    if terms is None or not _found_by_key(terms, key):
        return None
    values = tuple(value for _, _, value in terms)
    form = _learn(seen, terms, key)
    if form is None:
        return None, values, terms
    seen.check_form = form
    return form, values, None


def _found_by_key(terms: list[tuple[str, str, str]], key: str) -> bool:
    """Whether the check compares every column of the primary key (`key`) itself with a number: the join
    then finds each row through the key (a text or bytes value, or a key compared as bytes, is no value
    the primary key's index is sure to be read by; such UPDATEs stay CASEs)."""
    plain = {column: value for left, column, value in terms if left == column}
    return all(_kind(plain.get(column, "NULL")) == "number" for column in key.split(", "))


_PLAIN_VALUE = re.compile(r"NULL|-?[0-9]+(\.[0-9]+)?|'([^']|'')*'")


def update_sets(sql: str, start: int) -> tuple[list[tuple[str, str]], int] | None:
    """The (column, value) pairs of an UPDATE's SET list from `start`, and where its WHERE starts; None
    unless every value is a plain literal (a number, a quoted string without introducer, NULL), which
    one CASE over many rows assigns exactly as the single statement would."""
    sets: list[tuple[str, str]] = []
    at = start
    while True:
        end = _ident_end(sql, at)
        if end < 0 or not sql.startswith("=", end):
            return None
        value = _PLAIN_VALUE.match(sql, end + 1)
        if value is None:
            return None
        sets.append((sql[at:end], value.group()))
        at = value.end()
        if sql.startswith(", ", at):
            at += 2
            continue
        return (sets, at) if sql.startswith(" WHERE ", at) else None


def _joins(group: Group, values: tuple[str, ...], terms: list[tuple[str, str, str]]) -> bool:
    """Whether a joined UPDATE group takes a row of these SET values and check comparisons: each check
    of the same column, compared the same way, and every column's values of one kind (_kind); if so, the
    group's comparisons take what the row adds to them."""
    checked = group.checked
    if not checked:
        checked.extend((column, None, None) for _, column, _ in terms)
        checked.extend(("", None, None) for _ in values)  # the SET values' kinds, after the checks'
    elif len(checked) != len(terms) + len(values):
        return False
    return _takes(checked, 0, [*terms, *(("", "", value) for value in values)])


def _takes(
    checked: list[tuple[str, str | None, str | None]], start: int, row: list[tuple[str, str, str]]
) -> bool:
    """Whether a group's comparisons from `start` on (Group.checked) take a row's (left side, column,
    value) there; if so, they take what the row adds to them."""
    seen = checked[start:]
    for i, (left, column, value) in enumerate(row):
        name, same_left, same_kind = seen[i]
        if column != name:
            return False
        kind = _kind(value)
        if kind is None:  # NULL: `c`<=>NULL whatever the column's comparison is
            continue
        if same_left is not None and (left != same_left or kind != same_kind):
            return False
        seen[i] = (name, left, kind)
    checked[start:] = seen
    return True


# a value's first character as its kind in a _signature (_kind): n a number, ' text, _ bytes, N NULL
_KIND_OF_FIRST = str.maketrans(dict.fromkeys("-0123456789", "n"))


def _signature(values: tuple[str, ...]) -> str:
    """The kinds of plain values (_kind) as one string, a character each."""
    return "".join([value[0] for value in values]).translate(_KIND_OF_FIRST)


def _fits(group: Group, values: tuple[str, ...], check: _Joined) -> bool:
    """Whether a joined UPDATE group takes a row (_joins); a row of the check form the group was started
    by compares every column as the group does, and only its SET values' kinds are looked at."""
    form, found, terms = check
    if form is not None and group.form is form:
        kinds = _signature(values)
        if kinds == group.kinds:
            return True
        start = len(group.checked) - len(values)
        if not _takes(group.checked, start, [("", "", value) for value in values]):
            return False
        group.kinds = kinds
        return True
    if terms is None:
        assert form is not None
        terms = [
            (left if value != "NULL" else column, column, value)
            for (column, left, _), value in zip(form.checked, found, strict=True)
        ]
    return _joins(group, values, terms)


def groups(
    steps: list[dict[str, Any]], keyed: Mapping[str, str], separate: set[str], joined: bool = False
) -> list[Group]:
    """The batch's groups. The UPDATEs of a table in `separate` go one after the other: a unique-key
    swap fails in one multi-row UPDATE, which checks each row's unique keys as it changes it. `joined`:
    the server has table value constructors (combined UPDATEs are joined ones where their checks allow)."""
    out: list[Group] = []
    for step in steps:
        form, update = _shape(step, keyed, separate, joined)
        last = out[-1] if out else None
        if form is None:
            if last is None or last.shape is not None:
                last = Group()
                out.append(last)
            last.steps.append(step)
            continue
        key = _key(step, form[0])
        check, values = (update[3], update[1]) if update is not None else (None, ())
        if (
            last is None
            or last.shape != form
            or key in last.keys
            or (update and len(last.steps) >= (CASE_ROWS if check is None else JOIN_ROWS))
            or (check is not None and not _fits(last, values, check))
        ):
            last = Group(shape=form)
            out.append(last)
            if check is not None:
                if check[0] is not None:
                    last.form = check[0]
                    last.checked = [*check[0].checked, *(("", None, None) for _ in values)]
                _fits(last, values, check)
        last.steps.append(step)
        last.keys.add(key)
        if update is not None:
            last.columns = update[0]
            last.updates.append(update[1:3])
            if check is not None:
                last.found.append(check[1])
    return out


def _ended(sql: str) -> str:
    return sql if sql.rstrip().endswith(";") else sql + ";"


def pieces(batch: list[Group], keyed: Mapping[str, str]) -> list[Piece]:
    """The batch's statements, in the order they run, each with what its result must be. `keyed`: the
    lower-cased tables with a primary key, and its columns."""
    out: list[Piece] = []
    for n, group in enumerate(batch):
        first = group.steps[0]
        out.append(Piece("savepoint", n, first, f"SAVEPOINT {SAVEPOINT}{n};"))
        if group.shape is None:
            for step in group.steps:
                if step.get("check"):
                    out.append(Piece("check", n, step, f"{step['check']}{LOCKING};"))
                out.append(Piece("statement", n, step, _ended(step["sql"])))
            continue
        kind, table, head = group.shape
        where = len(COUNT_FROM) + len(table) + len(" WHERE ")
        found = ") OR (".join(step["check"][where:] for step in group.steps)
        size = len(group.steps)
        if kind == "checked_insert" or kind == "delete" or (kind == "update" and not head):
            check = f"{COUNT_FROM}{table}{BY_KEY} WHERE ({found}){LOCKING};"
            out.append(Piece("checks", n, first, check, 0 if kind == "checked_insert" else size))
        if kind.endswith("insert"):
            out.append(Piece("statements", n, first, _insert(head, group), size))
        elif kind == "delete":
            start = len(f"DELETE FROM {table} WHERE ")
            keys = ") OR (".join(step["sql"][start:-1] for step in group.steps)
            order = keyed[str(first.get("table")).lower()]
            out.append(
                Piece(
                    "statements",
                    n,
                    first,
                    f"DELETE FROM {table} WHERE ({keys}) ORDER BY {order} LIMIT {size};",
                    size,
                )
            )
        elif not head:
            out.extend(Piece("statement", n, step, step["sql"]) for step in group.steps)
        elif kind == "joined":
            out.append(Piece("statements", n, first, _joined_update(table, group), size))
        else:
            out.append(Piece("statements", n, first, _case_update(table, group, found), size))
    return out


def _insert(head: str, group: Group) -> str:
    """A combined group's re-inserts as one multi-row INSERT (each step's VALUES after the shared head)."""
    return head + ", ".join(step["sql"][len(head) : -1] for step in group.steps) + ";"


def _case_update(table: str, group: Group, found: str) -> str:
    """A combined group's UPDATEs as one: each column it sets a CASE over its rows' keys, the rows found by
    `found` (their checks, or their keys)."""
    cases = ", ".join(
        f"{column} = CASE"
        + "".join(f" WHEN ({key}) THEN {values[i]}" for values, key in group.updates)
        + " END"
        for i, column in enumerate(group.columns)
    )
    return f"UPDATE {table}{BY_KEY} SET {cases} WHERE ({found});"


def _joined_update(table: str, group: Group) -> str:
    """A joined group's UPDATEs as one: its rows' checked and new values as a VALUES table (columns o0...
    then n0...), each row of the target found through its primary key and compared by every check
    (STRAIGHT_JOIN: the VALUES table first, the target read by key, never scanned), then set from its
    row's values."""
    checks = len(group.found[0])
    names = [f"o{i}" for i in range(checks)] + [f"n{i}" for i in range(len(group.columns))]
    rows = ", ".join(
        f"({', '.join(found)}, {', '.join(values)})"
        for found, (values, _) in zip(group.found, group.updates, strict=True)
    )
    on = " AND ".join(
        f"{_qualified(left or column, column)} <=> {ROWS}.o{i}"
        for i, (column, left, _) in enumerate(group.checked[:checks])
    )
    sets = ", ".join(f"{TARGET}.{column} = {ROWS}.n{i}" for i, column in enumerate(group.columns))
    return (
        f"UPDATE (WITH {ROWS}({', '.join(names)}) AS (VALUES {rows}) SELECT * FROM {ROWS}) AS {ROWS} "
        f"STRAIGHT_JOIN {table} AS {TARGET}{BY_KEY} ON {on} SET {sets};"
    )


def _qualified(left: str, column: str) -> str:
    """A check's left side with its column named by the joined UPDATE's target."""
    return left.replace(column, f"{TARGET}.{column}", 1)


def checked_writes(batch: list[Group], keyed: Mapping[str, str]) -> list[Piece]:
    """The writes of a batch of combined groups alone, after one savepoint, each finding its rows by their
    checks (the merge apply's writes: rollback/target/merge_columns.py): no locking read, a row not as the
    binlog left it is not found (a re-insert's taken key fails its INSERT), and the count comes up short."""
    first = batch[0].steps[0]
    out = [Piece("savepoint", 0, first, f"SAVEPOINT {SAVEPOINT}0;")]
    for n, group in enumerate(batch):
        assert group.shape is not None
        kind, table, head = group.shape
        where = len(COUNT_FROM) + len(table) + len(" WHERE ")
        found = ") OR (".join(step["check"][where:] for step in group.steps)
        size = len(group.steps)
        if kind.endswith("insert"):
            out.append(Piece("statements", n, group.steps[0], _insert(head, group), size))
        elif kind == "delete":
            order = keyed[str(group.steps[0].get("table")).lower()]
            sql = f"DELETE FROM {table} WHERE ({found}) ORDER BY {order} LIMIT {size};"
            out.append(Piece("statements", n, group.steps[0], sql, size))
        elif not head:
            for step in group.steps:
                sql = step["sql"]
                out.append(
                    Piece(
                        "statement", n, step, f"{sql[: sql.rindex(' WHERE ')]} WHERE {step['check'][where:]};"
                    )
                )
        elif kind == "joined":
            out.append(Piece("statements", n, group.steps[0], _joined_update(table, group), size))
        else:
            out.append(Piece("statements", n, group.steps[0], _case_update(table, group, found), size))
    return out
