"""Where a job's outputs go: open text streams take the bytes files would; the CLI's progress bar."""

from __future__ import annotations

import pytest

from rollback import Filters, Job, Options, Progress, RangeSpec
from tests.support.jobs import (
    run,
    sakila,
)


@pytest.mark.corpus
def test_the_job_writes_to_open_text_streams_as_to_files(corpus_file, tmp_path):
    import io

    rng = RangeSpec([str(sakila(corpus_file))])
    files = run(rng, tmp_path, "files", mode="changes", partition_bytes=256 << 10)
    script, plan, changes = io.StringIO(), io.StringIO(), io.StringIO()
    options = Options(mode="changes", engine="local", partition_bytes=256 << 10, work_dir=str(tmp_path))
    report = Job(rng, Filters(), options).run(script, plan, changes)
    assert script.getvalue().encode() == files.script and changes.getvalue().encode() == files.changes
    assert report.to_dict() == files.report.to_dict()


def test_the_cli_progress_display_shows_each_phase_with_its_figures():
    import io
    import re

    from rollback import ExecutionProgress
    from rollback.cli.progress import TerminalProgress, for_stream

    assert for_stream(io.StringIO()) is None  # not a terminal: nothing drawn
    out = io.StringIO()
    bar = TerminalProgress(out)  # planning until the first partition reports
    bar(Progress(5 << 20, 10 << 20, 50, 100, 4, "spark"))
    bar(Progress(10 << 20, 10 << 20, 100, 100, 4, "spark"))
    bar(Progress(10 << 20, 10 << 20, 100, 100, 4, "spark", phase="merging", rows=1234))
    bar.progress(ExecutionProgress("check", 7, 10, 7, None))
    bar.close()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    for phase in ("planning", "decoding+rendering", "merging", "applying"):
        assert phase in text, text
    assert "10.5/10.5 MB · 100/100 events · 4 partition(s), spark" in text
    assert "1,234 rows" in text and "7/10 statements · 7 rows (dry run)" in text and "eta" in text
