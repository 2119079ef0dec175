"""The binlog corpora of the conformance tests, each one folder and its INDEX.md table.

* The vendored set, tests/corpus: always there, it is the default lane.
* The extended corpus, the folder MYSQL_ROLLBACK_CORPUS names (CI: ../shared/corpus): when given, the
  same conformance tests run over every file it lists too, as a second lane.
* The seed documents, the folder MYSQL_ROLLBACK_SEEDS names (CI: ../shared/seeds): web pages with hex
  dumps of single events. Their bytes are transcribed in tests/vectors; only the test marked `seeds`
  reads the documents, to check the transcription.

Both corpora lay files out the same way (`<owner>__<repo>/<path in that repository>`), so a test names
a file once, whichever lane reads it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from tests.support import REPO

CORPUS_ENV = "MYSQL_ROLLBACK_CORPUS"
SEEDS_ENV = "MYSQL_ROLLBACK_SEEDS"
MARIADB_OUT = "_mariadb-binlog-output"
BINLOG_MAGIC = b"\xfebin"

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


@dataclass(frozen=True)
class Corpus:
    """A folder of binlogs and the facts its INDEX.md states about each one."""

    lane: str  # "vendored" or "extended": the prefix of the test ids
    root: Path

    @cached_property
    def entries(self) -> list[Entry]:
        """Every file INDEX.md lists. A missing index is an error at collection, never an empty suite."""
        index = self.root / "INDEX.md"
        if not index.is_file():
            raise RuntimeError(f"{self.lane} binlog corpus has no INDEX.md at {self.root}")
        entries = []
        for line in index.read_text(encoding="utf-8").splitlines():
            m = _ROW.match(line)
            if m:
                entries.append(
                    Entry(
                        int(m[1]),
                        m[2],
                        m[3],
                        bool(m[4]),
                        int(m[5]),
                        m[6],
                        m[8],
                        int(m[9]),
                        m[10],
                        m[11].strip(),
                    )
                )
        return entries

    def path(self, rel: str) -> Path:
        return self.root / rel

    def has(self, rel: str) -> bool:
        return self.path(rel).exists()

    def id(self, rel: str) -> str:
        return f"{self.lane}:{rel}"

    def with_rows(self) -> list[str]:
        """Files (relative paths) whose INDEX.md histogram shows rows events, smallest first."""
        found = [(e.size, e.rel) for e in self.entries if "_ROWS" in e.histogram and self.has(e.rel)]
        return [rel for _size, rel in sorted(found)]

    def binlogs(self) -> list[Path]:
        """Every file of the folder that starts with the binlog magic, whether INDEX.md lists it or not."""
        return sorted(
            path
            for path in self.root.rglob("*")
            if path.is_file()
            and path.relative_to(self.root).parts[0] != MARIADB_OUT
            and path.open("rb").read(4) == BINLOG_MAGIC
        )

    def mariadb_output(self, rel: str) -> Path:
        """What `mariadb-binlog -vv` printed for the file."""
        return self.root / MARIADB_OUT / f"{rel}.txt"


def _given(variable: str) -> Path | None:
    value = os.environ.get(variable, "").strip()
    if not value:
        return None
    path = Path(value).expanduser().resolve()
    if not path.is_dir():
        raise RuntimeError(f"{variable}={value}: no such folder")
    return path


VENDORED = Corpus("vendored", REPO / "tests" / "corpus")
_extended_root = _given(CORPUS_ENV)
EXTENDED: Corpus | None = Corpus("extended", _extended_root) if _extended_root else None
# The lanes every conformance test runs over: the vendored set, then the extended corpus when given.
LANES: list[Corpus] = [VENDORED, *([EXTENDED] if EXTENDED else [])]
SEEDS: Path | None = _given(SEEDS_ENV)


def locate(rel: str) -> Path:
    """A file of one test: the vendored copy, or the extended corpus's when only that one has it (such a
    test is marked `extended`, so it runs only when the extended corpus is given)."""
    for lane in LANES:
        if lane.has(rel):
            return lane.path(rel)
    raise FileNotFoundError(f"corpus file {rel} is neither vendored nor in {CORPUS_ENV}")


def lanes_and(items_of) -> list[tuple[Corpus, str]]:
    """(lane, item) for every lane and every item `items_of(lane)` returns for it, for parametrize."""
    return [(lane, item) for lane in LANES for item in items_of(lane)]


def lane_ids(pairs: list[tuple[Corpus, str]]) -> list[str]:
    return [lane.id(item) for lane, item in pairs]


# The after images of blackbeam__rust_mysql_common/test-data/binlogs/json-opaque.binlog (MySQL 9.0.1) as
# MySQL prints them. ORACLES.md writes {"d":"123.456"} and {"e":"9.00"}, opaque DECIMALs in quotes, as
# rust_mysql_common's serde value shows them. MySQL does not quote them: wrapper_to_string() in
# sql-common/json_dom.cc prints J_DECIMAL (an opaque value of field type NEWDECIMAL) with decimal2string()
# and no quotes, while J_DATE/J_TIME/J_DATETIME/J_TIMESTAMP are quoted and other opaque values become the
# quoted "base64:typeNN:..." string; SELECT prints {"d": 123.456}. The source wins: numbers here.
JSON_OPAQUE_AS_MYSQL_PRINTS = [
    '{"a": "base64:type15:VQ=="}',
    '{"b": "2012-03-18"}',
    '{"c": "2012-03-18 11:30:45.000000"}',
    '{"c": "87:31:46.654321"}',
    '{"d": 123.456}',
    '{"e": 9.00}',
    '{"e": [0, 1, true, false]}',
    '{"e": null}',
]
