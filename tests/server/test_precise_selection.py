"""Precise selection on the scratch MariaDB: three applications' interleaved transactions, and undoing
only one application's (by GTID list, by position, by statement text, by predicate).

Applications A, B and C write from their own connections; B changes row 2 after A did (the one
overlap). Undoing A's transactions must report row 2 as dependent, and executing the plan must stop
at it; picks that keep no overlap restore exactly the picked rows, proven by CHECKSUM TABLE and
row sets against the state computed from the workload's snapshots.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rollback import ConflictError, Filters, Options, ServerSchema, execute_plan, generate
from rollback.cli import commands as cli
from tests.support.mariadb import BinlogRange
from tests.support.restore import apply_with_client, range_args, range_spec, snapshot

TABLE = "ps.orders"
# (application, statements): one transaction each, in this order
WORKLOAD = [
    ("A", ["UPDATE ps.orders SET status = 'paid' WHERE id IN (1, 2)"]),
    ("C", ["INSERT INTO ps.orders VALUES (30, 'C', 300, 'new')"]),
    ("B", ["UPDATE ps.orders SET amount = amount + 5 WHERE id IN (2, 10)"]),  # row 2: after A
    ("A", ["DELETE FROM ps.orders WHERE id = 3"]),
    ("C", ["UPDATE ps.orders SET status = 'void' WHERE id = 20"]),
    (
        "A",
        [
            "INSERT INTO ps.orders VALUES (21, 'A', 210, 'new')",
            "UPDATE ps.orders SET amount = 0 WHERE id = 4",
        ],
    ),
    ("B", ["DELETE FROM ps.orders WHERE id = 11"]),
]


@dataclass
class Recorded:
    rng: BinlogRange
    gtids: list[str]
    positions: list[str]  # FILE:POS of each transaction's start, as the script's block comments give them
    before: dict[int, tuple]
    after: dict[int, tuple]


def _rows(server) -> dict[int, tuple]:
    return {r[0]: r for r in server.query(f"SELECT * FROM {TABLE}")}


@pytest.fixture(scope="module")
def recorded(scratch_server) -> Recorded:
    server = scratch_server
    rows = [(i, "A" if i < 10 else "B" if i < 20 else "C", i * 10, "new") for i in (1, 2, 3, 4, 10, 11, 20)]
    server.run_sql(
        [
            "DROP DATABASE IF EXISTS ps",
            "CREATE DATABASE ps",
            f"CREATE TABLE {TABLE} (id INT PRIMARY KEY, app CHAR(1), amount INT, status VARCHAR(10))",
            f"INSERT INTO {TABLE} VALUES " + ", ".join(f"({i}, '{a}', {m}, '{s}')" for i, a, m, s in rows),
        ]
    )
    before = _rows(server)
    sessions = {name: server.connect() for name in "ABC"}
    try:
        start_file, start_pos, gtid_before = server.binlog_position()
        gtids, positions = [], []
        for name, statements in WORKLOAD:
            file, pos, _gtid = server.binlog_position()
            positions.append(f"{file}:{pos}")
            with sessions[name].cursor() as cur:
                cur.execute("BEGIN")
                for sql in statements:
                    cur.execute(sql)
                cur.execute("COMMIT")
                cur.execute("SELECT @@last_gtid")
                gtids.append(cur.fetchone()[0])
        stop_file, stop_pos, gtid_after = server.binlog_position()
    finally:
        for conn in sessions.values():
            conn.close()
    names = [p.name for p in server.binlog_files()]
    files = tuple(server.binlog_dir / n for n in names[names.index(start_file) : names.index(stop_file) + 1])
    rng = BinlogRange(start_file, start_pos, stop_file, stop_pos, gtid_before, gtid_after, files)
    return Recorded(rng, gtids, positions, before, _rows(server))


@pytest.fixture()
def incident(scratch_server, recorded) -> Recorded:
    """The table put back as the workload left it (outside the binlog)."""
    conn = scratch_server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute(f"DELETE FROM {TABLE}")
            cur.executemany(f"INSERT INTO {TABLE} VALUES (%s, %s, %s, %s)", list(recorded.after.values()))
    finally:
        conn.close()
    return recorded


def _flashback(server, incident: Recorded, tmp_path, capsys, *picks: str) -> tuple[int, str, str]:
    """(exit code, script text, stderr) of `mysql-rollback flashback RANGE PICKS`, in-process."""
    script = tmp_path / "picked.sql"
    plan = tmp_path / "picked.plan.jsonl"
    args = ["flashback", *range_args(incident.rng), "--schema-dsn", server.dsn, *picks, "-o", str(script)]
    code = cli.main([*args, "--plan", str(plan)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, script.read_text() if script.exists() else "", err


def _expected(incident: Recorded, undone: dict[int, str]) -> dict[int, tuple]:
    """The workload's end state with the undone rows as before it ('before'), or as after (any other)."""
    rows = dict(incident.after)
    for key in undone:
        if key in incident.before:
            rows[key] = incident.before[key]
        else:
            rows.pop(key, None)
    return rows


