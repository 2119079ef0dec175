"""Typed errors of the engine. Each renders as one clear line for the user."""

from __future__ import annotations

# Exit codes, the same for the CLI, the service's job and execution records and the web pages
# (docs/safety.md lists them).
EXIT_OK = 0
EXIT_INTERNAL = 1  # a bug: one line, never a traceback
EXIT_REFUSED = 2  # bad input, or a refusal that names its overriding flag
EXIT_INCOMPLETE = 3  # irreversible changes left out (--allow-partial), conflicts, a failed execution
EXIT_EMPTY = 4  # the range selected no row change (unless --allow-empty)
EXIT_DIFFERS = 5  # verify: after the rollback, a table differs from its expected state
EXIT_INTERRUPTED = 130  # interrupted, or cancelled


class RollbackError(Exception):
    """Base of every error the engine reports to a user (CLI exit 2/3, HTTP 4xx)."""

    exit_code = EXIT_REFUSED

    def one_line(self) -> str:
        return " ".join(str(self).split())


class BinlogFormatError(RollbackError):
    """Bytes that are not a valid binlog: names the file, the byte offset and the reason."""

    def __init__(self, path: str | None, offset: int | None, reason: str, data: bytes | None = None):
        self.path = path
        self.offset = offset
        self.reason = reason
        self.data = data  # raw bytes of the offending event, when known (never printed whole)
        where = path or "<bytes>"
        at = f" at offset {offset}" if offset is not None else ""
        super().__init__(f"{where}{at}: {reason}")


class UnsupportedEvent(BinlogFormatError):
    """An event we recognise but cannot decode (encryption, pre-GA row events)."""


class RangeError(RollbackError):
    """A requested range that does not exist or is not valid (stop before start, purged file...)."""


class SchemaMismatch(RollbackError):
    """The schema we were given disagrees with the table map in the binlog."""


class IrreversibleChange(RollbackError):
    """Row changes that cannot be restored from the images the binlog holds."""

    exit_code = EXIT_INCOMPLETE


class ConflictError(RollbackError):
    """Rows changed since the incident: applying the rollback would clobber newer data."""

    exit_code = EXIT_INCOMPLETE


class SourceError(RollbackError):
    """A server or file source that cannot deliver (privileges, connectivity, settings)."""


class DDLInRange(RollbackError):
    """DDL on a table with row changes inside the range: the schema changed mid-range."""


class SavepointError(RollbackError):
    """A ROLLBACK TO SAVEPOINT whose savepoint the binlog does not show: which rows it undid is unknown."""


class UndecidedTransaction(RollbackError):
    """An XA transaction prepared in the range whose XA COMMIT or XA ROLLBACK is not in it."""


class EmptyRange(RollbackError):
    """The range and filters selected no row change (exit 4 unless --allow-empty)."""

    exit_code = EXIT_EMPTY


class PartialTransaction(RollbackError):
    """A row pick (--where, --include-query/--exclude-query) or a table or type filter (-d, -t,
    --sql-type) takes only part of a transaction: refused unless --allow-partial-transactions accepts it."""


class NetRefused(RollbackError):
    """--net cannot write a net script for the range: a table without a row key, images without every
    column, or net statements no order can execute (one line: table, position, the full script)."""


class SchemaUnproven(SchemaMismatch):
    """A schema source matched by position that may not describe the table as the binlog wrote it
    (DDL on the table after the range, or no way to look): --trust-schema accepts it."""


class SparkFailure(RollbackError):
    """Spark could not run a partition's task after its retries (a node that cannot read a file, an
    executor Python without the package, a lost executor): the executor's own error, on one line."""

    exit_code = EXIT_INTERNAL
