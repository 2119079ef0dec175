"""Planning the files of a range in several processes gives the plan of planning them in turn:
partitions renumbered, block ordinals carried across files, the same table maps and notes; an error
in a later file is the same typed error."""

from __future__ import annotations

import pytest

from rollback import RangeSpec
from rollback.errors import RangeError
from rollback.pipeline.plan import plan_range

pytestmark = pytest.mark.corpus

FOLDER = "rust-us__mysql-cdc-rs/tests/events/8.0/folder/"  # two consecutive MySQL 8.0 files


def test_files_planned_in_processes_give_the_plan_of_one_process(corpus_file):
    rng = RangeSpec([str(corpus_file(FOLDER + "binlog.000693")), str(corpus_file(FOLDER + "binlog.000694"))])
    serial = plan_range(rng, 256 << 10)
    parallel = plan_range(rng, 256 << 10, processes=2)
    assert len(serial.partitions) > 6 and {p.file_index for p in serial.partitions} == {0, 1}
    assert [p.to_dict() for p in parallel.partitions] == [p.to_dict() for p in serial.partitions]
    assert serial.partitions[-1].end_block > serial.partitions[0].next_block
    for field in (
        "bytes_total",
        "events_total",
        "server_version",
        "notes",
        "unchecked",
        "times",
        "signatures",
    ):
        assert getattr(parallel, field) == getattr(serial, field), field
    assert {k: pos for k, (_, pos) in parallel.table_maps.items()} == {
        k: pos for k, (_, pos) in serial.table_maps.items()
    }


def test_an_error_in_a_later_file_is_the_same_typed_error(corpus_file):
    first, second = corpus_file(FOLDER + "binlog.000693"), corpus_file(FOLDER + "binlog.000694")
    rng = RangeSpec([str(first), str(second)], stop_position=second.stat().st_size + 10)
    errors = []
    for processes in (1, 2):
        with pytest.raises(RangeError) as caught:
            plan_range(rng, 256 << 10, processes=processes)
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and errors[0].startswith(f"{second}: stop position")
