"""Micro-benchmark of the compiled row decoder: rows/s on one core.

    python3 bench/bench_rowdecoder.py [--rows N] [--repeat R]

Cases: the 5-column row of STYLE.md (INT, BIGINT UNSIGNED, VARCHAR utf8mb4, DATETIME2(6),
ENUM), the same row with a NULL (the per-column guarded path), a mixed 10-column row and an
UPDATE of the 5-column row (before + after image). Row images are built here with struct, the
decoder is compiled once (as in production, where it is cached per table signature) and
``decode_rows``/``decode_pairs`` run over one event-sized buffer of rows. The last line is the
baseline measured in the same run: a loop that dispatches on the column type for every value
(``columns.read_value``), the shape of a generic decoder; "x generic" is the ratio to it.
"""

from __future__ import annotations

import argparse
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rollback.binlog.columns import ColumnSpec, read_value  # noqa: E402
from rollback.binlog.constants import ColumnType as T  # noqa: E402
from rollback.binlog.rowdecoder import get_row_decoder  # noqa: E402


def datetime2(year: int, month: int, day: int, hour: int, minute: int, second: int, usec: int) -> bytes:
    intpart = ((year * 13 + month) << 5 | day) << 17 | hour << 12 | minute << 6 | second
    return ((intpart + 0x80_0000_0000) << 24 | usec).to_bytes(8, "big")


def varchar2(data: bytes) -> bytes:
    return struct.pack("<H", len(data)) + data


def five_column(i: int, null_name: bool = False) -> bytes:
    name = f"customer-{i}-äöü".encode()
    values = struct.pack("<iQ", i, 2**63 + i) + (b"" if null_name else varchar2(name))
    values += datetime2(2024, 1 + i % 12, 1 + i % 28, i % 24, i % 60, (i * 7) % 60, (i * 7919) % 1_000_000)
    values += bytes([1 + i % 3])
    return bytes([0b100 if null_name else 0]) + values


FIVE = (
    ColumnSpec(T.LONG),
    ColumnSpec(T.LONGLONG, unsigned=True),
    ColumnSpec(T.VARCHAR, 255 * 4),
    ColumnSpec(T.DATETIME2, 6),
    ColumnSpec(T.STRING, T.ENUM << 8 | 1),
)

TEN = (
    ColumnSpec(T.TINY),
    ColumnSpec(T.SHORT, unsigned=True),
    ColumnSpec(T.INT24),
    ColumnSpec(T.NEWDECIMAL, 10 << 8 | 2),
    ColumnSpec(T.DOUBLE, 8),
    ColumnSpec(T.STRING, T.STRING << 8 | 40),  # CHAR(10) utf8mb4
    ColumnSpec(T.DATE),
    ColumnSpec(T.TIMESTAMP2, 0),
    ColumnSpec(T.BLOB, 2),  # TEXT
    ColumnSpec(T.LONGLONG),
)


def ten_column(i: int) -> bytes:
    cents = 123_456 + i
    whole, frac = divmod(cents, 100)
    decimal = bytes([0x80 | whole >> 24 & 0x7F]) + (whole & 0xFFFFFF).to_bytes(3, "big") + bytes([frac])
    char = f"code{i % 1000}".encode()
    text = f"note {i} ".encode() * 3
    date = (2020 + i % 5) << 9 | (1 + i % 12) << 5 | (1 + i % 28)
    values = struct.pack("<bHHb", i % 100, i % 65536, i & 0xFFFF, (i >> 16) & 0x7F) + decimal
    values += struct.pack("<d", i * 0.25) + bytes([len(char)]) + char + date.to_bytes(3, "little")
    values += struct.pack(">I", 1_700_000_000 + i) + varchar2(text) + struct.pack("<q", -i)
    return bytes([0, 0]) + values


def generic_rows(specs: tuple[ColumnSpec, ...], buf: bytes) -> list[tuple[object, ...]]:
    """The baseline: a loop deciding the type of every value at run time (read_value)."""
    out = []
    pos, end = 0, len(buf)
    nbytes = (len(specs) + 7) // 8
    while pos < end:
        nulls = int.from_bytes(buf[pos : pos + nbytes], "little")
        pos += nbytes
        row: list[object] = []
        for k, spec in enumerate(specs):
            if nulls >> k & 1:
                row.append(None)
            else:
                value, pos = read_value(spec, buf, pos)
                row.append(value)
        out.append(tuple(row))
    return out


def measure(run: Callable[[], object], rows: int, repeat: int) -> float:
    run()  # warm the value caches once, as a long event stream would
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return rows / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000, help="rows per buffer (default 20000)")
    parser.add_argument("--repeat", type=int, default=7, help="timed runs, best is reported (default 7)")
    args = parser.parse_args()
    n = args.rows

    five = get_row_decoder(FIVE, 0b11111)
    ten = get_row_decoder(TEN, (1 << 10) - 1)
    buf_five = b"".join(five_column(i) for i in range(n))
    buf_null = b"".join(five_column(i, null_name=i % 2 == 0) for i in range(n))
    buf_ten = b"".join(ten_column(i) for i in range(n))
    buf_update = b"".join(five_column(i) + five_column(i + 1) for i in range(n))
    assert len(five.decode_rows(buf_five, 0, len(buf_five))) == n
    assert len(ten.decode_rows(buf_ten, 0, len(buf_ten))) == n
    assert generic_rows(FIVE, buf_five) == five.decode_rows(buf_five, 0, len(buf_five))

    cases = [
        ("5 columns (INT, BIGINT UNSIGNED, VARCHAR, DATETIME2(6), ENUM)", buf_five, five, False),
        ("5 columns, every other VARCHAR NULL", buf_null, five, False),
        ("10 columns mixed (ints, DECIMAL, DOUBLE, CHAR, DATE, TIMESTAMP2, TEXT)", buf_ten, ten, False),
        ("UPDATE of the 5-column row, pairs/s (before + after image)", buf_update, five, True),
    ]
    baseline = measure(lambda: generic_rows(FIVE, buf_five), n, args.repeat)
    print(f"{'case':<74} {'rows/s':>10} {'us/row':>8} {'x generic':>9}")
    for label, buf, decoder, pairs in cases:
        if pairs:
            rate = measure(lambda b=buf, d=decoder: d.decode_pairs(b, 0, len(b), d), n, args.repeat)  # type: ignore[misc]
        else:
            rate = measure(lambda b=buf, d=decoder: d.decode_rows(b, 0, len(b)), n, args.repeat)  # type: ignore[misc]
        ratio = f"{rate / baseline:>9.1f}" if decoder is five and not pairs else ""
        print(f"{label:<74} {rate:>10,.0f} {1e6 / rate:>8.2f} {ratio}")
    label = "5 columns, generic per-value reader loop (columns.read_value)"
    print(f"{label:<74} {baseline:>10,.0f} {1e6 / baseline:>8.2f} {1.0:>9.1f}")


if __name__ == "__main__":
    main()
