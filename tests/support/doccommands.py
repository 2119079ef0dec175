"""The commands of README.md and docs/**/*.md, and how the doc-tests run them.

Every command in a fenced block marked `sh`, `bash`, `shell` or `console` (there: the lines after a
`$ ` prompt) is run by tests/server/test_docs_commands.py, in document order, in one bash session per
document (shell variables carry from one command to the next), in a fresh directory, against the
scratch MariaDB. A command is not run only when NOT_RUNNABLE lists it with the reason.

The documents' conventions, filled in from the fixtures (docs/tutorial-*.md say so to the reader):
  $DSN          the server (`mysql://user:password@host:port/`): the scratch MariaDB
  $SCRATCH_DSN  the copy `verify` writes to: the same scratch MariaDB (verify rolls back)
  $BINLOG       the binlog file of the incident (or, before a deploy, the current one)
  $POSITION     before a deploy: the current position in $BINLOG (SHOW MASTER STATUS)
  $SERVICE      a service's address, `http://127.0.0.1:PORT` (a `serve` command starts it)
  $TOKEN, $ADMIN_TOKEN   an operator's and an admin's API token
The README's examples carry example values instead (EXAMPLE_VALUES), replaced by the fixtures' ones.
"""

from __future__ import annotations

import os
import re
import selectors
import shlex
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from tests.support import REPO

SHELL_FENCES = {"sh", "bash", "shell", "console"}
_FENCE = re.compile(r"^\s*```\s*([A-Za-z0-9_+-]*)")

# (document or "*" for any, text the command starts with, why it is not run)
NOT_RUNNABLE: list[tuple[str, str, str]] = [
    ("*", "docker ", "no Docker daemon on the test machine (tests/unit lints the Dockerfile with hadolint)"),
    (
        "docs/cli.md",
        "mysql-rollback sql -h127.0.0.1 -P3306 -uadmin -p ",
        "-p asks on a terminal and the times are an incident's: tests/server/test_cli_habits.py runs these "
        "binlog2sql command lines (a pty for the prompt) against the scratch server",
    ),
    (
        "docs/cli.md",
        "mysql-rollback flashback --read-from-remote-server -h db1",
        "-p asks on a terminal and the times are an incident's: tests/server/test_cli_habits.py runs these "
        "mysqlbinlog command lines against the scratch server",
    ),
    (
        "docs/ci.md",
        "",
        "its block runs whole, with the variables it documents ($SCRATCH_HOST, $SCRATCH_PORT, $SCRATCH_USER, "
        "$MYSQL_PWD, change.sql), in tests/server/test_ci_doc.py: restored, and not restored",
    ),
    (
        "docs/cli.md",
        'mysql-rollback flashback "$BINLOG" --engine spark --spark-master "$SPARK_MASTER"',
        "needs a Spark cluster: tests/cluster/test_readme_cluster.py runs it on the suite's standalone cluster",
    ),
    (
        "docs/cli.md",
        'MYSQL_ROLLBACK_SPARK_MASTER="$SPARK_MASTER"',
        "a service on a Spark cluster (tests/cluster/test_cluster_service.py runs one with these settings)",
    ),
]

# example value in a document -> the fixture value it stands for (a key of DocRun.values)
EXAMPLE_VALUES: list[tuple[str, str]] = [
    ("mysql://reader:…@db1:3306/", "DSN"),
    ("mysql://reader@db1:3306/", "DSN"),
    ("mysql://root@scratch:3306/", "DSN"),
    ("mysql://flashback@db1.internal:3306/", "DSN_WITHOUT_PASSWORD"),
    ("MYSQL_ROLLBACK_PASSWORD_PROD1='…'", "PASSWORD_ASSIGNMENT"),
    ("'ops:operator:…,dba:admin:…'", "TOKENS_QUOTED"),
    ("http://127.0.0.1:8080", "SERVICE"),
    ("mysql-bin.000042", "BINLOG"),
    ("918273", "STOP"),
]

# (pattern, replacement, why): commands that cannot run as written, and what runs instead
REWRITES: list[tuple[str, str, str]] = [
    (
        r"^(\./scripts/serve|mysql-rollback serve)\b(?:\s+--port\s+\d+)?([^#\n]*?)\s*(?:#.*)?$",
        r'\1 --port "$PORT"\2 >"serve-$PORT.log" 2>&1 & '
        r'until curl -sf "$SERVICE/health" >/dev/null; do kill -0 $! || break; sleep 0.3; done; '
        r'curl -sf "$SERVICE/health" >/dev/null || { cat "serve-$PORT.log"; false; }',
        "a server runs until stopped: started in the background on a free port ($SERVICE) and waited for "
        "at /health; the doc-test stops it after the document",
    ),
    (
        r"^\./scripts/test(\s+#.*)?$",
        "./scripts/test --collect-only -q tests/unit/test_dsn.py",
        "the whole suite would run this doc-test again: its entry is run, collecting one module",
    ),
    (
        r"^\./scripts/",
        '"$REPO"/scripts/',
        "`./scripts/...` runs from the top of a clone: the repository's; the other commands write their "
        "files in a temporary directory",
    ),
    (
        r"^mysql-rollback sql …(.*)$",
        r"mysql-rollback sql mysql-bin.000042 --start-position 4 --stop-position 918273 "
        r"--schema-dsn mysql://reader:…@db1:3306/\1",
        "`…` stands for the range of the command above it",
    ),
]

# (document, text the command contains): after it, the deploy (a change to shop.orders) runs
DEPLOY_AFTER: list[tuple[str, str]] = [
    ("docs/execution.md", "mysql-rollback checksum"),
    ("docs/tutorial-ci.md", "mysql-rollback checksum"),
]

