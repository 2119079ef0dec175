"""Request and response bodies of the REST API, and the checks that go beyond types.

`check_job_request` returns field errors in FastAPI's shape (loc, msg, type) so that the API
answers 422 and the web form puts each message next to its field, from the same rules.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.core.config import ServerConfig
from rollback import (
    DEFAULT_LOCK_WAIT_TIMEOUT,
    Filters,
    GtidFilter,
    RollbackError,
    check_plain,
    check_window,
    parse_datetime,
)

FILE_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$"
IDENT = r"^[^\s`.][^`.]{0,63}$"
TABLE = r"^[^\s`.][^`.]{0,63}\.[^`.]{1,64}$"
MAX_POS = 2**63 - 1


_NULL = {"type": "null"}
_POSITION_FIELDS = ("start_file", "start_position", "stop_file", "stop_position")
_TIME_FIELDS = ("start_datetime", "stop_datetime")


def _none_of(*names: str) -> dict[str, Any]:
    return {name: _NULL for name in names}


# The kinds of range as JSON Schema states them (check_job_request enforces the same rules).
RANGE_KINDS: dict[str, Any] = {
    "oneOf": [
        {
            "title": "by position",
            "required": ["start_file", "start_position"],
            "properties": {
                "start_file": {"type": "string"},
                "start_position": {"type": "integer"},
                **_none_of("gtid_set", *_TIME_FIELDS),
            },
        },
        {
            "title": "by GTID",
            "required": ["gtid_set"],
            "properties": {"gtid_set": {"type": "string"}, **_none_of(*_POSITION_FIELDS, *_TIME_FIELDS)},
        },
        {
            "title": "by time",
            "anyOf": [
                {"required": ["start_datetime"], "properties": {"start_datetime": {"type": "string"}}},
                {"required": ["stop_datetime"], "properties": {"stop_datetime": {"type": "string"}}},
            ],
            "properties": _none_of(*_POSITION_FIELDS, "gtid_set"),
        },
    ]
}

# A job reads a configured server or an upload, exactly one of them.
JOB_SOURCES: dict[str, Any] = {
    "oneOf": [
        {"required": ["server"], "properties": {"server": {"type": "string"}, "upload": _NULL}},
        {"required": ["upload"], "properties": {"upload": {"type": "string"}, "server": _NULL}},
    ]
}


class RangeIn(BaseModel):
    """One of: start_file + start_position [+ stop_file + stop_position], gtid_set, or a time window."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=RANGE_KINDS)

    start_file: str | None = Field(None, pattern=FILE_NAME, examples=["mysql-bin.000042"])
    start_position: int | None = Field(None, ge=4, le=MAX_POS, examples=[4])
    stop_file: str | None = Field(None, pattern=FILE_NAME, examples=["mysql-bin.000042"])
    stop_position: int | None = Field(None, ge=4, le=MAX_POS, examples=[918273])
    gtid_set: str | None = Field(
        None,
        min_length=1,
        max_length=65535,
        description="MySQL GTID set, or MariaDB GTIDs and ranges (0-1-5,0-1-7..0-1-9)",
    )
    start_datetime: str | None = Field(
        None,
        max_length=40,
        description="YYYY-MM-DD HH:MM:SS[+HH:MM]; without an offset: the server's time zone (UTC for uploads)",
    )
    stop_datetime: str | None = Field(None, max_length=40, description="exclusive; same format")


