"""The partition's buffer of rendered text (rollback.pipeline.spill): every chunk's script and plan
come back as they went in, in any order, from memory or spilled, whichever order the spills were
written in."""

from __future__ import annotations

import pytest

from rollback.pipeline.spill import SpillBuffer

CHUNKS = [(f"script {i}\n".encode() * (i % 3), f"plan {i} é\n".encode() * (i % 4)) for i in range(40)]
ORDERS = [list(range(len(CHUNKS))), list(reversed(range(len(CHUNKS)))), [5, 6, 7, 1, 2, 30, 0, 3]]
LIMITS = [0, 50, 1 << 20]
LIMIT_IDS = ["every chunk spilled", "some spilled", "in memory"]


@pytest.mark.parametrize("newest_first", [True, False], ids=["spilled newest first", "spilled in order"])
@pytest.mark.parametrize("plan_limit", LIMITS, ids=[f"plan: {i}" for i in LIMIT_IDS])
@pytest.mark.parametrize("limit", LIMITS, ids=[f"script: {i}" for i in LIMIT_IDS])
def test_chunks_come_back_in_the_order_asked_for(tmp_path, limit, plan_limit, newest_first):
    buffer = SpillBuffer(str(tmp_path), limit, plan_limit, newest_first)
    for script, plan in CHUNKS:
        buffer.add_encoded(script, plan)
    assert len(buffer) == len(CHUNKS)
    for order in ORDERS:
        assert [buffer.get(i) for i in order] == [CHUNKS[i][0] for i in order]
        script = tmp_path / "script"
        with open(script, "wb") as f:
            f.write(b"header\n")
            buffer.write_script(order, f)
            f.write(b"end\n")
        assert script.read_bytes() == b"header\n" + b"".join(CHUNKS[i][0] for i in order) + b"end\n"
        out = tmp_path / "plan"
        with open(out, "wb") as f:
            f.write(b"head\n")
            buffer.write_plan(order, f)
        assert out.read_bytes() == b"head\n" + b"".join(CHUNKS[i][1] for i in order)
    buffer.close()


def test_a_plan_past_its_limit_is_spilled_and_read_back_from_the_spool(tmp_path):
    buffer = SpillBuffer(str(tmp_path), plan_limit=100, newest_first=True)
    for script, plan in CHUNKS:
        buffer.add_encoded(script, plan)
    assert buffer.plan_spilled_bytes > 0 and buffer.plan_memory_bytes <= 100  # the spill path is the point
    out = tmp_path / "plan"
    with open(out, "wb", buffering=0) as f:
        buffer.write_plan(reversed(range(len(CHUNKS))), f)
    assert out.read_bytes() == b"".join(plan for _, plan in reversed(CHUNKS))
    buffer.close()


def test_a_buffer_without_a_plan_writes_none(tmp_path):
    buffer = SpillBuffer(str(tmp_path), plan_limit=0)
    buffer.add_encoded(b"x\n", b"")
    out = tmp_path / "plan"
    with open(out, "wb") as f:
        buffer.write_plan([0], f)
    assert out.read_bytes() == b""
    assert buffer._plan._file is None  # noqa: SLF001 - no spool for empty text
    buffer.close()
