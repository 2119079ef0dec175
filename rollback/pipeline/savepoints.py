"""Row changes a transaction logged and then undid itself: ROLLBACK TO SAVEPOINT, and ROLLBACK.

A server truncates its transaction cache to the savepoint when it can. When the transaction also
changed a non-transactional table it cannot, and the binlog keeps the rows events logged after the
SAVEPOINT followed by a `ROLLBACK TO` query: those rows never persisted (the non-transactional
changes, which did, are written as groups of their own under ROW format). Their undo must not be
emitted. The planner sees every QUERY event of a file, so it finds these spans ("voids") and hands
each partition the ones that overlap it; a partition skips the rows events inside them.

Positions compare as (outer position, position inside a TRANSACTION_PAYLOAD): an event outside a
payload has its own position twice, so both kinds order as the server wrote them.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

Key = tuple[int, int]
Void = tuple[int, int, int, int]  # the rows events strictly between (outer, inner) and (outer, inner)

_STATEMENT = re.compile(
    r"(?is)^(SAVEPOINT|ROLLBACK(?:\s+WORK)?\s+TO(?:\s+SAVEPOINT)?|RELEASE\s+SAVEPOINT)\s+"
    r"(`(?:[^`]|``)*`|[^\s;]+)"
)
_COMMENT = re.compile(r"(?s)^\s*(?:/\*.*?\*/\s*)*")


def parse(sql: str) -> tuple[str, str] | None:
    """(action, name) of a savepoint statement: action savepoint | rollback_to | release."""
    match = _STATEMENT.match(sql[_COMMENT.match(sql).end() :])  # type: ignore[union-attr]
    if match is None:
        return None
    verb = match.group(1).upper()
    action = (
        "savepoint" if verb == "SAVEPOINT" else "release" if verb.startswith("RELEASE") else "rollback_to"
    )
    name = match.group(2)
    if name.startswith("`"):
        name = name[1:-1].replace("``", "`")
    return action, name


def name_key(name: str) -> str:
    """Savepoint names compare as the server's system collation does (utf8_general_ci): without case
    and accents."""
    decomposed = unicodedata.normalize("NFKD", name)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


@dataclass(slots=True)
class Undo:
    """What a ROLLBACK TO (or ROLLBACK) undid: the void, and what the notes say about it."""

    void: Void
    savepoint: str | None  # the savepoint's name; None for a whole-transaction ROLLBACK
    savepoint_pos: int | None
    rows_events: int  # rows events of the range inside the void


@dataclass
class SavepointTracker:
    """The savepoints of the transaction being read, and the rows events of the range since each."""

    tx: Any = None  # the TxContext they belong to (identity)
    points: list[tuple[str, str, Key, int]] = field(default_factory=list)  # (key, name, position, rows)
    rows: int = 0  # rows events of the range in the transaction so far

    def _follow(self, tx: Any) -> None:
        if tx is not self.tx:
            self.tx, self.points, self.rows = tx, [], 0

    def rows_event(self, tx: Any, count: int = 1) -> None:
        self._follow(tx)
        self.rows += count

    def query(self, tx: Any, sql: str, kind: str, at: Key) -> Undo | str | None:
        """Apply a SAVEPOINT / ROLLBACK TO / RELEASE / ROLLBACK query at position `at`. Returns the
        Undo of a rollback, the name of a ROLLBACK TO savepoint that is not in the transaction, or None."""
        self._follow(tx)
        if kind == "ROLLBACK":
            begin = tx.begin_pos if tx.begin_pos is not None else at[0]
            undo = Undo((begin, begin, *at), None, None, self.rows)
            self.points, self.rows = [], 0
            return undo
        parsed = parse(sql)
        if parsed is None:
            return None
        action, name = parsed
        key = name_key(name)
        found = next((i for i in range(len(self.points) - 1, -1, -1) if self.points[i][0] == key), None)
        if action == "savepoint":
            if found is not None:
                del self.points[found]
            self.points.append((key, name, at, self.rows))
            return None
        if found is None:
            return name if action == "rollback_to" else None
        if action == "release":
            del self.points[found:]
            return None
        _key, saved_name, saved_at, rows_then = self.points[found]
        del self.points[found + 1 :]
        undone = self.rows - rows_then
        self.points[found] = (_key, saved_name, saved_at, self.rows)
        return Undo((*saved_at, *at), saved_name, saved_at[0], undone)


def merged(voids: list[Void]) -> list[Void]:
    """Voids sorted and merged into disjoint spans (nested rollbacks overlap)."""
    out: list[Void] = []
    for void in sorted(voids):
        if out and (void[0], void[1]) < (out[-1][2], out[-1][3]):
            last = out[-1]
            if (void[2], void[3]) > (last[2], last[3]):
                out[-1] = (last[0], last[1], void[2], void[3])
            continue
        out.append(void)
    return out


def overlapping(voids: list[Void], start: int, end: int) -> list[Void]:
    """The voids with rows events in outer positions [start, end)."""
    return [v for v in voids if v[2] >= start and v[0] < end]


class VoidSet:
    """Membership of a rows event's position in disjoint, sorted voids."""

    def __init__(self, voids: list[Void]):
        self.starts = [(v[0], v[1]) for v in voids]
        self.voids = voids

    def __bool__(self) -> bool:
        return bool(self.voids)

    def covers(self, outer: int, inner: int) -> bool:
        key = (outer, inner)
        i = bisect.bisect_left(self.starts, key) - 1
        if i < 0:
            return False
        v = self.voids[i]
        return (v[0], v[1]) < key < (v[2], v[3])


