"""Fixtures of the pipeline tests: the corpus files with row events, one SparkSession per test run."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest


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
