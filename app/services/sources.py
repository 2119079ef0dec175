"""Where a job's binlog bytes come from, resolved when the job starts.

- uploaded files: the job's upload, in log order; a naive datetime is UTC;
- a configured server with `binlog_dir`: its binlog files on this machine;
- a configured server without one: its binary log over the replication protocol, spooled into
  the data dir (rollback.sources), when that source is installed.

A naive datetime for a server is read in the server's time zone (the server converts it), and the
engine gets it with an explicit UTC offset. GTID and time ranges are narrowed to the files that
can hold them when the server can be asked; otherwise every file is read and the engine selects.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pymysql

from app.core.config import ServerConfig, Settings
from rollback.errors import RangeError, RollbackError, SourceError
from rollback.execute import connect
from rollback.flashback import RangeSpec, parse_datetime
from rollback.schema import SchemaSource, ServerSchema
from rollback.sources.files import binlog_files, binlog_names


@dataclass
class Resolved:
    rng: RangeSpec
    schema: SchemaSource | None
    via: str
    warnings: list[str] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        rng = self.rng
        return {
            "via": self.via,
            "files": [Path(f).name for f in rng.files],
            "start_file": Path(rng.files[0]).name if rng.files else None,
            "start_position": rng.start_position or 4,
            "stop_file": Path(rng.files[-1]).name if rng.files else None,
            "stop_position": rng.stop_position,
            "gtid_set": rng.gtid,
            "start_datetime": rng.start_datetime,
            "stop_datetime": rng.stop_datetime,
        }


def live_source() -> dict[str, ModuleType] | None:
    """The replication-protocol source (rollback.sources.server/ranges/spool) if it is installed."""
    try:
        return {
            name: importlib.import_module(f"rollback.sources.{name}")
            for name in ("server", "ranges", "spool")
        }
    except ImportError:
        return None


def server_schema(server: ServerConfig) -> SchemaSource:
    dsn = server.dsn
    return ServerSchema(lambda: connect(dsn))


def _utc_text(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S+00:00")


def _has_offset(text: str) -> bool:
    value = text.strip().replace("T", " ")
    return value.endswith("Z") or (len(value) > 19 and value[19:].lstrip(".0123456789")[:1] in ("+", "-"))


def _query(server: ServerConfig, sql: str, args: Any = None) -> list[tuple]:
    conn = connect(server.dsn)
    try:
        with conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())
    except pymysql.err.MySQLError as exc:
        raise SourceError(f"server {server.name}: {exc.args[-1] if exc.args else exc}") from None
    finally:
        conn.close()


def server_epoch(server: ServerConfig, text: str) -> float:
    """A datetime as seconds since the epoch; naive ones in the server's time zone, by the server."""
    if _has_offset(text):
        return parse_datetime(text)
    parse_datetime(text)  # the format check, with the engine's message
    value = text.strip().replace("T", " ")
    ((epoch,),) = _query(server, "SELECT UNIX_TIMESTAMP(%s)", [value])
    if epoch is None or float(epoch) == 0:
        raise RangeError(f"server {server.name} cannot place {text} in its time zone")
    return float(epoch)