def _apply_and_check(server, tmp_path, script: str, expected: dict[int, tuple]) -> None:
    path = tmp_path / "apply.sql"
    path.write_text(script)
    apply_with_client(server, path)
    assert _rows(server) == expected
    # The checksum of the restored table equals the checksum of the expected rows loaded afresh.
    got = snapshot(server, [TABLE])
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute("CREATE TABLE IF NOT EXISTS ps.expect LIKE ps.orders")
            cur.execute("DELETE FROM ps.expect")
            cur.executemany("INSERT INTO ps.expect VALUES (%s, %s, %s, %s)", list(expected.values()))
    finally:
        conn.close()
    assert got[TABLE] == snapshot(server, ["ps.expect"])["ps.expect"]


def _gtids(incident: Recorded, app: str) -> list[str]:
    return [g for g, (name, _s) in zip(incident.gtids, WORKLOAD, strict=True) if name == app]


def test_undoing_one_application_by_gtid_list_reports_its_dependent_row(
    scratch_server, incident, tmp_path, capsys
):
    a = _gtids(incident, "A")
    code, script, _err = _flashback(scratch_server, incident, tmp_path, capsys, "--include-gtid", ",".join(a))
    assert code == 0
    # Row 2: A's first transaction changed it, B's (not undone) changed it again after.
    b_first = incident.gtids[2]
    dependent = [ln for ln in script.splitlines() if ln.startswith("-- dependent:")]
    assert dependent == [
        f"-- dependent: ps.orders (id=2): selected transaction gtid={a[0]} at {incident.positions[0]} "
        f"is followed by excluded transaction gtid={b_first} at {incident.positions[2]}"
    ]
    assert "-- dependent rows: 1 " in script
    blocks = [ln.split()[2] for ln in script.splitlines() if ln.startswith("-- transaction gtid=")]
    assert blocks == [f"gtid={g}" for g in reversed(a)]
    # The plan's checks catch the dependent row at apply time: nothing is applied.
    later = snapshot(scratch_server, [TABLE])
    with pytest.raises(ConflictError, match=r"ps\.orders"):
        execute_plan(tmp_path / "picked.plan.jsonl", scratch_server.dsn, commit=True)
    assert snapshot(scratch_server, [TABLE]) == later


@pytest.mark.parametrize("how", ["gtid", "position", "exclude-others", "query"])
def test_undoing_one_application_without_overlap_restores_exactly_its_rows(
    scratch_server, incident, tmp_path, capsys, how
):
    c = [i for i, (name, _s) in enumerate(WORKLOAD) if name == "C"]
    picks = {
        "gtid": ["--include-gtid", ",".join(incident.gtids[i] for i in c)],
        "position": [arg for i in c for arg in ("--include-position", incident.positions[i])],
        "exclude-others": [
            arg
            for i, (name, _s) in enumerate(WORKLOAD)
            if name != "C"
            for arg in ("--exclude-gtid", incident.gtids[i])
        ],
        "query": ["--include-query", r"VALUES \(30|id = 20"],
    }[how]
    code, script, err = _flashback(scratch_server, incident, tmp_path, capsys, *picks)
    assert code == 0, err
    assert "-- dependent rows: 0 " in script
    _apply_and_check(scratch_server, tmp_path, script, _expected(incident, {30: "C", 20: "C"}))


