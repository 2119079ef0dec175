"""Which transactions and DDL a job selects: its filters, GTIDs and time window, per transaction."""

from __future__ import annotations

from rollback.binlog.decode import TxContext
from rollback.errors import RangeError
from rollback.request import Filters, GtidFilter


class Selection:
    def __init__(self, filters: Filters, gtid: GtidFilter | None, since: float | None, until: float | None):
        self.filters = filters
        self.gtid = gtid
        self.since = since
        self.until = until

    def transaction(self, tx: TxContext, file_label: str) -> bool:
        """Whether the range's GTIDs, time window and thread filter take the transaction in."""
        if not self.ddl(tx.gtid, tx.timestamp):
            return False
        thread_id = self.filters.thread_id
        if thread_id is not None and tx.thread_id is None:
            # MariaDB writes a GTID event, not a BEGIN query, before row-based transactions: no thread id.
            raise RangeError(
                f"--thread-id cannot select: the transaction at {file_label}:{tx.begin_pos} "
                f"(gtid {tx.gtid or '-'}) has no thread id in the binlog (MariaDB records none for "
                "row-based transactions); select by --gtid or by time instead"
            )
        return not (thread_id is not None and tx.thread_id != thread_id)

    def ddl(self, gtid: str | None, timestamp: int) -> bool:
        """Whether the range's GTIDs or time window take a DDL in (thread and table filters do not:
        a DDL changes the table whoever runs it)."""
        if self.gtid is not None and not self.gtid.selects(gtid):
            return False
        if self.since is not None and timestamp < self.since:
            return False
        return not (self.until is not None and timestamp >= self.until)