def server_time_zone(server: ServerConfig) -> dict[str, Any]:
    """What the web form shows next to the time fields: the server's zone and current UTC offset."""
    rows = _query(
        server,
        "SELECT @@global.time_zone, @@system_time_zone, TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), NOW()), VERSION()",
    )
    tz, system, offset, version = rows[0]
    name = system if str(tz).upper() == "SYSTEM" else tz
    seconds = int(offset or 0)
    sign = "+" if seconds >= 0 else "-"
    hours, minutes = divmod(abs(seconds) // 60, 60)
    return {"time_zone": str(name), "utc_offset": f"{sign}{hours:02d}:{minutes:02d}", "version": str(version)}


def check_server_files(server: ServerConfig, requested: dict[str, Any]) -> list[dict[str, Any]]:
    """Field errors for start/stop files a server read over the protocol does not have (asked up front)."""
    wanted = [(name, requested.get(name)) for name in ("start_file", "stop_file") if requested.get(name)]
    if server.binlog_dir is not None or not wanted:
        return []
    try:
        logs = [str(row[0]) for row in _query(server, "SHOW BINARY LOGS")]
    except RollbackError as exc:
        msg = f"cannot list the binary logs of {server.name}: {exc.one_line()}"
        return [{"loc": ("body", "server"), "msg": msg, "type": "value_error"}]
    span = f"{logs[0]} .. {logs[-1]}" if logs else "none"
    return [
        {
            "loc": ("body", "range", name),
            "msg": f"{value} is not among the binary logs of {server.name} ({span})",
            "type": "value_error",
        }
        for name, value in wanted
        if value not in logs
    ]


def _end_of_log(server: ServerConfig) -> tuple[str, int] | None:
    for sql in ("SHOW BINLOG STATUS", "SHOW BINARY LOG STATUS", "SHOW MASTER STATUS"):
        try:
            rows = _query(server, sql)
        except SourceError:
            continue
        if rows:
            return str(rows[0][0]), int(rows[0][1])
    return None


def resolve_upload(directory: Path, names: list[str], requested: dict[str, Any]) -> Resolved:
    if requested.get("start_file") and requested["start_file"] not in names:
        raise RangeError(f"start file {requested['start_file']} is not among the uploaded files")
    if requested.get("stop_file") and requested["stop_file"] not in names:
        raise RangeError(f"stop file {requested['stop_file']} is not among the uploaded files")
    first = names.index(requested["start_file"]) if requested.get("start_file") else 0
    last = names.index(requested["stop_file"]) if requested.get("stop_file") else len(names) - 1
    if requested.get("start_file") and not requested.get("stop_file") and requested.get("stop_position"):
        last = first
    if last < first:
        raise RangeError(f"stop file {names[last]} comes before start file {names[first]}")
    rng = RangeSpec(
        [str(directory / n) for n in names[first : last + 1]],
        requested.get("start_position"),
        requested.get("stop_position"),
        requested.get("gtid_set"),
        requested.get("start_datetime"),
        requested.get("stop_datetime"),
    )
    return Resolved(rng, None, "upload")


def _gtid_range(ranges: ModuleType, bs: Any, text: str) -> Any:
    from rollback.binlog.gtid import GtidSet, MariaGtidPos, MariaGtidRange
    from rollback.flashback import GtidFilter

    flt = GtidFilter(text)
    if flt.mysql is not None:
        return ranges.mysql_gtid_range(bs, GtidSet.parse(text))
    lows: dict[int, tuple[int, int]] = {}
    highs: dict[int, tuple[int, int]] = {}
    for domain, server_id, first, last in flt.maria:
        if domain not in lows or first - 1 < lows[domain][1]:
            lows[domain] = (server_id, first - 1)
        if domain not in highs or last > highs[domain][1]:
            highs[domain] = (server_id, last)
    start = MariaGtidPos((d, s, q) for d, (s, q) in lows.items() if q > 0)
    stop = MariaGtidPos((d, s, q) for d, (s, q) in highs.items())
    return ranges.maria_gtid_range(bs, MariaGtidRange(start, stop))


def resolve_server(server: ServerConfig, requested: dict[str, Any], settings: Settings) -> Resolved:
    live = live_source()
    warnings: list[str] = []
    start_dt = stop_dt = None
    if requested.get("start_datetime"):
        start_dt = _utc_text(server_epoch(server, requested["start_datetime"]))
    if requested.get("stop_datetime"):
        stop_dt = _utc_text(server_epoch(server, requested["stop_datetime"]))
    gtid = requested.get("gtid_set")
    by_position = bool(requested.get("start_file"))

    if server.binlog_dir is not None and live is None:
        # Local files only: positions as asked, GTIDs and windows over every file.
        directory = server.binlog_dir
        if by_position:
            stop_file = requested.get("stop_file") or (
                requested["start_file"] if requested.get("stop_position") else None
            )
            files = binlog_files(directory, requested["start_file"], stop_file)
            rng = RangeSpec(
                [str(f) for f in files], requested.get("start_position"), requested.get("stop_position")
            )
        else:
            names = binlog_names(directory)
            if not names:
                raise RangeError(f"server {server.name}: no binlog files in {directory}")
            end = _end_of_log(server)
            stop = end[1] if end and end[0] == names[-1] else None
            rng = RangeSpec([str(directory / n) for n in names], None, stop, gtid, start_dt, stop_dt)
        return Resolved(rng, server_schema(server), f"binlog files in {directory}", warnings)

    if live is None:
        raise SourceError(
            f"server {server.name} has no binlog_dir and the replication-protocol source is not installed"
        )
    ranges, spool = live["ranges"], live["spool"]
    with live["server"].BinlogServer(server.dsn) as bs:
        if by_position:
            srange = ranges.position_range(
                bs,
                requested["start_file"],
                requested.get("start_position"),
                requested.get("stop_file"),
                requested.get("stop_position"),
            )
        elif gtid:
            srange = _gtid_range(ranges, bs, gtid)
        else:
            start_ts = int(parse_datetime(start_dt)) if start_dt else None
            stop_ts = int(parse_datetime(stop_dt)) + 1 if stop_dt else None
            srange = ranges.window_range(bs, start_ts, stop_ts)
        warnings.extend(bs.info.warnings)  # server settings: row images, PARTIAL_JSON, gtid_mode
        warnings.extend(srange.warnings)
        local = server.binlog_dir is not None and all((server.binlog_dir / n).is_file() for n in srange.files)
        if local:
            assert server.binlog_dir is not None
            paths = [server.binlog_dir / n for n in srange.files]
            via = f"binlog files in {server.binlog_dir}"
        else:
            spooled = spool.spool_range(bs, srange, settings.spool_dir, server.name)
            paths = spooled.paths
            via = "replication protocol, spooled"
    start_pos = srange.start.position if by_position else None
    stop_pos = srange.stop.position
    rng = RangeSpec([str(p) for p in paths], start_pos, stop_pos, gtid, start_dt, stop_dt)
    return Resolved(rng, server_schema(server), via, warnings)
