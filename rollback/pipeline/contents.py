"""What a range's files hold, said when the range and filters select no row change.

An empty result is refused (exit 4, unless --allow-empty) with what was searched and what is there:
the first and last transaction with row changes (GTID, time in UTC), and the tables with their rows
events per type, from the partitions' summaries. A table filter that names no table gets a hint.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Iterable

from rollback.pipeline.parts import Summary

TABLES_LISTED = 20


def _when(tx: tuple[str | None, int]) -> str:
    gtid, stamp = tx
    at = _utc(stamp) if stamp else "time -"
    return f"gtid {gtid or '-'} at {at}"


def _utc(stamp: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(stamp)) + " UTC"


def held(summaries: Iterable[Summary], times: list[int]) -> str:
    """One clause: the row changes the partitions saw, selected or not (`times`: the range's event
    timestamps, said when there are none)."""
    contents: Counter[tuple[str, str]] = Counter()
    first = last = None
    for summary in summaries:
        contents.update(summary.contents)
        if summary.first_tx is not None:
            first = first or summary.first_tx
            last = summary.last_tx
    if not contents or first is None or last is None:
        span = f" (its events are from {_utc(min(times))} to {_utc(max(times))})" if times else ""
        return f"the files hold no row changes in that range{span}"
    tables: dict[str, dict[str, int]] = defaultdict(dict)
    for (table, kind), events in sorted(contents.items()):
        tables[table][kind] = events
    listed = [
        f"{table} ({', '.join(f'{kind} {n}' for kind, n in kinds.items())})"
        for table, kinds in list(tables.items())[:TABLES_LISTED]
    ]
    more = f" and {len(tables) - TABLES_LISTED} more" if len(tables) > TABLES_LISTED else ""
    return (
        f"the files hold {sum(contents.values())} rows event(s) from {_when(first)} to {_when(last)}, "
        f"on {', '.join(listed)}{more}"
    )


_CASE = "names differ in case, and the server compares them exactly (lower_case_table_names=0)"


def table_hints(
    wanted: Iterable[str], databases: Iterable[str], tables: Iterable[str], case_sensitive: bool = False
) -> list[str]:
    """'did you mean db.table?' for each table filter that names no table with changes (`tables`: the
    names with changes, as the binlog spells them)."""
    fold = (lambda s: s) if case_sensitive else str.lower
    present = {fold(t) for t in tables}
    hints = []
    for name in sorted(wanted):
        if fold(name) in present:
            continue
        other_case = sorted(t for t in tables if t.lower() == name.lower())
        if other_case:
            hints.append(
                f"table filter {name} names no table with changes: did you mean {' or '.join(other_case)}? ({_CASE})"
            )
            continue
        bare = name.rsplit(".", 1)[-1].lower()
        matches = sorted(t for t in present if t.rsplit(".", 1)[-1].lower() == bare)
        if matches:
            hints.append(
                f"table filter {name} names no table with changes: did you mean {' or '.join(matches)}?"
            )
        elif "." not in name:
            hints.append(f"table filter {name} names no table: give it as database.table")
        else:
            hints.append(f"table filter {name} names no table with changes")
    dbs = {t.split(".", 1)[0] for t in present}
    for d in sorted(databases):
        if fold(d) in dbs:
            continue
        other_case = sorted({t.split(".", 1)[0] for t in tables if t.split(".", 1)[0].lower() == d.lower()})
        if other_case:
            hints.append(
                f"database filter {d} names no database with changes: did you mean {' or '.join(other_case)}? ({_CASE})"
            )
        else:
            hints.append(f"database filter {d} names no database with changes")
    return hints
