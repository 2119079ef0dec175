"""The compiled hot path (rollback/_speedups.pyx) against the pure-Python one: a differential fuzz.

Random tables (every column type the decoder reads, signed and unsigned, charsets, keys or none)
and random row images (valid values, NULLs, and arbitrary bytes, which the compiled decoder must
hand back to the Python one) go through both paths: the decoded rows, their change-log records and
the rendered script must be the same bytes, or both paths must fail with the same error.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rollback
from rollback.base import hotpath
from rollback.binlog.columns import ColumnSpec, decimal_groups
from rollback.binlog.constants import ColumnType as T
from rollback.binlog.decode import RowsBatch, TxContext
from rollback.binlog.rowdecoder import RowDecoder
from rollback.binlog.table_map import TableMap
from rollback.pipeline.plan_lines import PlanLines
from rollback.render.change_lines import ChangeLineCache
from rollback.render.invert import Reverse, forward_row, invert_rows
from rollback.render.net import row_keys
from rollback.render.records import image, record_json
from rollback.render.sql import TableRenderer, _compile_full_images, compiled_plan
from rollback.schema.tables import Column, TableSchema
from tests.support import REPO
from tests.support.examples import examples
from tests.support.hotpath import compiled_core, hot_path, outcome, same_values

CORE = compiled_core()  # an ImportError here fails the module: the core must be built for the suite


def test_the_compiled_core_is_built_from_the_current_source():
    pyx = REPO / "rollback" / "_speedups.pyx"
    built = Path(CORE.__file__)
    assert built.stat().st_mtime >= pyx.stat().st_mtime, (
        f"{built.name} is older than {pyx.name}: rebuild it (pip install -e ., or ./scripts/test)"
    )
    assert hotpath.CORE is CORE or os.environ.get(hotpath.PURE_ENV)


def test_version_says_which_path_runs_and_the_environment_variable_forces_the_pure_one():
    version = [sys.executable, "-m", "rollback.cli.commands", "--version"]
    env = {key: value for key, value in os.environ.items() if key != hotpath.PURE_ENV}
    compiled = subprocess.run(version, env=env, capture_output=True, text=True, check=True, cwd=REPO)
    assert compiled.stdout == f"mysql-rollback {rollback.__version__}, hot path: compiled\n"
    pure = subprocess.run(
        version, env={**env, hotpath.PURE_ENV: "1"}, capture_output=True, text=True, check=True, cwd=REPO
    )
    assert (
        pure.stdout
        == f"mysql-rollback {rollback.__version__}, hot path: pure Python ({hotpath.PURE_ENV} is set)\n"
    )


# ---- random tables ------------------------------------------------------------------------------------

CHARSETS = ["utf8mb4", "utf8mb3", "ascii", "latin1", "binary", "cp1251", "gbk", "sjis", "koi8r", None]
TEXT = st.one_of(
    st.binary(max_size=40),
    st.text(max_size=20).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.sampled_from(
        [b"", b"it's", b"a\\b", b"\x00", b"caf\xc3\xa9", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"''"]
    ),
)
JSON_DOCS = [
    b"\x04\x00",
    b"\x04\x01",
    b"\x04\x02",
    b"\x05\x07\x00",
    b"\x0c\x03abc",
    b"\x0c\x00",
    b"\x0c\x02\\'",
]


def _int_column(draw) -> tuple[ColumnSpec, Column]:
    code = draw(st.sampled_from([T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG]))
    unsigned = draw(st.booleans())
    return ColumnSpec(code, 0, unsigned), Column("", "int", unsigned=unsigned)


def _fsp(draw) -> int:
    return draw(st.integers(0, 6))


@st.composite
def columns(draw) -> tuple[ColumnSpec, Column]:
    kind = draw(
        st.sampled_from(
            [
                "int",
                "float",
                "double",
                "year",
                "date",
                "time",
                "datetime",
                "timestamp",
                "time2",
                "datetime2",
                "timestamp2",
                "decimal",
                "bit",
                "enum",
                "set",
                "char",
                "varchar",
                "blob",
                "json",
                "geometry",
                "null",
                "old-decimal",
            ]
        )
    )
    if kind == "int":
        return _int_column(draw)
    simple = {"float": (T.FLOAT, 4, "float"), "double": (T.DOUBLE, 8, "double"), "year": (T.YEAR, 0, "year")}
    if kind in simple:
        code, meta, data_type = simple[kind]
        return ColumnSpec(code, meta), Column("", data_type)
    if kind == "date":
        return ColumnSpec(T.DATE), Column("", "date")
    if kind in ("time", "datetime", "timestamp"):  # MariaDB hires when fsp > 0
        code = {"time": T.TIME, "datetime": T.DATETIME, "timestamp": T.TIMESTAMP}[kind]
        return ColumnSpec(code, _fsp(draw)), Column("", kind)
    if kind in ("time2", "datetime2", "timestamp2"):
        code = {"time2": T.TIME2, "datetime2": T.DATETIME2, "timestamp2": T.TIMESTAMP2}[kind]
        return ColumnSpec(code, _fsp(draw)), Column("", kind[:-1])
    if kind == "decimal":
        precision = draw(st.integers(1, 65))
        scale = draw(st.integers(0, min(30, precision)))
        return ColumnSpec(T.NEWDECIMAL, precision << 8 | scale), Column("", "decimal")
    if kind == "bit":
        bits = draw(st.integers(1, 64))
        return ColumnSpec(T.BIT, bits // 8 << 8 | bits % 8), Column("", "bit")
    if kind in ("enum", "set"):
        code = T.ENUM if kind == "enum" else T.SET
        pack = draw(st.integers(1, 2) if kind == "enum" else st.integers(1, 8))
        members = tuple(
            draw(st.lists(st.sampled_from(["a", "b'c", "x\\", "é", ""]), max_size=5, unique=True))
        )
        column = Column("", kind, enum_values=members if kind == "enum" else None)
        column.set_values = members if kind == "set" else None
        return ColumnSpec(T.STRING, code << 8 | pack), column
    charset = draw(st.sampled_from(CHARSETS))
    if kind == "char":
        data_type = draw(st.sampled_from(["char", "binary", ""]))
        return ColumnSpec(T.STRING, 0xFE << 8 | draw(st.integers(1, 255))), Column(
            "", data_type, charset=charset
        )
    if kind == "varchar":
        data_type = draw(st.sampled_from(["varchar", "varbinary", ""]))
        return ColumnSpec(T.VARCHAR, draw(st.sampled_from([10, 255, 256, 3000]))), Column(
            "", data_type, charset=charset
        )
    if kind == "blob":
        data_type = draw(st.sampled_from(["text", "blob", ""]))
        return ColumnSpec(T.BLOB, draw(st.integers(1, 4))), Column("", data_type, charset=charset)
    if kind == "json":
        return ColumnSpec(T.JSON, 4), Column("", "json")
    if kind == "geometry":
        return ColumnSpec(T.GEOMETRY, 4), Column("", "geometry")
    if kind == "null":
        return ColumnSpec(T.NULL), Column("", "")
    return ColumnSpec(T.DECIMAL), Column("", "decimal")  # pre-5.0 DECIMAL: refused by both paths


# ---- random values, as the binlog stores them -----------------------------------------------------------


def _be(value: int, width: int) -> bytes:
    return (value % (1 << (8 * width))).to_bytes(width, "big")


def _frac(draw, fsp: int) -> tuple[int, int]:
    """(bits, a stored fraction) of a *2 temporal column, sometimes out of range."""
    nbytes = (fsp + 1) // 2
    if not nbytes:
        return 0, 0
    limit = (100, 10_000, 1_000_000)[nbytes - 1]
    return nbytes * 8, draw(st.integers(0, limit - 1) | st.integers(0, (1 << (8 * nbytes)) - 1))


@st.composite
def stored(draw, spec: ColumnSpec) -> bytes:
    """The bytes of one non-NULL value: a valid one mostly, arbitrary bytes sometimes."""
    width = spec.width
    if spec.type == T.DATETIME2 and draw(st.integers(0, 4)):
        bits, frac = _frac(draw, spec.meta)
        year, month, day = draw(st.integers(0, 9999)), draw(st.integers(0, 12)), draw(st.integers(0, 31))
        hms = draw(st.integers(0, 23)) << 12 | draw(st.integers(0, 59)) << 6 | draw(st.integers(0, 59))
        intpart = ((year * 13 + month) << 5 | day) << 17 | hms
        return _be((intpart + 0x80_0000_0000) << bits | frac, width or 0)
    if spec.type == T.TIME2 and draw(st.integers(0, 4)):  # in range, either sign, any fraction
        fsp = spec.meta
        unit = (0, 10_000, 10_000, 100, 100, 1, 1)[fsp]  # microseconds per unit of the stored fraction
        hms = draw(st.integers(0, 1023)) << 12 | draw(st.integers(0, 59)) << 6 | draw(st.integers(0, 59))
        usec = draw(st.integers(0, 999_999 // unit)) * unit if unit else 0
        negative = draw(st.booleans())
        if fsp >= 5:
            return _be((hms << 24 | usec) * (-1 if negative else 1) + 0x8000_0000_0000, width or 0)
        bits = (fsp + 1) // 2 * 8
        intpart, frac = hms, usec // unit if unit else 0
        if negative:  # a fraction is stored counted back from the next whole second
            intpart, frac = (-hms - 1, (1 << bits) - frac) if frac else (-hms, 0)
        return _be((intpart + 0x80_0000) << bits | frac, width or 0)
    if spec.type == T.TIMESTAMP2 and draw(st.integers(0, 4)):
        bits, frac = _frac(draw, spec.meta)
        return _be(draw(st.integers(0, (1 << 32) - 1)) << bits | frac, width or 0)
    if spec.type == T.DATE and draw(st.integers(0, 4)):
        return (
            draw(st.integers(0, 9999)) << 9 | draw(st.integers(0, 12)) << 5 | draw(st.integers(0, 31))
        ).to_bytes(3, "little")
    if spec.type == T.NEWDECIMAL and draw(st.integers(0, 4)):
        out = bytearray()
        for nbytes, digits in decimal_groups(spec.precision, spec.scale):
            out += draw(st.integers(0, 10**digits - 1)).to_bytes(nbytes, "big")
        out[0] |= 0x80
        return bytes(b ^ 0xFF for b in out) if draw(st.booleans()) else bytes(out)
    if width is not None:
        return draw(st.binary(min_size=width, max_size=width))
    if spec.type == T.JSON:
        payload = draw(st.sampled_from(JSON_DOCS) | st.binary(max_size=8))
    else:
        payload = draw(TEXT)
    prefix = 4 if spec.type in (T.JSON, T.GEOMETRY) else spec.meta if spec.type == T.BLOB else 2
    if spec.type in (T.VARCHAR, T.STRING):
        prefix = 2 if spec.length > 255 else 1
    if spec.type == T.DECIMAL:
        return b""
    return len(payload).to_bytes(prefix, "little") + payload


@st.composite
def tables(draw):
    cols = draw(st.lists(columns(), min_size=1, max_size=8))
    specs = tuple(spec for spec, _ in cols)
    schema_columns = []
    for i, (_spec, column) in enumerate(cols):
        # names that JSON escapes in the plan's lines: a quote, a backslash, control characters
        column.name = draw(
            st.sampled_from([f"c{i}", f"c`{i}", f"é{i}", f'c"{i}', f"c\\{i}\x1f\n\t\x08\x0c\r"])
        )
        schema_columns.append(column)
    key = tuple(sorted(draw(st.sets(st.integers(0, len(cols) - 1), max_size=2))))
    schema = TableSchema("db", "t", schema_columns, key, [], "ddl")
    tmap = TableMap(
        1,
        1,
        "db",
        "t",
        bytes(spec.type for spec in specs),
        tuple(spec.meta for spec in specs),
        (True,) * len(specs),
        unsigned=tuple(spec.unsigned for spec in specs),
    )
    return specs, schema, tmap


@st.composite
def images(draw, specs: tuple[ColumnSpec, ...], present: int) -> bytes:
    cols = [i for i in range(len(specs)) if present >> i & 1]
    nulls = draw(st.integers(0, (1 << len(cols)) - 1)) if draw(st.booleans()) else 0
    out = bytearray(nulls.to_bytes((len(cols) + 7) // 8, "little"))
    for k, col in enumerate(cols):
        if not nulls >> k & 1:
            out += draw(stored(specs[col]))
    return bytes(out)


@st.composite
def events(draw):
    specs, schema, tmap = draw(tables())
    full = (1 << len(specs)) - 1
    present = full if draw(st.integers(0, 3)) else draw(st.integers(1, full))
    present_after = full if present == full else draw(st.integers(1, full))
    rows = draw(st.integers(1, 4))
    before = [draw(images(specs, present)) for _ in range(rows)]
    after = [draw(images(specs, present_after)) for _ in range(rows)]
    if draw(st.integers(0, 9)) == 0:  # a cut event: the compiled decoder leaves it to the Python one
        before[-1] = before[-1][: draw(st.integers(0, len(before[-1])))]
    return specs, schema, tmap, present, present_after, before, after


def _records(rows: list, tmap: TableMap, names: tuple[str, ...], update: bool) -> list[str]:
    if update:
        return [record_json({"b": image(b, tmap, names), "a": image(a, tmap, names)}) for b, a in rows]
    return [record_json({"i": image(row, tmap, names)}) for row in rows]


PLAN_LINES = PlanLines('bin"log.000001', 4, "db.t\n", 3, None)


def _plan_of_each_row(
    renderer: TableRenderer, kind: str, rows: list, forward: bool, indexes: list[int] | None
) -> tuple[bytes, int, int, bytes]:
    """The statements and plan lines of the partition's general path (any image: invert_row and
    forward_row with the TableRenderer's own methods, one row at a time)."""
    statements, lines = [], []
    if forward:
        for row in rows:
            sql = forward_row(renderer, kind, row)
            if sql is not None:
                statements.append(sql)
                lines.append(PLAN_LINES.forward(kind, sql))
    else:
        for index, result in invert_rows(renderer, kind, rows, True):
            assert isinstance(result, Reverse)
            statements.append(result.sql)
            number = index if indexes is None else indexes[index]
            lines.append(PLAN_LINES.reverse(number, kind, result.check, result.expect, result.sql))
    if not statements:
        return b"", 0, 0, b""
    longest = max(len(sql.encode()) for sql in statements)
    text = ("\n".join(statements) + "\n").encode()
    return text, len(statements), longest, ("\n".join(lines) + "\n").encode()


