"""The line index of a job's files, built by a byte search over the mapped file, against a
line-by-line reading."""

from __future__ import annotations

import random

import pytest

from app.services import artifacts


def _line_starts(data: bytes, stride: int) -> tuple[int, list[int]]:
    lines = data.splitlines(keepends=True)
    starts, pos = [], 0
    for number, line in enumerate(lines):
        if number % stride == 0:
            starts.append(pos)
        pos += len(line)
    return len(lines), starts


@pytest.mark.parametrize("seed", range(40))
def test_the_index_names_every_strideth_line_start(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    stride = rng.choice([1, 3, 7, 1000])
    monkeypatch.setattr(artifacts, "STRIDE", stride)
    data = b"".join(b"x" * rng.randint(0, 30) + b"\n" for _ in range(rng.randint(0, 2500)))
    data += b"last line without newline" * rng.randint(0, 1)
    path = tmp_path / "file.sql"
    path.write_bytes(data)
    lines = artifacts.build_line_index(path)
    total, offsets = artifacts._read_index(path)
    assert (total, list(offsets)) == _line_starts(data, stride) and lines == total
    if total:
        middle = total // 2
        assert (
            list(artifacts.iter_lines(path, middle, 3)) == data.splitlines(keepends=True)[middle : middle + 3]
        )
