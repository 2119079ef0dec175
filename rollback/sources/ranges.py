"""Resolve a user's range against a server's binary logs: by position, by time window, by GTIDs.

Every resolution reads the server's end of log first and fixes it: a job works on the log as it
was when it started, whatever is written meanwhile. Only file headers are read (FORMAT_DESCRIPTION,
GTID_LIST / PREVIOUS_GTIDS), and only of the files a binary search visits.

Time windows. An event's timestamp is when its statement began, never after it was written, and
a file is created (its FORMAT_DESCRIPTION timestamp) after every event of the file before it was
written. So every event of file j has a timestamp <= created(j + 1), and file j can hold events of
a window [start, stop) only if created(j + 1) >= start; and a file created at or after `stop` holds
only events written after the window closed. The files of a window are therefore those with
created(j + 1) >= start and created(j) < stop; the planner then picks the events inside.

GTIDs. File j's GTID_LIST (MariaDB) or PREVIOUS_GTIDS (MySQL) holds the GTIDs logged before it, so
the GTIDs in file j are those in the next file's list and not in its own (the last file's "next
list" is the server's current GTID state). MariaDB resolution assumes sequence numbers grow within
a domain, which gtid_strict_mode guarantees.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from rollback.base.errors import RangeError, SourceError
from rollback.binlog.gtid import GtidSet, MariaGtidPos, MariaGtidRange
from rollback.sources.server import FileHeader, ServerInfo


class BinaryLog(NamedTuple):
    name: str
    size: int


@dataclass(frozen=True, order=True)
class BinlogPosition:
    file: str
    position: int

    def __str__(self) -> str:
        return f"{self.file}:{self.position}"


@dataclass(frozen=True)
class ServerRange:
    """A fixed range of a server's binary log: from `start` (an event boundary) to `stop` (where an
    event ends, exclusive), over `files` in log order."""

    start: BinlogPosition
    stop: BinlogPosition
    files: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    def bounds(self, name: str) -> tuple[int, int | None]:
        """(first byte, end) of the range within file `name`; end None means the whole rest of the file."""
        if name not in self.files:
            raise KeyError(name)
        first = self.start.position if name == self.start.file else 4
        return first, self.stop.position if name == self.stop.file else None


class LogIndex(Protocol):
    """What resolution needs from a server (BinlogServer has it; tests pass a fake)."""

    @property
    def info(self) -> ServerInfo: ...

    def binary_logs(self) -> list[tuple[str, int]]: ...

    def end_position(self) -> tuple[str, int]: ...

    def file_header(self, name: str) -> FileHeader: ...

    def gtid_state(self) -> GtidSet | MariaGtidPos: ...

    def query(
        self, sql: str, args: Sequence[Any] | None = None, action: str = "query the server"
    ) -> list[tuple]: ...


def _first_true(n: int, pred: Callable[[int], bool]) -> int:
    """The smallest j in 0..n-1 with pred(j), for a pred that stays true once true; n if none."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


class _Log:
    """The server's binary logs at one moment: names, sizes, and the fixed end."""

    def __init__(self, server: LogIndex):
        end_file, end_pos = server.end_position()  # first: every listed file then exists
        logs = [BinaryLog(name, size) for name, size in server.binary_logs()]
        names = [log.name for log in logs]
        if end_file not in names:
            raise SourceError(f"the binary log {end_file} is not among the server's binary logs (rotating?)")
        cut = names.index(end_file)
        self.logs = logs[: cut + 1]
        self.names = names[: cut + 1]
        self.end = BinlogPosition(end_file, end_pos)

    def index(self, name: str, what: str) -> int:
        if name in self.names:
            return self.names.index(name)
        if self.names and _log_number(name) < _log_number(self.names[0]):
            raise RangeError(
                f"{what} {name} is no longer on the server (purged): the oldest binary log is {self.names[0]}"
            )
        raise RangeError(
            f"{what} {name} is not among the server's binary logs ({self.names[0]} .. {self.names[-1]})"
        )

    def size(self, index: int) -> int:
        return self.end.position if index == len(self.names) - 1 else self.logs[index].size

    def range(
        self, first: int, last: int, start: int = 4, stop: int | None = None, warnings: Sequence[str] = ()
    ) -> ServerRange:
        return ServerRange(
            BinlogPosition(self.names[first], start),
            BinlogPosition(self.names[last], self.size(last) if stop is None else stop),
            tuple(self.names[first : last + 1]),
            tuple(warnings),
        )