@settings(
    max_examples=examples(200),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(events(), st.sampled_from(["mariadb", "mysql"]), st.booleans())
def test_both_paths_decode_and_render_the_same_bytes(event, flavour, full_where):
    specs, schema, tmap, present, present_after, before_images, after_images = event
    pure_b, pure_a = RowDecoder(specs, present), RowDecoder(specs, present_after)
    fast_b, fast_a = RowDecoder(specs, present, CORE), RowDecoder(specs, present_after, CORE)
    assert fast_b.compiled and not pure_b.compiled
    single = b"".join(before_images)
    pairs = b"".join(b + a for b, a in zip(before_images, after_images, strict=True))
    names = schema.names
    checks = [
        (
            outcome(pure_b.decode_rows, single, 0, len(single)),
            outcome(fast_b.decode_rows, single, 0, len(single)),
            False,
        ),
        (
            outcome(pure_b.decode_pairs, pairs, 0, len(pairs), pure_a),
            outcome(fast_b.decode_pairs, pairs, 0, len(pairs), fast_a),
            True,
        ),
    ]
    for pure, fast, update in checks:
        assert pure[0] == fast[0], (pure, fast)
        if pure[0] == "error":
            assert pure == fast
            continue
        assert same_values(pure[1], fast[1])
        assert outcome(_records, pure[1], tmap, names, update) == outcome(
            _records, fast[1], tmap, names, update
        )
        # the change log's lines: the generated encoder against the compiled one (ChangeImages)
        batch = RowsBatch("f", 4, 9, "update" if update else "insert", tmap, TxContext(), 0, 1, fast[1], True)
        lines = outcome(ChangeLineCache().lines, batch, names, schema.columns)
        with hot_path(CORE):
            encoded = outcome(ChangeLineCache().encoded, batch, names, schema.columns)
        assert (lines[0], lines[1].encode() if lines[0] == "ok" else lines[1]) == encoded
    renderer = outcome(TableRenderer, tmap, schema, flavour, full_where)
    if renderer[0] == "error" or present != (1 << len(specs)) - 1:
        return
    if renderer[1].full_images() is None:  # a table the general path renders (a FLOAT key, ...): both paths
        return
    rows_single = pure_b.decode_rows(single, 0, len(single)) if checks[0][0][0] == "ok" else None
    rows_pairs = checks[1][0][1] if checks[1][0][0] == "ok" and present_after == present else None
    pure_full = _compile_full_images(renderer[1])
    fast_full = CORE.FullImages(*compiled_plan(renderer[1]))
    # rows that go to the compiled renderer alone may carry DECIMALs as its text (decimal_text)
    text_single = fast_b.decode_rows(single, 0, len(single), True) if rows_single is not None else None
    text_pairs = fast_b.decode_pairs(pairs, 0, len(pairs), fast_a, True) if rows_pairs is not None else None
    for kind, rows, text_rows in (
        ("insert", rows_single, text_single),
        ("delete", rows_single, text_single),
        ("update", rows_pairs, text_pairs),
    ):
        if rows is None:
            continue
        for forward in (False, True):
            expected = outcome(pure_full.script, kind, rows, forward)
            assert expected == outcome(fast_full.script, kind, rows, forward)
            assert expected == outcome(fast_full.script, kind, text_rows, forward)
            assert outcome(pure_full.statements, kind, rows, forward) == outcome(
                fast_full.statements, kind, rows, forward
            )
            # the statements with their plan lines and checks, as the general path writes them
            indexes = list(range(7, 7 + len(rows))) if len(rows) > 1 else None
            plan = outcome(pure_full.plan, kind, rows, forward, PLAN_LINES, indexes)
            assert plan == outcome(fast_full.plan, kind, rows, forward, PLAN_LINES, indexes)
            assert plan == outcome(fast_full.plan, kind, text_rows, forward, PLAN_LINES, indexes)
            assert plan == outcome(_plan_of_each_row, renderer[1], kind, rows, forward, indexes)
            if plan[0] == "ok":
                assert plan[1][:3] == expected[1]
    # INSERTs and DELETEs written straight from the images' bytes (FullImages.script_images): the
    # script of the decoded rows, a part at a time as rows_batches cuts them, or a refusal the caller
    # falls back on
    layout = fast_b.layout
    for kind, forward in (("insert", True), ("delete", False), ("insert", False), ("delete", True)):
        expected = outcome(pure_full.script, kind, rows_single, forward) if rows_single is not None else None
        for decimal_text in (False, True):
            whole = outcome(
                fast_full.script_images, layout, single, 0, len(single), -1, kind, forward, decimal_text
            )
            if whole[0] == "error":
                continue  # the partition then takes the general path (rows_batches, _take)
            assert expected is not None and expected[0] == "ok", (expected, whole)
            assert whole[1][:3] == expected[1] and whole[1][3] == len(single)
            pos, parts = 0, []
            while pos < len(single):
                text, count, _longest, pos = fast_full.script_images(
                    layout, single, pos, len(single), 1, kind, forward, decimal_text
                )
                assert count == 1
                parts.append(text)
            assert b"".join(parts) == b"".join(
                pure_full.script(kind, [row], forward)[0] for row in rows_single
            )
    # --net: the keys of a DELETE's images read from their bytes (image_keys, beside script_images in
    # partition._net_deletes_from_images) are the keys of the decoded rows, of every type and shape
    width = len(specs)
    for decimal_text in (False, True):
        refused = outcome(
            fast_full.script_images, layout, single, 0, len(single), -1, "delete", False, decimal_text
        )
        if refused[0] == "error":
            continue
        rows = fast_b.decode_rows(single, 0, len(single), decimal_text)
        for key in ((0,), (width - 1,), tuple(range(0, width, 2)), tuple(range(width))):
            keys, end = CORE.image_keys(layout, single, 0, len(single), -1, key, decimal_text)
            assert end == len(single)
            assert same_values(keys, row_keys(rows, key))
            pos, parts = 0, []
            while pos < len(single):  # a row at a time, as the partition cuts an event
                some, pos = CORE.image_keys(layout, single, pos, len(single), 1, key, decimal_text)
                assert len(some) == 1
                parts.extend(some)
            assert same_values(parts, keys)
    # --net: each image's bytes with its key (image_rows, the partition's chains of images as bytes):
    # taken only where the decoder reads every value the same way, each image then decoding to its row
    for decimal_text in (False, True):
        whole = outcome(fast_b.decode_rows, single, 0, len(single), decimal_text)
        for key in ((0,), (width - 1, 0)):
            taken = outcome(CORE.image_rows, layout, single, 0, len(single), key, decimal_text)
            if taken[0] == "error":
                continue
            assert whole[0] == "ok", (whole, taken)
            keys, images, end = taken[1]
            assert end == len(single) and b"".join(images) == single
            assert same_values(keys, row_keys(whole[1], key))
            decoded = [fast_b.decode_rows(image, 0, len(image), decimal_text)[0] for image in images]
            assert same_values(decoded, whole[1])


@settings(max_examples=examples(400), deadline=None)
@given(st.data())
def test_decimal_text_is_the_rendered_decimal_and_negative_zero_and_exponent_forms_stay_decimals(data):
    precision = data.draw(st.integers(1, 65))  # every precision: beyond 18 digits too, in C
    scale = data.draw(st.integers(0, min(precision, 30)))
    spec = ColumnSpec(T.NEWDECIMAL, precision << 8 | scale)
    groups = decimal_groups(precision, scale)
    out = bytearray()
    for nbytes, digits in groups:
        edge = st.sampled_from([0, 1, 10**digits - 1, 10 ** (digits - 1)])
        out += data.draw(edge | st.integers(0, 10**digits - 1)).to_bytes(nbytes, "big")
    out[0] |= 0x80
    negative = data.draw(st.booleans())
    image = b"\0" + (bytes(b ^ 0xFF for b in out) if negative else bytes(out))
    (pure,) = RowDecoder((spec,), 1).decode_rows(image, 0, len(image))
    (text,) = RowDecoder((spec,), 1, CORE).decode_rows(image, 0, len(image), True)
    if (pure[0].is_zero() and pure[0].is_signed()) or pure[0].adjusted() < -6:
        assert type(text[0]) is type(pure[0]) and str(text[0]) == str(pure[0])
    else:  # the statements' text, and the change log's: both read it as the Decimal's
        assert text[0] == format(pure[0], "f") == str(pure[0])
