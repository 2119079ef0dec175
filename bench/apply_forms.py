"""The server's CPU for each form of the 100k-row incident's rollback (issue 24): where the verified
apply's 1.5x of `mariadb-binlog --flashback | mariadb` goes on the server before any client work.

    .venv/bin/python bench/apply_forms.py                # 3 fresh copies of each form, 100k rows
    .venv/bin/python bench/apply_forms.py --copies 5 --rows 200000

One scratch MariaDB (`--local-infile=1` for the LOAD DATA form); each form gets fresh copies of
bench_apply.py's table and incident, made before any is timed, and each is timed through the
`mariadb` client, the server's CPU read from /proc around it:

- reference: the reference's row events (`mariadb-binlog --flashback FILE | mariadb`);
- own: the verified apply's own queries (bench_apply.own_queries: savepoints, the checks inside the
  batched writes), and their halves, own_inserts (the 50,000 re-inserts) and own_updates (the
  16,667 UPDATEs set back);
- staged: bench_apply's server floor (the same rows checked and written by INSERT ... SELECT and
  UPDATE ... JOIN from copies made in the server before the incident), and its halves;
- load_inserts: the re-inserts as one LOAD DATA LOCAL INFILE of the rows as text (what a client
  could send instead of SQL text: no parser, no literals).

The complete forms (reference, own, staged) are checked to restore the table exactly.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))

from bench.bench_apply import (
    BENCH_SERVER,
    INCIDENT,
    STAGED,
    STAGED_WRITES,
    TABLE,
    _opening,
    cpu_clock,
    fill,
    mariadb_client,
    own_queries,
)  # noqa: E402

FORMS = (
    "reference",
    "own",
    "own_inserts",
    "own_updates",
    "staged",
    "staged_inserts",
    "staged_updates",
    "load_inserts",
)
COMPLETE = ("reference", "own", "staged")
STAGED_INSERT, STAGED_UPDATE = (part + ";" for part in STAGED_WRITES.split(";")[2:4])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--copies", type=int, default=3)
    args = parser.parse_args()

    from tests.support.mariadb import ScratchServer, ServerOptions

    cli = str(Path(sys.executable).parent / "mysql-rollback")
    server = ScratchServer(
        options=ServerOptions(
            row_metadata="FULL",
            extra_args=(*BENCH_SERVER, "--local-infile=1"),
        )
    ).start()
    work = Path(tempfile.mkdtemp(prefix="bench-forms-"))
    client = mariadb_client(server, "--local-infile=1")
    server_cpu = cpu_clock(server)
    try:
        jobs: list[tuple[str, Path, str, str]] = []
        for copy in range(args.copies):
            for form in FORMS:
                name = f"{form}_{copy}"
                server.run_sql([f"CREATE DATABASE {name}"])
                server.run_sql([TABLE, fill(args.rows), *STAGED], database=name)
                checksum = str(server.query("CHECKSUM TABLE t", database=name)[0][1])
                rows = server.query("SELECT * FROM put_back ORDER BY id DESC", database=name)
                span = server.run_sql(INCIDENT, database=name, own_file=True)
                script = work / f"{name}.sql"
                if form == "reference":
                    with open(script, "wb") as out:
                        subprocess.run(
                            ["mariadb-binlog", "--flashback", str(span.files[0])], stdout=out, check=True
                        )
                elif form.startswith("own"):
                    plan = work / f"{name}.plan"
                    subprocess.run(
                        [
                            cli,
                            "flashback",
                            str(span.files[0]),
                            "-o",
                            str(work / f"{name}.out"),
                            "--plan",
                            str(plan),
                        ],
                        check=True,
                        capture_output=True,
                    )
                    queries = own_queries(plan, name)
                    if form != "own":
                        inserts = form == "own_inserts"
                        queries = [q for q in queries if ("INSERT INTO" in q) == inserts]
                    script.write_text(";\n".join(_opening(name)) + ";\n" + "\n".join(queries) + "\nCOMMIT;\n")
                elif form.startswith("staged"):
                    body = {"staged": STAGED_INSERT + STAGED_UPDATE, "staged_inserts": STAGED_INSERT}
                    text = body.get(form, STAGED_UPDATE)
                    script.write_text(f"USE {name};\nSTART TRANSACTION;\n{text}\nCOMMIT;\n")
                else:  # load_inserts: the deleted rows, newest change first as the plan has them
                    data = work / f"{name}.tsv"
                    data.write_text("".join("\t".join(map(str, row)) + "\n" for row in rows))
                    script.write_text(
                        ";\n".join(_opening(name)) + f";\nLOAD DATA LOCAL INFILE '{data}' INTO TABLE t "
                        "CHARACTER SET utf8mb4 (id, a, b, c, d);\nCOMMIT;\n"
                    )
                jobs.append((form, script, name, checksum))
        print(f"{len(jobs)} copies ready", file=sys.stderr)
        timings: dict[str, list[tuple[float, float]]] = {form: [] for form in FORMS}
        for form, script, name, checksum in jobs:
            time.sleep(1.0)  # the copies' own writes flushed
            cpu = server_cpu()
            started = time.perf_counter()
            subprocess.run(f"{client} < {script}", shell=True, check=True)
            wall = time.perf_counter() - started
            timings[form].append((wall, server_cpu() - cpu))
            if form in COMPLETE:
                restored = str(server.query("CHECKSUM TABLE t", database=name)[0][1])
                assert restored == checksum, f"{form} did not restore {name}"
        reference = sorted(cpu for _, cpu in timings["reference"])[len(timings["reference"]) // 2]
        print(
            f"| form ({args.rows:,} rows, {args.copies} copies) | wall s | server CPU s | server CPU ÷ reference's |"
        )
        print("|---|---|---|---:|")
        for form in FORMS:
            walls = " ".join(f"{wall:.2f}" for wall, _ in timings[form])
            cpus = " ".join(f"{cpu:.2f}" for _, cpu in timings[form])
            median = sorted(cpu for _, cpu in timings[form])[len(timings[form]) // 2]
            print(f"| {form} | {walls} | {cpus} | {median / reference:.2f} |")
    finally:
        server.stop()
        subprocess.run(["rm", "-rf", str(work)], check=False)


if __name__ == "__main__":
    main()