def _log_number(name: str) -> int:
    suffix = name.rsplit(".", 1)[-1]
    return int(suffix) if suffix.isdigit() else -1


# --------------------------------------------------------------------------- positions


def position_range(
    server: LogIndex,
    start_file: str,
    start_position: int | None = None,
    stop_file: str | None = None,
    stop_position: int | None = None,
) -> ServerRange:
    """file+position range; the stop defaults to the end of the log when the job starts.

    Event boundaries are checked by the dump itself (the server refuses to start mid-event and
    the spool refuses a stop inside an event).
    """
    log = _Log(server)
    first = log.index(start_file, "start file")
    start = 4 if start_position is None else start_position
    if start < 4:
        raise RangeError(f"start position {start} is before the first event (4) of {start_file}")
    if stop_file is None:
        last = len(log.names) - 1 if stop_position is None else first
    else:
        last = log.index(stop_file, "stop file")
    stop = log.size(last) if stop_position is None else stop_position
    if last < first or (last == first and stop < start):
        raise RangeError(
            f"the range stops ({log.names[last]}:{stop}) before it starts ({start_file}:{start})"
        )
    if start > log.size(first):
        raise RangeError(
            f"start position {start} is beyond the end of {start_file} ({log.size(first)} bytes)"
        )
    if stop > log.size(last):
        where = "the end of the binary log" if last == len(log.names) - 1 else f"the end of {log.names[last]}"
        raise RangeError(f"stop position {stop} is beyond {where} ({log.size(last)})")
    return log.range(first, last, start, stop)


# --------------------------------------------------------------------------- time windows


def epoch_seconds(server: LogIndex, moment: datetime | int | float) -> int:
    """Seconds since the epoch. A naive datetime is read in the server's time zone, by the server."""
    if isinstance(moment, (int, float)):
        return int(moment)
    if moment.tzinfo is not None:
        return int(moment.timestamp())
    text = moment.strftime("%Y-%m-%d %H:%M:%S.%f")
    ((value,),) = server.query("SELECT UNIX_TIMESTAMP(%s)", [text], action="convert a time in its time zone")
    if not value:
        raise RangeError(f"the server cannot place {text} in its time zone ({server.info.time_zone})")
    return int(value)


def window_range(
    server: LogIndex, start: datetime | int | None = None, stop: datetime | int | None = None
) -> ServerRange:
    """The files that can hold events with timestamps in [start, stop); whole files."""
    start_ts = None if start is None else epoch_seconds(server, start)
    stop_ts = None if stop is None else epoch_seconds(server, stop)
    if start_ts is not None and stop_ts is not None and stop_ts <= start_ts:
        raise RangeError(f"the time window stops ({stop_ts}) at or before it starts ({start_ts})")
    log = _Log(server)
    n = len(log.names)

    def created(j: int) -> float:
        return float("inf") if j >= n else server.file_header(log.names[j]).created

    first = 0 if start_ts is None else _first_true(n, lambda j: created(j + 1) >= start_ts)
    first = min(first, n - 1)
    last = n - 1 if stop_ts is None else _first_true(n, lambda j: created(j) >= stop_ts) - 1
    if last < 0:
        raise RangeError(
            f"the time window ends before the oldest binary log on the server ({log.names[0]}, "
            f"created at {int(created(0))})"
        )
    warnings = []
    if start_ts is not None and first == 0 and start_ts < created(0):
        warnings.append(
            f"the window starts before the oldest binary log ({log.names[0]}, created at {int(created(0))}): "
            "earlier changes are not in the log (purged or never logged)"
        )
    return log.range(first, last, warnings=warnings)


# --------------------------------------------------------------------------- GTIDs


