"""Which transactions, statements, rows and DDL a job selects: its filters, GTIDs and time window,
and the precise picks of `Filters` (transactions by GTID, position, thread and statement text; rows
by a `--where` predicate over their images)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rollback.base.errors import RangeError
from rollback.binlog.decode import TxContext
from rollback.request.spec import Filters, GtidFilter, parse_pattern, parse_position
from rollback.schema.tables import TableSchema

if TYPE_CHECKING:
    from rollback.request.predicate import Predicate, RowTest


class Selection:
    def __init__(self, filters: Filters, gtid: GtidFilter | None, since: float | None, until: float | None):
        self.filters = filters
        self.gtid = gtid
        self.since = since
        self.until = until
        self.include_gtid = GtidFilter(filters.include_gtid) if filters.include_gtid else None
        self.exclude_gtid = GtidFilter(filters.exclude_gtid) if filters.exclude_gtid else None
        self.include_at = [parse_position(p) for p in filters.include_positions]
        self.exclude_at = [parse_position(p) for p in filters.exclude_positions]
        self.include_query = (
            parse_pattern("--include-query", filters.include_query) if filters.include_query else None
        )
        self.exclude_query = (
            parse_pattern("--exclude-query", filters.exclude_query) if filters.exclude_query else None
        )
        self.predicate: Predicate | None = None
        if filters.where:
            from rollback.request.predicate import Predicate  # sqlglot: only for a --where

            self.predicate = Predicate(filters.where)
        self._tests: dict[int, RowTest] = {}
        # The last transaction judged: a TxContext lives for one transaction, judged at its first rows event.
        self._last_tx: TxContext | None = None
        self._last_verdict = False

    def transaction(self, tx: TxContext, file_label: str) -> bool:
        """Whether the range's GTIDs and time window and the transaction picks take the transaction in:
        --include-gtid and --include-position add up (either takes it in), excludes win; its
        statements' text is judged per statement (`statement`)."""
        if tx is not self._last_tx:
            self._last_verdict = self._transaction(tx, file_label)
            self._last_tx = tx
        return self._last_verdict

    def _transaction(self, tx: TxContext, file_label: str) -> bool:
        if not self.ddl(tx.gtid, tx.timestamp):
            return False
        filters = self.filters
        thread_id = filters.thread_id
        if (thread_id is not None or filters.exclude_thread_ids) and tx.thread_id is None:
            # MariaDB writes a GTID event, not a BEGIN query, before row-based transactions: MariaDB 10
            # logs no thread id for them (11.x puts it in the GTID event: binlog/events.py MariaGtid).
            flag = "--thread-id" if thread_id is not None else "--exclude-thread-id"
            raise RangeError(
                f"{flag} cannot select: the transaction at {file_label}:{tx.begin_pos} "
                f"(gtid {tx.gtid or '-'}) has no thread id in the binlog (MariaDB before 11 records none for "
                "row-based transactions); select by --gtid or by time instead"
            )
        if thread_id is not None and tx.thread_id != thread_id:
            return False
        if tx.thread_id in filters.exclude_thread_ids:
            return False
        at = (file_label, tx.begin_pos)
        if self.exclude_gtid is not None and self.exclude_gtid.selects(tx.gtid):
            return False
        if _at(self.exclude_at, at):
            return False
        if self.include_gtid is None and not self.include_at:
            return True
        if self.include_gtid is not None and self.include_gtid.selects(tx.gtid):
            return True
        return _at(self.include_at, at)

    def statement(self, tx: TxContext, file_label: str) -> bool:
        """Whether the statement being read is taken by --include-query / --exclude-query."""
        if self.include_query is None and self.exclude_query is None:
            return True
        text = tx.rows_query
        if text is None:
            raise RangeError(
                f"--include-query/--exclude-query cannot select: the transaction at {file_label}:{tx.begin_pos} "
                f"(gtid {tx.gtid or '-'}) has no original statement text in the binlog "
                "(binlog_rows_query_log_events / binlog_annotate_row_events were off)"
            )
        if self.exclude_query is not None and self.exclude_query.search(text):
            return False
        return self.include_query is None or self.include_query.search(text) is not None

    def row_test(self, schema: TableSchema) -> RowTest | None:
        """The --where test of a table's images (None without --where)."""
        if self.predicate is None:
            return None
        test = self._tests.get(id(schema))
        if test is None:
            test = self._tests[id(schema)] = self.predicate.bind(
                f"{schema.database}.{schema.table}", schema.columns
            )
        return test

    @staticmethod
    def row_selected(test: RowTest, kind: str, row: Any, where: str) -> bool:
        """Whether --where takes a row change: the inserted or deleted image, or for an UPDATE either
        image (the row as it was or as it became)."""
        from rollback.request.predicate import MissingColumn, selects

        try:
            if kind == "update":
                before, after = row
                return selects(test(before)) or selects(test(after))
            return selects(test(row))
        except MissingColumn as exc:
            raise RangeError(
                f"--where cannot judge the {kind} at {where}: column {exc.column} is not in its row image "
                "(binlog_row_image MINIMAL or NOBLOB)"
            ) from None

    def ddl(self, gtid: str | None, timestamp: int) -> bool:
        """Whether the range's GTIDs or time window take a DDL in (thread and table filters do not:
        a DDL changes the table whoever runs it)."""
        if self.gtid is not None and not self.gtid.selects(gtid):
            return False
        if self.since is not None and timestamp < self.since:
            return False
        return not (self.until is not None and timestamp >= self.until)


def _at(positions: Sequence[tuple[str | None, int]], at: tuple[str, int | None]) -> bool:
    label, pos = at
    return any(p == pos and (name is None or name == label) for name, p in positions)
