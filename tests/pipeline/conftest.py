"""Fixtures of the pipeline tests: the corpus files with row events, one SparkSession per test run."""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

CORPUS = REPO.parent / "shared" / "corpus"
_ROW = re.compile(r"^\| \d+ \| ([^|]+?) \| `([^`]+)`( \(gunzipped\))? \| (\d+) \|.*\|$")


def corpus_with_rows() -> list[str]:
    """Corpus files (relative paths) whose INDEX.md histogram shows rows events, smallest first."""
    index = CORPUS / "INDEX.md"
    if not index.exists():
        return []
    found = []
    for line in index.read_text(encoding="utf-8").splitlines():
        m = _ROW.match(line)
        if m and "_ROWS" in line:
            rel = f"{m.group(1).replace('/', '__')}/{m.group(2)}"
            if (CORPUS / rel).exists():
                found.append((int(m.group(4)), rel))
    return [rel for _size, rel in sorted(found)]


@pytest.fixture(scope="session")
def corpus_file(corpus_dir, tmp_path_factory):
    """rel path -> a local binlog file (gunzipped when the corpus keeps it compressed)."""
    unzipped = tmp_path_factory.mktemp("corpus-gunzipped")

    def get(rel: str) -> Path:
        path = corpus_dir / rel
        if path.suffix == ".gz":
            target = unzipped / path.name[: -len(".gz")]
            if not target.exists():
                target.write_bytes(gzip.decompress(path.read_bytes()))
            return target
        return path

    return get


@pytest.fixture(scope="session")
def spark() -> Any:
    """The process's SparkSession, started once for the whole test run and reused by every test."""
    from rollback.pipeline.session import get_spark

    return get_spark()
