"""Row predicates (`--where`): a MySQL boolean expression, parsed by sqlglot's MySQL dialect and
evaluated on decoded row images with MySQL's semantics.

Supported: column names (unqualified, backquotes allowed), string, number, hex, TRUE/FALSE and NULL
literals; `=`, `<=>`, `!=`/`<>`, `<`, `<=`, `>`, `>=`; `[NOT] IN (...)`, `[NOT] BETWEEN`,
`[NOT] LIKE` (with ESCAPE), `IS [NOT] NULL|TRUE|FALSE`; `AND`, `OR`, `XOR`, `NOT`; parentheses;
`+ - * / % DIV` and unary minus. Anything else (functions, subqueries, REGEXP, placeholders, several
statements) is refused with one line naming the part.

Semantics (MySQL's, "Type Conversion in Expression Evaluation"):
- NULL is unknown: comparisons with NULL, arithmetic on NULL and `NOT NULL` are NULL; `AND` is
  false if either side is false, `OR` true if either side is true, otherwise NULL when a side is;
  `x IN (...)` is NULL when no item matches and x or an item is NULL. Only TRUE selects a row.
- two character strings compare as the `_ci` collations (the servers' defaults) do: without case,
  accents and trailing spaces; a binary string (no character set) compares byte for byte;
- a number and a string compare as numbers (the string's leading number, else 0); DATE, DATETIME,
  TIMESTAMP and TIME columns compare with a string literal as the temporal value it spells
  ('2024-01-02' equals DATETIME '2024-01-02 00:00:00');
- ENUM and SET columns compare by their labels (the schema must list them);
- `/` of integers or decimals is exact (a decimal); division by zero is NULL.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from rollback.base.errors import RangeError
from rollback.binlog.columns import MISSING
from rollback.schema.charsets import PYTHON_CODEC

# An image -> TRUE (1), FALSE (0) or NULL (None).
RowTest = Callable[[Sequence[Any]], Any]
_Value = Callable[[Sequence[Any]], Any]


class MissingColumn(Exception):
    """A column the predicate reads is not in the row image (MINIMAL or NOBLOB row images)."""

    def __init__(self, column: str):
        super().__init__(column)
        self.column = column


class Temporal:
    """A DATE/DATETIME/TIMESTAMP/TIME value: compares with another or with a literal that spells one."""

    __slots__ = ("kind", "key", "text")

    def __init__(self, kind: str, text: str):
        self.kind = kind  # date (date, datetime, timestamp) | time
        self.text = text
        self.key = temporal_key(kind, text)


_DATE = re.compile(
    r"^\s*(\d{1,4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,6}))?)?)?\s*$"
)
_TIME = re.compile(r"^\s*(-)?(?:(\d+) )?(\d{1,3}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,6}))?)?\s*$")


def temporal_key(kind: str, text: str) -> tuple[int, ...] | None:
    """A comparable form of a temporal text; None when the text spells no such value."""
    if kind == "date":
        m = _DATE.match(text)
        if m is None:
            return None
        y, mo, d, h, mi, s, frac = m.groups()
        usec = int((frac or "0").ljust(6, "0"))
        return (int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0), usec)
    m = _TIME.match(text)
    if m is None:
        return None
    sign, days, h, mi, s, frac = m.groups()
    total = ((int(days or 0) * 24 + int(h)) * 60 + int(mi)) * 60 + int(s or 0)
    usec = total * 1_000_000 + int((frac or "0").ljust(6, "0"))
    return (-usec if sign else usec,)


# ---- parsing ----------------------------------------------------------------------------------------


class Predicate:
    """A parsed `--where` text; `bind` gives the test of one table's images."""

    def __init__(self, text: str):
        self.text = text
        try:
            tree = sqlglot.parse_one(text, read="mysql")
        except SqlglotError as exc:
            first = " ".join(str(exc).split())[:200]
            raise RangeError(f"--where {text!r} does not parse as a MySQL expression: {first}") from None
        if tree is None or isinstance(tree, exp.Block):
            raise RangeError(f"--where {text!r}: give one expression, not several statements")
        self.tree: exp.Expression = tree  # type: ignore[assignment]
        names: set[str] = set()
        _check(self.tree, names)
        self.columns = frozenset(names)  # lower case

    def bind(self, table: str, columns: Sequence[Any]) -> RowTest:
        """The test of `table`'s images, `columns` being its schema's Columns in image order."""
        index = {c.name.lower(): i for i, c in enumerate(columns)}
        unknown = sorted(name for name in self.columns if name not in index)
        if unknown:
            raise RangeError(
                f"--where names column(s) {', '.join(unknown)} that table {table} does not have "
                f"(its columns: {', '.join(c.name for c in columns)}); select the tables it is meant for with -t"
            )
        return _compile(self.tree, index, columns, table)


