"""Flashback generation per column-type family, beside `mariadb-binlog --flashback` on the same files.

    .venv/bin/python bench/bench_types.py [--rows 1000000] [--keep DIR] [--reuse DIR] [--repeat 3]
                                          [--family NAME ...] [--profile]

bench_pipeline.py's mixed workload carries the cheap types; a binlog whose tables carry JSON, BLOB,
multi-byte VARCHAR, negative DECIMAL, BIGINT UNSIGNED near 2^64, DATETIME(6) and ENUM costs more per
row. Each family here is a table of its own (an INT key and the family's columns), written into a
binlog file of its own by a scratch MariaDB (binlog_row_metadata=FULL): --rows row changes, 40%
INSERT, 40% UPDATE (every column changed), 20% DELETE in transactions of 2,500; `all` is one table
with every family's columns.

For each file, in the same run: the local engine with the compiled core and with the pure-Python
fallback, `mysql-rollback flashback` with its defaults, and `mariadb-binlog --flashback`, each
writing to a file: seconds (best of --repeat), rows/s, CPU s, peak RSS, and our time divided by
`mariadb-binlog --flashback`'s. `--profile` then runs the local engine in-process on each family under
cProfile and prints the heaviest functions (where the per-type cost is).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_pipeline import CHILD_ENV, PURE_ENV, PYTHON, Timing, best, row_changes, warm_bytecode  # noqa: E402

# family -> (column definitions, INSERT value expressions over `seq`, UPDATE assignments)
FAMILIES: dict[str, tuple[list[str], list[str], list[str]]] = {
    "integers": (
        ["u BIGINT UNSIGNED", "s BIGINT", "t TINYINT", "m MEDIUMINT UNSIGNED"],
        ["18446744073709551615 - seq", "-9223372036854775807 + seq", "seq % 127 - 63", "seq % 16777215"],
        ["u = u - 1", "s = s + 1", "t = -t", "m = m + 1"],
    ),
    "decimal": (
        ["d1 DECIMAL(20,6)", "d2 DECIMAL(12,2)", "d3 DECIMAL(38,10)"],
        ["-seq * 1234.567891", "seq / 100", "seq * 98765432109.0123456789"],
        ["d1 = d1 - 0.000001", "d2 = -d2", "d3 = d3 + 1"],
    ),
    "temporal": (
        ["dt DATETIME(6)", "ts TIMESTAMP(3) NULL", "d DATE", "tm TIME(6)", "y YEAR"],
        [
            "TIMESTAMPADD(MICROSECOND, seq * 1234567, '2024-01-01')",
            "TIMESTAMPADD(SECOND, seq, '2024-01-01')",
            "DATE('2000-01-01') + INTERVAL seq % 9000 DAY",
            "SEC_TO_TIME(seq % 86400) + INTERVAL 123456 MICROSECOND",
            "1901 + seq % 254",
        ],
        [
            "dt = dt + INTERVAL 1 SECOND",
            "ts = ts + INTERVAL 1 SECOND",
            "d = d + INTERVAL 1 DAY",
            "tm = '01:02:03'",
            "y = 2000",
        ],
    ),
    "strings": (
        [
            "v VARCHAR(64) CHARACTER SET utf8mb4",
            "c CHAR(20) CHARACTER SET latin1",
            "vb VARBINARY(32)",
        ],
        ["CONCAT('naïve ☃ Grüße 名前 ', seq)", "CONCAT('code-', seq)", "UNHEX(MD5(seq))"],
        ["v = CONCAT(v, '!')", "c = CONCAT('x', c)", "vb = UNHEX(SHA1(vb))"],
    ),
    "blob": (
        ["b BLOB", "tx TEXT CHARACTER SET utf8mb4"],
        ["REPEAT(CHAR(seq % 256), 200)", "REPEAT(CONCAT('text ☃ ', seq), 10)"],
        ["b = REPEAT('z', 150)", "tx = CONCAT(tx, ' more')"],
    ),
    "json": (
        ["j JSON"],
        [
            "JSON_OBJECT('id', seq, 'name', CONCAT('n', seq), 'tags', JSON_ARRAY('a', 'b', seq), "
            "'price', seq / 100, 'nested', JSON_OBJECT('k', REPEAT('v', seq % 40)))"
        ],
        ["j = JSON_SET(j, '$.name', 'changed', '$.extra', 1)"],
    ),
    "enumset": (
        ["e ENUM('new','paid','shipped','void')", "st SET('a','b','c','d','e')", "bits BIT(17)"],
        ["1 + seq % 4", "seq % 32", "seq % 131072"],
        ["e = 'void'", "st = 'a,e'", "bits = bits ^ 1"],
    ),
    "floats": (
        ["f FLOAT", "g DOUBLE"],
        ["seq / 3", "seq * 1.000001"],
        ["f = f + 1", "g = -g"],
    ),
}
ALL = "all"


def _family(name: str) -> tuple[list[str], list[str], list[str]]:
    if name != ALL:
        return FAMILIES[name]
    cols: list[str] = []
    values: list[str] = []
    sets: list[str] = []
    for fam_cols, fam_values, fam_sets in FAMILIES.values():
        cols += fam_cols
        values += fam_values
        sets += fam_sets
    return cols, values, sets


def write_family(server, name: str, rows: int) -> Path:
    """`rows` row changes on the family's table: 40% INSERT, 40% UPDATE, 20% DELETE, 2,500 a transaction."""
    cols, values, sets = _family(name)
    table = f"t_{name}"
    server.run_sql(
        [f"DROP TABLE IF EXISTS {table}", f"CREATE TABLE {table} (id INT PRIMARY KEY, {', '.join(cols)})"],
        database="bench",
    )
    batch = 1000
    statements = []
    next_id = changes = 0
    while changes < rows:
        changes += batch * 5 // 2
        lo, hi = next_id + 1, next_id + batch
        statements += [
            "BEGIN",
            f"INSERT INTO {table} SELECT seq, {', '.join(values)} FROM (SELECT CAST(seq AS SIGNED) AS seq FROM seq_{lo}_to_{hi}) n",
            f"UPDATE {table} SET {', '.join(sets)} WHERE id BETWEEN {lo} AND {hi}",
            f"DELETE FROM {table} WHERE id BETWEEN {lo} AND {lo + batch // 2 - 1}",
            "COMMIT",
        ]
        next_id = hi
    rng = server.run_sql(statements, database="bench", own_file=True)
    assert len(rng.files) == 1, rng
    return Path(rng.files[0])