class PicksIn(BaseModel):
    """Precise selection (docs/safety.md): includes add up, excludes win; statement text and `where`
    then narrow to statements and rows."""

    model_config = ConfigDict(extra="forbid")

    include_gtid: str | None = Field(
        None, min_length=1, max_length=65535, description="only transactions with these GTIDs (as gtid_set)"
    )
    exclude_gtid: str | None = Field(None, min_length=1, max_length=65535, description="not these GTIDs")
    include_positions: list[str] = Field(
        default_factory=list,
        max_length=10000,
        description="only the transactions starting at FILE:POS (or POS), as the script's block comments give them",
    )
    exclude_positions: list[str] = Field(default_factory=list, max_length=10000, description="not these")
    exclude_thread_ids: list[int] = Field(
        default_factory=list, max_length=1000, description="not these threads' transactions (MySQL binlogs)"
    )
    include_query: str | None = Field(
        None,
        min_length=1,
        max_length=4096,
        description="only the row changes of statements whose original text matches this regular expression",
    )
    exclude_query: str | None = Field(None, min_length=1, max_length=4096, description="not these statements")
    where: str | None = Field(
        None,
        min_length=1,
        max_length=4096,
        description="only rows whose image satisfies this MySQL expression (an UPDATE: either image)",
        examples=["order_id BETWEEN 100 AND 200 AND status = 'paid'"],
    )


class FiltersIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    databases: list[str] = Field(default_factory=list, max_length=1000)
    tables: list[str] = Field(default_factory=list, max_length=1000, description="db.table")
    types: list[Literal["insert", "update", "delete"]] = Field(default_factory=list, max_length=3)
    thread_id: int | None = Field(None, ge=0, le=2**64 - 1)
    picks: PicksIn | None = Field(
        None, description="precise selection: transactions picked inside the range, rows by a predicate"
    )

    def engine_filters(self) -> Filters:
        """The engine's Filters for these fields."""
        return filters_from(self.model_dump(exclude_none=True))


def filters_from(f: dict[str, Any]) -> Filters:
    """The engine's Filters from a stored job's filters (FiltersIn.model_dump)."""
    p = f.get("picks") or {}
    return Filters(
        set(f.get("databases", [])),
        set(f.get("tables", [])),
        set(f.get("types", [])),
        f.get("thread_id"),
        include_gtid=p.get("include_gtid"),
        exclude_gtid=p.get("exclude_gtid"),
        include_positions=list(p.get("include_positions", [])),
        exclude_positions=list(p.get("exclude_positions", [])),
        exclude_thread_ids=set(p.get("exclude_thread_ids", [])),
        include_query=p.get("include_query"),
        exclude_query=p.get("exclude_query"),
        where=p.get("where"),
    )


class OptionsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    full_where: bool = False
    allow_partial: bool = False
    allow_partial_transactions: bool = Field(
        False,
        description="accept filters.where / include_query / exclude_query, or the databases, tables and "
        "types filters, undoing part of a transaction",
    )
    allow_empty: bool = Field(
        False, description="a range that selects no row change succeeds (otherwise the job fails saying so)"
    )
    trust_schema: bool = Field(
        False,
        description="when the binlog names no columns: accept the schema source as describing the tables at "
        "the range's time, without looking for DDL on them after the range",
    )
    accept_lost_rows: bool = Field(
        False,
        description="write the rollback although TRUNCATE, DROP TABLE or DROP DATABASE in the range destroyed "
        "rows of tables it has no row changes for (refused otherwise; the summary's lost_rows lists them)",
    )
    ddl: Literal["refuse", "keep", "reverse"] = Field(
        "refuse",
        description="DDL on a changed table in the range or after it: refuse; keep today's schema (old rows "
        "written into today's columns by name); reverse (also undo the DDL in the range)",
    )
    schema_server: str | None = Field(
        None, max_length=64, description="a configured server to read table schemas from (upload jobs)"
    )
    net: bool = Field(
        False,
        description="one statement per row: the net effect of the range on each row (what a merge "
        "execution needs)",
    )
    outputs: list[Literal["plan", "changes"]] | None = Field(
        None,
        max_length=2,
        description="what the job writes besides the script: the execution plan and the change log are "
        "otherwise produced when first needed (an execution, GET /api/jobs/{id}/changes)",
    )


class JobCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=JOB_SOURCES)

    server: str | None = Field(
        None, max_length=64, description="a configured server name", examples=["prod1"]
    )
    upload: str | None = Field(
        None, pattern=r"^[0-9a-f]{32}$", description="an upload id (POST /api/uploads)"
    )
    range: RangeIn
    filters: FiltersIn = Field(default_factory=lambda: FiltersIn.model_validate({}))
    mode: Literal["flashback", "forward"] = "flashback"
    options: OptionsIn = Field(default_factory=lambda: OptionsIn.model_validate({}))


