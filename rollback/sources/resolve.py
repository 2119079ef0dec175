"""A range of a live server's binary log as local binlog files: what `--server` reads.

The range is given as for files, plus the files themselves: a start file (with positions and a
stop file), GTIDs (a MySQL GTID set, or MariaDB GTIDs/ranges such as 0-1-5..0-1-9), or a time
window. It is resolved against the server once (rollback.sources.ranges: the end of the log is
fixed when the job starts), the files it spans are spooled (rollback.sources.spool:
`<spool>/<server>/<original name>`, reused when complete), and the result is a RangeSpec over those
local files, which the pipeline reads like files given by the user:

- by position: the resolved start and stop positions in the first and last file;
- by GTIDs or time: whole files, stopping at the fixed end of the log; the pipeline selects the
  transactions, as it does for files;
- a datetime without an explicit offset is in the server's time zone (the server converts it);
  the RangeSpec carries every datetime in UTC with an explicit offset, to the whole second.

The schema source is the same server's information_schema; the engine consults it only for
tables whose table maps lack FULL metadata.
"""

from __future__ import annotations

import functools
import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rollback.base.dsn import open_connection
from rollback.base.errors import RangeError, SourceError
from rollback.binlog.gtid import MariaGtidPos, MariaGtidRange
from rollback.request.spec import GtidFilter, RangeSpec, check_server_range, parse_datetime
from rollback.schema.tables import SchemaSource, ServerSchema
from rollback.sources.ranges import (
    LogIndex,
    ServerRange,
    maria_gtid_range,
    mysql_gtid_range,
    position_range,
    window_range,
)
from rollback.sources.server import BinlogServer, ServerAddress
from rollback.sources.spool import spool_range

DATA_DIR_ENV = "MYSQL_ROLLBACK_DATA_DIR"
SPOOL_DIR_NAME = "mysql-rollback-spool"

Query = Callable[[str, Sequence[Any]], list[tuple]]


@dataclass
class ServerSource:
    """A server range resolved to local files: the range, its schema source, and what to tell the user."""

    rng: RangeSpec
    schema: SchemaSource
    via: str  # "replication protocol, spooled" or "binlog files in DIR"
    warnings: list[str] = field(default_factory=list)  # server settings, range resolution


