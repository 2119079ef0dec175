"""mysql-rollback engine: decode binlogs, invert row changes, render and apply reverse SQL.

This package is the engine's one door: the service (app/) and the CLI import engine names only
from here. `__all__` is the stable list of those names; docs/ARCHITECTURE.md says what each is for.
Importing the package loads no Spark and opens no connection.

The names load on first use (a module `__getattr__`, PEP 562): `import rollback` imports nothing
else, and a command pays only for the modules of the names it uses (a plain `mysql-rollback
flashback FILE` never imports the execution, the schema-history or the service's modules). The
imports under TYPE_CHECKING are the same names for type checkers and for the import-graph test;
`_WHERE` says where each lives at run time (tests/unit/test_import_graph.py holds the two and
`__all__` to the same names).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rollback.base.dsn import (
        DEFAULT_CONNECT_TIMEOUT,
        DEFAULT_HOST,
        DEFAULT_READ_TIMEOUT,
        DEFAULT_WRITE_TIMEOUT,
        ConnectionOptions,
        Dsn,
        DsnError,
        build_dsn,
        host_port,
        interrupt_thread,
        kill_queries,
        parse_dsn,
        redact,
    )
    from rollback.base.errors import (
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
    from rollback.base.hotpath import describe as hot_path
    from rollback.base.logs import configure_logging
    from rollback.base.render_text import check_plain
    from rollback.base.version import __version__
    from rollback.binlog.events import gtid_of
    from rollback.binlog.reader import BinlogFile
    from rollback.job.report import Progress, ProgressCallback, Report
    from rollback.job.run import Job, generate
    from rollback.pipeline.engines.spark import SparkEngine
    from rollback.pipeline.session import spark_status
    from rollback.pipeline.storage import missing_local_files
    from rollback.pipeline.warm import warm_spark
    from rollback.render.decode_files import file_records
    from rollback.render.records import record_json, record_text
    from rollback.request.spec import (
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
        parse_size,
    )
    from rollback.schema.side_effects import SideEffects
    from rollback.schema.tables import SchemaSource, ServerSchema, schema_from_file
    from rollback.sources.resolve import ServerSource, default_spool_dir, resolve_server_range
    from rollback.sources.spool import MANIFEST_SUFFIX
    from rollback.target.execute import (
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
    from rollback.target.parallel import default_record_dir as default_xa_record_dir
    from rollback.target.parallel import execute_parallel
    from rollback.target.parallel import read_records as read_xa_records
    from rollback.target.parallel import recover as recover_xa
    from rollback.target.resolutions import CONFLICT_CHOICES, Resolutions, ResolutionsError, parse_resolutions
    from rollback.target.rows import RowNow, rows_now

# door name -> (module, name in it)
_WHERE: dict[str, tuple[str, str]] = {
    "gtid_of": ("rollback.binlog.events", "gtid_of"),
    "BinlogFile": ("rollback.binlog.reader", "BinlogFile"),
    "file_records": ("rollback.render.decode_files", "file_records"),
    "ConnectionOptions": ("rollback.base.dsn", "ConnectionOptions"),
    "build_dsn": ("rollback.base.dsn", "build_dsn"),
    "host_port": ("rollback.base.dsn", "host_port"),
    "Dsn": ("rollback.base.dsn", "Dsn"),
    "DsnError": ("rollback.base.dsn", "DsnError"),
    "parse_dsn": ("rollback.base.dsn", "parse_dsn"),
    "redact": ("rollback.base.dsn", "redact"),
    "DEFAULT_CONNECT_TIMEOUT": ("rollback.base.dsn", "DEFAULT_CONNECT_TIMEOUT"),
    "DEFAULT_HOST": ("rollback.base.dsn", "DEFAULT_HOST"),
    "DEFAULT_READ_TIMEOUT": ("rollback.base.dsn", "DEFAULT_READ_TIMEOUT"),
    "DEFAULT_WRITE_TIMEOUT": ("rollback.base.dsn", "DEFAULT_WRITE_TIMEOUT"),
    "interrupt_thread": ("rollback.base.dsn", "interrupt_thread"),
    "kill_queries": ("rollback.base.dsn", "kill_queries"),
    "EXIT_INCOMPLETE": ("rollback.base.errors", "EXIT_INCOMPLETE"),
    "EXIT_INTERNAL": ("rollback.base.errors", "EXIT_INTERNAL"),
    "EXIT_INTERRUPTED": ("rollback.base.errors", "EXIT_INTERRUPTED"),
    "EXIT_OK": ("rollback.base.errors", "EXIT_OK"),
    "EXIT_REFUSED": ("rollback.base.errors", "EXIT_REFUSED"),
    "ConflictError": ("rollback.base.errors", "ConflictError"),
    "RangeError": ("rollback.base.errors", "RangeError"),
    "RollbackError": ("rollback.base.errors", "RollbackError"),
    "SourceError": ("rollback.base.errors", "SourceError"),
    "DEFAULT_LOCK_WAIT_TIMEOUT": ("rollback.target.execute", "DEFAULT_LOCK_WAIT_TIMEOUT"),
    "ExecutionCancelled": ("rollback.target.execute", "ExecutionCancelled"),
    "ExecutionConflict": ("rollback.target.execute", "ExecutionConflict"),
    "ExecutionFailed": ("rollback.target.execute", "ExecutionFailed"),
    "ExecutionObserver": ("rollback.target.execute", "ExecutionObserver"),
    "ExecutionProgress": ("rollback.target.execute", "ExecutionProgress"),
    "ExecutionRefused": ("rollback.target.execute", "ExecutionRefused"),
    "connect": ("rollback.target.execute", "connect"),
    "execute_plan": ("rollback.target.execute", "execute_plan"),
    "execute_parallel": ("rollback.target.parallel", "execute_parallel"),
    "CONFLICT_CHOICES": ("rollback.target.resolutions", "CONFLICT_CHOICES"),
    "Resolutions": ("rollback.target.resolutions", "Resolutions"),
    "ResolutionsError": ("rollback.target.resolutions", "ResolutionsError"),
    "parse_resolutions": ("rollback.target.resolutions", "parse_resolutions"),
    "recover_xa": ("rollback.target.parallel", "recover"),
    "read_xa_records": ("rollback.target.parallel", "read_records"),
    "default_xa_record_dir": ("rollback.target.parallel", "default_record_dir"),
    "hot_path": ("rollback.base.hotpath", "describe"),
    "Job": ("rollback.job.run", "Job"),
    "generate": ("rollback.job.run", "generate"),
    "configure_logging": ("rollback.base.logs", "configure_logging"),
    "SparkEngine": ("rollback.pipeline.engines.spark", "SparkEngine"),
    "spark_status": ("rollback.pipeline.session", "spark_status"),
    "missing_local_files": ("rollback.pipeline.storage", "missing_local_files"),
    "warm_spark": ("rollback.pipeline.warm", "warm_spark"),
    "record_json": ("rollback.render.records", "record_json"),
    "record_text": ("rollback.render.records", "record_text"),
    "check_plain": ("rollback.base.render_text", "check_plain"),
    "Progress": ("rollback.job.report", "Progress"),
    "ProgressCallback": ("rollback.job.report", "ProgressCallback"),
    "Report": ("rollback.job.report", "Report"),
    "AUTO_SPARK_BYTES": ("rollback.request.spec", "AUTO_SPARK_BYTES"),
    "parse_size": ("rollback.request.spec", "parse_size"),
    "DEFAULT_ENGINE": ("rollback.request.spec", "DEFAULT_ENGINE"),
    "EngineKind": ("rollback.request.spec", "EngineKind"),
    "Filters": ("rollback.request.spec", "Filters"),
    "GtidFilter": ("rollback.request.spec", "GtidFilter"),
    "Options": ("rollback.request.spec", "Options"),
    "RangeSpec": ("rollback.request.spec", "RangeSpec"),
    "check_server_range": ("rollback.request.spec", "check_server_range"),
    "check_window": ("rollback.request.spec", "check_window"),
    "parse_datetime": ("rollback.request.spec", "parse_datetime"),
    "parse_engine": ("rollback.request.spec", "parse_engine"),
    "SchemaSource": ("rollback.schema.tables", "SchemaSource"),
    "ServerSchema": ("rollback.schema.tables", "ServerSchema"),
    "schema_from_file": ("rollback.schema.tables", "schema_from_file"),
    "SideEffects": ("rollback.schema.side_effects", "SideEffects"),
    "ServerSource": ("rollback.sources.resolve", "ServerSource"),
    "default_spool_dir": ("rollback.sources.resolve", "default_spool_dir"),
    "resolve_server_range": ("rollback.sources.resolve", "resolve_server_range"),
    "MANIFEST_SUFFIX": ("rollback.sources.spool", "MANIFEST_SUFFIX"),
    "RowNow": ("rollback.target.rows", "RowNow"),
    "rows_now": ("rollback.target.rows", "rows_now"),
    "__version__": ("rollback.base.version", "__version__"),
}

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
    "parse_size",
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
    "SparkEngine",
    "spark_status",
    "warm_spark",
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
    "ConnectionOptions",
    "Dsn",
    "build_dsn",
    "host_port",
    "DsnError",
    "parse_dsn",
    "redact",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_HOST",
    "DEFAULT_READ_TIMEOUT",
    "DEFAULT_WRITE_TIMEOUT",
    "interrupt_thread",
    "kill_queries",
    "connect",
    "execute_plan",
    "execute_parallel",
    # merge execution (issue 28): the resolutions document of its conflicts
    "Resolutions",
    "ResolutionsError",
    "parse_resolutions",
    "CONFLICT_CHOICES",
    "recover_xa",
    "read_xa_records",
    "default_xa_record_dir",
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


def __getattr__(name: str) -> Any:
    """A door name's value, imported on first use and kept in the package's namespace after."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'rollback' has no attribute {name!r}")
    module, attribute = where
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
