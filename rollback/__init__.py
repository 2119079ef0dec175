"""mysql-rollback engine: decode binlogs, invert row changes, render and apply reverse SQL.

This package is the engine's one door: the service (app/) and the CLI import engine names only
from here. `__all__` is the stable list of those names; docs/ARCHITECTURE.md says what each is for.
Importing the package loads no Spark and opens no connection.
"""

from rollback.binlog.events import gtid_of
from rollback.binlog.reader import BinlogFile
from rollback.decode_files import file_records
from rollback.dsn import Dsn, DsnError, parse_dsn, redact
from rollback.errors import (
    EXIT_INCOMPLETE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REFUSED,
    ConflictError,
    RangeError,
    RollbackError,
    SourceError,
)
from rollback.execute import (
    DEFAULT_LOCK_WAIT_TIMEOUT,
    ExecutionCancelled,
    ExecutionConflict,
    ExecutionFailed,
    ExecutionObserver,
    ExecutionProgress,
    ExecutionRefused,
    connect,
    execute_plan,
)
from rollback.hotpath import describe as hot_path
from rollback.job import Job, generate
from rollback.logs import configure_logging
from rollback.pipeline.session import spark_status
from rollback.pipeline.storage import missing_local_files
from rollback.records import record_json, record_text
from rollback.render_text import check_plain
from rollback.report import Progress, ProgressCallback, Report
from rollback.request import (
    AUTO_SPARK_BYTES,
    DEFAULT_ENGINE,
    EngineKind,
    Filters,
    GtidFilter,
    Options,
    RangeSpec,
    check_server_range,
    check_window,
    parse_datetime,
    parse_engine,
)
from rollback.schema import SchemaSource, ServerSchema, schema_from_file
from rollback.side_effects import SideEffects
from rollback.sources.resolve import ServerSource, default_spool_dir, resolve_server_range
from rollback.sources.spool import MANIFEST_SUFFIX
from rollback.target_rows import RowNow, rows_now
from rollback.version import __version__

__all__ = [
    # the request
    "RangeSpec",
    "Filters",
    "Options",
    "EngineKind",
    "AUTO_SPARK_BYTES",
    "DEFAULT_ENGINE",
    "GtidFilter",
    "parse_datetime",
    "parse_engine",
    "check_window",
    "check_server_range",
    "check_plain",
    "missing_local_files",
    # the job
    "Job",
    "generate",
    "Progress",
    "ProgressCallback",
    "Report",
    "spark_status",
    "file_records",
    "record_json",
    "record_text",
    # sources and schemas
    "SchemaSource",
    "ServerSchema",
    "schema_from_file",
    "ServerSource",
    "default_spool_dir",
    "resolve_server_range",
    "MANIFEST_SUFFIX",
    # binlog facts read without decoding (the service's checks of uploaded files)
    "BinlogFile",
    "gtid_of",
    # servers and execution
    "Dsn",
    "DsnError",
    "parse_dsn",
    "redact",
    "connect",
    "execute_plan",
    "DEFAULT_LOCK_WAIT_TIMEOUT",
    "ExecutionConflict",
    "ExecutionFailed",
    "ExecutionRefused",
    "ExecutionObserver",
    "ExecutionProgress",
    "ExecutionCancelled",
    "SideEffects",
    "rows_now",
    "RowNow",
    # errors and exit codes
    "RollbackError",
    "RangeError",
    "SourceError",
    "ConflictError",
    "EXIT_OK",
    "EXIT_INTERNAL",
    "EXIT_REFUSED",
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    # log lines of the CLI and the service (text, or JSON with MYSQL_ROLLBACK_LOG_FORMAT=json)
    "configure_logging",
    "__version__",
    "hot_path",
]
