"""Does the range a job asks for exist in its uploaded files? Answered at submit from headers only.

Positions against file sizes; a time window against the first and last event times; GTIDs against
the GTID events (the only bodies decoded, by the engine's own GTID decoders). Field errors in the
shape of a 422.
"""

from __future__ import annotations

import struct
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rollback import BinlogFile, GtidFilter, RollbackError, gtid_of, parse_datetime


def _error(field: str, msg: str) -> dict[str, Any]:
    return {"loc": ("body", "range", field), "msg": msg, "type": "value_error"}


def _selected(names: list[str], requested: dict[str, Any]) -> list[str]:
    """The files the range reads, as sources.resolve_upload picks them."""
    first = names.index(requested["start_file"]) if requested.get("start_file") in names else 0
    last = names.index(requested["stop_file"]) if requested.get("stop_file") in names else len(names) - 1
    if requested.get("start_file") and not requested.get("stop_file") and requested.get("stop_position"):
        last = first
    return names[first : last + 1]


class _Scan:
    """First and last event time of the files, and whether a GTID the filter selects is among them."""

    def __init__(self, paths: list[Path], gtids: GtidFilter | None):
        self.first_ts: int | None = None
        self.last_ts: int | None = None
        self.gtid_found = False
        self.gtids_seen: list[str] = []
        for path in paths:
            self._file(path, gtids)

    def _file(self, path: Path, gtids: GtidFilter | None) -> None:
        if path.stat().st_size == 0:
            return
        with BinlogFile(path) as binlog:
            for event in binlog.events(verify=False):
                ts = event.timestamp
                if ts:
                    self.first_ts = ts if self.first_ts is None else min(self.first_ts, ts)
                    self.last_ts = ts if self.last_ts is None else max(self.last_ts, ts)
                if gtids is not None and not self.gtid_found:
                    gtid = gtid_of(event, binlog.facts)
                    if gtid is not None:
                        if len(self.gtids_seen) < 2:
                            self.gtids_seen.append(gtid)
                        else:
                            self.gtids_seen[1] = gtid
                        self.gtid_found = gtids.selects(gtid)


def check_upload_range(directory: Path, names: list[str], requested: dict[str, Any]) -> list[dict[str, Any]]:
    """Field errors for a range that is not in the uploaded files (an empty list when it may be)."""
    if not names or any(requested.get(k) and requested[k] not in names for k in ("start_file", "stop_file")):
        return []  # unknown file names are reported by the request check
    files = _selected(names, requested)
    errors = []
    start_file = requested.get("start_file") or files[0]
    stop_file = requested.get("stop_file") or files[-1]
    for field, name in (("start_position", start_file), ("stop_position", stop_file)):
        position = requested.get(field)
        if position is None:
            continue
        size = (directory / name).stat().st_size
        if position > size:
            errors.append(_error(field, f"position {position} is past the end of {name} ({size} bytes)"))
    since, until = requested.get("start_datetime"), requested.get("stop_datetime")
    gtid_text = requested.get("gtid_set")
    if errors or not (since or until or gtid_text):
        return errors
    try:
        scan = _Scan([directory / n for n in files], GtidFilter(gtid_text) if gtid_text else None)
    except (RollbackError, OSError, ValueError, struct.error):
        return []  # an unreadable file fails the job with the reader's own message
    if gtid_text and not scan.gtid_found:
        held = " .. ".join(scan.gtids_seen) if scan.gtids_seen else "no GTIDs"
        errors.append(
            _error("gtid_set", f"no GTID of {gtid_text} is in the uploaded files (they hold {held})")
        )
    if (since or until) and scan.first_ts is not None and scan.last_ts is not None:
        start = parse_datetime(since) if since else None
        stop = parse_datetime(until) if until else None
        held = f"events from {_utc(scan.first_ts)} to {_utc(scan.last_ts)}"
        if start is not None and start > scan.last_ts:
            errors.append(
                _error("start_datetime", f"{since} is after the last event of the uploaded files ({held})")
            )
        if stop is not None and stop <= scan.first_ts:
            errors.append(
                _error("stop_datetime", f"{until} is before the first event of the uploaded files ({held})")
            )
    return errors


def _utc(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
