"""The shared corpus of real binlogs (../shared/corpus or $MYSQL_ROLLBACK_CORPUS) and its INDEX.md table."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("MYSQL_ROLLBACK_CORPUS", REPO.parent / "shared" / "corpus")).resolve()

_ROW = re.compile(
    r"^\| (\d+) \| ([^|]+?) \| `([^`]+)`( \(gunzipped\))? \| (\d+) \| ([^|]*?) \| ([^|]*?) \| ([^|]*?) "
    r"\| (\d+) \| ([^|]*?) \| ([^|]*?) \|$"
)


@dataclass(frozen=True)
class Entry:
    """One row of INDEX.md."""

    number: int
    repo: str
    path: str
    gunzipped: bool
    size: int
    server_version: str
    checksum: str
    events: int
    histogram: str
    extras: str

    @property
    def rel(self) -> str:
        return f"{self.repo.replace('/', '__')}/{self.path}"


def index_entries() -> list[Entry]:
    """Every file INDEX.md lists. A missing corpus is an error at collection, never an empty (skipped) suite."""
    index = CORPUS / "INDEX.md"
    if not index.exists():
        raise RuntimeError(f"binlog corpus not found at {CORPUS} (set MYSQL_ROLLBACK_CORPUS)")
    entries = []
    for line in index.read_text(encoding="utf-8").splitlines():
        m = _ROW.match(line)
        if m:
            entries.append(
                Entry(
                    int(m[1]), m[2], m[3], bool(m[4]), int(m[5]), m[6], m[8], int(m[9]), m[10], m[11].strip()
                )
            )
    return entries


def corpus_with_rows() -> list[str]:
    """Corpus files (relative paths) whose INDEX.md histogram shows rows events, smallest first."""
    found = [(e.size, e.rel) for e in index_entries() if "_ROWS" in e.histogram and (CORPUS / e.rel).exists()]
    return [rel for _size, rel in sorted(found)]
