"""The doc-tests' lists (tests/support/doccommands.py) against the documents, without running anything:
how commands are read from fenced blocks, and no entry of a list that matches no command any more
(a stale reason to skip or rewrite a command would hide the one that replaced it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import doccommands as dc


@pytest.fixture
def sample(tmp_path: Path):
    def make(text: str) -> list[str]:
        path = tmp_path / "sample.md"
        path.write_text(text, encoding="utf-8")
        return [c.text for c in dc.commands_of(path, root=tmp_path)]

    return make


def test_commands_are_read_whole_from_shell_blocks_only(sample):
    text = """
```sh
# a comment line
mysql-rollback flashback a.000001 \\
  --start-position 4    # a trailing comment
curl -d '{
  "a": 1}' http://x
for i in 1 2; do
  case "$i" in 1) echo one ;; *) break ;; esac
done
```

```yaml
run: not a command
```

```console
$ mysql-rollback --help
usage: mysql-rollback ...
$ echo done
done
```
"""
    assert sample(text) == [
        "mysql-rollback flashback a.000001 \\\n  --start-position 4    # a trailing comment",
        "curl -d '{\n  \"a\": 1}' http://x",
        'for i in 1 2; do\n  case "$i" in 1) echo one ;; *) break ;; esac\ndone',
        "mysql-rollback --help",
        "echo done",
    ]


def test_an_unfinished_command_at_the_end_of_a_block_is_an_error(sample):
    with pytest.raises(AssertionError, match="not finished"):
        sample("```sh\necho 'open\n```\n")


def test_the_serve_rewrite_keeps_arguments_and_drops_the_comment():
    out = dc.rewrite("./scripts/serve --host 0.0.0.0    # serves")
    assert out.startswith('"$REPO"/scripts/serve --port "$PORT" --host 0.0.0.0 >')
    assert "# serves" not in out and "$SERVICE/health" in out


def test_every_list_entry_still_matches_a_command():
    commands = dc.all_commands()
    by_doc: dict[str, list[str]] = {}
    for command in commands:
        by_doc.setdefault(command.doc, []).append(command.text)
    stale = []
    for doc, text, _why in dc.NOT_RUNNABLE:
        docs = by_doc.values() if doc == "*" else [by_doc.get(doc, [])]
        if not any(c.startswith(text) for texts in docs for c in texts):
            stale.append(f"NOT_RUNNABLE {doc}: {text}")
    for doc, text in dc.DEPLOY_AFTER:
        if not any(text in c for c in by_doc.get(doc, [])):
            stale.append(f"DEPLOY_AFTER {doc}: {text}")
    for doc, text, _wanted in dc.EXPECT:
        if not any(text in c for c in by_doc.get(doc, [])):
            stale.append(f"EXPECT {doc}: {text}")
    for doc in dc.NO_INCIDENT_FIRST:
        if doc not in by_doc:
            stale.append(f"NO_INCIDENT_FIRST {doc}")
    texts = [c.text for c in commands]
    for example, _key in dc.EXAMPLE_VALUES:
        if not any(example in t for t in texts):
            stale.append(f"EXAMPLE_VALUES {example}")
    for pattern, _replacement, _why in dc.REWRITES:
        if not any(re.search(pattern, t, re.MULTILINE) for t in texts):
            stale.append(f"REWRITES {pattern}")
    assert not stale, "entries that match no command of the documents any more:\n  " + "\n  ".join(stale)


def test_only_docker_is_not_run_and_every_reason_is_given():
    # and the commands another test runs as written (the CLI habits with a prompt, docs/ci.md's block
    # with its own variables): their reasons name that test
    skipped = [c for c in dc.all_commands() if dc.not_runnable(c)]
    # besides docker: docs/cli.md's commands for a Spark cluster, which tests/cluster runs on its own
    others = [c for c in skipped if not c.text.startswith("docker ") and '"$SPARK_MASTER"' not in c.text]
    assert skipped and all("tests/server/test_" in (dc.not_runnable(c) or "") for c in others)
    assert all(why.strip() for _doc, _text, why in dc.NOT_RUNNABLE)
