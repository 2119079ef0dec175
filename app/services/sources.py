"""Where a job's binlog bytes come from, resolved when the job starts.

- uploaded files: the job's upload, in log order; a naive datetime is UTC;
- a configured server: the range is resolved against the server and its files are spooled into
  the data dir by the engine (rollback.sources.resolve: positions, GTIDs and time windows narrowed
  to the files that hold them, a naive datetime read in the server's time zone); with
  `binlog_dir`, files found there are read in place instead of spooled.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymysql

from app.core.config import ServerConfig, Settings
from rollback import (
    RangeError,
    RangeSpec,
    RollbackError,
    SchemaSource,
    ServerSchema,
    SourceError,
    connect,
    resolve_server_range,
)


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


def server_schema(server: ServerConfig) -> SchemaSource:
    dsn = server.dsn
    return ServerSchema(functools.partial(connect, dsn), server.name, dsn)


def _query(server: ServerConfig, sql: str, args: Any = None) -> list[tuple]:
    conn = connect(server.dsn)
    try:
        with conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())
    except pymysql.err.MySQLError as exc:
        raise SourceError(f"server {server.name}: {exc.args[-1] if exc.args else exc}") from None
    except RuntimeError as exc:  # PyMySQL's answer to some hostile replies (a LOCAL INFILE request)
        raise SourceError(f"server {server.name}: unexpected answer: {' '.join(str(exc).split())}") from None
    finally:
        conn.close()


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


def asks_server_files(server: ServerConfig, requested: dict[str, Any]) -> bool:
    """Whether check_server_files has to ask the server (start/stop files of a server read over the protocol)."""
    return server.binlog_dir is None and any(requested.get(name) for name in ("start_file", "stop_file"))


def check_server_files(server: ServerConfig, requested: dict[str, Any]) -> list[dict[str, Any]]:
    """Field errors for start/stop files a server read over the protocol does not have (asked up front)."""
    wanted = [(name, requested.get(name)) for name in ("start_file", "stop_file") if requested.get(name)]
    if server.binlog_dir is not None or not wanted:
        return []
    try:
        logs = [str(row[0]) for row in _query(server, "SHOW BINARY LOGS")]
    except RollbackError as exc:
        return unlisted(server.name, exc)
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


def unlisted(name: str, exc: RollbackError) -> list[dict[str, Any]]:
    """The field error of a server whose binary logs could not be listed."""
    msg = f"cannot list the binary logs of {name}: {exc.one_line()}"
    return [{"loc": ("body", "server"), "msg": msg, "type": "value_error"}]


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


def resolve_server(server: ServerConfig, requested: dict[str, Any], settings: Settings) -> Resolved:
    """The engine resolves the range against the server and spools it into the data dir; when the
    server's binlog_dir holds every file of the range, those files are read as they are."""
    found = resolve_server_range(
        server.dsn,
        settings.spool_dir,
        requested.get("start_file"),
        requested.get("start_position"),
        requested.get("stop_file"),
        requested.get("stop_position"),
        requested.get("gtid_set"),
        requested.get("start_datetime"),
        requested.get("stop_datetime"),
        name=server.name,
        binlog_dir=server.binlog_dir,
    )
    return Resolved(found.rng, found.schema, found.via, list(found.warnings))
