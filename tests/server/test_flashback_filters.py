"""Filters select exactly the intended changes: by database, table, type, thread id, GTID and time.

One workload of four transactions from two sessions at known times; every row change touches a row
of its own, so the state after applying a filtered rollback is known row by row: the rows of the
selected changes are back as they were, every other row stays as the workload left it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

import pytest

from rollback import Filters
from rollback.base.errors import PartialTransaction
from rollback.cli import commands as cli
from tests.support.mariadb import BinlogRange
from tests.support.restore import apply_with_client, flashback, range_args

T0 = 1_700_000_000  # 2023-11-14 22:13:20 UTC; transaction k runs at T0 + 100 * k


@dataclass(frozen=True)
class Change:
    table: str
    id: int
    kind: str
    tx: int  # 0..3
    session: str  # A | B


CHANGES = [
    Change("fa.t1", 1, "update", 0, "A"),
    Change("fb.t1", 2, "delete", 1, "B"),
    Change("fa.t2", 100, "insert", 2, "A"),
    Change("fb.t2", 3, "update", 2, "A"),
    Change("fa.t1", 4, "delete", 2, "A"),
    Change("fa.t2", 5, "update", 3, "B"),
]
TRANSACTIONS = [
    ("A", ["UPDATE fa.t1 SET v = v + 1 WHERE id = 1"]),
    ("B", ["DELETE FROM fb.t1 WHERE id = 2"]),
    (
        "A",
        [
            "BEGIN",
            "INSERT INTO fa.t2 VALUES (100, 1)",
            "UPDATE fb.t2 SET v = 0 WHERE id = 3",
            "DELETE FROM fa.t1 WHERE id = 4",
            "COMMIT",
        ],
    ),
    ("B", ["UPDATE fa.t2 SET v = -1 WHERE id = 5"]),
]
TABLES = ["fa.t1", "fa.t2", "fb.t1", "fb.t2"]


@dataclass
class Incident:
    rng: BinlogRange
    threads: dict[str, int]
    gtids: list[str]  # per transaction
    before: dict[str, dict[int, tuple]]
    after: dict[str, dict[int, tuple]]


def _rows(server) -> dict[str, dict[int, tuple]]:
    return {t: {r[0]: r for r in server.query(f"SELECT * FROM {t}")} for t in TABLES}


@pytest.fixture(scope="module")
def recorded(scratch_server) -> Incident:
    """The workload, run once; its binlog range serves every test."""
    server = scratch_server
    setup = [
        "DROP DATABASE IF EXISTS fa",
        "DROP DATABASE IF EXISTS fb",
        "CREATE DATABASE fa",
        "CREATE DATABASE fb",
    ]
    for table in TABLES:
        setup.append(f"CREATE TABLE {table} (id INT PRIMARY KEY, v INT)")
        setup.append(f"INSERT INTO {table} VALUES " + ", ".join(f"({i}, {i * 10})" for i in range(1, 11)))
    server.run_sql(setup)
    before = _rows(server)
    sessions = {"A": server.connect(), "B": server.connect()}
    try:
        threads = {}
        for name, conn in sessions.items():
            with conn.cursor() as cur:
                cur.execute("SELECT CONNECTION_ID()")
                threads[name] = cur.fetchone()[0]
        start_file, start_pos, gtid_before = server.binlog_position()
        gtids = []
        for k, (name, statements) in enumerate(TRANSACTIONS):
            with sessions[name].cursor() as cur:
                cur.execute(f"SET timestamp = {T0 + 100 * k}")  # the events carry this time
                for sql in statements:
                    cur.execute(sql)
                cur.execute("SELECT @@last_gtid")
                gtids.append(cur.fetchone()[0])
        stop_file, stop_pos, gtid_after = server.binlog_position()
    finally:
        for conn in sessions.values():
            conn.close()
    names = [p.name for p in server.binlog_files()]
    files = tuple(server.binlog_dir / n for n in names[names.index(start_file) : names.index(stop_file) + 1])
    rng = BinlogRange(start_file, start_pos, stop_file, stop_pos, gtid_before, gtid_after, files)
    return Incident(rng, threads, gtids, before, _rows(server))


@pytest.fixture()
def incident(scratch_server, recorded) -> Incident:
    """The recorded incident, with the tables put back as the workload left them (outside the binlog)."""
    conn = scratch_server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")
            for table, rows in recorded.after.items():
                cur.execute(f"DELETE FROM {table}")
                cur.executemany(f"INSERT INTO {table} VALUES (%s, %s)", list(rows.values()))
    finally:
        conn.close()
    return recorded


def _flashback(server, incident: Incident, tmp_path, capsys, *filters: str) -> tuple[int, str]:
    """`mysql-rollback flashback RANGE FILTERS -o script`, in-process: (exit code, script text or stderr)."""
    script = tmp_path / "filtered.sql"
    args = ["flashback", *range_args(incident.rng), "--schema-dsn", server.dsn, *filters, "-o", str(script)]
    code = cli.main(args)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, script.read_text() if script.exists() else err


def _assert_selected(server, incident: Incident, script: str, tmp_path, selected: list[Change]) -> None:
    """Apply the script; the selected changes' rows are as before the workload, all others as after it."""
    path = tmp_path / "apply.sql"
    path.write_text(script)
    apply_with_client(server, path)
    expected = {t: dict(rows) for t, rows in incident.after.items()}
    for change in selected:
        old = incident.before[change.table].get(change.id)
        if old is None:
            expected[change.table].pop(change.id, None)
        else:
            expected[change.table][change.id] = old
    assert _rows(server) == expected
    statements = [ln for ln in script.splitlines() if ln.startswith(("INSERT", "UPDATE", "DELETE"))]
    assert len(statements) == len(selected)