def _err(loc: tuple[str | int, ...], msg: str) -> dict[str, Any]:
    return {"loc": ("body", *loc), "msg": msg, "type": "value_error"}


def check_job_request(
    req: JobCreate, servers: dict[str, ServerConfig], upload_files: list[str] | None
) -> list[dict[str, Any]]:
    """Everything that can be checked before the job runs. `upload_files` is None if the upload is unknown."""
    errors: list[dict[str, Any]] = []
    if (req.server is None) == (req.upload is None):
        errors.append(_err(("server",), "give either a configured server or an upload, not both or neither"))
    if req.server is not None and req.server not in servers:
        known = ", ".join(sorted(servers)) or "none configured"
        errors.append(_err(("server",), f"unknown server {req.server!r} (configured: {known})"))
    if req.upload is not None and upload_files is None:
        errors.append(_err(("upload",), f"unknown upload {req.upload!r}"))
    schema_server = req.options.schema_server
    if schema_server is not None and schema_server not in servers:
        errors.append(_err(("options", "schema_server"), f"unknown server {schema_server!r}"))

    r = req.range
    kinds = [
        name
        for name, given in (
            ("position", r.start_file is not None),
            ("gtid", r.gtid_set is not None),
            ("time", r.start_datetime is not None or r.stop_datetime is not None),
        )
        if given
    ]
    if not kinds:
        errors.append(_err(("range",), "give start_file (+ positions), gtid_set, or start/stop_datetime"))
    elif len(kinds) > 1:
        errors.append(_err(("range",), f"give one kind of range, not {' and '.join(kinds)}"))
    if r.start_file is None:
        for name in ("start_position", "stop_file", "stop_position"):
            if getattr(r, name) is not None:
                errors.append(_err(("range", name), f"{name} needs start_file"))
    elif r.start_position is None:
        errors.append(_err(("range", "start_position"), "start_position is required with start_file"))
    if (
        r.start_file is not None
        and r.stop_position is not None
        and r.start_position is not None
        and r.stop_file in (None, r.start_file)
        and r.stop_position < r.start_position
    ):
        errors.append(_err(("range", "stop_position"), "stop_position is before start_position"))
    if (
        r.stop_file is not None
        and r.start_file is not None
        and _log_number(r.stop_file) < _log_number(r.start_file)
    ):
        errors.append(_err(("range", "stop_file"), "stop_file comes before start_file"))
    unplain = set()  # fields with a control character: checked no further (one error per field)
    for name in ("gtid_set", "start_datetime", "stop_datetime"):
        plain = _plain(("range", name), name, getattr(r, name))
        if plain is not None:
            errors.append(plain)
            unplain.add(name)
    if r.gtid_set is not None and "gtid_set" not in unplain:
        try:
            GtidFilter(r.gtid_set)
        except (RollbackError, ValueError) as exc:
            errors.append(_err(("range", "gtid_set"), _one_line(exc)))
    stamps: dict[str, float] = {}
    for name in ("start_datetime", "stop_datetime"):
        value = getattr(r, name)
        if value is None or name in unplain:
            continue
        try:
            stamps[name] = parse_datetime(value)
        except RollbackError as exc:
            errors.append(_err(("range", name), exc.one_line()))
    try:
        check_window(stamps.get("start_datetime"), stamps.get("stop_datetime"))
    except RollbackError:
        errors.append(_err(("range", "stop_datetime"), "stop_datetime is not after start_datetime"))
    try:
        req.filters.engine_filters().check_picks()
    except RollbackError as exc:
        errors.append(_err(("filters", "picks"), _one_line(exc)))
    if upload_files is not None:
        for name in ("start_file", "stop_file"):
            value = getattr(r, name)
            if value is not None and value not in upload_files:
                errors.append(_err(("range", name), f"{value} is not among the uploaded files"))
    if req.server in servers and servers[req.server].binlog_dir is not None:
        directory = servers[req.server].binlog_dir
        assert directory is not None
        for name in ("start_file", "stop_file"):
            value = getattr(r, name)
            if value is not None and not (directory / value).is_file():
                errors.append(_err(("range", name), f"{value} is not a binlog file of server {req.server}"))

    f = req.filters
    for i, db in enumerate(f.databases):
        error = _plain(("filters", "databases", i), "database", db)
        if error is None and not re.match(IDENT, db):
            error = _err(("filters", "databases", i), f"{db!r} is not a database name")
        if error is not None:
            errors.append(error)
    for i, table in enumerate(f.tables):
        error = _plain(("filters", "tables", i), "table", table)
        if error is None and not re.match(TABLE, table):
            error = _err(("filters", "tables", i), f"{table!r} is not db.table")
        if error is not None:
            errors.append(error)
    return errors