def generate(families: list[str], rows: int, out: Path) -> dict[str, Path]:
    from tests.support.mariadb import ScratchServer, ServerOptions

    server = ScratchServer(options=ServerOptions(row_metadata="FULL")).start()
    try:
        server.run_sql(["CREATE DATABASE IF NOT EXISTS bench", "SET GLOBAL max_allowed_packet = 1073741824"])
        out.mkdir(parents=True, exist_ok=True)
        kept = {}
        for name in families:
            target = out / f"types-{name}.binlog"
            shutil.copyfile(write_family(server, name, rows), target)
            kept[name] = target
        return kept
    finally:
        server.stop()


def cli(file: Path, out: Path, *options: str) -> list[str]:
    return [
        PYTHON,
        "-m",
        "rollback.cli.commands",
        "flashback",
        str(file),
        "--quiet",
        *options,
        "-o",
        str(out),
    ]


def profile(path: Path, top: int = 18) -> str:
    """The local engine in this process, one partition, under cProfile: the heaviest functions."""
    from rollback import Filters, Options, RangeSpec, generate

    with tempfile.TemporaryDirectory() as tmp:
        profiler = cProfile.Profile()
        profiler.enable()
        generate(
            RangeSpec([str(path)]),
            Filters(),
            Options(engine="local", partition_bytes=1 << 40),
            Path(tmp) / "p.sql",
        )
        profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    return text.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="row changes per family")
    parser.add_argument(
        "--family", action="append", choices=[*FAMILIES, ALL], help="only these (default: all)"
    )
    parser.add_argument("--keep", type=Path, help="keep the generated binlogs in this directory")
    parser.add_argument("--reuse", type=Path, help="time the binlogs a previous --keep left here")
    parser.add_argument("--repeat", type=int, default=3, help="runs of every tool; the table has the fastest")
    parser.add_argument("--no-pure", action="store_true", help="skip the pure-Python fallback (slow)")
    parser.add_argument("--profile", action="store_true", help="cProfile the local engine on each family")
    args = parser.parse_args()
    families = args.family or [*FAMILIES, ALL]
    work = Path(tempfile.mkdtemp(prefix="bench-types-"))
    try:
        if args.reuse:
            files = {name: args.reuse / f"types-{name}.binlog" for name in families}
        else:
            started = time.perf_counter()
            files = generate(families, args.rows, args.keep or work / "binlogs")
            print(f"workloads generated in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        warm_bytecode(work / "pycache")
        print(
            f"\n{time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.1f} at the start, best of {args.repeat}\n"
        )
        print(
            "| family | MB | row changes | tool | seconds | rows/s | CPU s | peak RSS (MB) | ÷ mariadb-binlog --flashback |"
        )
        print("|---|---:|---:|---|---:|---:|---:|---:|---:|")
        for name, path in files.items():
            size = path.stat().st_size
            rows = row_changes(path)
            runs: list[tuple[str, Timing]] = [
                (
                    "mariadb-binlog --flashback",
                    best(args.repeat, ["mariadb-binlog", "--flashback", str(path)], work / "m.sql"),
                ),
                (
                    "local engine",
                    best(args.repeat, cli(path, work / "l.sql", "--engine", "local"), env=CHILD_ENV),
                ),
                ("flashback, defaults", best(args.repeat, cli(path, work / "d.sql"), env=CHILD_ENV)),
            ]
            if not args.no_pure:
                runs.append(
                    (
                        "local engine, pure Python",
                        best(1, cli(path, work / "p.sql", "--engine", "local"), env=PURE_ENV),
                    )
                )
                assert (work / "p.sql").read_bytes() == (work / "l.sql").read_bytes(), (
                    f"{name}: the paths differ"
                )
            reference = runs[0][1].seconds
            for label, t in runs:
                print(
                    f"| {name} | {size / 1e6:.0f} | {rows:,} | {label} | {t.seconds:.2f} | {rows / t.seconds:,.0f} | "
                    f"{t.cpu or 0:.2f} | {t.tree_mb:.0f} | {t.seconds / reference:.2f} |"
                )
        if args.profile:
            for name, path in files.items():
                print(f"\n### {name}: the local engine's heaviest functions (cProfile, tottime)\n")
                print("```\n" + profile(path) + "```")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
