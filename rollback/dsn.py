"""Server DSNs, `mysql://user:password@host:port/[database]`: the one parser (SQLAlchemy's make_url).

User and password are percent-decoded (`p%40ss` is `p@ss`). Each caller states what it needs of
the parsed form (a host, no database) and says so in its own words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rollback.errors import SourceError

SCHEMES = ("mysql", "mariadb")
DEFAULT_PORT = 3306
SHAPE = "mysql://user:password@host:3306/"


class DsnError(SourceError):
    """A DSN that is not a MySQL URL."""


@dataclass(frozen=True)
class Dsn:
    host: str  # "" when none is given
    port: int
    user: str
    password: str | None = field(repr=False)  # None: not given (callers may take it from elsewhere)
    database: str  # "" when none is given
    options: bool  # query parameters or a fragment were given


def parse_dsn(text: str) -> Dsn:
    """The parts of a mysql:// or mariadb:// URL; DsnError for anything else."""
    from sqlalchemy.engine import make_url  # here: importing the engine does not load SQLAlchemy
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(text)
        port = url.port
    except (ArgumentError, ValueError):
        raise DsnError(f"malformed server DSN (expected {SHAPE})") from None
    if url.drivername not in SCHEMES:
        raise DsnError(f"server DSN must look like {SHAPE} (got scheme {url.drivername!r})")
    database = url.database or ""
    fragment = "#" in database
    return Dsn(
        host=url.host or "",
        port=port or DEFAULT_PORT,
        user=url.username or "",
        password=url.password if url.password is None else str(url.password),
        database=database.split("#", 1)[0],
        options=bool(url.query) or fragment,
    )


_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:@/]*:)[^/]+@")


def redact(dsn: str) -> str:
    """The DSN as given, its password replaced by ***."""
    return _PASSWORD.sub(r"\1***@", dsn, count=1)
