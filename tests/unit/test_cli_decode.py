"""`mysql-rollback decode FILE... [--start-position N] [--stop-position N] [--format jsonl|text]`, run as
a user runs it: one record per row change on stdout; bad input is exit code 2 and one line on stderr."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.corpus

# MySQL 5.7.44 (no column names in the binlog): INSERT (1,'alice') at 553, INSERT (2,'bob') at 822,
# UPDATE id 1 to 'alice_updated' at 1089, DELETE id 2 at 1378; 1500 bytes.
MINIMAL = "Fanduzi__BinlogVisualizer/cmd/binlogviz/testdata/minimal.binlog"
# MariaDB 10.5 with binlog_row_metadata=FULL: columns by name.
MARIADB = "blackbeam__rust_mysql_common/test-data/binlogs/mariadb-bin.000001"


def run(*args: str | Path) -> subprocess.CompletedProcess:
    command = shutil.which("mysql-rollback", path=str(Path(sys.executable).parent))
    prefix = [command] if command else [sys.executable, "-m", "rollback.cli.commands"]
    return subprocess.run(
        [*prefix, "decode", *map(str, args)], capture_output=True, text=True, timeout=120, encoding="utf-8"
    )


def records(result: subprocess.CompletedProcess) -> list[dict]:
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return [json.loads(line) for line in result.stdout.splitlines()]


def one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith("mysql-rollback: error: ")
    return lines[0]


@pytest.fixture(scope="module")
def minimal(corpus_dir) -> Path:
    return corpus_dir / MINIMAL


def test_jsonl_has_one_record_per_row_change(minimal):
    out = records(run(minimal))
    assert [(r["type"], r.get("before"), r.get("after")) for r in out] == [
        ("insert", None, {"@1": 1, "@2": "alice"}),
        ("insert", None, {"@1": 2, "@2": "bob"}),
        ("update", {"@1": 1, "@2": "alice"}, {"@1": 1, "@2": "alice_updated"}),
        ("delete", {"@1": 2, "@2": "bob"}, None),
    ]
    first = out[0]
    assert first == {
        "file": "minimal.binlog",
        "pos": 553,
        "end_pos": 599,
        "gtid": "ANONYMOUS",
        "timestamp": first["timestamp"],
        "server_id": 1,
        "thread_id": 3,
        "database": "testdb",
        "table": "users",
        "type": "insert",
        "row": 0,
        "after": {"@1": 1, "@2": "alice"},
    }
    assert first["timestamp"].endswith("Z") and len(first["timestamp"]) == 20
    assert [r["pos"] for r in out] == [553, 822, 1089, 1378]


def test_column_names_from_the_binlog(corpus_dir):
    out = records(run(corpus_dir / MARIADB))
    assert [r["after"]["id"] for r in out] == [62, 63]
    assert out[0]["gtid"] == "0-1-1" and out[0]["after"]["created"] == "2022-04-20 22:18:04"
    assert set(out[0]["after"]) == {"id", "topic", "event_type", "event", "created"}


def test_text_format(minimal):
    result = run(minimal, "--format", "text")
    assert result.returncode == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].startswith("minimal.binlog:553-599 ") and lines[0].endswith(
        "gtid=ANONYMOUS server=1 INSERT `testdb`.`users` row 0"
    )
    assert lines[1] == '  after: @1=1, @2="alice"'
    update = lines.index(next(line for line in lines if " UPDATE " in line))
    assert lines[update + 1 : update + 3] == [
        '  before: @1=1, @2="alice"',
        '  after: @1=1, @2="alice_updated"',
    ]
    assert sum(1 for line in lines if not line.startswith("  ")) == 4


def test_start_and_stop_positions(minimal):
    only_update = records(run(minimal, "--start-position", "1036", "--stop-position", "1155"))
    assert [(r["type"], r["pos"]) for r in only_update] == [("update", 1089)]
    assert only_update[0]["thread_id"] is None or only_update[0]["thread_id"] == 3
    from_bob = records(run(minimal, "--start-position", "769"))
    assert [r["pos"] for r in from_bob] == [822, 1089, 1378]
    until_bob = records(run(minimal, "--stop-position", "866"))
    assert [r["pos"] for r in until_bob] == [553, 822]
    assert records(run(minimal, "--start-position", "1500")) == []
    assert records(run(minimal, "--start-position", "4", "--stop-position", "4")) == []


def test_several_files_positions_apply_to_the_first_and_the_last(minimal, tmp_path):
    second = tmp_path / "second.binlog"
    second.write_bytes(minimal.read_bytes())
    out = records(run(minimal, second, "--start-position", "1036", "--stop-position", "866"))
    assert [(r["file"], r["pos"]) for r in out] == [
        ("minimal.binlog", 1089),
        ("minimal.binlog", 1378),
        ("second.binlog", 553),
        ("second.binlog", 822),
    ]


def test_corrupt_file_is_exit_2_and_one_line(minimal, tmp_path):
    data = bytearray(minimal.read_bytes())
    data[1120] ^= 0x01
    corrupt = tmp_path / "corrupt.binlog"
    corrupt.write_bytes(bytes(data))
    line = one_line_error_allowing_output(run(corrupt))
    assert (
        line
        == f"mysql-rollback: error: {corrupt} at offset 1089: CRC32 mismatch in event type 31 of length 66"
    )


def one_line_error_allowing_output(result: subprocess.CompletedProcess) -> str:
    """A corrupt event is found while streaming: the changes before it were printed already."""
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    return lines[0]


def test_not_a_binlog_is_exit_2(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello, not a binlog\n")
    assert "not a binlog file (magic is 68656c6c)" in one_line_error(run(text))


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        (
            ["--start-position", "1037"],
            "position 1037 is not an event boundary (the event before ends at 1036)",
        ),
        (
            ["--stop-position", "1100"],
            "position 1100 is not an event boundary (the event before ends at 1089)",
        ),
        (["--stop-position", "2000"], "stop position 2000 is past the end of the file (1500)"),
        (
            ["--start-position", "1089", "--stop-position", "553"],
            "stop position 553 is before start position 1089",
        ),
        (["--start-position", "2"], "start position 2 is inside the file header (events start at 4)"),
    ],
)
def test_bad_positions_are_exit_2_before_any_output(minimal, options, reason):
    line = one_line_error(run(minimal, *options))
    assert line.endswith(reason)
    assert str(minimal) in line


def test_missing_file_is_exit_2_before_any_output(minimal, tmp_path):
    missing = tmp_path / "nope.000001"
    assert (
        one_line_error(run(missing))
        == f"mysql-rollback: error: {missing}: cannot read file: No such file or directory"
    )
    # a missing second file fails before the first file's changes are printed
    assert "nope.000001" in one_line_error(run(minimal, missing))


def test_truncated_file_reports_the_cut_event(minimal, tmp_path):
    cut = tmp_path / "cut.binlog"
    cut.write_bytes(minimal.read_bytes()[:1120])
    result = run(cut)
    line = one_line_error_allowing_output(result)
    assert line.endswith(f"{cut} at offset 1089: truncated event: length 66 runs past end of file at 1120")
    assert [json.loads(x)["pos"] for x in result.stdout.splitlines()] == [553, 822]


def test_mariadb_hires_temporal_needs_the_schema(corpus_dir):
    result = run(corpus_dir / "pingcap__tiflow/mysql-bin.000001")
    line = one_line_error_allowing_output(result)
    assert "at offset 1819" in line and "the table schema is needed" in line


def test_output_to_a_closed_pipe_stops_quietly(corpus_dir):
    command = shutil.which("mysql-rollback", path=str(Path(sys.executable).parent))
    prefix = [command] if command else [sys.executable, "-m", "rollback.cli.commands"]
    big = corpus_dir / "rust-us__mysql-cdc-rs/tests/events/8.0/folder/binlog.000693"  # 2.2 MB, 524 row events
    process = subprocess.Popen([*prefix, "decode", str(big)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.readline()
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 0
    assert stderr == ""


def test_decode_report_counts_rows_per_table_and_type_and_a_failure(corpus_file, tmp_path):
    report = tmp_path / "decode.json"
    records(run(corpus_file(MINIMAL), "--report", report))
    facts = json.loads(report.read_text())
    assert facts["command"] == "decode" and facts["result"] == "ok" and facts["exit_code"] == 0
    assert {(c["type"], c["rows"]) for c in facts["counts"]} == {("insert", 2), ("update", 1), ("delete", 1)}
    assert facts["range_asked"]["files"] == ["minimal.binlog"]
    one_line_error(run(corpus_file(MINIMAL), "--start-position", "5", "--report", report))
    facts = json.loads(report.read_text())
    assert facts["result"] == "refused" and facts["exit_code"] == 2 and facts["error"]


def test_a_schema_file_gives_the_precision_of_mariadb_hires_temporals(corpus_dir, tmp_path):
    # MariaDB 10.0.17 logs TIMESTAMP(3) and TIMESTAMP(4) under the old TIMESTAMP code without metadata
    schema = tmp_path / "schema.sql"
    schema.write_text(
        "".join(
            f"CREATE TABLE steven.{table} (id int primary key, d timestamp{f'({fsp})' if fsp else ''});\n"
            for table, fsp in (("t", 3), ("t1", 0), ("t2", 4), ("t3", 0), ("t5", 1), ("t6", 4))
        )
    )
    result = run(corpus_dir / "pingcap__tiflow/mysql-bin.000001", "--schema-file", schema)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["table"], r["after"]["@2"]) for r in records if r["database"] == "steven"] == [
        ("t", "2022-05-16 14:53:10.000"),
        ("t1", "2022-05-16 14:55:47"),
        ("t2", "2022-05-16 14:56:37.0000"),
        ("t3", "2022-05-18 03:04:55"),
        ("t3", "2022-05-18 03:05:05"),
        ("t5", "2022-05-18 03:07:06.0"),
        ("t6", "2022-05-18 03:10:02.0000"),
    ]
    unreadable = run(corpus_dir / "pingcap__tiflow/mysql-bin.000001", "--schema-file", tmp_path / "none.sql")
    assert unreadable.returncode == 2 and unreadable.stderr.count("\n") == 1
    assert f"--schema-file {tmp_path / 'none.sql'}: cannot read it" in unreadable.stderr