def _plain(loc: tuple[str | int, ...], what: str, value: str | None) -> dict[str, Any] | None:
    """The field error of a value holding a control character (it would reach the script's comments)."""
    if value is None:
        return None
    try:
        check_plain(what, value)
    except RollbackError as exc:
        return _err(loc, exc.one_line())
    return None


def _log_number(name: str) -> int:
    suffix = name.rsplit(".", 1)[-1]
    return int(suffix) if suffix.isdigit() else -1


def _one_line(exc: Exception) -> str:
    return exc.one_line() if isinstance(exc, RollbackError) else " ".join(str(exc).split())


# ---- responses ---------------------------------------------------------------------------------------


class ProgressOut(BaseModel):
    bytes: int
    total: int
    events: int
    events_total: int
    percent: float
    phase: str = Field(
        "",
        description="queued, resolving (the range: binlog index, fetch from a server), planning, decoding, "
        "writing (the outputs), or the final state",
    )
    eta_seconds: float | None = Field(
        None,
        description="estimated seconds left for a queued or running job: from its own progress, before that "
        "from its range's size over recent jobs' throughput; null when unknown",
    )


class AppliedOut(BaseModel):
    execution: int
    by: str
    at: datetime


class JobOut(BaseModel):
    id: str
    state: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    created_by: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    mode: str
    source: Literal["server", "upload"]
    server: str | None
    upload: str | None
    range: dict[str, Any]
    range_resolved: dict[str, Any] | None
    filters: dict[str, Any]
    options: dict[str, Any]
    progress: ProgressOut
    rows: int
    transactions: int
    statements: int
    counts: list[dict[str, Any]]
    warnings: list[str]
    irreversible: list[dict[str, Any]]
    error: str | None
    exit_code: int | None = Field(
        None,
        description="what the CLI exits with for the same job: 0 ok, 1 internal error, 2 bad input or refusal, "
        "3 irreversible changes left out, 4 the range selected nothing, 130 cancelled; null until it ends",
    )
    cancel_requested: bool
    script_bytes: int
    applied: AppliedOut | None = Field(
        None, description="the latest execution that committed this job's reversal: by whom, when"
    )
    disk_bytes: int = Field(
        0,
        description="bytes the job's output files take on the service's disk (script, plan, "
        "changes and their indexes; an upload's files count on the upload)",
    )
    links: dict[str, str]


class JobList(BaseModel):
    items: list[JobOut]
    total: int
    limit: int
    offset: int


