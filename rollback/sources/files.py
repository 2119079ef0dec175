"""Local binlog files as a source: the files of a directory in log order, from one file to another.

The order comes from the directory's index file (`mysql-bin.index`, one path per line, as the
server keeps it) when there is one for the files' base name, else from the numeric suffixes.
Spool manifests and other files are ignored.
"""

from __future__ import annotations

import re
from pathlib import Path

from rollback.errors import RangeError

_NUMBERED = re.compile(r"^(?P<base>.+)\.(?P<number>\d+)$")


def _base(name: str) -> str | None:
    match = _NUMBERED.match(name)
    return match.group("base") if match else None


def binlog_names(directory: Path | str, base: str | None = None) -> list[str]:
    """Names of the binlog files of `base` (default: the only base in the directory), in log order."""
    directory = Path(directory)
    bases = sorted({b for p in directory.iterdir() if p.is_file() and (b := _base(p.name))})
    if base is None:
        if len(bases) > 1:
            raise RangeError(
                f"{directory} holds binlogs of several names ({', '.join(bases)}); name the start file"
            )
        if not bases:
            return []
        base = bases[0]
    index = directory / f"{base}.index"
    if index.is_file():
        names = [Path(line.strip()).name for line in index.read_text().splitlines() if line.strip()]
        return [n for n in names if (directory / n).is_file()]
    numbered = []
    for path in directory.iterdir():
        match = _NUMBERED.match(path.name)
        if path.is_file() and match and match.group("base") == base:
            numbered.append((int(match.group("number")), path.name))
    return [name for _, name in sorted(numbered)]


def binlog_files(
    directory: Path | str, start_file: str | None = None, stop_file: str | None = None
) -> list[Path]:
    """The binlog files from `start_file` to `stop_file` (both inclusive, defaults: first and last)."""
    directory = Path(directory)
    base = _base(start_file or stop_file or "") if (start_file or stop_file) else None
    names = binlog_names(directory, base)
    if not names:
        raise RangeError(f"no binlog files in {directory}")
    first = _index(names, start_file, directory, "start file") if start_file else 0
    last = _index(names, stop_file, directory, "stop file") if stop_file else len(names) - 1
    if last < first:
        raise RangeError(f"stop file {names[last]} comes before start file {names[first]}")
    return [directory / n for n in names[first : last + 1]]


def _index(names: list[str], name: str, directory: Path, what: str) -> int:
    if name not in names:
        raise RangeError(f"{what} {name} is not in {directory} ({names[0]} .. {names[-1]})")
    return names.index(name)
