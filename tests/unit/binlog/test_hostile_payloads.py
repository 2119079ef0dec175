"""Compressed payloads that claim or inflate to more than they can honestly hold: refused with one line,
before the memory they promise is committed. MySQL's TRANSACTION_PAYLOAD inflates one inner event at a
time (a payload costs its largest inner event, never its whole size, let alone twice), MariaDB's
compressed events are held to deflate's ratio."""

from __future__ import annotations

import time
import zlib

import pytest

from rollback.base.errors import BinlogFormatError
from rollback.binlog.decode import StreamState
from rollback.binlog.payload import ZSTD_MAX_RATIO
from rollback.binlog.reader import read_file_facts
from rollback.binlog.rows import mariadb_uncompress
from tests.support.decoding import iter_row_batches
from tests.support.hostile import (
    COMPRESSED,
    COMPRESSED_PAYLOAD_AT,
    inner_event,
    payload_body,
    run_cli,
    with_body,
    zstd_of,
)

pytestmark = pytest.mark.corpus

GiB = 1 << 30
MiB = 1 << 20
# The CLI's address space in these runs: a payload inflated whole (1 GiB, then joined again) cannot fit.
ADDRESS_SPACE = 768 * MiB


@pytest.fixture(scope="module")
def compressed(corpus_dir) -> bytes:
    return (corpus_dir / COMPRESSED).read_bytes()


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """1 GiB of zeros in one zstd frame of ~32 KiB (the issue's 33 KB upload)."""
    frame = zstd_of(b"\0" * MiB, repeat=1024)
    assert len(frame) < 40_000
    return frame


def decode_all(data: bytes, path: str = "hostile.bin") -> int:
    buf = memoryview(data)
    facts, _ = read_file_facts(buf, path)
    return sum(1 for _ in iter_row_batches(buf, StreamState(facts, path=path), 4, len(buf)))


def _one_line_refusal(run, path) -> str:
    assert run.returncode == 2, run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert lines[0].startswith(f"mysql-rollback: error: {path} at offset {COMPRESSED_PAYLOAD_AT}: ")
    return lines[0]


def test_the_untouched_file_decodes(compressed, tmp_path):
    path = tmp_path / "good.000001"
    path.write_bytes(compressed)
    run = run_cli(["decode", path], address_space=ADDRESS_SPACE)
    assert run.returncode == 0 and run.stdout.count("\n") == 1, run.stderr


@pytest.mark.parametrize("declared", [GiB, None])
@pytest.mark.parametrize("command", ["decode", "flashback"])
def test_a_zstd_bomb_fails_with_one_line_and_memory_stays_flat(compressed, bomb, tmp_path, declared, command):
    """Before: the payload was inflated whole and joined again, 2 GiB resident for 33 KB (4 GiB allowed)."""
    path = tmp_path / "bomb.000001"
    path.write_bytes(with_body(compressed, COMPRESSED_PAYLOAD_AT, payload_body(bomb, declared)))
    args = ["decode", path] if command == "decode" else ["flashback", path, "-o", tmp_path / "out.sql"]
    started = time.monotonic()
    run = run_cli(args, address_space=ADDRESS_SPACE)
    line = _one_line_refusal(run, path)
    assert line.endswith(
        "inside TRANSACTION_PAYLOAD at inner offset 0: event length 0 is smaller than its header"
    )
    assert run.peak_rss < 150 * MiB
    assert time.monotonic() - started < 60  # generous: a loaded machine
    assert not (tmp_path / "out.sql").exists()


def test_a_payload_claiming_more_than_zstd_can_inflate_is_refused_before_inflating(compressed, bomb):
    honest = len(bomb) * ZSTD_MAX_RATIO
    assert honest >= GiB  # the bomb's own claim is one zstd could honestly hold
    data = with_body(compressed, COMPRESSED_PAYLOAD_AT, payload_body(bomb, honest + 1))
    with pytest.raises(BinlogFormatError) as info:
        decode_all(data)
    assert info.value.offset == COMPRESSED_PAYLOAD_AT
    assert info.value.reason == (
        f"TRANSACTION_PAYLOAD claims {honest + 1} uncompressed bytes, more than what its {len(bomb)} bytes can hold"
    )
    data = with_body(compressed, COMPRESSED_PAYLOAD_AT, payload_body(b"\0" * 200_000, 5 << 30))
    with pytest.raises(
        BinlogFormatError, match="claims 5368709120 uncompressed bytes, more than the 4 GiB limit"
    ):
        decode_all(data)


def test_an_inner_event_longer_than_the_declared_payload_is_refused_before_it_is_read(compressed):
    """An inner header promising 1 GiB inside a payload that declares 1,000 bytes."""
    head = inner_event(29, b"")[:9] + GiB.to_bytes(4, "little") + bytes(6)
    frame = zstd_of(head + bytes(981))
    data = with_body(compressed, COMPRESSED_PAYLOAD_AT, payload_body(frame, 1000))
    with pytest.raises(BinlogFormatError) as info:
        decode_all(data)
    assert info.value.reason == (
        f"inside TRANSACTION_PAYLOAD at inner offset 0: event length {GiB} runs past the payload's 1000 bytes"
    )


@pytest.mark.parametrize(
    ("declared", "reason"),
    [
        (None, "at inner offset 0: truncated event: length 1000, the payload ends after 600"),
        (600, "at inner offset 0: event length 1000 runs past the payload's 600 bytes"),
        (5000, "at inner offset 0: truncated event: length 1000, the payload ends after 600"),
    ],
)
def test_a_payload_that_ends_inside_an_inner_event(compressed, declared, reason):
    event = inner_event(29, bytes(1000 - 19))
    data = with_body(compressed, COMPRESSED_PAYLOAD_AT, payload_body(zstd_of(event[:600]), declared))
    with pytest.raises(BinlogFormatError) as info:
        decode_all(data)
    assert info.value.offset == COMPRESSED_PAYLOAD_AT and info.value.reason.endswith(reason)


def test_a_payload_that_inflates_to_less_than_it_declares(compressed):
    assert decode_all(compressed) == 8  # 4 events around the payload, 4 inside it
    inner = zstd_of(inner_event(29, b"\x01a"))  # one ROWS_QUERY event of 21 bytes
    data = with_body(compressed, COMPRESSED_PAYLOAD_AT, payload_body(inner, 22))
    with pytest.raises(BinlogFormatError, match="TRANSACTION_PAYLOAD inflates to 21 bytes, header says 22"):
        decode_all(data)
    assert decode_all(with_body(compressed, COMPRESSED_PAYLOAD_AT, payload_body(inner, 21))) == 5


def test_mariadb_compressed_event_claims_are_held_to_deflates_ratio():
    small = zlib.compress(b"x" * 100)
    with pytest.raises(
        BinlogFormatError, match=r"claims 16777215 bytes uncompressed, more than its \d+ bytes"
    ):
        mariadb_uncompress(b"\x83\xff\xff\xff" + small, 7)
    assert mariadb_uncompress(b"\x81\x64" + small, 7) == b"x" * 100
