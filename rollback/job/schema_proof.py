"""Is a schema source still the table the binlog wrote? Look for DDL on it after the range, up to now.

Without column names in the binlog (binlog_row_metadata is not FULL), a row's values are matched
to the schema source's columns by position. The source (a live server's information_schema, a DDL
file) describes the table as it is now; it describes the table the range wrote only if no DDL
touched the table since. This module reads the binary log after the range's stop position up to
its end and reports the first DDL on one of the given tables:

- on a live server (the source, or the server the range was read from) whose binary log holds the
  range's last file (the same file: the event that ends at the stop position is there too): the
  files beside ours are read locally as far as they go (cheap), then SHOW BINLOG EVENTS from
  there, QUERY events only, in batches; a file SHOW BINLOG EVENTS cannot show (an event larger
  than the server's max_allowed_packet: "Wrong offset or I/O error") is read from there on as the
  range is, over the replication protocol, when the source knows the server's address;
- otherwise in the files next to the range's last one (same base name, the following sequence
  numbers), and the rest of that file after the stop position. The last file found must be the one
  the server was writing (its FORMAT_DESCRIPTION still flags it in use) and not a spooled copy; a
  file closed by a ROTATE or STOP event whose successor is not there leaves the present unread,
  and nothing is proven.

A spool's filler events (bytes not fetched) end what local files can tell.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollback.base.errors import BinlogFormatError, RollbackError
from rollback.binlog.constants import LOG_EVENT_BINLOG_IN_USE_F, EventType
from rollback.binlog.decode import DECODERS
from rollback.binlog.events import Query, classify_sql
from rollback.binlog.reader import BinlogFile, iter_events
from rollback.pipeline import storage
from rollback.schema.ddl import ddl_targets
from rollback.sources.spool import MANIFEST_SUFFIX

BATCH = 5000  # SHOW BINLOG EVENTS rows per round trip
_QUERY_TYPES = frozenset({int(EventType.QUERY), int(EventType.QUERY_COMPRESSED)})
_IGNORABLE = int(EventType.IGNORABLE)
_ARTIFICIAL = 0x20  # LOG_EVENT_ARTIFICIAL_F: an event no server wrote there
_USE_PREFIX = re.compile(r"use `((?:[^`]|``)*)`; ", re.DOTALL)


@dataclass(frozen=True)
class LaterDdl:
    """A DDL after the range on one of the tables."""

    table: str  # db.table
    sql: str
    file: str
    pos: int
    database: str = ""  # the statement's default database (kept when collecting every DDL)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.pos}"


@dataclass(frozen=True)
class Scan:
    """What was read after the range: where, from, up to, and the first DDL on a table, if any."""

    where: str  # "the binlog of server NAME" | "binlog files A .. B in DIR"
    after: str  # file:pos
    up_to: str  # file:pos
    hit: LaterDdl | None


class NotProven(Exception):
    """No scan up to the present was possible; the message says why."""


def _first_hit(sql: str, database: str | None, tables: set[str], file: str, pos: int) -> LaterDdl | None:
    if classify_sql(sql) != "DDL":
        return None
    targets = ddl_targets(sql, database)
    for table in sorted(tables):
        db, _, name = table.partition(".")
        if targets.touches(db, name):
            return LaterDdl(table, sql, file, pos)
    return None


def _collect(out: list[LaterDdl], sql: str, database: str | None, file: str, pos: int) -> None:
    """Every DDL after the range, on any table (the schema history follows renames)."""
    if classify_sql(sql) == "DDL":
        out.append(LaterDdl("", sql, file, pos, database or ""))


# ---- a live server ----------------------------------------------------------------------------------


def _last_event_before(path: str, boundary: int, stop: int) -> tuple[int, int, int] | None:
    """(pos, server id, end) of the event of a local binlog file that ends at `stop`, read from
    `boundary` (an event boundary at or before it); None when `stop` is where the file's events start."""
    last = None
    with BinlogFile(path) as binlog:
        for raw in iter_events(binlog.buf, binlog.facts, max(boundary, 4), stop, binlog.path, verify=False):
            last = (raw.pos, raw.server_id, raw.end)
    return last


