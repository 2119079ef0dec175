"""One clear line for a file the service could not write: a full disk, or a data dir it may not write."""

from __future__ import annotations

import errno

FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
DENIED = {errno.EACCES, errno.EPERM, errno.EROFS}


def storage_problem(exc: OSError, what: str) -> str:
    """`what` says what was being written ("the job's output"); no path of the service host is named."""
    reason = exc.strerror or type(exc).__name__
    if exc.errno in FULL:
        return f"the service's disk is full ({reason}) while writing {what}; free space in its data directory"
    if exc.errno in DENIED:
        return f"the service may not write its data directory ({reason}) while writing {what}"
    return f"cannot read or write a file ({reason}) while writing {what}"


def database_problem(exc: Exception, what: str) -> str:
    """The job database refused a write (full disk, read-only, locked): one line, no path."""
    reason = " ".join(str(getattr(exc, "orig", None) or exc).split())
    return f"the job database cannot be written ({reason}) while recording {what}"