_SUPPORTED = (
    exp.And,
    exp.Or,
    exp.Xor,
    exp.Not,
    exp.Paren,
    exp.EQ,
    exp.NEQ,
    exp.NullSafeEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.In,
    exp.Between,
    exp.Like,
    exp.Escape,
    exp.Is,
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Mod,
    exp.IntDiv,
    exp.Neg,
    exp.Column,
    exp.Identifier,
    exp.Literal,
    exp.Null,
    exp.Boolean,
    exp.HexString,
    exp.Introducer,
    exp.Var,
)


def _check(node: exp.Expression, names: set[str]) -> None:
    if (
        not isinstance(node, _SUPPORTED)
        or isinstance(node, exp.Var)
        and not isinstance(node.parent, exp.Introducer)
    ):
        raise RangeError(f"--where: {node.key.upper()} is not supported: {node.sql(dialect='mysql')[:120]}")
    if isinstance(node, exp.Column):
        if node.table or not isinstance(node.this, exp.Identifier):
            raise RangeError(
                f"--where: name columns without a table or database: {node.sql(dialect='mysql')}"
            )
        names.add(node.name.lower())
        return
    if isinstance(node, exp.In) and (
        node.args.get("query") or node.args.get("field") or node.args.get("unnest")
    ):
        raise RangeError(f"--where: IN takes a list of values: {node.sql(dialect='mysql')[:120]}")
    for child in node.iter_expressions():
        _check(child, names)


# ---- values -----------------------------------------------------------------------------------------

_NUMBER_PREFIX = re.compile(r"^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_TEXT_TYPES = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext"}


def _fold(text: str, pad: bool = True) -> str:
    """A text as a `_ci` collation compares it: without case and accents, and (pad) trailing spaces."""
    decomposed = unicodedata.normalize("NFKD", text)
    folded = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    return folded.rstrip(" ") if pad else folded


def _number(value: Any) -> int | Decimal | float:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | Decimal | float):
        return value
    if isinstance(value, Temporal):
        digits = "".join(str(abs(p)).rjust(2, "0") for p in (value.key or ())[:6])
        return int(digits or 0)
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    m = _NUMBER_PREFIX.match(str(value))
    if m is None:
        return 0
    text = m.group(0).strip()
    try:
        return int(text) if text.lstrip("+-").isdigit() else Decimal(text)
    except InvalidOperation:
        return float(text)


def _align(a: Any, b: Any) -> tuple[Any, Any]:
    """Two non-NULL values as MySQL compares them."""
    if isinstance(a, Temporal) or isinstance(b, Temporal):
        t, other = (a, b) if isinstance(a, Temporal) else (b, a)
        if isinstance(other, Temporal | str | bytes):
            text = other.text if isinstance(other, Temporal) else _text(other)
            key = temporal_key(t.kind, text)
            if key is not None and t.key is not None:
                return (t.key, key) if t is a else (key, t.key)
            return (_fold(t.text), _fold(text)) if t is a else (_fold(text), _fold(t.text))
        return _number(a), _number(b)
    if isinstance(a, bytes) and isinstance(b, bytes | str) or isinstance(b, bytes) and isinstance(a, str):
        return _bytes(a), _bytes(b)
    if isinstance(a, str) and isinstance(b, str):
        return _fold(a), _fold(b)
    x, y = _number(a), _number(b)
    if isinstance(x, float) or isinstance(y, float):
        return float(x), float(y)
    return x, y


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode("utf-8")


def _compare(op: str, a: Any, b: Any) -> int | None:
    if op == "<=>":
        if a is None or b is None:
            return int(a is None and b is None)
        op = "="
    if a is None or b is None:
        return None
    x, y = _align(a, b)
    if op == "=":
        return int(x == y)
    if op == "!=":
        return int(x != y)
    if op == "<":
        return int(x < y)
    if op == "<=":
        return int(x <= y)
    if op == ">":
        return int(x > y)
    return int(x >= y)