def scan_server(
    connect: Any,
    name: str,
    last_path: str,
    boundary: int,
    stop: int,
    tables: set[str],
    collect: list[LaterDdl] | None = None,
    replication: Any = None,
) -> tuple[Scan | None, str]:
    """The server's binary log after `stop` in the range's last file: (scan, "") or (None, why the
    server cannot tell: it does not hold that file, it is another server's file, no privilege).

    The server's file is the range's when the event that ends at `stop` in ours (found from
    `boundary`, an event boundary before it) is in the server's at the same place, with the same
    server id. What the files beside ours hold of the log after the range is read there (a local
    read is cheap, SHOW BINLOG EVENTS sends every event); the server gives the rest, from an event
    at the same place in its file. `replication`: the server's address (a DSN or ServerAddress) for
    what SHOW BINLOG EVENTS cannot show; None: the server's SQL session only."""
    import pymysql

    last = os.path.basename(last_path)
    try:
        conn = connect()
    except RollbackError as exc:
        return None, exc.one_line()
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW BINARY LOGS")
            names = [str(row[0]) for row in cur.fetchall()]
            if last not in names:
                return None, f"server {name} has no binary log {last}"
            if not storage.is_local(last_path):
                return None, f"{last_path} is not a local file to compare with the server's {last}"
            mine = _last_event_before(storage.local_path(last_path), boundary, stop)
            if mine is not None:
                cur.execute("SHOW BINLOG EVENTS IN %s FROM %s LIMIT 1", (last, mine[0]))
                theirs = [(int(r[1]), int(r[3]), int(r[4])) for r in cur.fetchall()]
                if theirs != [mine]:
                    return None, f"{last} of server {name} is not the file the range was read from"
            where = f"the binlog of server {name}"
            mark = len(collect) if collect is not None else 0
            try:
                local = _read_files(Path(storage.local_path(last_path)), stop, tables, collect)
            except NotProven:
                local = None
                if collect is not None:
                    del collect[mark:]
            if local is not None and local.hit is not None:
                return Scan(where, f"{last}:{stop}", local.hit.where, local.hit), ""
            file, pos = last, stop
            if (
                local is not None
                and local.end_file in names
                and (local.end_file, local.end_pos) != (last, stop)
            ):
                try:
                    cur.execute("SHOW BINLOG EVENTS IN %s FROM %s LIMIT 1", (local.end_file, local.end_pos))
                    at = [int(r[1]) for r in cur.fetchall()]
                except pymysql.err.MySQLError:
                    at = [-1]  # not an event boundary there: the server reads it all
                if at in ([], [local.end_pos]):  # the server's log goes on where the local files end
                    file, pos = local.end_file, local.end_pos
            up_to = f"{file}:{pos}"
            for index in range(names.index(file), len(names)):
                name_i = names[index]
                start = pos if name_i == file else 4
                first = True
                while True:
                    try:
                        cur.execute("SHOW BINLOG EVENTS IN %s FROM %s LIMIT %s", (name_i, start, BATCH))
                    except pymysql.err.MySQLError as exc:
                        said = exc.args[-1] if exc.args else exc
                        if collect is not None:
                            del collect[mark:]
                        if replication is None:
                            return None, f"server {name} cannot show {name_i} from {start} ({said})"
                        return _scan_replicated(
                            replication,
                            name,
                            names[index:],
                            (name_i, start),
                            tables,
                            collect,
                            (where, f"{last}:{stop}"),
                        )
                    rows = cur.fetchall()
                    if first and name_i == file and rows and int(rows[0][1]) != pos:
                        if collect is not None:
                            del collect[mark:]
                        return None, f"{file} of server {name} has no event at {pos}"
                    first = False
                    for _log, at_pos, kind, _sid, end, info in rows:
                        if kind in ("Query", "Query_compressed"):
                            sql, database = str(info), None
                            use = _USE_PREFIX.match(sql)
                            if use:
                                database, sql = use.group(1).replace("``", "`"), sql[use.end() :]
                            if collect is not None:
                                _collect(collect, sql, database, name_i, int(at_pos))
                            hit = (
                                None
                                if collect is not None
                                else _first_hit(sql, database, tables, name_i, int(at_pos))
                            )
                            if hit is not None:
                                return Scan(where, f"{last}:{stop}", up_to, hit), ""
                        up_to = f"{name_i}:{int(end)}"
                    if len(rows) < BATCH:
                        break
                    start = int(rows[-1][4])
            return Scan(where, f"{last}:{stop}", up_to, None), ""
    except pymysql.err.MySQLError as exc:
        return None, f"cannot read the binary log of server {name}: {exc.args[-1] if exc.args else exc}"
    finally:
        conn.close()


