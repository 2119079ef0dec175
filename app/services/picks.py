"""Transactions of a finished job's script, for the web page's tick boxes (precise selection).

The script's block comments (`-- transaction gtid=G file=F pos=A-B time=T UTC ...`) name every
transaction it undoes; a re-generation takes the ticked ones by their start position (FILE:A), the
`filters.picks.include_positions` of the API.
"""

from __future__ import annotations

import mmap
import re
from pathlib import Path
from typing import Any

TRANSACTIONS_LISTED = 500  # tick boxes on the job page; past that, picks go through the form or the API

_MARK = b"\n-- transaction "  # a block comment's line start
_ORIGINAL = "-- original: "
_BLOCK = re.compile(
    r"^-- transaction gtid=(?P<gtid>\S+) file=(?P<file>\S+) pos=(?P<pos>\d+)-(?P<end>\d+) time=(?P<time>.+?) UTC"
)


def script_transactions(script: Path, limit: int = TRANSACTIONS_LISTED) -> list[dict[str, Any]]:
    """The script's transactions in script order (newest first for a flashback), up to `limit`.
    The block comments are found with a byte search over the mapped file: the statements between
    them (nearly all of a script) are never split into lines."""
    found: list[dict[str, Any]] = []
    if script.stat().st_size == 0:
        return found
    with open(script, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        at = 0 if data[: len(_MARK) - 1] == _MARK[1:] else data.find(_MARK)
        while at >= 0 and len(found) < limit:
            start = at if at == 0 and data[0:1] == b"-" else at + 1
            end = data.find(b"\n", start)
            line = data[start : end if end >= 0 else len(data)].decode("utf-8", "replace")
            m = _BLOCK.match(line)
            if m is not None:
                found.append(
                    {
                        "gtid": None if m["gtid"] == "-" else m["gtid"],
                        "file": m["file"],
                        "pos": int(m["pos"]),
                        "position": f"{m['file']}:{m['pos']}",
                        "time": m["time"],
                        "statements": _originals(data, end),
                    }
                )
            at = data.find(_MARK, start + 1)
    return found


def _originals(data: mmap.mmap, at: int) -> list[str]:
    """The `-- original:` lines (the statements as the client sent them) after a block's first line."""
    found: list[str] = []
    while at >= 0 and data[at + 1 : at + 3] == b"--":
        end = data.find(b"\n", at + 1)
        line = data[at + 1 : end if end >= 0 else len(data)].decode("utf-8", "replace")
        if line.startswith(_ORIGINAL):
            found.append(line[len(_ORIGINAL) :])
        at = end
    return found


def regenerated_body(job: Any, ticked: list[str]) -> dict[str, Any]:
    """The API body of a job like `job` that undoes only the ticked transactions (FILE:POS each)."""
    filters = dict(job.filters or {})
    picks = dict(filters.get("picks") or {})
    picks["include_positions"] = ticked
    picks.pop("include_gtid", None)  # the ticks name the transactions: GTID includes would add others
    filters["picks"] = picks
    return {
        "server": job.server,
        "upload": job.upload_id,
        "range": job.range_requested or {},
        "filters": filters,
        "mode": job.mode,
        "options": job.options or {},
    }
