"""Decode throughput on a generated binlog of mixed types (issue 3's benchmark).

    .venv/bin/python bench/bench_decode.py [--mb 100]

Starts a scratch MariaDB, writes INSERT/UPDATE/DELETE row events over int, bigint unsigned,
decimal, varchar utf8mb4, datetime(6), enum, blob and JSON-as-text columns until the binlog
reaches the requested size, then decodes every row (all values) with our decoder and, on the
same file in the same run, with `mariadb-binlog -v --base64-output=decode-rows` for a ratio.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rollback.binlog.decode import StreamState, decode_stream, rows_batch  # noqa: E402
from rollback.binlog.reader import BinlogFile  # noqa: E402
from rollback.binlog.rows import RowsEvent  # noqa: E402
from tests.support.mariadb import ScratchServer  # noqa: E402

DDL = """CREATE TABLE bench.mixed (
  id INT PRIMARY KEY, big BIGINT UNSIGNED, amount DECIMAL(12,2), name VARCHAR(64) CHARACTER SET utf8mb4,
  created DATETIME(6), state ENUM('new','paid','shipped','void'), payload BLOB, doc LONGTEXT)"""


def generate(server: ScratchServer, target_mb: int) -> Path:
    server.run_sql(["CREATE DATABASE IF NOT EXISTS bench", DDL])
    server.flush_binary_logs()
    conn = server.connect("bench")
    next_id, batch = 0, 1000
    with conn.cursor() as cur:
        cur.execute("SET SESSION max_heap_table_size = 268435456")
        while True:
            path = server.binlog_files()[-1]
            if path.stat().st_size >= target_mb * 1_000_000:
                break
            cur.execute(
                "INSERT INTO mixed SELECT seq, seq * 7919, seq / 100, CONCAT('naïve ☃ name ', seq), "
                "TIMESTAMPADD(MICROSECOND, seq * 1234567, '2024-01-01'), 1 + seq % 4, REPEAT(CHAR(seq % 256), 40), "
                'CONCAT(\'{"id": \', seq, \', "tags": ["a", "b"]}\') '
                f"FROM seq_{next_id + 1}_to_{next_id + batch}"
            )
            cur.execute(
                f"UPDATE mixed SET amount = amount + 1, state = 'paid' WHERE id > {next_id + batch // 2}"
            )
            cur.execute(f"DELETE FROM mixed WHERE id <= {next_id + batch // 5}")
            next_id += batch
    conn.close()
    server.flush_binary_logs()
    return server.binlog_files()[-2]


def decode_all(path: Path) -> tuple[int, float]:
    start = time.perf_counter()
    rows = 0
    with BinlogFile(path) as binlog:
        state = StreamState(binlog.facts, path=binlog.path)
        for decoded in decode_stream(binlog.buf, state, 4, binlog.size):
            if isinstance(decoded.event, RowsEvent):
                rows += len(rows_batch(decoded, decoded.event, state).rows)
    return rows, time.perf_counter() - start


def mariadb_binlog(path: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        ["mariadb-binlog", "-v", "--base64-output=decode-rows", str(path)],
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=100, help="binlog size to generate")
    args = parser.parse_args()
    server = ScratchServer().start()
    try:
        path = generate(server, args.mb)
        size = os.path.getsize(path)
        rows, ours = decode_all(path)
        theirs = mariadb_binlog(path)
    finally:
        server.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"binlog: {size / 1e6:.1f} MB, {rows} row images decoded (updates count once)")
    print("| tool | seconds | rows/s | MB/s |")
    print("|---|---|---|---|")
    print(f"| mysql-rollback decode (1 core) | {ours:.2f} | {rows / ours:,.0f} | {size / 1e6 / ours:.1f} |")
    print(
        f"| mariadb-binlog -v decode-rows | {theirs:.2f} | {rows / theirs:,.0f} | {size / 1e6 / theirs:.1f} |"
    )
    print(f"ratio ours/theirs: {ours / theirs:.2f}; peak RSS of this process: {peak:.0f} MB")


if __name__ == "__main__":
    main()