def default_spool_dir(create: bool = False) -> Path:
    """`$MYSQL_ROLLBACK_DATA_DIR/spool` when that is set, else `mysql-rollback-spool` in the temp dir.

    With `create`, the temp-dir one is made readable by its owner only (spooled binlogs hold row
    data), and an existing one must be this user's own directory (every user can write to /tmp)."""
    data_dir = os.environ.get(DATA_DIR_ENV)
    if data_dir:
        return Path(data_dir) / "spool"
    path = Path(tempfile.gettempdir()) / SPOOL_DIR_NAME
    if create:
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = path.lstat()
        except OSError as exc:
            raise SourceError(f"cannot create the spool directory {path}: {exc.strerror or exc}") from None
        if not stat.S_ISDIR(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
            raise SourceError(f"{path} is not a directory of this user: give a spool directory (--spool DIR)")
    return path


def has_offset(text: str) -> bool:
    """Whether a datetime text carries its UTC offset (`+02:00`, `-0500`, `Z`)."""
    value = text.strip().replace("T", " ")
    return value.endswith("Z") or (len(value) > 19 and value[19:].lstrip(".0123456789")[:1] in ("+", "-"))


def utc_text(epoch: float) -> str:
    """Seconds since the epoch as `YYYY-MM-DD HH:MM:SS+00:00` (whole seconds)."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S+00:00")


def datetime_epoch(text: str, query: Query, where: str) -> float:
    """A datetime as seconds since the epoch; one without an offset is read in the server's time
    zone, by the server (`query` runs SQL there; `where` names the server in errors)."""
    if has_offset(text):
        return parse_datetime(text)
    parse_datetime(text)  # the format check, with the engine's message
    value = text.strip().replace("T", " ")
    ((epoch,),) = query("SELECT UNIX_TIMESTAMP(%s)", [value])
    if epoch is None or float(epoch) == 0:
        raise RangeError(f"{where} cannot place {text} in its time zone")
    return float(epoch)


def gtid_range(server: LogIndex, flt: GtidFilter) -> ServerRange:
    """The files holding the GTIDs of a --gtid text: a MySQL GTID set, or MariaDB GTIDs/ranges
    (per domain, from before the lowest GTID asked to the highest)."""
    if flt.mysql is not None:
        return mysql_gtid_range(server, flt.mysql)
    lows: dict[int, tuple[int, int]] = {}
    highs: dict[int, tuple[int, int]] = {}
    for domain, server_id, first, last in flt.maria:
        if domain not in lows or first - 1 < lows[domain][1]:
            lows[domain] = (server_id, first - 1)
        if domain not in highs or last > highs[domain][1]:
            highs[domain] = (server_id, last)
    start = MariaGtidPos((d, s, q) for d, (s, q) in lows.items() if q > 0)
    stop = MariaGtidPos((d, s, q) for d, (s, q) in highs.items())
    return maria_gtid_range(server, MariaGtidRange(start, stop))


def resolve_server_range(
    dsn: str,
    spool_dir: Path | str,
    start_file: str | None = None,
    start_position: int | None = None,
    stop_file: str | None = None,
    stop_position: int | None = None,
    gtid: str | None = None,
    start_datetime: str | None = None,
    stop_datetime: str | None = None,
    *,
    server_id: int | None = None,
    name: str | None = None,
    binlog_dir: Path | None = None,
) -> ServerSource:
    """Resolve a range of the server at `dsn` and spool it under `spool_dir/<name>/`.

    `name` (default: the server's host_port) names the spool directory and the server in errors;
    `server_id` is our replica id (default: random, high). When every file of the range is in
    `binlog_dir` (the server's own binlog directory on this machine), those files are read instead
    of spooled copies. Raises RangeError / SourceError, with one line each.
    """
    start_file, stop_file, gtid = start_file or None, stop_file or None, gtid or None
    check_server_range(
        start_file, start_position, stop_file, stop_position, gtid, bool(start_datetime or stop_datetime)
    )
    with BinlogServer(dsn, server_id=server_id) as server:
        address = server.address
        where = f"server {name}" if name else f"server {server.address}"
        start_dt = stop_dt = None
        parsed: GtidFilter | None = None
        if start_datetime:
            start_dt = utc_text(datetime_epoch(start_datetime, server.query, where))
        if stop_datetime:
            stop_dt = utc_text(datetime_epoch(stop_datetime, server.query, where))
        if start_file is not None:
            srange = position_range(server, start_file, start_position, stop_file, stop_position)
        elif gtid:
            parsed = GtidFilter(gtid)
            srange = gtid_range(server, parsed)
        else:
            start_ts = int(parse_datetime(start_dt)) if start_dt else None
            stop_ts = int(parse_datetime(stop_dt)) + 1 if stop_dt else None
            srange = window_range(server, start_ts, stop_ts)
        warnings = [*server.info.warnings, *srange.warnings]
        if binlog_dir is not None and all((binlog_dir / n).is_file() for n in srange.files):
            paths = [binlog_dir / n for n in srange.files]
            via = f"binlog files in {binlog_dir}"
        else:
            paths = spool_range(server, srange, spool_dir, name).paths
            via = "replication protocol, spooled"
    rng = RangeSpec(
        [str(p) for p in paths],
        srange.start.position if start_file is not None else None,
        srange.stop.position,
        gtid,
        start_dt,
        stop_dt,
        parsed_gtid=parsed,
        to_log_end=not gtid and stop_file is None and stop_position is None and not stop_datetime,
    )
    schema = ServerSchema(functools.partial(_schema_connection, address), name or str(address), address)
    return ServerSource(rng, schema, via, warnings)


def _schema_connection(address: ServerAddress) -> Any:
    """A session for information_schema, as the DSN was read for replication ($MYSQL_PWD included)."""
    import pymysql

    try:
        return open_connection(
            **address.session_args(),
            charset="utf8mb4",
            autocommit=False,
        )
    except pymysql.MySQLError as exc:
        raise SourceError(
            f"cannot connect to {address} for table schemas: {exc.args[-1] if exc.args else exc}"
        ) from None
