"""The execution plan's lines (the --plan file, JSON lines) of one rows event.

Each line is what json.dumps(..., ensure_ascii=False) writes, built from prepared pieces: the line's
head and tail are the same for every row of the event. The compiled core writes the same lines from
`head` and `tail` (sql.FullImageStatements.plan and its compiled twin).
"""

from __future__ import annotations

import json

_encode_string = json.encoder.encode_basestring  # the C encoder json.dumps(ensure_ascii=False) uses


def json_string(value: str | None) -> str:
    return "null" if value is None else _encode_string(value)


class PlanLines:
    __slots__ = ("_head", "_tail")

    def __init__(self, file: str | None, pos: int, table: str | None, tx_ordinal: int, gtid: str | None):
        self._head = f'{{"file": {json_string(file)}, "pos": {pos}, "table": {json_string(table)}, '
        self._tail = f', "tx": {tx_ordinal}, "gtid": {json_string(gtid)}, "sql": '

    @property
    def head(self) -> bytes:
        """What every line starts with, as UTF-8."""
        return self._head.encode("utf-8")

    @property
    def tail(self) -> bytes:
        """What comes between a line's check and its statement, as UTF-8."""
        return self._tail.encode("utf-8")

    def forward(self, kind: str, sql: str) -> str:
        """A forward statement (`sql` mode): no check."""
        return f'{self._head}"type": "{kind}", "check": null, "expect": null{self._tail}{json_string(sql)}}}'

    def reverse(self, row: int, kind: str, check: str | None, expect: int | None, sql: str) -> str:
        """A reverse statement with the check that the row is still as the binlog left it."""
        return (
            f'{self._head}"row": {row}, "type": "{kind}", "check": {json_string(check)}, '
            f'"expect": {expect}{self._tail}{json_string(sql)}}}'
        )