def _scan_replicated(
    replication: Any,
    name: str,
    files: list[str],
    at: tuple[str, int],
    tables: set[str],
    collect: list[LaterDdl] | None,
    where_since: tuple[str, str],
) -> tuple[Scan | None, str]:
    """The server's log from `at` to its end, read over the replication protocol into a spool of its
    own (which handles events of any size), then read there like local files."""
    from rollback.sources.ranges import BinlogPosition, ServerRange
    from rollback.sources.server import BinlogServer
    from rollback.sources.spool import spool_range

    where, since = where_since
    file, pos = at
    mark = len(collect) if collect is not None else 0
    try:
        with (
            tempfile.TemporaryDirectory(prefix="mysql-rollback-proof-") as tmp,
            BinlogServer(replication) as server,
        ):
            end_file, end_pos = server.end_position()
            if end_file not in files:
                return None, f"server {name}'s binary log ends in {end_file}, not after {file}"
            rng = ServerRange(
                BinlogPosition(file, pos),
                BinlogPosition(end_file, end_pos),
                tuple(files[: files.index(end_file) + 1]),
            )
            spool = spool_range(server, rng, tmp, "proof")
            found = _read_files(spool.paths[0], pos, tables, collect)
    except (RollbackError, NotProven, OSError) as exc:
        if collect is not None:
            del collect[mark:]
        said = exc.one_line() if isinstance(exc, RollbackError) else " ".join(str(exc).split())
        return None, f"cannot read {file} of server {name} from {pos}, over replication either: {said}"
    where = f"{where} (from {file}:{pos} over the replication protocol)"
    if found.hit is not None:
        return Scan(where, since, found.hit.where, found.hit), ""
    return Scan(where, since, f"{found.end_file}:{found.end_pos}", None), ""


# ---- files next to the range's -----------------------------------------------------------------------


def _following(path: Path) -> list[Path]:
    """`path` and the files after it in its directory: same base name, consecutive sequence numbers."""
    stem, dot, number = path.name.rpartition(".")
    chain = [path]
    if not dot or not number.isdigit():
        return chain
    width = len(number)
    k = int(number) + 1
    while True:
        candidate = path.with_name(f"{stem}.{k:0{width}d}")
        if not candidate.is_file():
            return chain
        chain.append(candidate)
        k += 1


@dataclass(frozen=True)
class _Files:
    """What the files beside the range's hold of the log after it."""

    chain: list[Path]  # the range's last file and the files after it
    end_file: str
    end_pos: int  # where their last complete event ends
    closed: bool  # the last of them was closed by the server: the log goes on in a file not here
    hit: LaterDdl | None
    gap: str | None = None  # why they stop short of their end (a spooled file's bytes not fetched)


def _read_files(path: Path, stop: int, tables: set[str], collect: list[LaterDdl] | None = None) -> _Files:
    chain = _following(path)
    end_file, end_pos = path.name, stop
    for index, file in enumerate(chain):
        final = index == len(chain) - 1
        with BinlogFile(file) as binlog:
            facts = binlog.facts
            try:
                for raw in iter_events(
                    binlog.buf, facts, stop if index == 0 else 4, binlog.size, binlog.path, verify=False
                ):
                    if raw.type_code == _IGNORABLE and raw.flags & _ARTIFICIAL:
                        # A spool's filler (rollback.sources.spool): the server's events there were
                        # not fetched, and what they hold is unknown.
                        gap = f"{file.name} holds bytes not fetched from the server at {raw.pos}"
                        return _Files(chain[: index + 1], end_file, end_pos, False, None, gap)
                    if raw.type_code in _QUERY_TYPES:
                        query = DECODERS[raw.type_code](raw, facts)
                        assert isinstance(query, Query)
                        if collect is not None:
                            _collect(collect, query.sql, query.database, file.name, raw.pos)
                            end_file, end_pos = file.name, raw.end
                            continue
                        hit = _first_hit(query.sql, query.database, tables, file.name, raw.pos)
                        if hit is not None:
                            return _Files(chain[: index + 1], file.name, raw.pos, False, hit)
                    end_file, end_pos = file.name, raw.end
            except BinlogFormatError as exc:
                # The file the server is writing may end inside an event it has not finished.
                if not (final and _in_use(binlog)):
                    raise NotProven(f"cannot read {file.name}: {exc.reason}") from None
            closed = final and not _in_use(binlog)
    return _Files(chain, end_file, end_pos, closed, None)


