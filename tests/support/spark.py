"""Fixtures of the pipeline tests: the corpus files with row events, one SparkSession per test run."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

from tests.support.corpus import Corpus, locate


@pytest.fixture(scope="session")
def corpus_file(tmp_path_factory):
    """(rel path, lane = the vendored copy, else the extended one) -> a local binlog file, gunzipped when
    the corpus keeps it compressed."""
    unzipped = tmp_path_factory.mktemp("corpus-gunzipped")

    def get(rel: str, lane: Corpus | None = None) -> Path:
        path = lane.path(rel) if lane else locate(rel)
        if path.suffix == ".gz":
            target = unzipped / (lane.lane if lane else "any") / path.name[: -len(".gz")]
            target.parent.mkdir(exist_ok=True)
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
