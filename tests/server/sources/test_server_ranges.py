"""Range resolution against the scratch MariaDB: time windows exact at the edges, GTID ranges by
GTID_LIST headers, and the fixed end of the log."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from rollback.binlog.gtid import MariaGtidPos, MariaGtidRange
from rollback.binlog.reader import BinlogFile
from rollback.sources.ranges import BinlogPosition, maria_gtid_range, position_range, window_range
from rollback.sources.server import BinlogServer


def _await_next_second(server) -> None:
    """Wait until the server's clock has moved past the current second (a condition, polled)."""
    ((now,),) = server.query("SELECT UNIX_TIMESTAMP()")
    deadline = time.monotonic() + 5
    while server.query("SELECT UNIX_TIMESTAMP()")[0][0] <= now:
        assert time.monotonic() < deadline, "the server clock did not advance"
        time.sleep(0.02)


def _events_by_time(paths: list[Path]) -> list[tuple[str, int]]:
    """(file name, timestamp) of every event after each file's FORMAT_DESCRIPTION."""
    found = []
    for path in paths:
        with BinlogFile(path) as binlog:
            found += [(path.name, e.timestamp) for e in binlog.events()][1:]
    return found


def _await_past_every_event(server) -> None:
    """Wait until the server's clock is past the newest event of its files. An earlier test may have
    stamped events ahead of the clock (SET timestamp: test_cli_server's window edges, up to 3 s): until
    then an older file holds events later than a newer file's creation, and no window by time can
    name files by their creation times."""
    newest = max((stamp for _name, stamp in _events_by_time(server.binlog_files())), default=0)
    deadline = time.monotonic() + 10
    while server.query("SELECT UNIX_TIMESTAMP()")[0][0] <= newest:
        assert time.monotonic() < deadline, (
            f"an event of the server's files is stamped {newest}, ahead of the clock"
        )
        time.sleep(0.05)


def test_window_files_are_exact_at_both_edges(scratch_server, table):
    _await_past_every_event(scratch_server)
    names = []
    for row in range(3):  # three files with a row each, created 2 s and 1 s apart
        for _ in range(2 if row == 1 else row):
            _await_next_second(scratch_server)
        scratch_server.flush_binary_logs()
        rng = scratch_server.run_sql(f"INSERT INTO {table} VALUES ({row}, 'x')")
        names.append(rng.start_file)
    a, b, c = names
    created = {}
    for name in (a, b, c):
        with BinlogFile(scratch_server.binlog_dir / name) as binlog:
            created[name] = next(binlog.events()).timestamp
    ta, tb, tc = created[a], created[b], created[c]
    assert ta + 1 < tb < tc

    with BinlogServer(scratch_server.dsn) as server:

        def files(start: int | None, stop: int | None) -> tuple[str, ...]:
            return window_range(server, start, stop).files

        # Start edge: events of `a` carry at most b's creation time.
        assert files(tb, tc) == (a, b)
        assert files(tb + 1, tc + 1) == (b, c)
        # Stop edge: a file created at the stop holds nothing before it.
        assert files(ta + 1, tb) == (a,)
        assert files(ta + 1, tb + 1) == (a, b)
        assert files(tb, tb + 1) == (a, b)
        # Naive datetimes are read in the server's time zone (UTC here, by the server itself).
        naive = datetime.fromtimestamp(tb, UTC).replace(tzinfo=None)
        assert files(naive, tc) == (a, b)
        window = window_range(server, ta, None)
        assert window.stop == BinlogPosition(*server.end_position())

        # Soundness on the real files: every event stamped inside a window is in a file it names.
        events = _events_by_time(scratch_server.binlog_files())
        for start, stop in [(tb, tb + 1), (tb + 1, tc + 1), (ta + 1, tb), (ta, tc), (tc, tc + 1)]:
            spanned = set(window_range(server, start, stop).files)
            assert {f for f, ts in events if start <= ts < stop} <= spanned


def test_mariadb_gtid_range_spans_the_files_of_its_transactions(scratch_server, table):
    rng = scratch_server.run_sql(
        [
            f"INSERT INTO {table} VALUES (1, 'a')",
            "FLUSH BINARY LOGS",
            f"INSERT INTO {table} VALUES (2, 'b')",
            "FLUSH BINARY LOGS",
            f"INSERT INTO {table} VALUES (3, 'c')",
        ]
    )
    before, after = MariaGtidPos.parse(rng.gtid_before), MariaGtidPos.parse(rng.gtid_after)
    ((domain, (server_id, last)),) = after.domains.items()
    with BinlogServer(scratch_server.dsn) as server:
        whole = maria_gtid_range(server, MariaGtidRange(before, after))
        assert whole.files == tuple(p.name for p in rng.files)
        assert whole.stop.file == rng.stop_file
        only_middle = MariaGtidRange(
            MariaGtidPos([(domain, server_id, last - 2)]), MariaGtidPos([(domain, server_id, last - 1)])
        )
        assert maria_gtid_range(server, only_middle).files == (rng.files[1].name,)
        open_ended = maria_gtid_range(server, MariaGtidRange(MariaGtidPos([(domain, server_id, last - 1)])))
        assert open_ended.files[0] == rng.stop_file


def test_the_end_of_a_range_is_fixed_when_the_job_starts(scratch_server, table):
    with BinlogServer(scratch_server.dsn) as server:
        end = BinlogPosition(*server.end_position())
        rng = position_range(server, end.file, end.position)
        scratch_server.run_sql(f"INSERT INTO {table} VALUES (1, 'later')")
        assert rng.stop == end and rng.start == end
        assert BinlogPosition(*server.end_position()) > end