class SummaryOut(BaseModel):
    id: str
    state: str
    counts: list[dict[str, Any]]
    tables: list[dict[str, Any]]
    transactions: int
    statements: int
    rows: int
    largest_transactions: list[dict[str, Any]]
    warnings: list[str]
    irreversible: list[dict[str, Any]]
    ddl: list[dict[str, Any]]
    server_version: str | None
    row_images: list[str]
    side_effects: dict[str, Any] | None = Field(
        None,
        description="triggers, cascading foreign keys and non-transactional tables the reverse statements "
        "meet at the schema server (null: not checked); every execution checks them again at its target",
    )
    largest_statement: dict[str, Any] | None = Field(
        None,
        description="the largest reverse statement {bytes, table, file, pos} (null: none); an execution refuses "
        "statements larger than its target's max_allowed_packet before running anything",
    )
    schema_check: dict[str, str] | None = Field(
        None, description="where column names came from (source) and how it was checked (checked)"
    )
    engine: dict[str, Any] | None = Field(
        None,
        description="where the partitions ran: {name (local or spark), reason (asked for, or the auto "
        "engine's reason: the range's size), partitions}",
    )
    # Precise selection (filters' picks): see docs/safety.md.
    transactions_list: list[dict[str, Any]] = Field(
        default_factory=list,
        description="the script's transactions {gtid, file, pos, position, time, statements} (the first "
        "500): position is what filters.picks.include_positions takes; statements, the original statements "
        "(where the binlog has them)",
    )
    dependencies: list[dict[str, Any]] | None = Field(
        None,
        description="rows an undone transaction changed that a later, kept transaction changed again "
        "{table, key, selected: {gtid, file, pos}, excluded: {gtid, file, pos}} (the first 1000); "
        "null when the job picked no transactions or rows",
    )
    dependency_count: int = 0
    partial_transactions: list[dict[str, Any]] = Field(
        default_factory=list,
        description="transactions undone in part under options.allow_partial_transactions: {gtid, file, pos, "
        "picked, dropped} when row picks took part of its rows, {gtid, file, pos, left_out} when the table or "
        "type filters left out some of its tables or statement types (the first 1000)",
    )
    ddl_mode: str = Field("refuse", description="what DDL on a changed table did: refuse, keep or reverse")
    lost_rows: list[dict[str, Any]] = Field(
        default_factory=list,
        description="statements of the range that destroyed rows without row events, accepted by "
        "options.accept_lost_rows: {file, pos, sql, tables} (TRUNCATE, DROP TABLE, DROP DATABASE of tables "
        "the range has no row changes for); the rollback does not bring those rows back",
    )
    schema_timelines: list[dict[str, Any]] = Field(
        default_factory=list,
        description="--ddl keep | reverse: per changed table whose definition changed, its definitions in log "
        "order: {table, epochs: [{from, until, table, definition, ddl}]} (which definition applied to which "
        "positions, and the DDL that began it)",
    )


class ExecutionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target: str = Field(..., max_length=64, description="a configured server name")
    dry_run: bool = True
    on_conflict: Literal["abort", "skip"] = "abort"
    accept_triggers: bool = Field(
        False, description="run although the statements fire triggers again (refused otherwise, dry runs too)"
    )
    accept_cascades: bool = Field(
        False, description="commit although foreign keys cascade, or cascaded, to child tables"
    )
    accept_non_transactional: list[Annotated[str, Field(min_length=3, max_length=129)]] = Field(
        default_factory=list,
        max_length=1000,
        description="db.table: commit although a failure cannot roll back these non-transactional tables "
        "(every such table of the plan must be named)",
    )
    per_transaction: bool = Field(
        False, description="commit per original transaction instead of all or nothing"
    )
    lock_wait_timeout: int = Field(
        DEFAULT_LOCK_WAIT_TIMEOUT,
        ge=1,
        le=3600,
        description="seconds a check waits for a row another session holds",
    )
    parallel: int = Field(
        1,
        ge=1,
        le=16,
        description="apply over this many connections whose rows are independent, all or nothing through XA "
        "(not with per_transaction, triggers or non-transactional tables)",
    )
    reapply: bool = Field(
        False,
        description="commit a job whose reversal was already committed (applied) once more; the conflict "
        "check still runs first",
    )
    merge: bool = Field(
        False,
        description="merge: restore only the columns the range changed, keeping later changes to other "
        "columns; rows changed since in the same columns are conflicts, resolved by `resolutions` (a job "
        "with options.net only)",
    )
    resolutions: dict[str, Any] | None = Field(
        None,
        description="with merge: how conflicts are resolved (the resolutions document, docs/execution.md); "
        "absent: the job's stored document (PUT /api/jobs/{id}/resolutions), if any",
    )