def _truth(value: Any) -> bool | None:
    if value is None:
        return None
    return _number(value) != 0


def _like(value: Any, pattern: Any, escape: str) -> int | None:
    if value is None or pattern is None:
        return None
    binary = isinstance(value, bytes) or isinstance(pattern, bytes)
    text = _text(value.text if isinstance(value, Temporal) else value)
    pat = _text(pattern)
    if not binary:
        text, pat = _fold(text, pad=False), _fold(pat, pad=False)
    out: list[str] = []
    chars = iter(pat)
    for c in chars:
        if escape and c == escape:
            nxt = next(chars, None)
            out.append(re.escape(nxt if nxt is not None else c))
        elif c == "%":
            out.append(".*")
        elif c == "_":
            out.append(".")
        else:
            out.append(re.escape(c))
    return int(re.fullmatch("".join(out), text, re.DOTALL) is not None)


def _arith(op: str, a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    x: Any = _number(a)
    y: Any = _number(b)
    if isinstance(x, float) or isinstance(y, float):
        x, y = float(x), float(y)
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if not y:
        return None  # division by zero is NULL
    if op == "/":
        return x / y if isinstance(x, float) else Decimal(x) / Decimal(y)
    if op == "DIV":
        return int(Decimal(x) / Decimal(y)) if not isinstance(x, float) else int(x / y)
    result = abs(x) % abs(y)  # MOD takes the sign of the dividend
    return -result if x < 0 else result


# ---- compiling --------------------------------------------------------------------------------------

_COMPARISONS: dict[type, str] = {
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.NullSafeEQ: "<=>",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
}
_ARITHMETIC: dict[type, str] = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.Mod: "%",
    exp.IntDiv: "DIV",
}


def _column_reader(i: int, column: Any, table: str) -> _Value:
    name = column.name
    data_type = (column.data_type or "").lower()
    if data_type == "json" or data_type in ("geometry", "point", "linestring", "polygon"):
        raise RangeError(
            f"--where: column {name} of {table} is {data_type.upper()}, which --where cannot compare"
        )
    labels = column.enum_values if data_type == "enum" else column.set_values if data_type == "set" else None
    if data_type in ("enum", "set") and labels is None:
        raise RangeError(
            f"--where: the schema of {table} does not list the values of {data_type.upper()} column {name}"
        )

    def raw(image: Sequence[Any]) -> Any:
        value = image[i]
        if value is MISSING:
            raise MissingColumn(name)
        return value

    if data_type == "enum":
        assert labels is not None
        enum = ("", *labels)
        return lambda image: None if (v := raw(image)) is None else enum[v] if v < len(enum) else ""
    if data_type == "set":
        assert labels is not None
        members = labels

        def set_text(image: Sequence[Any]) -> Any:
            v = raw(image)
            if v is None:
                return None
            return ",".join(label for bit, label in enumerate(members) if v >> bit & 1)

        return set_text
    if data_type in ("date", "datetime", "timestamp", "time"):
        kind = "time" if data_type == "time" else "date"
        return lambda image: None if (v := raw(image)) is None else Temporal(kind, str(v))
    codec = (
        PYTHON_CODEC.get(column.charset)
        if column.charset
        else ("utf-8" if data_type in _TEXT_TYPES else None)
    )
    if codec:

        def text(image: Sequence[Any]) -> Any:
            v = raw(image)
            return v.decode(codec, "replace") if isinstance(v, bytes | bytearray) else v

        return text
    return raw


