"""The cluster section of docs/cli.md, followed literally: its first command block, read from the file (not
a copy), run by a shell with SPARK_MASTER, SHARED and BINLOG set as the section says, on the test
cluster whose second worker sees none of this machine's temporary directory; the script it writes is
the local engine's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from rollback import Filters, Options, RangeSpec, generate
from tests.support import REPO


def cluster_commands() -> str:
    text = (REPO / "docs" / "cli.md").read_text()
    section = text[text.index("## On a Spark cluster") :]
    section = section[: section.index("\n## ")]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    assert blocks, "docs/cli.md's cluster section has no command block"
    return blocks[0]


def test_the_readme_cluster_commands_write_the_local_engines_script(spark_cluster, cluster_binlog, tmp_path):
    commands = cluster_commands()
    assert "mysql-rollback flashback" in commands and "$SPARK_MASTER" in commands
    binlog = tmp_path / cluster_binlog.path.name
    binlog.write_bytes(cluster_binlog.path.read_bytes())
    env = spark_cluster.env(
        SPARK_MASTER=spark_cluster.master,
        SHARED=str(spark_cluster.shared),
        BINLOG=str(binlog),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    )
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", commands],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "mysql-rollback: engine spark (asked for)" in done.stderr
    expected = tmp_path / "expected.sql"
    generate(RangeSpec([str(binlog)]), Filters(), Options(engine="local"), expected)
    assert (tmp_path / "rollback.render.sql").read_bytes() == expected.read_bytes()
    assert list((spark_cluster.shared / "mysql-rollback").iterdir()) == []
