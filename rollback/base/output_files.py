"""How an output the user named (`-o`, `--plan`, `--changes`, `--report`, ...) reaches its path without
harming what the path already is.

- A new path, or a regular file with one link: the output is written beside it (`NAME.part`) and
  renamed over it once complete, so a failed or interrupted run leaves the old file as it was. The
  old file's mode and owner carry over to the new one.
- A regular file with other hard links, or a symbolic link to a regular file: written beside the
  real file, then copied into it once complete. The inode stays, and with it the links, the owner
  and the mode (a rename would leave the other names on the old contents and replace the link).
- A character device or a FIFO (`/dev/null`, the terminal or pipe behind `/dev/stdout`, a named
  pipe): never replaced. It is opened and written through, once the output is complete.
- A directory, a block device or a socket: refused with one line before anything runs.

Why it matters: the suite and CI run as root, and a rename over `/dev/null` turns the machine's
null device into a regular file that every later `> /dev/null` appends to.
"""

from __future__ import annotations

import os
import shutil
import stat
from enum import Enum
from pathlib import Path

from rollback.base.errors import RollbackError


class OutputRefused(RollbackError):
    """The path cannot take an output file (a directory, a block device, a socket)."""


class Way(Enum):
    REPLACE = "replace"  # written beside, renamed over
    IN_PLACE = "in place"  # written beside, copied into the same inode
    THROUGH = "through"  # opened and written directly (devices and FIFOs)


class OutputPath:
    """One output's path, and where the job writes it until it is complete (`staging`)."""

    def __init__(self, path: str | os.PathLike[str], directory_ok: bool = False):
        self.path = Path(path)
        self._old: os.stat_result | None = None
        try:
            link = os.lstat(self.path)
        except FileNotFoundError:
            link = None
        except OSError as exc:
            raise OutputRefused(f"{self.path}: cannot write there ({exc.strerror})") from None
        target = link
        if link is not None and stat.S_ISLNK(link.st_mode):
            try:
                target = os.stat(self.path)
            except OSError:
                target = None  # a dangling link: writing through it creates its target
        self.real = Path(os.path.realpath(self.path)) if link is not None else self.path
        if target is None:
            self.way = Way.THROUGH if link is not None else Way.REPLACE
        elif stat.S_ISREG(target.st_mode):
            if (link is not None and stat.S_ISLNK(link.st_mode)) or target.st_nlink > 1:
                self.way = Way.IN_PLACE
            else:
                self.way = Way.REPLACE
                self._old = target
        elif stat.S_ISCHR(target.st_mode) or stat.S_ISFIFO(target.st_mode):
            self.way = Way.THROUGH
        elif stat.S_ISDIR(target.st_mode) and directory_ok:
            self.way = Way.REPLACE
        else:
            raise OutputRefused(f"{self.path}: is {_kind(target.st_mode)}; give a file path to write to")

    @property
    def staging(self) -> Path:
        """Where the output is written: the path itself when written through, else beside the real file."""
        if self.way is Way.THROUGH:
            return self.path
        return self.real.with_name(self.real.name + ".part")

    @property
    def directory(self) -> Path | None:
        """A directory for the job's own work files near the output (None: the system's temp dir)."""
        return None if self.way is Way.THROUGH else self.real.parent

    def commit(self) -> None:
        """Put the complete output in place."""
        if self.way is Way.THROUGH:
            return
        staging = self.staging
        if self.way is Way.IN_PLACE:
            shutil.copyfile(staging, self.path)  # follows a link; truncates and keeps the inode
            staging.unlink()
            return
        if self._old is not None:
            _take_mode_and_owner(staging, self._old)
        if staging.is_dir() and self.real.is_dir():
            shutil.rmtree(self.real)
        os.replace(staging, self.real)

    def discard(self) -> None:
        """Remove what an unfinished output left (nothing for a path written through)."""
        if self.way is Way.THROUGH:
            return
        staging = self.staging
        if staging.is_dir() and not staging.is_symlink():
            shutil.rmtree(staging, ignore_errors=True)
        elif staging.exists() or staging.is_symlink():
            staging.unlink()


def write_bytes(path: str | os.PathLike[str] | OutputPath, data: bytes) -> None:
    """A small output (a report) written whole, the same way."""
    out = path if isinstance(path, OutputPath) else OutputPath(path)
    try:
        with open(out.staging, "wb") as f:
            f.write(data)
        out.commit()
    finally:
        out.discard()


def _take_mode_and_owner(path: Path, old: os.stat_result) -> None:
    os.chmod(path, stat.S_IMODE(old.st_mode))
    mine = os.stat(path)
    if (mine.st_uid, mine.st_gid) != (old.st_uid, old.st_gid):
        try:
            os.chown(path, old.st_uid, old.st_gid)
        except PermissionError:
            pass  # only root gives a file away; the new file stays the writer's, as a new file would


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"