# ---- XA: a prepared transaction's outcome is an event of its own, later ------------------------------

_XA = re.compile(
    r"(?is)^XA\s+(START|BEGIN|END|COMMIT|ROLLBACK)\s+(.+?)\s*"
    r"(?:ONE\s+PHASE|SUSPEND(?:\s+FOR\s+MIGRATE)?|JOIN|RESUME)?\s*;?\s*$"
)


@dataclass(slots=True)
class XaEvent:
    """An XA statement of the range: END closes the transaction's rows (which begin at its group's
    start: MariaDB writes no XA START event, its GTID event carries the xid), COMMIT or ROLLBACK (in a
    group of its own) decides them."""

    file_index: int
    pos: int
    label: str
    verb: str  # START | END | COMMIT | ROLLBACK
    xid: str  # as the server logs it: X'...',X'...',N
    gtid: str | None
    begin: int  # where its transaction group begins


def xa_event(file_index: int, pos: int, label: str, sql: str, gtid: str | None, begin: int) -> XaEvent | None:
    found = _XA.match(_COMMENT.sub("", sql, count=1))
    if found is None:
        return None
    verb = found.group(1).upper()
    xid = "".join(found.group(2).split())
    return XaEvent(file_index, pos, label, "START" if verb == "BEGIN" else verb, xid, gtid, begin)


def xa_outcomes(events: list[XaEvent]) -> tuple[dict[int, list[Void]], list[str], list[XaEvent]]:
    """From the range's XA statements in log order: (per file index, the voids of the transactions an
    XA ROLLBACK of the range undid; notes for the job's warnings; the XA ENDs of transactions whose
    outcome the range does not hold). A transaction prepared before the range has no rows in it."""
    voids: dict[int, list[Void]] = {}
    notes: list[str] = []
    prepared: dict[str, XaEvent] = {}
    for event in events:
        if event.verb == "END":
            prepared[event.xid] = event
        elif event.verb in ("COMMIT", "ROLLBACK"):
            end = prepared.pop(event.xid, None)
            where = f"{event.label}:{event.pos}"
            if end is None:
                if event.verb == "COMMIT":
                    notes.append(
                        f"{where}: XA COMMIT {event.xid} commits a transaction prepared before the range: "
                        "its changes are not in this rollback"
                    )
                continue
            if event.verb == "ROLLBACK":
                voids.setdefault(end.file_index, []).append((end.begin, end.begin, end.pos, end.pos))
                notes.append(
                    f"{where}: XA ROLLBACK {event.xid} undid the transaction (gtid {end.gtid or '-'}) "
                    f"prepared at {end.label}:{end.begin}: its changes never persisted and are left out"
                )
    return voids, notes, list(prepared.values())
