"""Row events no server writes, crafted into a real binlog: both hot paths (the compiled core and the
pure-Python code) give the same bytes or the same one-line refusal, never an internal error."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from rollback import Filters, Options, RangeSpec, generate
from tests.support.columns import encode_decimal
from tests.support.hostile import (
    COLUMN_NAME,
    DOUBLE,
    FLOAT,
    JSON,
    LONG,
    MINIMAL,
    NEWDECIMAL,
    PARTIAL_UPDATE_ROWS,
    SIMPLE_PRIMARY_KEY,
    STRING,
    TABLE_ID,
    UPDATE_ROWS,
    VARCHAR,
    WRITE_ROWS,
    Column,
    crafted_binlog,
    lenenc,
    optional_field,
    rows_body,
    run_cli,
    table_map_body,
)
from tests.support.hotpath import compiled_core, hot_path, outcome

pytestmark = pytest.mark.corpus

CORE = compiled_core()
MODES = ("flashback", "forward", "changes")


@pytest.fixture(scope="module")
def minimal(corpus_dir) -> bytes:
    return (corpus_dir / MINIMAL).read_bytes()


def _outputs(path: Path, mode: str, allow_partial: bool) -> tuple[bytes, bytes, bytes]:
    out = path.with_name(f"{path.name}.{mode}.sql")
    plan, changes = out.with_suffix(".plan.jsonl"), out.with_suffix(".changes.jsonl")
    generate(
        RangeSpec([str(path)]),
        Filters(),
        Options(mode=mode, engine="local", allow_partial=allow_partial),
        out,
        None if mode == "changes" else plan,
        changes,
    )
    return out.read_bytes(), plan.read_bytes() if mode != "changes" else b"", changes.read_bytes()


def both_paths(path: Path, mode: str, allow_partial: bool = False) -> tuple[str, object]:
    """The outcome of `mode` on `path`, the same on both hot paths (asserted)."""
    results = []
    for core in (None, CORE):
        with hot_path(core):
            results.append(outcome(_outputs, path, mode, allow_partial))
    assert results[0] == results[1]
    return results[0]


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def statements(result: tuple[str, object]) -> list[str]:
    assert result[0] == "ok", result
    script = result[1][0]  # type: ignore[index]
    return [line for line in script.decode().splitlines() if line.startswith(("UPDATE", "INSERT", "DELETE"))]


def one_line(args: list) -> str:
    run = run_cli(args)
    assert run.returncode == 2, run.stderr
    lines = [line for line in run.stderr.splitlines() if "engine local" not in line]
    assert len(lines) == 1 and "Traceback" not in run.stderr and "internal error" not in run.stderr, (
        run.stderr
    )
    return lines[0]


# ------------------------------------------------------------------------ DECIMAL +0 and -0


def _negative_zero(precision: int, scale: int) -> bytes:
    """decimal2bin of -0: the bytes of 0 inverted, then the top bit flipped (MySQL's writer never
    makes it: it normalises -0 to 0; the bytes can still say it)."""
    zero = encode_decimal(0, precision, scale)
    return bytes([zero[0] ^ 0xFF ^ 0x80 ^ 0x80]) + bytes(b ^ 0xFF for b in zero[1:])


@pytest.mark.parametrize(("precision", "scale"), [(10, 2), (5, 0), (30, 5)])
@pytest.mark.parametrize("negative_after", [True, False])
def test_a_decimal_update_between_zero_and_minus_zero_changes_nothing_on_both_paths(
    minimal, tmp_path, precision, scale, negative_after
):
    """-0 and +0 compare equal in MySQL DECIMAL: the UPDATE changed no value, so there is nothing to
    reverse or replay (a statement would match the row and change nothing). Before: the compiled
    path wrote an UPDATE (the +0 image as text beside the -0 image as a Decimal), the pure one none."""
    zero, negative = encode_decimal(0, precision, scale), _negative_zero(precision, scale)
    assert zero != negative
    before, after = (zero, negative) if negative_after else (negative, zero)
    columns = [Column(b"id", LONG), Column(b"d", NEWDECIMAL, bytes([precision, scale]))]
    rows = b"\x00\x01\x00\x00\x00" + before + b"\x00\x01\x00\x00\x00" + after
    path = write(
        tmp_path,
        "zero.bin",
        crafted_binlog(
            minimal, table_map_body(b"db", b"t", columns), UPDATE_ROWS, rows_body(UPDATE_ROWS, 2, rows)
        ),
    )
    for mode in ("flashback", "forward"):
        assert statements(both_paths(path, mode)) == []
    changes = both_paths(path, "changes")[1][2]  # type: ignore[index]
    assert b'"d":"-0.' in changes or b'"d":"-0"' in changes  # the change log keeps what the bytes say


# ------------------------------------------------------------------------ NUL in identifiers


@pytest.mark.parametrize(
    ("db", "table", "column", "reason"),
    [
        (b"d\x00b", b"t", b"name", "TABLE_MAP database name 'd\\x00b' holds a NUL byte"),
        (b"db", b"t\x00x", b"name", "TABLE_MAP table name 't\\x00x' holds a NUL byte"),
        (b"db", b"t", b"a\x00b", "TABLE_MAP of db.t: column 2 name 'a\\x00b' holds a NUL byte"),
    ],
)
def test_an_identifier_holding_a_nul_byte_is_refused_on_both_paths(
    minimal, tmp_path, db, table, column, reason
):
    """MySQL allows no NUL in an identifier. Before: the compiled path wrote it raw into the script,
    the pure path stopped with an internal error (embedded null character)."""
    columns = [Column(b"id", LONG), Column(column, VARCHAR, b"\x64\x00")]
    row = b"\x00\x01\x00\x00\x00\x01x"
    data = crafted_binlog(
        minimal, table_map_body(db, table, columns), WRITE_ROWS, rows_body(WRITE_ROWS, 2, row)
    )
    path = write(tmp_path, "nul.bin", data)
    for mode in MODES:
        kind, (error, message) = both_paths(path, mode)  # type: ignore[misc]
        assert (kind, error) == ("error", "BinlogFormatError")
        assert f"at offset 500: {reason}, which no identifier can" in message
    assert one_line(["sql", path, "-o", tmp_path / "out.sql"]).endswith(reason + ", which no identifier can")


# ---------------------------------------------------------------- NaN and infinities


@pytest.mark.parametrize(
    ("type_code", "value", "text"),
    [
        (DOUBLE, struct.pack("<d", float("nan")), "nan"),
        (DOUBLE, struct.pack("<d", float("inf")), "inf"),
        (FLOAT, struct.pack("<f", float("-inf")), "-inf"),
        (FLOAT, struct.pack("<f", float("nan")), "nan"),
    ],
)
@pytest.mark.parametrize("kind", [WRITE_ROWS, UPDATE_ROWS])
def test_nan_or_infinity_in_a_float_column_is_a_located_refusal(
    minimal, tmp_path, type_code, value, text, kind
):
    """No server stores NaN or an infinity in FLOAT/DOUBLE. Before: an internal error (ValueError from
    the literal), or for `sql` of an UPDATE a script that silently dropped the impossible value."""
    columns = [Column(b"id", LONG), Column(b"v", type_code, bytes([len(value)]))]
    other = struct.pack("<d" if type_code == DOUBLE else "<f", 1.5)
    rows = b"\x00\x01\x00\x00\x00" + value + (b"\x00\x01\x00\x00\x00" + other if kind == UPDATE_ROWS else b"")
    data = crafted_binlog(minimal, table_map_body(b"db", b"t", columns), kind, rows_body(kind, 2, rows))
    path = write(tmp_path, "nan.bin", data)
    reason = (
        f"rows of db.t: row image of table column 2 holds an invalid value: {text} is not a number "
        "a FLOAT or DOUBLE column can hold"
    )
    for mode in MODES:
        kind_, (error, message) = both_paths(path, mode)  # type: ignore[misc]
        assert (kind_, error) == ("error", "BinlogFormatError") and message.endswith(reason)
    assert one_line(["flashback", path, "-o", tmp_path / "out.sql"]).endswith(reason)


# -------------------------------------------------------- a primary key past the columns


@pytest.mark.parametrize(
    ("field", "value", "column"), [(SIMPLE_PRIMARY_KEY, b"\x05", 6), (9, b"\x07\x00", 8)]
)
def test_a_primary_key_naming_a_column_past_the_column_count_is_refused(
    minimal, tmp_path, field, value, column
):
    columns = [Column(b"id", LONG), Column(b"name", VARCHAR, b"\x64\x00")]
    names = b"".join(lenenc(len(c.name)) + c.name for c in columns)
    optional = optional_field(COLUMN_NAME, names) + optional_field(field, value)
    row = b"\x00\x01\x00\x00\x00\x01x"
    data = crafted_binlog(
        minimal, table_map_body(b"db", b"t", columns, optional), WRITE_ROWS, rows_body(WRITE_ROWS, 2, row)
    )
    path = write(tmp_path, "key.bin", data)
    reason = f"TABLE_MAP of db.t: optional metadata: the primary key names column {column}, the table has 2"
    for mode in MODES:
        kind, (error, message) = both_paths(path, mode)  # type: ignore[misc]
        assert (kind, error) == ("error", "BinlogFormatError") and message.endswith(reason)
    assert one_line(["flashback", path, "-o", tmp_path / "out.sql"]).endswith(reason)


def test_column_names_not_one_per_column_are_refused(minimal, tmp_path):
    columns = [Column(b"id", LONG), Column(b"name", VARCHAR, b"\x64\x00")]
    optional = optional_field(COLUMN_NAME, lenenc(2) + b"id")
    row = b"\x00\x01\x00\x00\x00\x01x"
    data = crafted_binlog(
        minimal, table_map_body(b"db", b"t", columns, optional), WRITE_ROWS, rows_body(WRITE_ROWS, 2, row)
    )
    kind, (error, message) = both_paths(write(tmp_path, "names.bin", data), "forward")  # type: ignore[misc]
    assert (kind, error) == ("error", "BinlogFormatError")
    assert message.endswith("optional metadata: 1 column names for 2 columns")


# ------------------------------------------- a partial JSON update without its before document


def _partial_json_update(minimal: bytes) -> bytes:
    """PARTIAL_UPDATE_ROWS of (id INT, j JSON): a MINIMAL before image (id) and an after image whose
    j is the diff REMOVE $.a."""
    columns = [Column(b"id", LONG), Column(b"j", JSON, b"\x04")]
    diff = b"\x02" + lenenc(3) + b"$.a"
    body = (
        TABLE_ID.to_bytes(6, "little")
        + b"\x01\x00\x02\x00"
        + lenenc(2)
        + b"\x01\x03"  # before image: id; after image: id, j
        + b"\x00\x01\x00\x00\x00"
        + b"\x01\x01"  # value_options PARTIAL_JSON, j logged as a diff
        + b"\x00\x01\x00\x00\x00"
        + len(diff).to_bytes(4, "little")
        + diff
    )
    return crafted_binlog(minimal, table_map_body(b"db", b"t", columns), PARTIAL_UPDATE_ROWS, body)


@pytest.mark.parametrize("allow_partial", [False, True])
def test_a_partial_json_update_without_its_document_is_refused_in_forward_mode(
    minimal, tmp_path, allow_partial
):
    """Before: an internal error (ValueError from the JSON literal), even with --allow-partial."""
    path = write(tmp_path, "pjson.bin", _partial_json_update(minimal))
    reason = (
        "pjson.bin at offset 554: row 0 of db.t: a partial JSON update whose before image does not hold the "
        "document (binlog_row_image=MINIMAL) cannot be written as forward SQL"
    )
    kind, (error, message) = both_paths(path, "forward", allow_partial)  # type: ignore[misc]
    assert (kind, error, message) == ("error", "UnsupportedEvent", reason)
    flag = ["--allow-partial"] if allow_partial else []
    assert one_line(["sql", path, "-o", tmp_path / "out.sql", *flag]) == f"mysql-rollback: error: {reason}"
    assert not (tmp_path / "out.sql").exists()
    # the flashback lists it as irreversible (exit 3 with --allow-partial), the change log holds the diff
    assert both_paths(path, "flashback", True)[0] == "ok"
    assert b'"json_diff":[{"op":"REMOVE","path":"$.a"' in both_paths(path, "changes")[1][2]  # type: ignore[index]


def test_a_char_column_whose_metadata_names_another_type_is_refused(minimal, tmp_path):
    """A STRING column's metadata names its real type (CHAR, ENUM or SET). Found by the fuzz lane
    (seed 2, mutant 96): one naming DECIMAL was decoded as bytes and rendered as a DECIMAL, an
    internal error (TypeError) on both paths."""
    columns = [Column(b"id", LONG), Column(b"c", STRING, bytes([NEWDECIMAL, 10]))]
    row = b"\x00\x01\x00\x00\x00\x01x"
    data = crafted_binlog(
        minimal, table_map_body(b"db", b"t", columns), WRITE_ROWS, rows_body(WRITE_ROWS, 2, row)
    )
    path = write(tmp_path, "char.bin", data)
    for mode in MODES:
        kind, (error, message) = both_paths(path, mode)  # type: ignore[misc]
        assert (kind, error) == ("error", "BinlogFormatError")
        assert "at offset 500: TABLE_MAP of db.t:" in message and "real type 246 of a CHAR column" in message
