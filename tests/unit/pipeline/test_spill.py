"""The partition's buffer of rendered text (rollback.pipeline.spill): every chunk's script and plan
come back as they went in, in any order, from memory or spilled."""

from __future__ import annotations

import pytest

from rollback.pipeline.spill import SpillBuffer

CHUNKS = [(f"script {i}\n".encode() * (i % 3), f"plan {i} é\n".encode() * (i % 4)) for i in range(40)]
ORDERS = [list(range(len(CHUNKS))), list(reversed(range(len(CHUNKS)))), [5, 6, 7, 1, 2, 30, 0, 3]]


@pytest.mark.parametrize("limit", [0, 50, 1 << 20], ids=["every chunk spilled", "some spilled", "in memory"])
def test_chunks_come_back_in_the_order_asked_for(tmp_path, limit):
    buffer = SpillBuffer(str(tmp_path), limit)
    for script, plan in CHUNKS:
        buffer.add_encoded(script, plan)
    assert len(buffer) == len(CHUNKS)
    for order in ORDERS:
        assert [buffer.get(i) for i in order] == [CHUNKS[i][0] for i in order]
        out = tmp_path / "plan"
        with open(out, "wb") as f:
            f.write(b"head\n")
            buffer.write_plan(order, f)
        assert out.read_bytes() == b"head\n" + b"".join(CHUNKS[i][1] for i in order)
    buffer.close()


def test_a_buffer_without_a_plan_writes_none(tmp_path):
    buffer = SpillBuffer(str(tmp_path))
    buffer.add_encoded(b"x\n", b"")
    out = tmp_path / "plan"
    with open(out, "wb") as f:
        buffer.write_plan([0], f)
    assert out.read_bytes() == b""
    buffer.close()
