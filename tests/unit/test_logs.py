"""rollback.base.logs: the text and JSON lines, the bound ids, a bad setting; the CLI's error line as JSON."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys

import pytest
import structlog

from rollback.base.logs import LogSettingError, configure_logging
from tests.support import REPO


@pytest.fixture
def restore_root_logging():
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.contextvars.clear_contextvars()


def test_json_lines_carry_the_bound_ids(restore_root_logging):
    out = io.StringIO()
    assert configure_logging(out, {"MYSQL_ROLLBACK_LOG_FORMAT": "json"}) == "json"
    with structlog.contextvars.bound_contextvars(job_id="j1", request_id="r1"):
        logging.getLogger("mysql_rollback.jobs").info("job %s: started", "j1")
    logging.getLogger("mysql_rollback.jobs").warning("later")
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["event"] == "job j1: started" and first["job_id"] == "j1" and first["request_id"] == "r1"
    assert first["level"] == "info" and first["logger"] == "mysql_rollback.jobs"
    assert second["event"] == "later" and "job_id" not in second


def test_text_lines_are_the_default_and_name_the_ids(restore_root_logging):
    out = io.StringIO()
    assert configure_logging(out, {}) == "text"
    configure_logging(out, {})  # twice: still one handler, one line per record
    with structlog.contextvars.bound_contextvars(execution_id=7):
        logging.getLogger("mysql_rollback").info("applied")
    (line,) = out.getvalue().splitlines()
    assert line.endswith(" INFO mysql_rollback: applied (execution_id=7)"), line


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_deferred_logging_writes_the_same_lines(fmt, restore_root_logging):
    lines = []
    for deferred in (False, True):
        out = io.StringIO()
        configure_logging(out, {"MYSQL_ROLLBACK_LOG_FORMAT": fmt}, deferred=deferred)
        with structlog.contextvars.bound_contextvars(job_id="j2"):
            logging.getLogger("mysql_rollback.cli").error("bad %s", "input")
        lines.append(out.getvalue().split(" ", 1)[1] if fmt == "text" else json.loads(out.getvalue()))
    if fmt == "json":
        for line in lines:
            line.pop("timestamp")
    assert lines[0] == lines[1]


def test_debug_lines_only_at_debug_level(restore_root_logging):
    out = io.StringIO()
    configure_logging(out, {"MYSQL_ROLLBACK_LOG_LEVEL": "warning"})
    logging.getLogger("mysql_rollback").info("hidden")
    assert out.getvalue() == ""


@pytest.mark.parametrize("env", [{"MYSQL_ROLLBACK_LOG_FORMAT": "xml"}, {"MYSQL_ROLLBACK_LOG_LEVEL": "loud"}])
def test_an_unknown_setting_is_one_clear_error(env, restore_root_logging):
    with pytest.raises(LogSettingError, match="MYSQL_ROLLBACK_LOG_"):
        configure_logging(io.StringIO(), env)


def test_the_cli_error_line_is_json_when_asked():
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYSQL_ROLLBACK_")}
    env["MYSQL_ROLLBACK_LOG_FORMAT"] = "json"
    done = subprocess.run(
        [sys.executable, "-m", "rollback.cli.commands", "flashback", "no-such-binlog.000001"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    record = json.loads(line)
    assert record["level"] == "error" and "no-such-binlog.000001: no such binlog file" in record["event"]
