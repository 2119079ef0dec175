"""Run the CLI as a user at a terminal runs it: standard error (and input) on a pseudo-terminal,
standard output captured apart, so tests see what the terminal shows and what a pipe gets."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Sequence

from tests.support import REPO


def run_on_terminal(argv: Sequence[str], env: dict[str, str], timeout: float = 300) -> tuple[int, str, str]:
    """`python -m rollback.cli.commands ARGV` with stdin and stderr on a pty: (exit code, stdout, terminal text)."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rollback.cli.commands", *argv],
        cwd=REPO,
        env=env,
        stdin=secondary,
        stdout=subprocess.PIPE,
        stderr=secondary,
        start_new_session=True,
    )
    os.close(secondary)
    seen = bytearray()
    out = bytearray()
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    try:
        open_fds = [primary, proc.stdout.fileno()]
        while open_fds:
            assert time.monotonic() < deadline, seen.decode(errors="replace")
            ready = select.select(open_fds, [], [], 0.5)[0]
            for fd in ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # the pty reports EIO once the child closed its side
                    chunk = b""
                if not chunk:
                    open_fds.remove(fd)
                elif fd == primary:
                    seen += chunk
                else:
                    out += chunk
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(primary)
    return proc.returncode, out.decode(errors="replace"), seen.decode(errors="replace")
