"""A server's version, as its handshake, `VERSION()` or a binlog's format description says it."""

from __future__ import annotations

import re


def version_tuple(version: str) -> tuple[int, int, int]:
    """`10.11.19-MariaDB-0+deb12u1` -> (10, 11, 19)."""
    numbers = [int(n) for n in re.findall(r"\d+", version.split("-")[0])][:3]
    numbers += [0] * (3 - len(numbers))
    return numbers[0], numbers[1], numbers[2]
