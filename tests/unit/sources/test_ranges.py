"""Range resolution on a model server: which files a position range, a time window or a GTID
range spans, decided from file headers only (real-server checks are in test_server_ranges.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from rollback.base.errors import RangeError
from rollback.binlog.constants import ChecksumAlg
from rollback.binlog.gtid import GtidSet, MariaGtidList, MariaGtidPos, MariaGtidRange
from rollback.binlog.reader import FormatFacts
from rollback.sources.ranges import (
    BinlogPosition,
    maria_gtid_range,
    mysql_gtid_range,
    position_range,
    window_range,
)
from rollback.sources.server import FileHeader, ServerInfo

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
FACTS = FormatFacts(4, "8.0.40", 0, 19, b"", ChecksumAlg.CRC32)


class ModelServer:
    """Files with sizes, creation times and GTID headers; counts the headers it is asked for."""

    def __init__(
        self, files: Sequence[tuple[str, int, int]], end: int, state: Any = "", flavor: str = "mysql"
    ):
        self.files = list(files)
        self.end = end
        self.state = state
        self.gtids: dict[str, Any] = {}
        self.probed: list[str] = []
        version = "10.11.19-MariaDB" if flavor == "mariadb" else "8.0.40"
        self._info = ServerInfo(version, {"gtid_strict_mode": "ON"})

    @property
    def info(self) -> ServerInfo:
        return self._info

    def binary_logs(self) -> list[tuple[str, int]]:
        return [(name, size) for name, size, _ in self.files]

    def end_position(self) -> tuple[str, int]:
        return self.files[-1][0], self.end

    def file_header(self, name: str) -> FileHeader:
        self.probed.append(name)
        created = {n: c for n, _, c in self.files}[name]
        gtids = self.gtids.get(name)
        return FileHeader(
            name,
            b"",
            FACTS,
            created,
            0,
            gtid_list=MariaGtidList(tuple(gtids)) if isinstance(gtids, MariaGtidPos) else None,
            previous_gtids=gtids if isinstance(gtids, GtidSet) else None,
        )

    def gtid_state(self) -> Any:
        return self.state

    def query(self, sql: str, args: Any = None, action: str = "") -> list[tuple]:
        raise AssertionError("no queries expected")


def four_files() -> ModelServer:
    return ModelServer(
        [
            ("bin.000007", 1000, 100),
            ("bin.000008", 2000, 200),
            ("bin.000009", 3000, 300),
            ("bin.000010", 9999, 400),
        ],
        end=500,
    )


# --------------------------------------------------------------------------- positions


def test_position_range_defaults_to_the_end_of_the_log_at_job_start():
    rng = position_range(four_files(), "bin.000008", 120)
    assert rng.start == BinlogPosition("bin.000008", 120)
    assert rng.stop == BinlogPosition("bin.000010", 500)  # the status position, not the listed size
    assert rng.files == ("bin.000008", "bin.000009", "bin.000010")
    assert rng.bounds("bin.000008") == (120, None)
    assert rng.bounds("bin.000009") == (4, None)
    assert rng.bounds("bin.000010") == (4, 500)


def test_position_range_with_a_stop_file_ends_at_that_file_s_end():
    rng = position_range(four_files(), "bin.000007", stop_file="bin.000008")
    assert (rng.start, rng.stop) == (BinlogPosition("bin.000007", 4), BinlogPosition("bin.000008", 2000))
    assert position_range(four_files(), "bin.000009", 4, stop_position=800).stop == BinlogPosition(
        "bin.000009", 800
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("bin.000009", 500, "bin.000008", 100), "stops .* before it starts"),
        (("bin.000009", 500, "bin.000009", 499), "stops .* before it starts"),
        (("bin.000003",), "no longer on the server \\(purged\\)"),
        (("bin.000011",), "not among the server's binary logs"),
        (("bin.000009", 3001), "beyond the end of bin.000009"),
        (("bin.000009", 4, "bin.000010", 501), "beyond the end of the binary log"),
        (("bin.000009", 2), "before the first event"),
    ],
)
def test_impossible_position_ranges_are_range_errors(args, message):
    with pytest.raises(RangeError, match=message):
        position_range(four_files(), *args)


def test_an_empty_range_at_one_position_is_allowed():
    rng = position_range(four_files(), "bin.000009", 700, "bin.000009", 700)
    assert rng.files == ("bin.000009",) and rng.start == rng.stop


# --------------------------------------------------------------------------- time windows


def files_of(server: ModelServer, start: int | None, stop: int | None) -> tuple[str, ...]:
    return tuple(name[-2:] for name in window_range(server, start, stop).files)


def test_window_start_edge_a_file_holds_events_up_to_the_next_file_s_creation():
    server = four_files()  # created 100, 200, 300, 400
    assert files_of(server, 200, 201) == ("07", "08")  # 07's last events may carry 200
    assert files_of(server, 201, 202) == ("08",)
    assert files_of(server, 199, 201) == ("07", "08")


def test_window_stop_edge_a_file_created_at_the_stop_is_outside():
    server = four_files()
    assert files_of(server, 150, 300) == ("07", "08")
    assert files_of(server, 150, 301) == ("07", "08", "09")
    assert files_of(server, 401, None) == ("10",)
    assert files_of(server, None, 101) == ("07",)


def test_window_resolution_probes_few_headers():
    server = ModelServer([(f"bin.{i:06d}", 1000, 100 * i) for i in range(1, 65)], end=500)
    assert files_of(server, 3050, 3150) == ("30", "31")
    assert len(set(server.probed)) <= 16  # two binary searches over 64 files


def test_window_before_the_oldest_file_is_a_range_error_and_an_early_start_a_warning():
    with pytest.raises(RangeError, match="ends before the oldest binary log"):
        window_range(four_files(), 10, 100)
    rng = window_range(four_files(), 10, 150)
    assert rng.files == ("bin.000007",) and "before the oldest binary log" in rng.warnings[0]
    with pytest.raises(RangeError, match="at or before it starts"):
        window_range(four_files(), 300, 300)


# --------------------------------------------------------------------------- MySQL GTID sets


def mysql_server() -> ModelServer:
    server = four_files()
    previous = ["", f"{UUID}:1-10", f"{UUID}:1-20,{UUID}:tag1:1-2", f"{UUID}:1-30,{UUID}:tag1:1-2"]
    server.gtids = {name: GtidSet.parse(p) for (name, _, _), p in zip(server.files, previous, strict=True)}
    server.state = GtidSet.parse(f"{UUID}:1-35,{UUID}:tag1:1-3")
    return server


@pytest.mark.parametrize(
    ("gtids", "files"),
    [
        (f"{UUID}:1", ("07",)),
        (f"{UUID}:10-11", ("07", "08")),
        (f"{UUID}:11-20", ("08",)),
        (f"{UUID}:12-25", ("08", "09")),
        (f"{UUID}:31-35", ("10",)),
        (f"{UUID}:tag1:2", ("08",)),
        (f"{UUID}:tag1:3", ("10",)),
    ],
)
def test_mysql_gtid_set_spans_the_files_whose_previous_gtids_bracket_it(gtids, files):
    rng = mysql_gtid_range(mysql_server(), GtidSet.parse(gtids))
    assert tuple(name[-2:] for name in rng.files) == files
    assert rng.stop == (BinlogPosition("bin.000010", 500) if files[-1] == "10" else rng.stop)


def test_mysql_gtids_not_logged_yet_or_purged_are_range_errors():
    with pytest.raises(RangeError, match="not in the server's binary log"):
        mysql_gtid_range(mysql_server(), GtidSet.parse(f"{UUID}:36"))
    purged = mysql_server()
    purged.files = purged.files[1:]  # bin.000007 purged: its GTIDs 1-10 are gone
    with pytest.raises(RangeError, match="purged"):
        mysql_gtid_range(purged, GtidSet.parse(f"{UUID}:5-12"))


# --------------------------------------------------------------------------- MariaDB GTID positions


def maria_server() -> ModelServer:
    server = four_files()
    server._info = ServerInfo("10.11.19-MariaDB", {"gtid_strict_mode": "ON"})
    lists = ["", "0-1-10", "0-1-20,1-2-5", "0-1-30,1-2-8"]
    server.gtids = {name: MariaGtidPos.parse(g) for (name, _, _), g in zip(server.files, lists, strict=True)}
    server.state = MariaGtidPos.parse("0-1-35,1-2-9")
    return server


@pytest.mark.parametrize(
    ("start", "stop", "files"),
    [
        ("0-1-12", "0-1-25", ("08", "09")),
        ("0-1-19", "0-1-20", ("08",)),  # 0-1-20 is the last GTID of bin.000008
        ("0-1-20", "0-1-21", ("09",)),
        ("0-1-10", "0-1-11", ("08",)),
        ("", "0-1-3", ("07",)),
        ("0-1-30,1-2-8", None, ("10",)),
        ("0-1-30", None, ("08", "09", "10")),  # a domain the start does not name starts at its beginning
        ("0-1-34,1-2-5", None, ("09", "10")),  # domain 1 continues in bin.000009
        ("0-1-20,1-2-5", "0-1-22,1-2-9", ("09", "10")),
    ],
)
def test_mariadb_gtid_range_spans_the_files_whose_gtid_lists_bracket_it(start, stop, files):
    gtids = MariaGtidRange(MariaGtidPos.parse(start), MariaGtidPos.parse(stop) if stop else None)
    rng = maria_gtid_range(maria_server(), gtids)
    assert tuple(name[-2:] for name in rng.files) == files
    assert rng.warnings == ()


def test_mariadb_gtids_not_logged_yet_or_purged_are_range_errors():
    with pytest.raises(RangeError, match="not in the binary log"):
        maria_gtid_range(
            maria_server(), MariaGtidRange(MariaGtidPos.parse("0-1-5"), MariaGtidPos.parse("0-1-36"))
        )
    purged = maria_server()
    purged.files = purged.files[2:]
    with pytest.raises(RangeError, match="purged"):
        maria_gtid_range(purged, MariaGtidRange(MariaGtidPos.parse("0-1-12")))