def _compile(node: exp.Expression, index: dict[str, int], columns: Sequence[Any], table: str) -> _Value:
    def sub(child: exp.Expression) -> _Value:
        return _compile(child, index, columns, table)

    if isinstance(node, exp.Paren):
        return sub(node.this)
    if isinstance(node, exp.Column):
        i = index[node.name.lower()]
        return _column_reader(i, columns[i], table)
    if isinstance(node, exp.Literal):
        if node.is_string:
            value: Any = node.this
        else:
            number = node.this
            value = (
                int(number)
                if number.lstrip("-").isdigit()
                else Decimal(number)
                if "e" not in number.lower()
                else float(number)
            )
        return lambda _image: value
    if isinstance(node, exp.Introducer):
        inner = sub(node.expression)
        if str(node.this).lower() == "_binary":  # a binary string: compares byte for byte
            return lambda image: None if (v := inner(image)) is None else _bytes(v)
        return inner
    if isinstance(node, exp.Null):
        return lambda _image: None
    if isinstance(node, exp.Boolean):
        flag = int(bool(node.this))
        return lambda _image: flag
    if isinstance(node, exp.HexString):
        data = bytes.fromhex(node.this if len(node.this) % 2 == 0 else "0" + node.this)
        return lambda _image: data
    if isinstance(node, exp.Neg):
        inner = sub(node.this)
        return lambda image: None if (v := inner(image)) is None else -_number(v)
    op = _COMPARISONS.get(type(node))
    if op is not None:
        left, right = sub(node.this), sub(node.expression)
        return lambda image: _compare(op, left(image), right(image))
    arith = _ARITHMETIC.get(type(node))
    if arith is not None:
        left, right = sub(node.this), sub(node.expression)
        return lambda image: _arith(arith, left(image), right(image))
    if isinstance(node, exp.And):
        left, right = sub(node.this), sub(node.expression)

        def both(image: Sequence[Any]) -> Any:
            a = _truth(left(image))
            if a is False:
                return 0
            b = _truth(right(image))
            if b is False:
                return 0
            return None if a is None or b is None else 1

        return both
    if isinstance(node, exp.Or):
        left, right = sub(node.this), sub(node.expression)

        def either(image: Sequence[Any]) -> Any:
            a = _truth(left(image))
            if a:
                return 1
            b = _truth(right(image))
            if b:
                return 1
            return None if a is None or b is None else 0

        return either
    if isinstance(node, exp.Xor):
        left, right = sub(node.this), sub(node.expression)

        def one_of(image: Sequence[Any]) -> Any:
            a, b = _truth(left(image)), _truth(right(image))
            return None if a is None or b is None else int(a != b)

        return one_of
    if isinstance(node, exp.Not):
        inner = sub(node.this)
        return lambda image: None if (t := _truth(inner(image))) is None else int(not t)
    if isinstance(node, exp.Is):
        inner = sub(node.this)
        target = node.expression
        if isinstance(target, exp.Null):
            return lambda image: int(inner(image) is None)
        if isinstance(target, exp.Boolean):
            wanted = bool(target.this)
            return lambda image: int(_truth(inner(image)) is wanted)
        raise RangeError(f"--where: IS takes NULL, TRUE or FALSE: {node.sql(dialect='mysql')[:120]}")
    if isinstance(node, exp.In):
        value = sub(node.this)
        items = [sub(item) for item in node.expressions]

        def member(image: Sequence[Any]) -> Any:
            v = value(image)
            if v is None:
                return None
            unknown = False
            for item in items:
                hit = _compare("=", v, item(image))
                if hit:
                    return 1
                unknown = unknown or hit is None
            return None if unknown else 0

        return member
    if isinstance(node, exp.Between):
        value, low, high = sub(node.this), sub(node.args["low"]), sub(node.args["high"])

        def between(image: Sequence[Any]) -> Any:
            v = value(image)
            a = _truth(_compare(">=", v, low(image)))
            b = _truth(_compare("<=", v, high(image)))
            if a is False or b is False:
                return 0
            return None if a is None or b is None else 1

        return between
    if isinstance(node, exp.Escape | exp.Like):
        like = node.this if isinstance(node, exp.Escape) else node
        if not isinstance(like, exp.Like):
            raise RangeError(f"--where: ESCAPE belongs to LIKE: {node.sql(dialect='mysql')[:120]}")
        escape = "\\"
        if isinstance(node, exp.Escape):
            if not (
                isinstance(node.expression, exp.Literal)
                and node.expression.is_string
                and len(node.expression.this) == 1
            ):
                raise RangeError(f"--where: ESCAPE takes one character: {node.sql(dialect='mysql')[:120]}")
            escape = node.expression.this
        value, pattern = sub(like.this), sub(like.expression)
        negate = bool(like.args.get("negate"))

        def matches(image: Sequence[Any]) -> Any:
            hit = _like(value(image), pattern(image), escape)
            return None if hit is None else int(not hit) if negate else hit

        return matches
    raise RangeError(f"--where: {node.key.upper()} is not supported: {node.sql(dialect='mysql')[:120]}")


def selects(result: Any) -> bool:
    """Whether a predicate's result selects the row: only TRUE does (FALSE and NULL do not)."""
    return bool(_truth(result))
