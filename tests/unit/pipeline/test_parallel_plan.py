"""Planning the files of a range in several processes gives the plan of planning them in turn:
partitions renumbered, block ordinals carried across files, the same table maps and notes; an error
in a later file is the same typed error."""

from __future__ import annotations

import pytest

from rollback import RangeSpec
from rollback.base.errors import RangeError
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


def test_a_range_of_several_files_keeps_every_files_ddl_and_table_map_epochs(corpus_file):
    """The schema history (--ddl keep | reverse) reads the plan's DDL and table-map epochs: a range of
    two files holds each file's own, in log order, with the second file's index."""
    first, second = str(corpus_file(FOLDER + "binlog.000693")), str(corpus_file(FOLDER + "binlog.000694"))
    alone = [plan_range(RangeSpec([path]), 256 << 10) for path in (first, second)]
    assert alone[0].ddl or alone[1].ddl, "the files hold DDL"
    expected_ddl = [d for d in alone[0].ddl] + [(1, *d[1:]) for d in alone[1].ddl]
    expected_epochs = [(0, pos) for _, pos, _ in alone[0].map_epochs] + [
        (1, pos) for _, pos, _ in alone[1].map_epochs
    ]
    for processes in (1, 2):
        both = plan_range(RangeSpec([first, second]), 256 << 10, processes=processes)
        assert both.ddl == expected_ddl
        assert [(fi, pos) for fi, pos, _ in both.map_epochs] == expected_epochs