def _blocks(script: str) -> list[str]:
    """The transaction blocks of a script, in script order, each from its comment to COMMIT."""
    return re.findall(r"(?ms)^-- transaction .*?^COMMIT;$", script)


PARTIAL = "-- note: filters selected only part of this transaction's changes"


def test_unfiltered_range_restores_everything(scratch_server, incident, tmp_path, capsys):
    code, script = _flashback(scratch_server, incident, tmp_path, capsys)
    assert code == 0
    _assert_selected(scratch_server, incident, script, tmp_path, CHANGES)
    assert PARTIAL not in script
    # Newest transaction first, each under its GTID.
    gtids = [re.search(r"gtid=(\S+)", block).group(1) for block in _blocks(script)]
    assert gtids == incident.gtids[::-1]


@pytest.mark.parametrize(
    ("args", "keep"),
    [
        (["-d", "fa"], lambda c: c.table.startswith("fa.")),
        (["-t", "fa.t2"], lambda c: c.table == "fa.t2"),
        (["-t", "fa.t1", "-t", "fb.t2"], lambda c: c.table in ("fa.t1", "fb.t2")),
        (["--type", "delete"], lambda c: c.kind == "delete"),
        (["--type", "insert,update"], lambda c: c.kind in ("insert", "update")),
        (["-d", "fa", "--type", "update"], lambda c: c.table.startswith("fa.") and c.kind == "update"),
    ],
    ids=["database", "table", "two-tables", "type", "two-types", "database-and-type"],
)
def test_table_and_type_filters_select_exactly_their_changes(
    scratch_server, incident, tmp_path, capsys, args, keep
):
    split = [
        tx
        for tx in range(len(TRANSACTIONS))
        if 0 < len([c for c in CHANGES if c.tx == tx and keep(c)]) < len([c for c in CHANGES if c.tx == tx])
    ]
    code, script = _flashback(scratch_server, incident, tmp_path, capsys, *args)
    if split:
        # Undoing part of a transaction may break its invariants: refused unless accepted, in one line
        # naming the transaction, what the filters left out of it, and the flag.
        assert code == 2 and script.count("\n") == 1, script
        left = sorted({c.table for c in CHANGES if c.tx == split[0] and not keep(c)})
        assert (
            f"gtid {incident.gtids[split[0]]} at mysql-bin." in script
            and "--allow-partial-transactions" in script
        )
        assert all(table in script for table in left), script
        code, script = _flashback(
            scratch_server, incident, tmp_path, capsys, *args, "--allow-partial-transactions"
        )
        header = script.split("BEGIN;")[0]
        assert (
            f"-- partial transactions: {len(split)}, undone in part as --allow-partial-transactions accepted"
            in header
        )
        assert (
            f"gtid={incident.gtids[split[0]]} at mysql-bin." in header
            and "left out by the filters: " in header
        )
    assert code == 0
    selected = [c for c in CHANGES if keep(c)]
    _assert_selected(scratch_server, incident, script, tmp_path, selected)
    # A transaction of which the filter took some changes but not all is marked as such.
    for block in _blocks(script):
        gtid = re.search(r"gtid=(\S+)", block).group(1)
        tx = incident.gtids.index(gtid)
        in_tx = [c for c in CHANGES if c.tx == tx]
        partial = 0 < len([c for c in in_tx if keep(c)]) < len(in_tx)
        assert (PARTIAL in block) == partial, block


def test_thread_id_on_mariadb_row_transactions_is_refused_not_silently_empty(
    scratch_server, incident, tmp_path, capsys
):
    # MariaDB opens a row-based transaction with a GTID event, not a BEGIN query: no thread id is logged.
    code, err = _flashback(
        scratch_server, incident, tmp_path, capsys, "--thread-id", str(incident.threads["B"])
    )
    assert code == 2
    assert err.count("\n") == 1 and "--thread-id cannot select" in err and incident.gtids[0] in err


# MySQL 5.7 logs the session's thread id in the BEGIN query of each row transaction.


def test_single_gtid_selects_its_transaction(scratch_server, incident, tmp_path, capsys):
    code, script = _flashback(scratch_server, incident, tmp_path, capsys, "--gtid", incident.gtids[2])
    assert code == 0
    _assert_selected(scratch_server, incident, script, tmp_path, [c for c in CHANGES if c.tx == 2])
    assert PARTIAL not in script