class ExecutionProgressOut(BaseModel):
    phase: Literal["check", "apply", "compare"] | None = Field(
        None,
        description="check: a dry run (a dry run execution, or the one a per-transaction commit, a commit "
        "on non-transactional tables or through triggers starts with); apply: the committing pass (a "
        "one-transaction commit is its own dry run: a conflict rolls it back); compare: a conflict check "
        "reading its conflicting rows on the target",
    )
    statements_done: int
    statements_total: int
    percent: float
    rows_applied: int = Field(
        0,
        description="rows the running pass changed so far (in its open transaction until it commits); "
        "at the end, the rows affected",
    )
    rows_per_second: float | None = Field(
        None, description="plan steps a second since the running pass started; null when not running"
    )
    eta_seconds: float | None = Field(
        None, description="estimated seconds left of the running pass, at that rate; null when not known"
    )
    current_transaction: dict[str, Any] | None = Field(
        None, description="the original transaction whose reversal runs now (tx, gtid, file, pos)"
    )


class ExecutionOut(BaseModel):
    id: int
    job_id: str
    target: str
    dry_run: bool
    on_conflict: str
    requested_by: str
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None
    state: Literal[
        "queued", "running", "succeeded", "conflict", "failed", "cancelled", "interrupted", "refused"
    ]
    committed: bool
    statements: int
    rows_affected: int
    skipped: int
    conflicts: list[dict[str, Any]]
    error: str | None
    exit_code: int | None = Field(
        None,
        description="what the CLI exits with for the same execution: 0 ok, 1 internal error, 2 refused, "
        "3 conflict or failed; null while it runs",
    )
    accepted: dict[str, Any]
    side_effects: dict[str, Any] | None
    per_transaction: bool
    transactions_applied: list[dict[str, Any]]
    read_only_tables: list[str]
    unverified: int
    non_transactional_applied: dict[str, int]
    progress: ExecutionProgressOut
    cancel_requested: bool = False
    reapply: bool = False
    check: bool = Field(
        False, description="the web form's conflict check before a commit (a dry run that skips conflicts)"
    )
    parallel: int = Field(1, description="connections the execution applies over (XA when more than one)")
    xa: dict[str, Any] | None = Field(
        None,
        description="a parallel commit's XA record (gtrid, plan digest, decision, partitions), written before "
        "its first XA PREPARE: what a stop between prepare and commit leaves prepared on the target",
    )
    conflict_view: list[dict[str, Any]] | dict[str, Any] = Field(
        default_factory=list,
        description="a check's conflicting rows three ways: `before` and `after` the incident (the change "
        "log's images), `now` on the target (read by key), `changed_since` (columns where now differs from "
        "after); or `{error}` when the target could not be read",
    )
    merge: bool = Field(False, description="a merge execution (see ExecutionCreate.merge)")
    merge_result: dict[str, Any] | None = Field(
        None,
        description="a merge execution's result: restored, kept_later_changes, resolved (per choice), "
        "unresolved; its conflicts (in `conflicts`) each carry before/after/now per column and the "
        "resolution applied; null outside merge mode",
    )
    resolutions: dict[str, Any] | None = Field(
        None, description="the resolutions document a merge execution applied (null: none)"
    )
    links: dict[str, str] = Field(default_factory=dict)


class UploadOut(BaseModel):
    id: str
    files: list[dict[str, Any]]
    total_bytes: int
    created_at: datetime


class ServerOut(BaseModel):
    name: str
    host: str
    port: int
    user: str
    options: str = Field(
        "",
        description="the connection options of its DSN, without their paths (`socket, ssl-mode=VERIFY_CA, ssl-ca`)",
    )
    binlog_dir: str | None
    health: str = Field(
        description="unknown (not asked yet), ok, not answering, or error: as the service's last call to it found it"
    )
    error: str | None = Field(None, description="why it is not ok")


class ErrorOut(BaseModel):
    detail: Any


ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "no valid API token"},
    403: {"model": ErrorOut, "description": "the token's role is too weak"},
}
