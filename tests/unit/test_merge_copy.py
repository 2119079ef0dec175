"""copy_range: the kernel's file-to-file copy and the copy through memory give the same bytes,
interleaved with the merger's own writes (block headers between pieces)."""

from __future__ import annotations

import io
import os

from rollback.job.merge import copy_range


def test_file_to_file_copies_equal_the_copy_through_memory(tmp_path):
    part = tmp_path / "part.sql"
    part.write_bytes(os.urandom(3 << 20) + b"tail")
    pieces = [(0, 5), (7, 1 << 20), ((1 << 20) + 9, (2 << 20) - 9), (3 << 20, 4), (10, 0)]
    memory = io.BytesIO()
    with open(tmp_path / "out.sql", "wb") as out, open(part, "rb") as src:
        for start, length in pieces:
            out.write(b"-- header\n")  # buffered, then the kernel's copy after it
            copy_range(src, out, start, length)
            memory.write(b"-- header\n")
            copy_range(src, memory, start, length)
        out.write(b"END\n")
        memory.write(b"END\n")
    assert (tmp_path / "out.sql").read_bytes() == memory.getvalue()


def test_the_merge_removes_each_copied_part_when_asked_and_writes_the_same_bytes(tmp_path):
    from rollback.job.merge import merge_parts
    from rollback.pipeline.parts import Summary, part_path

    def parts(name: str) -> tuple[str, list[Summary]]:
        out_dir = tmp_path / name
        out_dir.mkdir()
        summaries = []
        for index in range(3):
            body = f"-- part {index}\n".encode() * (1000 * (index + 1))
            (out_dir / f"part-{index:06d}.sql").write_bytes(body)
            (out_dir / f"part-{index:06d}.plan.jsonl").write_bytes(b'{"part": %d}\n' % index)
            (out_dir / f"part-{index:06d}.changes.jsonl").write_bytes(b"{}\n")
            summaries.append(Summary(index, script_bytes=len(body)))
        return str(out_dir), summaries

    written = {}
    for remove in (False, True):
        out_dir, summaries = parts(f"remove-{remove}")
        script, plan = tmp_path / f"s-{remove}.sql", tmp_path / f"p-{remove}.jsonl"
        with open(script, "wb") as script_out, open(plan, "wb") as plan_out:
            merge_parts(out_dir, summaries, "-- header\n", True, script_out, plan_out, remove=remove)
        written[remove] = (script.read_bytes(), plan.read_bytes())
        left = sorted(os.listdir(out_dir))
        kept = [os.path.basename(part_path(out_dir, i, "changes.jsonl")) for i in range(3)]
        assert left == (kept if remove else sorted(left)) and len(left) == (3 if remove else 9)
    assert written[True] == written[False]
    assert written[True][0].startswith(b"-- header\n-- part 2\n")  # newest part first
