"""The fuzz lane: a short seeded campaign of tools/fuzz_decoder.py (a differential mutation fuzzer of
the decoder over the vendored corpus: table maps, rows events and compressed payloads mutated with
their CRC32 recomputed, both hot paths, in a worker process with a capped address space) must find
nothing: no divergence, internal error, signal, hang or memory past the bound. A developer runs the
long campaign with `python -m tools.fuzz_decoder --seconds 3600 --seed N --out DIR`."""

from __future__ import annotations

import zlib

import pytest

from rollback.binlog.reader import read_file_facts
from tools import fuzz_decoder
from tools.fuzz_decoder import Campaign, Limits, MiB, campaign, mutant, run_batch

pytestmark = pytest.mark.corpus

SEED = 20261127
MUTANTS = 200  # about 15 s on the idle 2-core machine
LIMITS = Limits(address_space=1536 * MiB, max_rss=300 * MiB, timeout=90)


@pytest.mark.slow
def test_a_seeded_campaign_over_the_corpus_finds_nothing():
    result = campaign(SEED, mutants=MUTANTS, batch=MUTANTS // 2, limits=LIMITS)
    assert result.failures == []
    assert result.mutants == MUTANTS
    assert 0 < result.peak_rss < LIMITS.max_rss


def test_mutants_are_reproducible_and_keep_their_checksums():
    mutated_kinds = set()
    for number in range(40):
        rel, data = mutant(SEED, number)
        assert mutant(SEED, number) == (rel, data)
        original = (fuzz_decoder.CORPUS / rel).read_bytes()
        assert data != original
        facts, _ = read_file_facts(memoryview(data))
        before = {(pos, length) for pos, _, length in fuzz_decoder._events(original)}
        for pos, type_code, length in fuzz_decoder._events(data):
            if (pos, length) in before and data[pos : pos + length] == original[pos : pos + length]:
                continue
            mutated_kinds.add(type_code)
            if facts.checksum_len:
                event = data[pos : pos + length]
                assert zlib.crc32(event[:-4]) == int.from_bytes(event[-4:], "little")
    assert {fuzz_decoder.TABLE_MAP, fuzz_decoder.TRANSACTION_PAYLOAD} <= mutated_kinds
    assert mutated_kinds & fuzz_decoder.ROWS


@pytest.mark.parametrize(
    ("limits", "problem"),
    [
        (Limits(address_space=8 * MiB), "worker ended with"),  # the interpreter cannot even start
        (Limits(timeout=0.05), "hang: still running after 0.05 s"),
        (Limits(max_rss=1 * MiB), "peak RSS"),
    ],
)
def test_the_lane_reports_a_worker_that_dies_hangs_or_grows(limits, problem):
    result = Campaign(SEED)
    run_batch(SEED, 0, 2, limits, result, None)
    assert result.failures and problem in result.failures[0]["problem"]
    assert result.failures[0]["seed"] == SEED and result.failures[0]["file"] in fuzz_decoder.FILES
