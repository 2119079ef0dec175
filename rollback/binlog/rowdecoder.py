"""Prepared row-image decoders: Python source generated per table signature, compiled once.

A row image is ``NULL bitmap`` (one bit per *present* column, in column order, ``ceil(n/8)``
bytes, padding bits ignored) followed by the values of the present, non-NULL columns. For a
signature ``(specs, present)`` this module writes one straight-line function:

* the NULL bitmap is read once; when no present column is NULL (the common case) a fast path
  unpacks every run of fixed-width columns with a single precompiled ``struct.Struct`` call,
  otherwise each column is guarded by its NULL bit;
* length-prefixed values are sliced out of the buffer after one bound check each;
* conversions to the values described in ``columns`` are inline for numbers and calls to the
  shared converters of ``columns`` for temporal and DECIMAL values.

Any overrun or invalid value makes the compiled code hand the row to a slow, checked walk
(``columns.read_value`` per column) that raises ``BinlogFormatError`` naming the column and
the offset where its value starts. Nothing is returned for a row that does not fit.

With the compiled core (``rollback/base/hotpath.py``), a decoder also carries a *layout*: one
(kind, width, argument, converter) per present column, decided here from the same column facts,
which the core runs over every row in C. A rows event it cannot decode whole (an overrun, a value
its inline code does not take) is decoded again by the generated Python code, which gives the
values or the located error.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Final

from rollback.base import hotpath
from rollback.base.errors import BinlogFormatError
from rollback.binlog import columns as C
from rollback.binlog.columns import MISSING, ColumnSpec
from rollback.binlog.constants import ColumnType as T

__all__ = ["RowDecoder", "get_row_decoder"]

Row = tuple[Any, ...]

_INT_CODES: Final = {1: "b", 2: "h", 4: "i", 8: "q"}
_ERRORS: Final = (IndexError, struct.error, ValueError, OverflowError)
# What the compiled core raises for an event it leaves to the generated code: its Fallback (a
# ValueError), or the ValueError of a shared converter (columns.py) called on an invalid value.
_COMPILED_REFUSALS: Final = (ValueError, OverflowError)


# ---------------------------------------------------------------------------------------------
# Plans: how one fixed-width column is unpacked and converted
# ---------------------------------------------------------------------------------------------


class _Fixed:
    """Struct codes of one fixed-width value and the code that converts its fields."""

    __slots__ = ("codes", "endian", "expr", "width", "stmts")

    def __init__(
        self,
        codes: list[str],
        endian: str | None,
        expr: str,
        width: int,
        stmts: Callable[[str, str], list[str]] | None = None,
    ) -> None:
        self.codes = codes
        self.endian = endian  # '<', '>' or None when the codes read single bytes only
        self.expr = expr  # str.format template over the field names: "{0}", "_date({0} | {1} << 16)"
        self.width = width
        # Statements instead of one expression: (target, expression of the raw int) -> lines.
        self.stmts = stmts


def _split(n: int) -> list[int]:
    sizes = []
    for size in (8, 4, 2, 1):
        while n >= size:
            sizes.append(size)
            n -= size
    return sizes


def _int_fixed(n: int, endian: str, signed: bool, wrap: str = "{}") -> _Fixed:
    """An n-byte integer as struct fields; ``wrap`` receives the combining expression."""
    sizes = _split(n)
    codes = []
    terms = []
    top = 0 if endian == ">" else len(sizes) - 1  # the most significant piece in memory order
    after = n
    before = 0
    for k, size in enumerate(sizes):
        code = _INT_CODES[size]
        codes.append(code if signed and k == top else code.upper())
        after -= size
        shift = after if endian == ">" else before
        terms.append(f"{{{k}}} << {shift * 8}" if shift else f"{{{k}}}")
        before += size
    expr = terms[0] if len(terms) == 1 else "(" + " | ".join(terms) + ")"
    used_endian = None if sizes == [1] else endian
    return _Fixed(codes, used_endian, wrap.format(expr), n)


def _fraction(fsp: int) -> tuple[int, int, str]:
    """(bits, exclusive limit, digits expression over ``r``) of a stored fraction."""
    nbytes = (fsp + 1) // 2
    bits = nbytes * 8
    limit = (100, 10_000, 1_000_000)[nbytes - 1]  # 1/100 s, 1/10000 s, microseconds
    digits = f"(r & {(1 << bits) - 1})"
    return bits, limit, digits + (" // 10" if fsp & 1 else "")


def _datetime2_stmts(target: str, raw: str, fsp: int) -> list[str]:
    """DATETIME2 text inline: a valid value (sign bit set, fraction in range) is made of the
    cached date and time texts; anything else goes to ``columns.datetime2_text``, which
    produces the exact text or raises."""
    parts = "_dt2_date.get(ip >> 17) or _dt2_date_miss(ip >> 17), _dt2_hms.get(ip & 131071) or _dt2_hms_miss(ip & 131071)"
    bits, check, text = 0, "", f"'%s%s' % ({parts})"
    if fsp:
        bits, limit, digits = _fraction(fsp)
        check = f" and r & {(1 << bits) - 1} < {limit}"
        text = f"'%s%s.%0{fsp}d' % ({parts}, {digits})"
    return [
        f"r = {raw}",
        f"if r >= {0x80 << (32 + bits)}{check}:",
        f"    ip = r >> {bits} & 549755813887",
        f"    {target} = {text}",
        "else:",
        f"    {target} = _datetime2(r, {fsp})",
    ]


def _timestamp2_stmts(target: str, raw: str, fsp: int) -> list[str]:
    """TIMESTAMP2 as UTC text inline from the cached day and second-of-day texts; the zero
    timestamp and invalid fractions go to ``columns.timestamp2_text``."""
    bits, check, digits = 0, "", ""
    if fsp:
        bits, limit, digits = _fraction(fsp)
        check = f" and r & {(1 << bits) - 1} < {limit}"
    seconds = f"r >> {bits}" if bits else "r"
    parts = "_day.get(s // 86400) or _day_miss(s // 86400), _second.get(s % 86400) or _second_miss(s % 86400)"
    text = f"'%s%s.%0{fsp}d' % ({parts}, {digits})" if fsp else f"'%s%s' % ({parts})"
    return [
        f"r = {raw}",
        f"s = {seconds}",
        f"if s{check}:",
        f"    {target} = {text}",
        "else:",
        f"    {target} = _timestamp2(r, {fsp})",
    ]


def _fixed(spec: ColumnSpec, col: str) -> _Fixed | None:
    """The plan of a fixed-width column, None for length-prefixed or unsupported ones."""
    code, real, width, fsp = spec.type, spec.real_type, spec.width, spec.meta
    signed = not spec.unsigned
    if width is None or C.unsupported_reason(spec) is not None:
        return None
    if code in (T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG):
        return _int_fixed(width, "<", signed)
    if code == T.FLOAT:
        return _Fixed(["f"], "<", "({0} if {0} - {0} == 0.0 else _finite({0}))", 4)
    if code == T.DOUBLE:
        return _Fixed(["d"], "<", "({0} if {0} - {0} == 0.0 else _finite({0}))", 8)
    if code == T.YEAR:
        return _Fixed(["B"], None, "({0} + 1900 if {0} else 0)", 1)
    if code in (T.DATE, T.NEWDATE):
        return _int_fixed(3, "<", False, "(_date.get(v := {}) or _date_miss(v))")
    if code == T.TIME:
        if fsp:
            return _int_fixed(width, ">", False, f"_time_hires({{}}, {fsp})")
        return _int_fixed(3, "<", True, "_time({})")
    if code == T.DATETIME:
        if fsp:
            return _int_fixed(width, ">", False, f"_datetime_hires({{}}, {fsp})")
        return _int_fixed(8, "<", False, "_datetime({})")
    if code == T.TIMESTAMP:
        if fsp:
            return _int_fixed(width, ">", False, f"_timestamp_hires({{}}, {fsp})")
        return _int_fixed(4, "<", False, "_timestamp({}, 0, 0)")
    if code == T.DATETIME2:
        plan = _int_fixed(width, ">", False)
        plan.stmts = lambda target, raw: _datetime2_stmts(target, raw, fsp)
        return plan
    if code == T.TIMESTAMP2:
        plan = _int_fixed(width, ">", False)
        plan.stmts = lambda target, raw: _timestamp2_stmts(target, raw, fsp)
        return plan
    if code == T.TIME2:
        return _int_fixed(width, ">", False, f"_time2({{}}, {fsp})")
    if code == T.NEWDECIMAL:
        codes: list[str] = []
        args = []
        for nbytes, _ in C.decimal_groups(spec.precision, spec.scale):
            group = _int_fixed(nbytes, ">", False)
            offset = len(codes)
            codes.extend(group.codes)
            args.append(group.expr.format(*(f"{{{offset + k}}}" for k in range(len(group.codes)))))
        endian = None if all(code == "B" for code in codes) else ">"
        return _Fixed(codes, endian, f"_decimal_{col}({', '.join(args)})", width)
    if code == T.BIT:
        return _int_fixed(width, ">", False)
    if real in (T.ENUM, T.SET):
        return _int_fixed(width, "<", False)
    if code == T.NULL:
        return _Fixed([], None, "None", 0)
    return None


# ---------------------------------------------------------------------------------------------
# Source generation
# ---------------------------------------------------------------------------------------------


class _Source:
    """Lines of the generated functions and the names they use."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = {
            "_M": MISSING,
            "_ERRORS": _ERRORS,
            "_finite": C.finite,
            "_ifb": int.from_bytes,
            "_u32": struct.Struct("<I").unpack_from,
            "_date": C.DATE_CACHE,
            "_date_miss": C.date_miss,
            "_time": C.time_text,
            "_datetime": C.datetime_text,
            "_timestamp": C.timestamp_text,
            "_datetime2": C.datetime2_text,
            "_dt2_date": C.DT2_DATE_CACHE,
            "_dt2_date_miss": C.dt2_date_miss,
            "_dt2_hms": C.DT2_HMS_CACHE,
            "_dt2_hms_miss": C.dt2_hms_miss,
            "_timestamp2": C.timestamp2_text,
            "_day": C.DAY_CACHE,
            "_day_miss": C.day_miss,
            "_second": C.SECOND_CACHE,
            "_second_miss": C.second_miss,
            "_time2": C.time2_text,
            "_time_hires": C.time_hires_text,
            "_datetime_hires": C.datetime_hires_text,
            "_timestamp_hires": C.timestamp_hires_text,
        }
        self._structs: dict[str, str] = {}

    def struct(self, fmt: str) -> str:
        name = self._structs.get(fmt)
        if name is None:
            name = self._structs[fmt] = f"_S{len(self._structs)}"
            self.namespace[name] = struct.Struct(fmt).unpack_from
        return name

    def add(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


class _Image:
    """One row-image layout being generated; ``tag`` keeps the names of two images apart."""

    def __init__(self, src: _Source, specs: tuple[ColumnSpec, ...], cols: list[int], tag: str) -> None:
        self.src = src
        self.specs = specs
        self.cols = cols
        self.tag = tag
        self.fail = f"_fail{tag}"
        self.unsupported = f"_unsupported{tag}"
        for col in cols:
            spec = specs[col]
            if spec.type == T.NEWDECIMAL:
                src.namespace[f"_decimal_{tag}{col}"] = C.decimal_converter(spec.precision, spec.scale)
        src.namespace[self.fail] = _failer(specs, cols)
        src.namespace[self.unsupported] = _unsupporter(specs)

    def var(self, col: int) -> str:
        return f"{self.tag}c{col}"

    def body(self, ind: int, row: str) -> None:
        """Statements that read one image at ``pos`` into ``row`` and advance ``pos``."""
        add = self.src.add
        nbytes = (len(self.cols) + 7) // 8
        if nbytes == 1:
            add(ind, "nb = buf[pos]")
        elif nbytes == 2:
            add(ind, "nb = buf[pos] | buf[pos + 1] << 8")
        else:
            add(ind, f"nb = _ifb(buf[pos:pos + {nbytes}], 'little')")
        add(ind, f"pos += {nbytes}")
        add(ind, f"if not nb & {(1 << len(self.cols)) - 1}:")
        self.columns(ind + 1, guard=False)
        add(ind, "else:")
        self.columns(ind + 1, guard=True)
        add(ind, "if pos > end:")
        add(ind + 1, f"{self.fail}(buf, start, end)")
        present = set(self.cols)
        values = ", ".join(self.var(i) if i in present else "_M" for i in range(len(self.specs)))
        add(ind, f"{row} = ({values},)")

    def columns(self, ind: int, guard: bool) -> None:
        """Read the present columns; ``guard`` tests each one's NULL bit (bit k = k-th present)."""
        run: list[tuple[int, _Fixed]] = []
        inner = ind + 1 if guard else ind

        def flush() -> None:
            if run:
                self.run(inner, run)
                run.clear()

        for k, col in enumerate(self.cols):
            spec = self.specs[col]
            plan = _fixed(spec, f"{self.tag}{col}")
            if guard:
                self.src.add(ind, f"if nb & {1 << k}:")
                self.src.add(ind + 1, f"{self.var(col)} = None")
                self.src.add(ind, "else:")
            if plan is not None:
                run_endian = next((p.endian for _, p in run if p.endian), None)
                if run_endian and plan.endian and plan.endian != run_endian:
                    flush()
                run.append((col, plan))
                if guard:
                    flush()
                continue
            flush()
            if C.unsupported_reason(spec) is not None:
                self.src.add(inner, f"{self.unsupported}(pos, {col})")
            else:
                self.string(inner, col, C.string_prefix_size(spec))
        flush()

    def run(self, ind: int, run: list[tuple[int, _Fixed]]) -> None:
        """One struct call for consecutive fixed-width columns, then their conversions."""
        endian = next((plan.endian for _, plan in run if plan.endian), "<")
        fmt = endian + "".join(code for _, plan in run for code in plan.codes)
        targets: list[str] = []
        conversions: list[str] = []
        width = 0
        for col, plan in run:
            width += plan.width
            var = self.var(col)
            if not plan.codes:
                conversions.append(f"{var} = {plan.expr}")
            elif plan.expr == "{0}" and plan.stmts is None:
                targets.append(var)
            else:
                names = [f"f{col}_{k}" for k in range(len(plan.codes))]
                targets.extend(names)
                if plan.stmts is not None:
                    conversions.extend(plan.stmts(var, plan.expr.format(*names)))
                else:
                    conversions.append(f"{var} = {plan.expr.format(*names)}")
        if targets:
            self.src.add(ind, f"{', '.join(targets)}, = {self.src.struct(fmt)}(buf, pos)")
        for line in conversions:
            self.src.add(ind, line)
        if width:
            self.src.add(ind, f"pos += {width}")

    def string(self, ind: int, col: int, prefix: int) -> None:
        """A length-prefixed value: one bound check, then a slice of the buffer."""
        if prefix == 1:
            length = "buf[pos]"
        elif prefix == 2:
            length = "(buf[pos] | buf[pos + 1] << 8)"
        elif prefix == 3:
            length = "(buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16)"
        else:
            length = "_u32(buf, pos)[0]"
        add = self.src.add
        add(ind, f"e = pos + {prefix} + {length}")
        add(ind, "if e > end:")
        add(ind + 1, f"{self.fail}(buf, start, end)")
        add(ind, f"{self.var(col)} = buf[pos + {prefix}:e]")
        add(ind, "pos = e")

    def guarded(self, ind: int, row: str) -> None:
        """``body`` inside a try that turns any failure into the located BinlogFormatError."""
        self.src.add(ind, "start = pos")
        self.src.add(ind, "try:")
        self.body(ind + 1, row)
        self.src.add(ind, "except _ERRORS:")
        self.src.add(ind + 1, f"{self.fail}(buf, start, end)")


def _compile(src: _Source, label: str) -> tuple[str, dict[str, Any]]:
    source = "\n".join(src.lines) + "\n"
    exec(compile(source, f"<row decoder {label}>", "exec"), src.namespace)
    return source, src.namespace


def _generate(specs: tuple[ColumnSpec, ...], cols: list[int]) -> tuple[str, dict[str, Any]]:
    """``_row(buf, pos, end) -> (row, pos)`` and ``_rows(buf, pos, end) -> [row, ...]``."""
    src = _Source()
    image = _Image(src, specs, cols, "")
    src.add(0, "def _row(buf, pos, end):")
    image.guarded(1, "row")
    src.add(1, "return row, pos")
    src.add(0, "")
    src.add(0, "def _rows(buf, pos, end):")
    src.add(1, "out = []")
    src.add(1, "append = out.append")
    src.add(1, "while pos < end:")
    image.guarded(2, "row")
    src.add(2, "append(row)")
    src.add(1, "return out")
    src.add(0, "")
    src.add(0, "def _rows_part(buf, pos, end, limit):")
    src.add(1, "out = []")
    src.add(1, "append = out.append")
    src.add(1, "while pos < end and limit:")
    image.guarded(2, "row")
    src.add(2, "append(row)")
    src.add(2, "limit -= 1")
    src.add(1, "return out, pos")
    return _compile(src, f"{len(specs)} columns")


# (buf, pos, end, limit) -> (the first `limit` (before, after) pairs, the position after them)
_PairsPart = Callable[[bytes, int, int, int], tuple[list[tuple[Row, Row]], int]]


def _generate_pairs(before: RowDecoder, after: RowDecoder) -> _PairsPart:
    """``_pairs(buf, pos, end, limit) -> ([(before, after), ...], pos)`` with both images read inline:
    the first `limit` pairs (every one when `limit` < 0)."""
    src = _Source()
    image_b = _Image(src, before.specs, list(before.columns), "b")
    image_a = _Image(src, after.specs, list(after.columns), "a")
    src.add(0, "def _pairs(buf, pos, end, limit):")
    src.add(1, "out = []")
    src.add(1, "append = out.append")
    src.add(1, "while pos < end and limit:")
    image_b.guarded(2, "before")
    image_a.guarded(2, "after")
    src.add(2, "append((before, after))")
    src.add(2, "limit -= 1")
    src.add(1, "return out, pos")
    _, namespace = _compile(src, f"{len(before.specs)} columns, update")
    pairs: _PairsPart = namespace["_pairs"]
    return pairs


# ---------------------------------------------------------------------------------------------
# The slow, checked walk that names the failing column
# ---------------------------------------------------------------------------------------------


def _overrun(col: int, pos: int) -> BinlogFormatError:
    return BinlogFormatError(None, pos, f"row image of table column {col + 1} runs past the event end")


def _locate(
    specs: tuple[ColumnSpec, ...], cols: list[int], buf: bytes, start: int, end: int
) -> BinlogFormatError:
    """Walk the row at ``start`` value by value and describe the first thing that is wrong."""
    nbytes = (len(cols) + 7) // 8
    if start + nbytes > end:
        return BinlogFormatError(None, start, "row image NULL bitmap runs past the event end")
    nulls = int.from_bytes(buf[start : start + nbytes], "little")
    pos = start + nbytes
    for k, col in enumerate(cols):
        if nulls >> k & 1:
            continue
        spec = specs[col]
        reason = C.unsupported_reason(spec)
        if reason is not None:
            return BinlogFormatError(None, pos, f"row image of table column {col + 1}: {reason}")
        # Fixed bytes (or the length prefix) must be inside the event before they are read.
        if pos + (spec.width if spec.width is not None else C.string_prefix_size(spec)) > end:
            return _overrun(col, pos)
        try:
            _, after = C.read_value(spec, buf, pos)
        except (IndexError, struct.error):
            return _overrun(col, pos)
        except (ValueError, OverflowError) as exc:
            return BinlogFormatError(
                None, pos, f"row image of table column {col + 1} holds an invalid value: {exc}"
            )
        if after > end:
            return _overrun(col, pos)
        pos = after
    return BinlogFormatError(None, start, "row image could not be decoded")


def _failer(specs: tuple[ColumnSpec, ...], cols: list[int]) -> Callable[[bytes, int, int], None]:
    def fail(buf: bytes, start: int, end: int) -> None:
        raise _locate(specs, cols, buf, start, end)

    return fail


def _unsupporter(specs: tuple[ColumnSpec, ...]) -> Callable[[int, int], None]:
    def unsupported(pos: int, col: int) -> None:
        reason = C.unsupported_reason(specs[col])
        raise BinlogFormatError(None, pos, f"row image of table column {col + 1}: {reason}")

    return unsupported


# ---------------------------------------------------------------------------------------------
# Layouts for the compiled core (the kind numbers are rollback/_speedups.pyx's K_* constants)
# ---------------------------------------------------------------------------------------------

_K_INT, _K_FLOAT, _K_DOUBLE, _K_YEAR, _K_DATE, _K_DATETIME2, _K_TIMESTAMP2 = 1, 2, 3, 4, 5, 6, 7
_K_BE_CALL, _K_LE_CALL, _K_DECIMAL, _K_BE_UINT, _K_LE_UINT, _K_NULL_TYPE = 8, 9, 10, 11, 12, 13
_K_STRING, _K_UNSUPPORTED, _K_TIME2 = 14, 15, 16

# (kind, bytes, argument, converter, extra) of one column
_Kind = tuple[int, int, int, Any, Any]


def _old_timestamp_text(raw: int) -> str:
    return C.timestamp_text(raw, 0, 0)


def _column_kind(spec: ColumnSpec) -> _Kind:
    """How the compiled core reads one column: the same decisions as ``_fixed`` and ``string``."""
    code, width, fsp = spec.type, spec.width, spec.meta
    if C.unsupported_reason(spec) is not None:
        return _K_UNSUPPORTED, 0, 0, None, None
    if width is None:
        return _K_STRING, 0, C.string_prefix_size(spec), None, None
    if code in (T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG):
        return _K_INT, width, int(not spec.unsigned), None, None
    if code == T.FLOAT:
        return _K_FLOAT, 4, 0, None, None
    if code == T.DOUBLE:
        return _K_DOUBLE, 8, 0, None, None
    if code == T.YEAR:
        return _K_YEAR, 1, 0, None, None
    if code in (T.DATE, T.NEWDATE):
        return _K_DATE, 3, 0, None, None
    if code == T.TIME:
        if fsp:
            return _K_BE_CALL, width, fsp, C.time_hires_text, None
        return _K_LE_CALL, 3, 1, C.time_text, None
    if code == T.DATETIME:
        if fsp:
            return _K_BE_CALL, width, fsp, C.datetime_hires_text, None
        return _K_LE_CALL, 8, 0, C.datetime_text, None
    if code == T.TIMESTAMP:
        if fsp:
            return _K_BE_CALL, width, fsp, C.timestamp_hires_text, None
        return _K_LE_CALL, 4, 0, _old_timestamp_text, None
    if code == T.DATETIME2:
        return _K_DATETIME2, width, fsp, C.datetime2_text, None
    if code == T.TIMESTAMP2:
        return _K_TIMESTAMP2, width, fsp, C.timestamp2_text, None
    if code == T.TIME2:
        return _K_TIME2, width, fsp, C.time2_text, None
    if code == T.NEWDECIMAL:
        groups = C.decimal_groups(spec.precision, spec.scale)
        extra = (
            spec.precision,
            spec.scale,
            tuple(nbytes for nbytes, _ in groups),
            tuple(digits for _, digits in groups),
        )
        return _K_DECIMAL, width, 0, None, extra
    if code == T.BIT:
        return _K_BE_UINT, width, 0, None, None
    if spec.real_type in (T.ENUM, T.SET):
        return _K_LE_UINT, width, 0, None, None
    if code == T.NULL:
        return _K_NULL_TYPE, 0, 0, None, None
    return _K_UNSUPPORTED, 0, 0, None, None


def compiled_layout(core: Any, specs: tuple[ColumnSpec, ...], cols: tuple[int, ...]) -> Any:
    """The core's Layout of one row image (present columns ``cols`` of a table of ``specs``)."""
    return core.Layout(len(specs), tuple((col, *_column_kind(specs[col])) for col in cols), MISSING)


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------


class RowDecoder:
    """Decodes the row images of one table signature (column specs + present-columns bitmap).

    Values follow ``rollback.binlog.columns``; a row is a tuple as wide as the table, with
    ``MISSING`` for columns absent from the image. Errors name columns 1-based, as
    ``mysqlbinlog`` does (``@1``), and carry the offset where the bad value starts.
    ``buf`` is ``bytes`` (other buffers are copied once per call) and ``end`` is clamped to it.
    """

    __slots__ = (
        "specs",
        "present",
        "columns",
        "source",
        "_row",
        "_rows",
        "_rows_part",
        "_pairs",
        "_core",
        "_layout",
    )

    specs: tuple[ColumnSpec, ...]
    present: int
    columns: tuple[int, ...]
    source: str
    _row: Callable[[bytes, int, int], tuple[Row, int]]
    _rows: Callable[[bytes, int, int], list[Row]]
    _rows_part: Callable[[bytes, int, int, int], tuple[list[Row], int]]
    _pairs: dict[RowDecoder, _PairsPart]
    _core: Any
    _layout: Any

    def __init__(self, specs: tuple[ColumnSpec, ...], present: int, core: Any = None) -> None:
        """``core``: the compiled core (``hotpath.CORE``) or None for the pure-Python path only."""
        self.specs = specs
        self.present = present
        cols = [i for i in range(len(specs)) if present >> i & 1]
        self.columns = tuple(cols)
        self._pairs = {}
        self._core = core if cols else None
        self._layout = compiled_layout(core, specs, self.columns) if self._core is not None else None
        if not cols:
            self.source = ""
            self._row = self._empty_row
            self._rows = self._empty_rows
            self._rows_part = self._empty_rows_part
            return
        self.source, namespace = _generate(specs, cols)
        self._row = namespace["_row"]
        self._rows = namespace["_rows"]
        self._rows_part = namespace["_rows_part"]

    def _empty_row(self, buf: bytes, pos: int, end: int) -> tuple[Row, int]:
        return (MISSING,) * len(self.specs), pos

    def _empty_rows(self, buf: bytes, pos: int, end: int) -> list[Row]:
        if pos < end:
            raise BinlogFormatError(None, pos, "rows event has row data but no columns in its image")
        return []

    def _empty_rows_part(self, buf: bytes, pos: int, end: int, limit: int) -> tuple[list[Row], int]:
        return self._empty_rows(buf, pos, end), pos

    def __reduce__(self) -> tuple[Any, ...]:
        return get_row_decoder, (self.specs, self.present)

    @property
    def compiled(self) -> bool:
        return self._layout is not None

    @property
    def layout(self) -> Any:
        """The compiled core's Layout of these images (None on the pure-Python path)."""
        return self._layout

    def __repr__(self) -> str:
        return f"RowDecoder({len(self.specs)} columns, {len(self.columns)} present)"

    def decode(self, buf: bytes, pos: int, end: int | None = None) -> tuple[Row, int]:
        """One row image at ``pos``: (full-width row, position after it). ``end`` defaults to
        ``len(buf)``; a value reaching past it raises BinlogFormatError."""
        if type(buf) is not bytes:
            buf = bytes(buf)
        if end is None or end > len(buf):
            end = len(buf)
        return self._row(buf, pos, end)

    def decode_rows(self, buf: bytes, pos: int, end: int, decimal_text: bool = False) -> list[Row]:
        """Every row image in ``buf[pos:end]`` (WRITE_ROWS / DELETE_ROWS bodies). ``decimal_text``:
        the compiled core may give DECIMAL values as the text the compiled statement renderer and
        change-log encoder write for them (rows that go to nothing else; see _speedups.decode_rows)."""
        if type(buf) is not bytes:
            buf = bytes(buf)
        end = min(end, len(buf))
        if self._layout is not None:
            try:
                rows: list[Row] = self._core.decode_rows(self._layout, buf, pos, end, decimal_text)
                return rows
            except _COMPILED_REFUSALS:
                pass  # the generated code gives the values or the located error
        return self._rows(buf, pos, end)

    def decode_rows_part(
        self, buf: bytes, pos: int, end: int, limit: int, decimal_text: bool = False
    ) -> tuple[list[Row], int]:
        """(the first ``limit`` row images of ``buf[pos:end]``, the position after them): the rows of
        an event a part at a time (``buf`` must be bytes)."""
        end = min(end, len(buf))
        if self._layout is not None:
            try:
                part: tuple[list[Row], int] = self._core.decode_rows_part(
                    self._layout, buf, pos, end, limit, decimal_text
                )
                return part
            except _COMPILED_REFUSALS:
                pass
        return self._rows_part(buf, pos, end, limit)

    def decode_pairs(
        self, buf: bytes, pos: int, end: int, after_decoder: RowDecoder, decimal_text: bool = False
    ) -> list[tuple[Row, Row]]:
        """(before, after) pairs of an UPDATE_ROWS body; the after image may have its own
        present-columns bitmap, hence its own decoder. Both images are read by one function
        compiled for this pair of decoders."""
        if type(buf) is not bytes:
            buf = bytes(buf)
        return self.decode_pairs_part(buf, pos, end, after_decoder, -1, decimal_text)[0]

    def decode_pairs_part(
        self,
        buf: bytes,
        pos: int,
        end: int,
        after_decoder: RowDecoder,
        limit: int,
        decimal_text: bool = False,
    ) -> tuple[list[tuple[Row, Row]], int]:
        """decode_pairs a part at a time, as decode_rows_part (``buf`` must be bytes)."""
        end = min(end, len(buf))
        if self._layout is not None and after_decoder._layout is not None:
            try:
                decoded: tuple[list[tuple[Row, Row]], int] = self._core.decode_pairs_part(
                    self._layout, after_decoder._layout, buf, pos, end, limit, decimal_text
                )
                return decoded
            except _COMPILED_REFUSALS:
                pass
        pairs = self._pairs.get(after_decoder)
        if pairs is None:
            if not self.columns or not after_decoder.columns:
                pairs = self._pairs_slowly(after_decoder)
            else:
                pairs = _generate_pairs(self, after_decoder)
            self._pairs[after_decoder] = pairs
        return pairs(buf, pos, end, limit)

    def _pairs_slowly(self, after_decoder: RowDecoder) -> _PairsPart:
        before_row, after_row = self._row, after_decoder._row

        def pairs(buf: bytes, pos: int, end: int, limit: int) -> tuple[list[tuple[Row, Row]], int]:
            out = []
            while pos < end and limit:
                before, pos = before_row(buf, pos, end)
                after, pos = after_row(buf, pos, end)
                if not (self.columns and after_decoder.columns):
                    raise BinlogFormatError(None, pos, "update rows event has an image without columns")
                out.append((before, after))
                limit -= 1
            return out, pos

        return pairs


@lru_cache(maxsize=1024)
def _cached(specs: tuple[ColumnSpec, ...], present: int, core: Any) -> RowDecoder:
    return RowDecoder(specs, present, core)


def get_row_decoder(specs: tuple[ColumnSpec, ...], present: int) -> RowDecoder:
    """The decoder of a table signature, compiled on first use and cached.

    ``present`` is the rows event's columns-present bitmap as an int (bit i = column i); bits
    beyond the column count (the server pads with ones) are ignored.
    """
    return _cached(tuple(specs), present & ((1 << len(specs)) - 1), hotpath.CORE)
