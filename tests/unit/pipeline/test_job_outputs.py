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


def test_the_cli_progress_bar_shows_bytes_events_and_ends_its_line():
    import io

    from rollback.cli import _ProgressBar

    out = io.StringIO()
    bar = _ProgressBar(out, width=10)
    bar(Progress(5 << 20, 10 << 20, 50, 100, 4, "spark"))
    bar(Progress(10 << 20, 10 << 20, 100, 100, 4, "spark"))
    bar.close()
    text = out.getvalue()
    assert text.startswith("\r[#####.....]  50.0% 5.2/10.5 MB 50/100 events (spark, 4 partitions)")
    assert "\r[##########] 100.0% 10.5/10.5 MB 100/100 events" in text and text.endswith("\n")