def test_predicate_keeping_part_of_a_transaction_is_refused_then_accepted(
    scratch_server, incident, tmp_path, capsys
):
    # A's rows except row 2: A's first transaction (rows 1 and 2) is taken only in part.
    where = "app = 'a' AND id <> 2"  # 'a' = 'A' under the column's _ci collation
    code, script, err = _flashback(scratch_server, incident, tmp_path, capsys, "--where", where)
    assert code == 2 and script == ""
    assert err.count("\n") == 1
    assert (
        f"gtid {incident.gtids[0]} at {incident.positions[0]}" in err
        and "--allow-partial-transactions" in err
    )
    code, script, err = _flashback(
        scratch_server, incident, tmp_path, capsys, "--where", where, "--allow-partial-transactions"
    )
    assert code == 0, err
    assert (
        f"-- partial transaction (--allow-partial-transactions): gtid={incident.gtids[0]} at "
        f"{incident.positions[0]}: 1 row(s) undone, 1 left as they are" in script
    )
    assert "-- dependent rows: 0 " in script
    _apply_and_check(scratch_server, tmp_path, script, _expected(incident, {1: "A", 3: "A", 4: "A", 21: "A"}))


def test_predicate_on_either_image_of_an_update_reaches_the_other_application(
    scratch_server, incident, tmp_path, capsys
):
    # B's update of rows 2 and 10: row 2 is A's (app = 'A' in both images), row 10 is not.
    code, _script, err = _flashback(scratch_server, incident, tmp_path, capsys, "--where", "app = 'A'")
    assert code == 2 and f"gtid {incident.gtids[0]}" not in err and f"gtid {incident.gtids[2]}" in err
    # Either image: amount 25 is row 2 after B's update only.
    code, script, err = _flashback(
        scratch_server, incident, tmp_path, capsys, "--where", "amount = 25", "--allow-partial-transactions"
    )
    assert code == 0, err
    assert "-- rows: ps.orders update 1" in script


def test_thread_picks_are_refused_on_mariadb_row_transactions(scratch_server, incident, tmp_path, capsys):
    code, _script, err = _flashback(scratch_server, incident, tmp_path, capsys, "--exclude-thread-id", "7")
    assert code == 2 and err.count("\n") == 1 and "--exclude-thread-id cannot select" in err


@pytest.mark.parametrize(
    ("picks", "message"),
    [
        (["--where", "LENGTH(status) > 2"], "LENGTH"),
        (["--where", "nope = 1"], "nope"),
        (["--where", "id = (SELECT 1)"], "SUBQUERY"),
        (["--include-position", "x:y"], "FILE:POS"),
        (["--include-query", "("], "regular expression"),
        (["--exclude-gtid", "garbage"], "gtid"),
    ],
)
def test_bad_picks_are_refused_with_one_line(scratch_server, incident, tmp_path, capsys, picks, message):
    code, script, err = _flashback(scratch_server, incident, tmp_path, capsys, *picks)
    assert code == 2 and script == ""
    assert err.count("\n") == 1 and message.lower() in err.lower(), err


@pytest.mark.parametrize("partition_bytes", [300, 700])
def test_split_ranges_find_the_same_dependencies_and_partial_transactions(
    scratch_server, incident, tmp_path, partition_bytes
):
    # Partitions cut inside the workload: the keys and partial counts of each partition merge to the
    # same report and script as one partition.
    def run(size, filters):
        script = tmp_path / f"split-{size}.sql"
        options = Options(
            engine="local",
            partition_bytes=size,
            allow_partial_transactions=True,
            schema=ServerSchema(scratch_server.connect),
        )
        report = generate(range_spec(incident.rng), filters, options, script)
        return report, script.read_text()

    for filters in (
        Filters(include_gtid=",".join(_gtids(incident, "A"))),
        Filters(where="app = 'A' AND id <> 2"),
    ):
        whole, whole_script = run(None, filters)
        split, split_script = run(partition_bytes, filters)
        assert split.partitions > 1
        assert (split.dependencies, split.partial_transactions) == (
            whole.dependencies,
            whole.partial_transactions,
        )
        assert split_script == whole_script
