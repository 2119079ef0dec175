"""Binlog files of a range must be consecutive files of one log, in log order: checked, not assumed.

A file given twice, files out of order, or a file missing in between would make the job undo some
changes twice or silently leave some out. What tells the order, strongest first:

* the ROTATE event that ends a file names the file that follows it;
* numbered names (`mysql-bin.000042`) of one base follow each other by one;
* when names tell nothing (renamed copies, uploads), the GTIDs: a file's GTID_LIST (MariaDB) or
  PREVIOUS_GTIDS (MySQL) is the GTID state before it, which is the state before the previous
  file plus the GTIDs that file holds.

When none of these can tell, the job goes on with a warning.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from rollback.base.errors import RangeError
from rollback.binlog import events as ev
from rollback.binlog.gtid import GtidSet

_NUMBERED = re.compile(r"^(?P<base>.+)\.(?P<number>\d+)$")


@dataclass
class FileTrail:
    """What one file says about its place in the log, gathered while the planner walks it."""

    label: str  # the file's base name
    identity: str  # its absolute path when local, else the URL
    next_file: str | None = None  # named by the ROTATE that ends the file
    maria_before: dict[tuple[int, int], int] | None = None  # GTID_LIST: (domain, server) -> seq
    maria_after: dict[tuple[int, int], int] = field(default_factory=dict)
    mysql_before: GtidSet | None = None  # PREVIOUS_GTIDS
    mysql_seen: list[tuple[str, str, int, int]] = field(default_factory=list)

    def event(self, event: object, ends_file: bool) -> None:
        """Take what an event of the file says (the planner calls it for every decoded event)."""
        if isinstance(event, ev.MariaGtid):
            self.maria_after[(event.domain_id, event.server_id)] = event.seq_no
        elif isinstance(event, ev.Gtid):
            if not event.anonymous:
                self.mysql_seen.append((event.uuid, event.tag, event.gno, event.gno))
        elif isinstance(event, ev.Rotate):
            self.next_file = event.next_file if ends_file else self.next_file
        elif isinstance(event, ev.GtidList) and self.maria_before is None:
            self.maria_before = {(d, s): q for d, s, q in event.gtids}
            self.maria_after = {**self.maria_before, **self.maria_after}
        elif isinstance(event, ev.PreviousGtids) and self.mysql_before is None:
            self.mysql_before = event.gtid_set

    def state_before(self) -> dict[tuple[int, int], int] | GtidSet | None:
        return self.maria_before if self.maria_before is not None else self.mysql_before

    def state_after(self) -> dict[tuple[int, int], int] | GtidSet | None:
        if self.maria_before is not None:
            return self.maria_after
        if self.mysql_before is not None:
            return self.mysql_before | GtidSet(self.mysql_seen)
        return None


def _numbered(label: str) -> tuple[str, int] | None:
    match = _NUMBERED.match(label)
    return (match.group("base"), int(match.group("number"))) if match else None


def _state_text(state: dict[tuple[int, int], int] | GtidSet | None) -> str:
    if isinstance(state, dict):
        return ",".join(f"{d}-{s}-{q}" for (d, s), q in sorted(state.items())) or "none"
    return str(state) or "none"


def _expected(trails: list[FileTrail]) -> str:
    """The order the files should be given in, when their names tell it."""
    numbered = [_numbered(t.label) for t in trails]
    if all(numbered) and len({n[0] for n in numbered if n}) == 1:
        base = numbered[0][0] if numbered[0] else ""
        width = len(_NUMBERED.match(trails[0].label).group("number"))  # type: ignore[union-attr]
        numbers = sorted({n[1] for n in numbered if n})
        full = range(numbers[0], numbers[-1] + 1)
        return ", ".join(f"{base}.{number:0{width}d}" for number in full)
    return ""


def _refuse(problem: str, trails: list[FileTrail]) -> RangeError:
    expected = _expected(trails)
    hint = f"; give them in log order, every file once: {expected}" if expected else ""
    return RangeError(f"binlog files: {problem}{hint}")


def check_order(trails: list[FileTrail]) -> list[str]:
    """Raise RangeError when the files are not consecutive files in log order; warnings for the pairs
    whose order nothing in the files can confirm."""
    warnings = []
    seen: dict[str, str] = {}
    for trail in trails:
        if trail.identity in seen or trail.label in seen.values():
            raise _refuse(f"{trail.label} is given twice", trails)
        seen[trail.identity] = trail.label
    for before, after in zip(trails, trails[1:], strict=False):
        verdict = _follows(before, after)
        if verdict is None:
            warnings.append(
                f"nothing in {before.label} and {after.label} tells whether {after.label} follows "
                f"{before.label} in the log (no ROTATE at the end, no numbered names, no GTIDs): "
                "make sure the files are given in log order"
            )
        elif verdict:
            raise _refuse(verdict, trails)
    return warnings


def _follows(before: FileTrail, after: FileTrail) -> str | None:
    """ "" when `after` follows `before`, a description of the problem when it does not, None when
    nothing can tell."""
    named = _numbered(after.label)
    if before.next_file is not None:
        if before.next_file == after.label:
            return ""
        target = _numbered(before.next_file)
        if target is not None and named is not None and target[0] == named[0]:
            return _misplaced(before.label, before.next_file, after.label, target[1], named[1])
    else:
        mine = _numbered(before.label)
        if mine is not None and named is not None and mine[0] == named[0]:
            if named[1] == mine[1] + 1:
                return ""
            width = len(before.label) - len(mine[0]) - 1
            expected = f"{mine[0]}.{mine[1] + 1:0{width}d}"
            return _misplaced(before.label, expected, after.label, mine[1] + 1, named[1])
    then, now = before.state_after(), after.state_before()
    if then is None or now is None or type(then) is not type(now) or not (then or now):
        return None
    if then == now:
        return ""
    return (
        f"{after.label} does not follow {before.label}: the GTIDs logged before it ({_state_text(now)}) "
        f"are not those at the end of {before.label} ({_state_text(then)})"
    )


def _misplaced(before: str, expected: str, given: str, expected_number: int, given_number: int) -> str:
    if given_number > expected_number:
        return f"{expected} is missing between {before} and {given} (its changes would be left out)"
    return f"{given} is given after {before}, but {expected} follows {before}"


def identity(path: str, is_local: bool) -> str:
    return os.path.realpath(path) if is_local else path
