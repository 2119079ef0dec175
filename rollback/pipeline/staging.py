"""Binlogs made readable by every node of a Spark cluster: staged into the job's work dir.

On a cluster the executors run on other machines and cannot read the driver's files. A binlog given
as a plain local path is therefore copied into the work dir (`--work-dir`, MYSQL_ROLLBACK_WORK_DIR),
which must be storage every node reads at the same path (a shared mount) or a Hadoop-compatible URL
(`s3a://`, `hdfs://`, through fsspec). A local work dir gets a sparse copy holding only the bytes of
the range, at their own offsets; a URL gets the whole file. A binlog given as a URL (`file://` on
shared storage included) is taken as readable everywhere and read in place.

What is staged is created readable by all (directory 0755, files 0644): executors may run as another
user. The caller removes it when the job ends (`Staged.remove`).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import uuid
from typing import Any

from rollback.base.errors import RangeError
from rollback.pipeline import storage
from rollback.pipeline.plan import Partition

_CHUNK = 8 << 20


def needs_staging(part: Partition) -> bool:
    """A binlog named by a plain local path (not a URL): only the driver is known to read it."""
    return "://" not in part.path and storage.is_local(part.location)


class Staged:
    """The partitions, their locations readable by every node; `remove` deletes the copies."""

    def __init__(self, partitions: list[Partition], work_dir: str | None, master: str):
        self.directory: str | None = None
        local = sorted({p.location for p in partitions if needs_staging(p)})
        if local and not work_dir:
            raise RangeError(
                f"with the Spark master {master} the executors cannot read this machine's files "
                f"({os.path.basename(local[0])}): give --work-dir (MYSQL_ROLLBACK_WORK_DIR) on storage "
                "every node reads, where the binlogs are copied, or the binlogs as URLs every node reads "
                "(file:// on shared storage, s3a://, hdfs://)"
            )
        moved: dict[str, str] = {}
        if local:
            assert work_dir is not None
            self.directory = _join(work_dir, f".mysql-rollback-stage-{uuid.uuid4().hex}")
            _make_dir(self.directory)
            for index, location in enumerate(local):
                spans = [(p.start, p.end) for p in partitions if p.location == location]
                target = _join(self.directory, f"{index:03d}-{os.path.basename(location)}")
                _copy(location, target, min(a for a, _ in spans), max(b for _, b in spans))
                moved[location] = target
        self.partitions = [
            dataclasses.replace(p, location=moved[p.location]) if p.location in moved else p
            for p in partitions
        ]

    def remove(self) -> None:
        if self.directory is None:
            return
        if storage.is_local(self.directory):
            shutil.rmtree(storage.local_path(self.directory), ignore_errors=True)
        else:
            fs, _, paths = storage.fsspec_fs(self.directory)
            fs.rm(paths[0], recursive=True)


def _join(base: str, name: str) -> str:
    return f"{base.rstrip('/')}/{name}" if "://" in base else os.path.join(base, name)


def _make_dir(path: str) -> None:
    if storage.is_local(path):
        os.makedirs(storage.local_path(path))
        os.chmod(storage.local_path(path), 0o755)  # not mkdtemp's 0700: executors may be another user
        return
    fs, _, paths = storage.fsspec_fs(path)
    fs.makedirs(paths[0], exist_ok=True)


def _copy(source: str, target: str, start: int, end: int) -> None:
    """Bytes [start, end) of a local binlog, at their own offsets: the FORMAT_DESCRIPTION and
    everything else the partitions' descriptors already carry are not needed by a worker."""
    with open(source, "rb") as src:
        size = src.seek(0, 2)
        if storage.is_local(target):
            with open(storage.local_path(target), "wb") as dst:
                dst.truncate(size)  # a sparse file: the holes cost no disk
                _copy_span(src, dst, start, end)
            os.chmod(storage.local_path(target), 0o644)
            return
        fs, _, paths = storage.fsspec_fs(target)
        with fs.open(paths[0], "wb") as dst:
            _copy_span(src, dst, 0, size)  # object stores write whole files


def _copy_span(src: Any, dst: Any, start: int, end: int) -> None:
    src.seek(start)
    if start:
        dst.seek(start)
    left = end - start
    while left > 0:
        data = src.read(min(_CHUNK, left))
        if not data:
            break
        dst.write(data)
        left -= len(data)
