"""The timed children of bench_apply.py, each a fresh interpreter that loads what the product's own
apply loads and nothing of the bench (bench_pipeline's imports, psutil among them, added 10-15 ms to
every timed apply when these children lived in bench_apply.py).

    python bench/apply_child.py apply PLAN DSN MODE   # one execute_plan, as the CLI calls it
    python bench/apply_child.py send QUERIES DSN      # the Python floor: prebuilt queries sent
"""

import sys
import tempfile
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))


def apply(plan: str, dsn: str, mode: str) -> None:
    """One execute_plan (or, for "par2", execute_parallel over 2 connections), as the CLI calls it."""
    from rollback import execute_parallel, execute_plan

    if mode == "par2":
        with tempfile.TemporaryDirectory() as records:
            result = execute_parallel(plan, dsn, 2, commit=True, record_dir=records)
    else:
        result = execute_plan(
            plan,
            dsn,
            commit=mode != "dry",
            single_transaction=mode != "per",
            check_first=False,
            merge=mode == "merge",
        )
    print(f"{result.statements} statements, {result.rows_affected} rows", file=sys.stderr)


def send(queries: str, dsn: str) -> None:
    """The floor of a verified apply from Python: connect as the apply does (PyMySQL, through
    execute.connect) and send the apply's own queries, built before the clock started (`queries`:
    separated by NUL bytes), in one transaction, each as one query whose results it reads, as the apply
    does; nothing else (no preflight, no plan to read, no batch to build, no count compared)."""
    from rollback.target.execute import connect

    conn = connect(dsn, multi_statements=True)
    with open(queries, "rb") as f:
        batches = f.read().decode("utf-8").split("\0")
    with conn.cursor() as cur:
        for sql in batches:
            cur.execute(sql)
            while cur.nextset():
                pass
    conn.commit()
    conn.close()


if __name__ == "__main__":
    if sys.argv[1] == "apply":
        apply(*sys.argv[2:5])
    else:
        send(*sys.argv[2:4])
