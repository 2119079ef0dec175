"""The conformance corpus through both hot paths (rollback/base/hotpath.py): for every vendored binlog with
row events, the decoded records, the flashback and forward scripts with their plans and change logs
(and the change log of the `changes` mode) are the same bytes on the compiled core and on the
pure-Python code, or both stop with the same error. Most corpus files carry
no column names (no script without a schema), so every rows event with FULL images is also rendered
with a schema made from its table map (columns c1..cN, its charsets), keyed by the first column and
by none."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollback import Filters, Options, RangeSpec, generate
from rollback.binlog.decode import StreamState
from rollback.binlog.reader import read_file_facts
from rollback.binlog.table_map import TableMap
from rollback.pipeline.plan_lines import PlanLines
from rollback.render.records import batch_records, record_json
from rollback.render.sql import TableRenderer
from rollback.schema.charsets import charset_of_collation
from rollback.schema.tables import Column, StaticSchema, TableSchema
from tests.support.corpus import VENDORED
from tests.support.decoding import iter_row_batches
from tests.support.hotpath import compiled_core, hot_path, outcome

pytestmark = pytest.mark.corpus

CORE = compiled_core()  # not built: the module fails, it is never skipped


def schema_of(tmap: TableMap, key: tuple[int, ...]) -> TableSchema:
    charsets = tmap.charsets or (None,) * tmap.column_count
    columns = [
        Column(f"c{i + 1}", charset=charset_of_collation(c) if c is not None else None)
        for i, c in enumerate(charsets)
    ]
    return TableSchema(tmap.database, tmap.table, columns, key, [], "ddl")


def records_and_statements(path: Path) -> list[object]:
    """Every rows event's change-log records, and the statements of its FULL images (or the error)."""
    buf = memoryview(path.read_bytes())
    facts, _ = read_file_facts(buf, str(path))
    state = StreamState(facts, path=str(path), file_name=path.name)
    out: list[object] = []
    for decoded, batch in iter_row_batches(buf, state, 4, len(buf)):
        if batch is None:
            continue
        out.extend(record_json(record) for record in batch_records(batch))
        event = decoded.event
        full = (1 << event.column_count) - 1
        if event.present != full or event.present_after != full or event.partial:
            continue
        for key in ((), (0,)):
            for flavour in ("mariadb", "mysql"):
                renderer = TableRenderer(batch.table, schema_of(batch.table, key), flavour)
                statements = renderer.full_images()
                assert statements is not None
                lines = PlanLines(batch.file, batch.pos, batch.table.qualified_name, 1, batch.tx.gtid)
                for forward in (False, True):
                    out.append(outcome(statements.script, batch.kind, batch.rows, forward))
                    out.append(outcome(statements.plan, batch.kind, batch.rows, forward, lines))
    return out


def script(path: Path, out: Path, mode: str) -> tuple[bytes, bytes, bytes]:
    """The script, the plan and the change log (in `changes` mode the change log alone)."""
    plan, changes = out.with_suffix(".plan.jsonl"), out.with_suffix(".changes.jsonl")
    generate(
        RangeSpec([str(path)]),
        Filters(),
        Options(mode=mode, engine="local"),
        out,
        None if mode == "changes" else plan,
        changes,
    )
    return out.read_bytes(), plan.read_bytes() if mode != "changes" else b"", changes.read_bytes()


def script_alone(path: Path, out: Path, mode: str) -> bytes:
    """The script without a plan or change log (the compiled core then writes INSERTs straight from
    the row images: FullImages.script_images)."""
    generate(RangeSpec([str(path)]), Filters(), Options(mode=mode, engine="local"), out)
    return out.read_bytes()


def net_statements(path: Path, out: Path, partition_bytes: int | None, plan: bool) -> list[str]:
    """The --net script's statements, each table keyed by its first column (schema_of). Without a plan,
    with the compiled core, the partitions keep the images as their bytes, and on either path they may
    write their shares of the script (rollback/render/net_local.py); with a plan the driver folds every
    change. The same statements every way, or the same refusal."""
    buf = memoryview(path.read_bytes())
    facts, _ = read_file_facts(buf, str(path))
    state = StreamState(facts, path=str(path), file_name=path.name)
    tables = {}
    for _decoded, batch in iter_row_batches(buf, state, 4, len(buf)):
        if batch is not None:
            tables.setdefault((batch.table.database, batch.table.table), schema_of(batch.table, (0,)))
    options = Options(
        mode="flashback",
        engine="local",
        net=True,
        allow_empty=True,
        partition_bytes=partition_bytes,
        schema=StaticSchema(list(tables.values())),
        trust_schema=True,
    )
    generate(
        RangeSpec([str(path)]), Filters(), options, out, out.with_suffix(".plan.jsonl") if plan else None
    )
    lines = out.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
    return [line for line in lines if line and not line.startswith(("--", "SET ", "BEGIN;", "COMMIT;"))]


@pytest.mark.parametrize("rel", VENDORED.with_rows())
def test_a_corpus_file_gives_the_same_bytes_on_both_paths(rel, corpus_file, tmp_path):
    path = corpus_file(rel, VENDORED)
    results = {}
    for label, core in (("pure", None), ("compiled", CORE)):
        with hot_path(core):
            results[label] = [
                outcome(records_and_statements, path),
                outcome(script, path, tmp_path / f"{label}.flashback.sql", "flashback"),
                outcome(script, path, tmp_path / f"{label}.forward.sql", "forward"),
                outcome(script, path, tmp_path / f"{label}.changes.sql", "changes"),
                outcome(script_alone, path, tmp_path / f"{label}.flashback-alone.sql", "flashback"),
                outcome(script_alone, path, tmp_path / f"{label}.forward-alone.sql", "forward"),
                outcome(net_statements, path, tmp_path / f"{label}.net.sql", None, False),
                outcome(net_statements, path, tmp_path / f"{label}.net-split.sql", 4 << 10, False),
                outcome(net_statements, path, tmp_path / f"{label}.net-folded.sql", None, True),
            ]
    assert results["pure"] == results["compiled"]
    alone, split, folded = results["compiled"][-3:]
    assert alone == split == folded  # written by the partitions or folded by the driver: the same
