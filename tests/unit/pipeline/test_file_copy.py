"""rollback.pipeline.file_copy: pieces gathered into writev batches and byte ranges copied by the
kernel land at the descriptor's position, the same bytes as a plain write; a system without
copy_file_range gets them through memory."""

from __future__ import annotations

import errno
import os

import pytest

from rollback.pipeline import file_copy


def test_more_pieces_than_one_writev_takes_are_written_in_order(tmp_path):
    pieces = [f"{i};".encode() * (i % 7) for i in range(3 * file_copy.WRITEV_PIECES + 5)]
    out = tmp_path / "out"
    with open(out, "wb", buffering=0) as f:
        f.write(b"head|")
        file_copy.write_pieces(f.fileno(), pieces)
        f.write(b"|end")
    assert out.read_bytes() == b"head|" + b"".join(pieces) + b"|end"


def test_pieces_and_a_piece_past_one_writes_worth_of_bytes_are_written_in_order(tmp_path):
    size = file_copy.WRITE_BYTES
    pieces = [bytes([i]) * (size // 3 + i) for i in range(10)] + [b"", b"x" * (5 * size // 2), b"last"]
    out = tmp_path / "out"
    with open(out, "wb", buffering=0) as f:
        file_copy.write_pieces(f.fileno(), pieces)
    assert out.read_bytes() == b"".join(pieces)


@pytest.mark.parametrize("kernel", [True, False], ids=["copy_file_range", "through memory"])
def test_ranges_copied_land_at_the_descriptors_position(tmp_path, monkeypatch, kernel):
    if not kernel:

        def refused(*args: object) -> int:
            raise OSError(errno.EXDEV, "cross-device copy")

        monkeypatch.setattr(os, "copy_file_range", refused)
        monkeypatch.setattr(file_copy, "WRITE_BYTES", 1000)  # several reads per range
    source = tmp_path / "source"
    data = os.urandom(1 << 20)
    source.write_bytes(data)
    ranges = [(0, 10), (5000, 300_000), (10, 0), ((1 << 20) - 7, 7), (123, 4567)]
    out = tmp_path / "out"
    with open(source, "rb") as src, open(out, "wb", buffering=0) as dst:
        for offset, length in ranges:
            dst.write(b"-")
            file_copy.copy_range(src.fileno(), dst.fileno(), offset, length)
    assert out.read_bytes() == b"".join(b"-" + data[o : o + n] for o, n in ranges)


def test_a_range_past_the_end_of_the_file_is_an_error(tmp_path):
    source = tmp_path / "source"
    source.write_bytes(b"12345")
    with open(source, "rb") as src, open(tmp_path / "out", "wb", buffering=0) as dst:
        with pytest.raises(RuntimeError, match="shorter"):
            file_copy.copy_range(src.fileno(), dst.fileno(), 2, 10)