def scan_files(last_path: str, stop: int, tables: set[str], collect: list[LaterDdl] | None = None) -> Scan:
    """The rest of the range's last file and the files after it; NotProven when they do not reach
    the end of the binary log (the last of them was closed: the log went on elsewhere)."""
    if not storage.is_local(last_path):
        raise NotProven(f"{last_path} is not a local file, so the files after it cannot be listed")
    path = Path(storage.local_path(last_path))
    found = _read_files(path, stop, tables, collect)
    after = f"{path.name}:{stop}"
    if found.hit is not None:
        return Scan(_files_where(found.chain), after, found.hit.where, found.hit)
    if found.gap is not None:
        raise NotProven(found.gap)
    last = found.chain[-1]
    if last.with_name(last.name + MANIFEST_SUFFIX).is_file():
        # Its FORMAT_DESCRIPTION is the server's, flagged in use if the server was writing it; the
        # spool holds it only up to what a job fetched.
        raise NotProven(f"{last.name} is a spooled copy of part of a server's binary log")
    if found.closed:
        raise NotProven(
            f"{last.name} was closed (the binary log goes on in a next file) and no next file "
            f"is beside it in {last.parent}"
        )
    return Scan(_files_where(found.chain), after, f"{found.end_file}:{found.end_pos}", None)


def _in_use(binlog: BinlogFile) -> bool:
    """The FORMAT_DESCRIPTION's flag: the server had not closed this file (it is the current one)."""
    flags = int.from_bytes(bytes(binlog.buf[4 + 17 : 4 + 19]), "little")
    return bool(flags & LOG_EVENT_BINLOG_IN_USE_F)


def _files_where(chain: list[Path]) -> str:
    names = chain[0].name if len(chain) == 1 else f"{chain[0].name} .. {chain[-1].name}"
    return f"binlog files {names} in {chain[0].parent}"


# ---- before the range, in its first file ------------------------------------------------------------

_TABLE_MAP = int(EventType.TABLE_MAP)


@dataclass
class Before:
    """What the range's first file holds before the range: every DDL (a CREATE TABLE there starts a
    table's history forward, exact) and the tables its rows events wrote ((db, table, pos))."""

    ddl: list[LaterDdl]
    maps: list[tuple[str, str, int]]


def scan_before(first_path: str, start: int) -> Before:
    """The range's first file from its first event up to `start`. A spool's filler there (bytes not
    fetched) ends what is known: what came before it is dropped, since a DDL could hide in the gap.
    Nothing for a file that is not local (what is not read is not used, never guessed)."""
    found = Before([], [])
    if not storage.is_local(first_path):
        return found
    path = Path(storage.local_path(first_path))
    with BinlogFile(path) as binlog:
        facts = binlog.facts
        try:
            for raw in iter_events(binlog.buf, facts, 4, start, binlog.path, verify=False):
                if raw.type_code == _IGNORABLE and raw.flags & _ARTIFICIAL:
                    found = Before([], [])
                elif raw.type_code in _QUERY_TYPES:
                    query = DECODERS[raw.type_code](raw, facts)
                    assert isinstance(query, Query)
                    _collect(found.ddl, query.sql, query.database, path.name, raw.pos)
                elif raw.type_code == _TABLE_MAP:
                    tmap = DECODERS[raw.type_code](raw, facts)
                    found.maps.append((str(tmap.database).lower(), str(tmap.table).lower(), raw.pos))
        except BinlogFormatError:
            return Before([], [])
    return found