@pytest.mark.parametrize("form", ["full", "short", "list"])
def test_gtid_range_selects_its_transactions(scratch_server, incident, tmp_path, capsys, form):
    first, last = incident.gtids[1], incident.gtids[2]
    domain, server_id, _seq = first.split("-")
    assert last.startswith(f"{domain}-{server_id}-")
    text = {
        "full": f"{first}..{last}",  # 0-1-A..0-1-B
        "short": f"{first}..{last.rsplit('-', 1)[1]}",  # 0-1-A..B
        "list": f"{first},{last}",
    }[form]
    code, script = _flashback(scratch_server, incident, tmp_path, capsys, "--gtid", text)
    assert code == 0
    _assert_selected(scratch_server, incident, script, tmp_path, [c for c in CHANGES if c.tx in (1, 2)])


@pytest.mark.parametrize("zone", ["utc", "offset", "z"])
def test_datetime_window_selects_by_event_time(scratch_server, incident, tmp_path, capsys, zone):
    start = datetime.fromtimestamp(T0 + 150, UTC)  # between transactions 1 and 2
    stop = datetime.fromtimestamp(T0 + 300, UTC)  # exclusive: transaction 3 is out
    if zone == "utc":  # no offset: read as UTC
        args = [start.strftime("%Y-%m-%d %H:%M:%S"), stop.strftime("%Y-%m-%d %H:%M:%S")]
    elif zone == "offset":
        india = timezone(timedelta(hours=5, minutes=30))
        args = [start.astimezone(india).isoformat(" "), stop.astimezone(india).isoformat(" ")]
    else:
        args = [start.strftime("%Y-%m-%dT%H:%M:%SZ"), stop.strftime("%Y-%m-%dT%H:%M:%SZ")]
    code, script = _flashback(
        scratch_server, incident, tmp_path, capsys, "--start-datetime", args[0], "--stop-datetime", args[1]
    )
    assert code == 0
    _assert_selected(scratch_server, incident, script, tmp_path, [c for c in CHANGES if c.tx == 2])
    assert "-- datetimes without an explicit offset are read as UTC" in script


def test_filters_are_recorded_in_the_header(scratch_server, incident, tmp_path, capsys):
    code, script = _flashback(
        scratch_server,
        incident,
        tmp_path,
        capsys,
        "-d",
        "fa",
        "--type",
        "delete",
        "--allow-partial-transactions",
    )
    assert code == 0
    header = script.split("BEGIN;")[0]
    assert "-- filters: databases fa; types delete" in header
    assert "-- rows: fa.t1 delete 1" in header
    _assert_selected(scratch_server, incident, script, tmp_path, [CHANGES[4]])


def test_filter_that_selects_nothing_exits_4_unless_allowed(scratch_server, incident, tmp_path, capsys):
    code, err = _flashback(scratch_server, incident, tmp_path, capsys, "-t", "fa.nothing")
    assert code == 4
    assert err.count("\n") == 1 and "the range selected no row change" in err and "--allow-empty" in err
    code, script = _flashback(scratch_server, incident, tmp_path, capsys, "-t", "fa.nothing", "--allow-empty")
    assert code == 0
    assert "BEGIN;" not in script and "-- transactions: 0, statements: 0" in script


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gtid", "0-1-9..0-1-3"], "ends before it starts"),
        (["--gtid", "not a gtid"], "gtid"),
        (["--start-datetime", "yesterday"], "not YYYY-MM-DD"),
        (["--start-datetime", "2024-01-02", "--stop-datetime", "2024-01-01"], "not after start"),
        (["--type", "merge"], "--type takes"),
    ],
)
def test_bad_filters_are_refused_with_one_line(scratch_server, incident, tmp_path, capsys, args, message):
    code, err = _flashback(scratch_server, incident, tmp_path, capsys, *args)
    assert code == 2
    assert err.count("\n") == 1 and message.lower() in err.lower(), err


@pytest.mark.parametrize("partition_bytes", [None, 150])
def test_a_table_filter_splitting_a_transaction_across_partitions_is_refused_then_accepted(
    scratch_server, incident, tmp_path, partition_bytes
):
    """Transaction 2 (fa.t2, fb.t2, fa.t1) cut into several partitions: `-t fa.t2` takes one of its
    tables wherever the cuts fall; refused naming it, then undone in part when accepted."""
    filters = Filters(tables={"fa.t2"})
    with pytest.raises(PartialTransaction) as refused:
        flashback(scratch_server, incident.rng, tmp_path, filters=filters, partition_bytes=partition_bytes)
    message = str(refused.value)
    assert f"gtid {incident.gtids[2]}" in message and "fb.t2" in message and "fa.t1" in message
    script, _plan, report = flashback(
        scratch_server,
        incident.rng,
        tmp_path,
        filters=filters,
        partition_bytes=partition_bytes,
        allow_partial_transactions=True,
    )
    if partition_bytes:
        assert report.partitions > 2
    assert report.partial_transaction_count == 1
    (item,) = report.partial_transactions
    assert item["gtid"] == incident.gtids[2] and item["left_out"] == ["fa.t1", "fb.t2"]
    _assert_selected(
        scratch_server, incident, script.read_text(), tmp_path, [c for c in CHANGES if c.table == "fa.t2"]
    )
