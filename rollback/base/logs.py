"""Log lines of the CLI and the service, through the standard `logging` module and structlog.

Human-readable by default (`time LEVEL logger: message key=value`); with MYSQL_ROLLBACK_LOG_FORMAT=json
one JSON object per line. Whatever is bound with `structlog.contextvars` (the service binds
`request_id` per HTTP request, `job_id` and `execution_id` in its workers) is a field of every line
logged while it is bound, whichever library logged it (uvicorn's access log included).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from rollback.base.errors import RangeError

LOG_FORMAT_ENV = "MYSQL_ROLLBACK_LOG_FORMAT"
LOG_LEVEL_ENV = "MYSQL_ROLLBACK_LOG_LEVEL"
LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("debug", "info", "warning", "error")
DEFAULT_LOG_FORMAT = "text"
DEFAULT_LOG_LEVEL = "info"

_HANDLER_NAME = "mysql-rollback"


class LogSettingError(RangeError):
    """MYSQL_ROLLBACK_LOG_FORMAT or _LOG_LEVEL holds a value we do not know (exit 2, one line)."""


def log_settings(environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(format, level) from the environment, checked; the defaults when unset."""
    env = os.environ if environ is None else environ
    fmt = (env.get(LOG_FORMAT_ENV) or DEFAULT_LOG_FORMAT).strip().lower()
    level = (env.get(LOG_LEVEL_ENV) or DEFAULT_LOG_LEVEL).strip().lower()
    if fmt not in LOG_FORMATS:
        raise LogSettingError(f"{LOG_FORMAT_ENV} must be one of {', '.join(LOG_FORMATS)} (got {fmt!r})")
    if level not in LOG_LEVELS:
        raise LogSettingError(f"{LOG_LEVEL_ENV} must be one of {', '.join(LOG_LEVELS)} (got {level!r})")
    return fmt, level


def _text_line(_logger: Any, _name: str, event: dict[str, Any]) -> str:
    head = f"{event.pop('timestamp', '')} {str(event.pop('level', '')).upper()} {event.pop('logger', '')}:"
    message = str(event.pop("event", ""))
    extra = ", ".join(f"{key}={value}" for key, value in sorted(event.items()))
    return f"{head} {message}" + (f" ({extra})" if extra else "")


class _StandardError(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever `sys.stderr` is when a line is written (a CLI run inside a test, whose
    captured stream is gone afterwards, must not leave a handler on it)."""

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


def _structlog_formatter(fmt: str) -> logging.Formatter:
    """The formatter of our handler (and structlog configured to feed it): imports structlog."""
    import structlog

    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Any
    if fmt == "json":
        shared.append(structlog.processors.dict_tracebacks)
        renderer = structlog.processors.JSONRenderer()
    else:
        shared.append(structlog.processors.format_exc_info)
        renderer = _text_line
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    )


class _OnFirstRecord(logging.Formatter):
    """Builds the structlog formatter when the first record is written: a command that logs nothing
    (a plain `mysql-rollback flashback FILE`) never imports structlog and rich (60 ms)."""

    def __init__(self, fmt: str) -> None:
        super().__init__()
        self._fmt_name = fmt
        self._real: logging.Formatter | None = None

    def format(self, record: logging.LogRecord) -> str:
        if self._real is None:
            self._real = _structlog_formatter(self._fmt_name)
        return self._real.format(record)


def configure_logging(
    stream: TextIO | None = None, environ: Mapping[str, str] | None = None, deferred: bool = False
) -> str:
    """Route every log record of this process to `stream` (standard error) in the configured format;
    returns the format. Called again, it replaces its own handler (never adds a second one).
    `deferred`: structlog is loaded and configured at the first record written (the CLI's commands
    use the standard `logging` module only; the service binds structlog's contextvars and wants it
    configured at once)."""
    fmt, level = log_settings(environ)
    formatter = _OnFirstRecord(fmt) if deferred else _structlog_formatter(fmt)
    handler = logging.StreamHandler(stream) if stream is not None else _StandardError()
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # py4j (the JVM bridge) reports every connection at INFO: the JVM stays off the terminal
    logging.getLogger("py4j").setLevel(max(logging.WARNING, root.level))
    logging.getLogger("alembic.runtime.plugins").setLevel(max(logging.WARNING, root.level))
    return fmt