G = TypeVar("G", GtidSet, MariaGtidPos)


class _GtidsBefore(Generic[G]):
    """The GTIDs logged before each file of `log` (its GTID_LIST or PREVIOUS_GTIDS event), and
    `now` past the last one."""

    def __init__(self, server: LogIndex, log: _Log, now: G, event: str, read: Callable[[Any], G | None]):
        self.server = server
        self.log = log
        self.now: G = now
        self.event = event
        self.read: Callable[[Any], G | None] = read

    def before(self, j: int) -> G:
        if j >= len(self.log.names):
            return self.now
        name = self.log.names[j]
        gtids = self.read(self.server.file_header(name))
        if gtids is None:
            raise SourceError(f"{name} has no {self.event} event: cannot place GTIDs in it")
        return gtids


def maria_gtid_range(server: LogIndex, gtids: MariaGtidRange) -> ServerRange:
    """The files holding the MariaDB GTIDs after `gtids.start` up to `gtids.stop` (all domains)."""
    log = _Log(server)
    n = len(log.names)
    current = server.gtid_state()
    if not isinstance(current, MariaGtidPos):
        raise SourceError("the server is MySQL: give a MySQL GTID set, not a MariaDB GTID position")
    lists = _GtidsBefore(
        server, log, current, "GTID_LIST", lambda h: None if h.gtid_list is None else h.gtid_list.pos
    )
    state_before = lists.before

    if gtids.stop is not None:
        domains = sorted(gtids.stop.domains)
    else:
        domains = sorted(set(gtids.start.domains) | set(current.domains))

    def after_start(pos: MariaGtidPos, d: int) -> bool:
        return (pos.seq_for(d) or 0) > (gtids.start.seq_for(d) or 0)

    oldest = state_before(0)
    for d in domains:
        if after_start(oldest, d):
            raise RangeError(
                f"GTIDs of domain {d} after {gtids.start.seq_for(d) or 0} were in purged binary logs: "
                f"{log.names[0]} starts after {d}-*-{oldest.seq_for(d)}"
            )
    if gtids.stop is not None:
        for d in domains:
            stop_seq = gtids.stop.seq_for(d) or 0
            if (current.seq_for(d) or 0) < stop_seq:
                raise RangeError(
                    f"GTID {d}-*-{stop_seq} is not in the binary log (the server is at {current})"
                )
    first = _first_true(n, lambda j: any(after_start(state_before(j + 1), d) for d in domains))
    if gtids.stop is None:
        last = n - 1
    else:
        stop = gtids.stop
        last = _first_true(
            n, lambda j: all((state_before(j + 1).seq_for(d) or 0) >= (stop.seq_for(d) or 0) for d in domains)
        )
    if first > last or first >= n:
        raise RangeError("the GTID range holds no transactions")
    warnings = []
    if server.info.var("gtid_strict_mode").upper() in ("OFF", "0"):
        warnings.append(
            "gtid_strict_mode is OFF: files were chosen assuming sequence numbers grow within each domain"
        )
    return log.range(first, min(last, n - 1), warnings=warnings)


def mysql_gtid_range(server: LogIndex, gtids: GtidSet) -> ServerRange:
    """The files holding the MySQL GTIDs of `gtids`."""
    if not gtids:
        raise RangeError("the GTID set is empty")
    log = _Log(server)
    n = len(log.names)
    executed = server.gtid_state()
    if not isinstance(executed, GtidSet):
        raise SourceError("the server is MariaDB: give a MariaDB GTID position (domain-server-seq)")
    before = _GtidsBefore(server, log, executed, "PREVIOUS_GTIDS", lambda h: h.previous_gtids).before

    missing = gtids - executed
    if missing:
        raise RangeError(f"GTIDs not in the server's binary log: {missing}")
    purged = gtids & before(0)
    if purged:
        raise RangeError(f"GTIDs in purged binary logs (before {log.names[0]}): {purged}")
    first = _first_true(n, lambda j: bool(gtids & before(j + 1)))
    last = _first_true(n, lambda j: gtids.issubset(before(j + 1)))
    return log.range(first, min(last, n - 1))
