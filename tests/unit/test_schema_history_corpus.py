"""The vendored corpus files with DDL, decoded with the schema history's definitions.

Every table map whose table a CREATE TABLE earlier in the same file made is checked against the
definition the history gives at the map's position (forward from that CREATE through every later
DDL: ADD/DROP/MODIFY COLUMN, keys, renames): the count and types always agree, and where MySQL 8
wrote FULL metadata (binlog_row_metadata=FULL: the oracles), the column names the table map carries
equal the history's names at that position.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rollback.binlog import events as ev
from rollback.binlog.decode import StreamState, decode_stream
from rollback.binlog.reader import BinlogFile
from rollback.binlog.table_map import TableMap
from rollback.schema.history import DdlEvent, Timeline, forward_timeline
from rollback.schema.tables import check_schema
from tests.support import REPO

CORPUS = REPO / "tests" / "corpus"

# file -> (table maps the history describes, of them with FULL metadata names); every other table map
# of these files belongs to a table created before the file began.
EXPECTED = {
    "Fanduzi__BinlogVisualizer/cmd/binlogviz/testdata/minimal.binlog": (4, 0),
    "alibaba__canal/dbsync/src/test/resources/binlog/mysql-bin.000001": (88, 0),
    "alibaba__canal/parse/src/test/resources/binlog/tsdb/mysql-bin.000002": (1, 0),
    "alibaba__canal/parse/src/test/resources/binlog/tsdb/mysql-bin.000003": (3, 0),
    "blackbeam__rust_mysql_common/test-data/binlogs/binlog-invisible-columns.000001": (3, 3),
    "blackbeam__rust_mysql_common/test-data/binlogs/json-opaque.binlog": (8, 8),
    "blackbeam__rust_mysql_common/test-data/binlogs/json.binlog.000001": (6, 0),
    "blackbeam__rust_mysql_common/test-data/binlogs/mysql-enum-string-set.000001": (3, 3),
    "blackbeam__rust_mysql_common/test-data/binlogs/mysql_type_bit.000001": (1, 1),
    "blackbeam__rust_mysql_common/test-data/binlogs/vector.binlog": (6, 6),
    "osheroff__mysql-binlog-connector-java/src/test/resources/mysql-bin.checksum-none": (35, 0),
    "pingcap__tiflow/mysql-bin.000001": (5, 0),
    "rust-us__mysql-cdc-rs/tests/events/8.0/02_query_bigger/binlog.000733": (6, 0),
    "rust-us__mysql-cdc-rs/tests/events/8.0/folder/binlog.000693": (524, 0),
}


def _read(path: Path) -> tuple[list[DdlEvent], list[tuple[int, TableMap]]]:
    ddl: list[DdlEvent] = []
    maps: list[tuple[int, TableMap]] = []
    with BinlogFile(path) as binlog:
        state = StreamState(binlog.facts, path=str(path), file_name=path.name)
        for decoded in decode_stream(binlog.buf, state, 4, binlog.size, False):
            event = decoded.event
            if isinstance(event, ev.Query) and event.kind == "DDL":
                at = (0, decoded.outer_pos)
                ddl.append(DdlEvent(at, f"{path.name}:{decoded.outer_pos}", event.sql, event.database))
            elif isinstance(event, TableMap):
                maps.append((decoded.outer_pos, event))
    return ddl, maps


def _timeline_of(
    tmap: TableMap, pos: int, timelines: dict[int, Timeline], ddl: list[DdlEvent]
) -> Timeline | None:
    """The history of the table made by the last CREATE TABLE of its name before the map."""
    name = (tmap.database.lower(), tmap.table.lower())
    found = None
    for index, timeline in timelines.items():
        created = timeline.epochs[1].name
        if ddl[index].at < (0, pos) and created[1] == name[1] and created[0] in ("", name[0]):
            found = timeline
    return found


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_corpus_table_maps_agree_with_the_history_at_their_position(relative):
    ddl, maps = _read(CORPUS / relative)
    timelines = {}
    for index in range(len(ddl)):
        timeline = forward_timeline(index, ddl)
        if timeline is not None:
            timelines[index] = timeline
    described = named = 0
    for pos, tmap in maps:
        timeline = _timeline_of(tmap, pos, timelines, ddl)
        if timeline is None:
            continue
        epoch = timeline.at((0, pos))
        assert epoch.schema is not None, f"{relative}:{pos}: {epoch.problem}"
        assert epoch.name == (tmap.database.lower(), tmap.table.lower())
        check_schema(epoch.schema, tmap, pos)  # count and types
        described += 1
        if tmap.column_names:  # the oracle: names as the server wrote them at this position
            assert list(epoch.schema.names) == list(tmap.column_names), f"{relative}:{pos}"
            named += 1
    assert (described, named) == EXPECTED[relative]


def test_corpus_history_across_two_files_follows_add_and_drop_column():
    """canal's tsdb files: 000002 creates wanshao.wanshao_test (id, name, age); 000003 adds col1 and col2,
    drops col1, adds col1 and col3, drops col3, writing rows between. Every table map of it in 000003
    agrees with the history built forward from the CREATE in 000002, at its position."""
    folder = CORPUS / "alibaba__canal/parse/src/test/resources/binlog/tsdb"
    ddl: list[DdlEvent] = []
    maps: list[tuple[tuple[int, int], TableMap]] = []
    for index, name in enumerate(("mysql-bin.000002", "mysql-bin.000003")):
        file_ddl, file_maps = _read(folder / name)
        ddl += [DdlEvent((index, e.at[1]), e.where, e.sql, e.db) for e in file_ddl]
        maps += [((index, pos), tmap) for pos, tmap in file_maps]
    created = [i for i, e in enumerate(ddl) if "CREATE TABLE `wanshao_test`" in e.sql and e.db == "wanshao"]
    timeline = forward_timeline(created[-1], ddl)
    assert timeline is not None
    shapes = [epoch.schema.names if epoch.schema else None for epoch in timeline.epochs]
    assert shapes[1] == ("id", "name", "age")
    assert ("id", "name", "age", "col2", "col1", "col3") in shapes
    assert shapes[-1] == ("id", "name", "age", "col2", "col1")
    checked = 0
    for at, tmap in maps:
        if tmap.qualified_name == "wanshao.wanshao_test" and at[0] == 1:
            epoch = timeline.at(at)
            assert epoch.schema is not None
            check_schema(epoch.schema, tmap, at[1])
            checked += 1
    assert checked == 18