# documents whose first command records the tables before any change: no incident before them
NO_INCIDENT_FIRST = {"docs/tutorial-ci.md"}

# (document, text the command contains, text its output must contain)
EXPECT: list[tuple[str, str, str]] = [
    ("docs/service.md", "curl -H", '"state"'),
    ("docs/execution.md", "mysql-rollback verify", "restored"),
    (
        "docs/tutorial-cli.md",
        "--type delete | grep '^-- '",
        "-- original: DELETE FROM shop.orders WHERE status = 'open'",
    ),
    ("docs/tutorial-cli.md", 'echo "the incident', "the incident: 0-"),
    ("docs/tutorial-cli.md", "grep -c", "10"),
    ("docs/tutorial-rest.md", "api/servers", "prod1"),
    ("docs/tutorial-rest.md", 'echo "$STATE"', "succeeded"),
    ("docs/tutorial-rest.md", 'wait_job "$LOOK"', "succeeded"),
    (
        "docs/tutorial-rest.md",
        "script\" | grep '^-- '",
        "-- original: DELETE FROM shop.orders WHERE status = 'open'",
    ),
    ("docs/tutorial-rest.md", 'echo "the incident', "the incident: 0-"),
    ("docs/tutorial-rest.md", "jq '.tables'", '"delete": 10'),
    ("docs/tutorial-rest.md", "jq '{state", '"succeeded"'),
    ("docs/tutorial-rest.md", "jq .applied", '"execution"'),
    ("docs/tutorial-ci.md", "jq -r", "shop.orders restored"),
    ("docs/tutorial-merge.md", 'echo "the incident', "the incident: 0-"),
    ("docs/tutorial-merge.md", "grep -c", "9"),
    ("docs/tutorial-merge.md", 'echo "exit code', "exit code: 3"),
    ("docs/tutorial-merge.md", "jq -c", '"key":{"id":20}'),
    ("docs/tutorial-merge.md", "--resolutions resolutions.json", "take_before_where_unchanged"),
]


@dataclass(frozen=True)
class Command:
    doc: str  # relative to the repository
    line: int  # of its first line
    text: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.text}"


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _depth(text: str) -> int:
    """Open compound commands (for/while/until ... done, if ... fi, case ... esac, a function's { ... })
    in `text`."""
    opening = {"for": "done", "while": "done", "until": "done", "if": "fi", "case": "esac", "{": "}"}
    depth = 0
    for token in shlex.split(text, comments=True):
        if token in opening:
            depth += 1
        elif token in opening.values():
            depth -= 1
    return depth


def _complete(text: str) -> bool:
    if text.rstrip().endswith("\\"):
        return False
    try:
        return _depth(text) <= 0
    except ValueError:  # an open quote: the command goes on on the next line
        return False


def commands_of(path: Path, root: Path = REPO) -> list[Command]:
    rel = path.relative_to(root).as_posix()
    found: list[Command] = []
    fence: str | None = None
    pending: list[str] = []
    start = 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = _FENCE.match(line)
        if match and fence is None:
            fence = match.group(1).lower()
            continue
        if match:
            assert not pending, f"{rel}:{start}: a command is not finished at the end of its block"
            fence = None
            continue
        if fence not in SHELL_FENCES:
            continue
        if not pending:
            if fence == "console":
                if not line.startswith("$ "):
                    continue  # output shown in the document
                line = line[2:]
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            start = number
        pending.append(line)
        if _complete("\n".join(pending)):
            found.append(Command(rel, start, "\n".join(pending)))
            pending = []
    return found


def all_commands() -> list[Command]:
    return [c for path in documents() for c in commands_of(path)]


def not_runnable(command: Command) -> str | None:
    for doc, text, reason in NOT_RUNNABLE:
        if doc in ("*", command.doc) and command.text.startswith(text):
            return reason
    return None


def rewrite(text: str) -> str:
    for pattern, replacement, _why in REWRITES:
        text = re.sub(pattern, replacement, text, flags=re.MULTILINE)
    return text


def fill(text: str, values: dict[str, str]) -> str:
    for example, key in EXAMPLE_VALUES:
        text = text.replace(example, values[key])
    return text


class Shell:
    """One bash session: commands run one at a time (stdin from /dev/null), each answering its exit
    status and output; variables persist. Everything it started dies with it (its own session)."""

    def __init__(self, cwd: Path, env: dict[str, str]):
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.run("set -o pipefail")

    def run(self, text: str, timeout: float = 240.0) -> tuple[int, str]:
        marker = f"::done-{uuid.uuid4().hex}::"
        assert self.process.stdin is not None and self.process.stdout is not None
        script = f"{{\n{text}\n}} </dev/null\nprintf '\\n{marker} %s\\n' \"$?\"\n"
        self.process.stdin.write(script.encode())
        self.process.stdin.flush()
        out = b""
        done = re.compile(re.escape(marker.encode()) + rb" (\d+)\n")
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while (found := done.search(out)) is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"still running after {timeout:.0f}s: {text}\n{out.decode(errors='replace')}"
                    )
                if selector.select(left):
                    chunk = os.read(self.process.stdout.fileno(), 65536)
                    if not chunk:
                        raise AssertionError(
                            f"the shell ended during: {text}\n{out.decode(errors='replace')}"
                        )
                    out += chunk
        return int(found.group(1)), out[: found.start()].decode(errors="replace").rstrip("\n")

    def export(self, **values: str) -> None:
        self.run("\n".join(f"export {name}={shlex.quote(value)}" for name, value in values.items()))

    def close(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGTERM)  # the shell and what it started (a service)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
