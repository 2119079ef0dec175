"""Server DSNs, `mysql://user:password@host:port/[database]`: the one parser.

It reads a DSN as SQLAlchemy's make_url did (the same parts from the same text), without importing
SQLAlchemy: that import was most of a verified apply's start-up (bench/README.md, issue 24).

User and password are percent-decoded (`p%40ss` is `p@ss`): a password holding `@ : / % # ?` is
written with those characters percent-encoded (`%40 %3A %2F %25 %23 %3F`). An `@` left unencoded
is refused with that advice rather than read as part of the host. Each caller states what it
needs of the parsed form (a host, no database) and says so in its own words.
"""

from __future__ import annotations

import os
import re
import socket
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from rollback.base.errors import SourceError

SCHEMES = ("mysql", "mariadb")
DEFAULT_PORT = 3306
DEFAULT_HOST = "127.0.0.1"  # a DSN that names no host (and no socket) reaches this one, by TCP
SHAPE = "mysql://user:password@host:3306/"
ENCODING = (
    "write a user's or password's special characters percent-encoded "
    "(@ as %40, : as %3A, / as %2F, % as %25, # as %23, ? as %3F, space as %20), or give the password "
    "apart (-p, $MYSQL_PWD, an option file)"
)
ENCODE_ADVICE = f"server DSN holds more than one '@': {ENCODING}"


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
    query: str = ""  # the query parameters as given (percent-encoded), without the `?`
    fragment: bool = False  # a `#...` after the database


_SCHEME = re.compile(r"[\w+]+://")


def _userinfo(rest: str) -> tuple[str | None, str | None, str]:
    """(user, password, what follows the `@`) of the part after `scheme://`; (None, None, rest)
    without one. The user ends at the first `:` or `/`; a password, after that `:`, runs to the
    next `@`; without a password the user runs to the last `@` before that `:` or `/`."""
    end = _stop(rest, ":/")
    head = rest[:end]
    if rest.startswith(":", end):
        at = rest.find("@", end + 1)
        if at >= 0:
            return head, rest[end + 1 : at], rest[at + 1 :]
    at = head.rfind("@")
    if at >= 0:
        return head[:at], None, rest[at + 1 :]
    return None, None, rest


def _stop(text: str, chars: str) -> int:
    """Where the first of `chars` is in text (its length if none is)."""
    return min((at for at in map(text.find, chars) if at >= 0), default=len(text))


def _split(text: str) -> tuple[str, str | None, str | None, str, str | None, str | None, str | None]:
    """scheme, user, password (both percent-encoded), host, port, database (encoded), query."""
    scheme = _SCHEME.match(text)
    if scheme is None:
        raise ValueError("no scheme")
    user, password, rest = _userinfo(text[scheme.end() :])
    host = ""
    # an IPv6 address in brackets runs to the last `]` before any `/` or `?`
    close = rest[: _stop(rest, "/?")].rfind("]") if rest.startswith("[") else -1
    if close > 1:
        host, rest = rest[1:close], rest[close + 1 :]
    else:
        end = _stop(rest, "/:?")
        host, rest = rest[:end], rest[end:]
    port = None  # a `:` with no port after it is malformed (int(""))
    if rest.startswith(":"):
        end = _stop(rest, "/?")
        port, rest = rest[1:end], rest[end:]
    database = None
    if rest.startswith("/"):
        database, mark, tail = rest[1:].partition("?")
        rest = mark + tail
    query = rest[1:].split("\n", 1)[0] if rest.startswith("?") else None
    return scheme.group()[:-3], user, password, host, port, database, query


def parse_dsn(text: str) -> Dsn:
    """The parts of a mysql:// or mariadb:// URL; DsnError for anything else."""
    from urllib.parse import parse_qsl, unquote

    try:
        scheme, user, password, host, port_text, database, query = _split(text)
        port = int(port_text) if port_text is not None else None
    except ValueError:
        if text.count("@") > 1:
            raise DsnError(ENCODE_ADVICE) from None
        raise DsnError(f"malformed server DSN (expected {SHAPE}; {ENCODING})") from None
    if scheme not in SCHEMES:
        raise DsnError(f"server DSN must look like {SHAPE} (got scheme {scheme!r})")
    database = unquote(database) if database is not None else ""
    if "@" in host or "@" in database.split("#", 1)[0]:
        raise DsnError(ENCODE_ADVICE)
    return Dsn(
        host=host,
        port=port or DEFAULT_PORT,
        user=unquote(user) if user else "",
        password=unquote(password) if password is not None else None,
        database=database.split("#", 1)[0],
        options=bool(query and parse_qsl(query)) or "#" in database,
        query=query or "",
        fragment="#" in database,
    )


def host_port(host: str, port: int) -> str:
    """`db1:3306`; an IPv6 address in brackets, `[::1]:3306`."""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


def build_dsn(
    host: str, port: int, user: str, password: str | None, database: str = "", query: str = ""
) -> str:
    """A DSN for these parts; user and password percent-encoded, so every character survives.
    `query`: the connection options as a DSN's query (`?socket=...`), or ""."""
    from urllib.parse import quote

    auth = quote(user, safe="")
    if password is not None:
        auth += ":" + quote(password, safe="")
    return f"mysql://{auth}@{host_port(host, port)}/{database}{query}"


# ---- how a session reaches its server: `?socket=/run/mysqld/mysqld.sock&ssl-mode=VERIFY_CA&...`

SSL_MODES = ("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")
OPTION_NAMES = ("socket", "ssl-mode", "ssl-ca", "ssl-cert", "ssl-key")
_OPTION_ALIASES = {"unix-socket": "socket"}  # PyMySQL's and SQLAlchemy's spelling


@dataclass(frozen=True)
class ConnectionOptions:
    """A DSN's connection options, as the `mysql` client names them: the Unix socket to connect
    through (instead of TCP), and TLS. Without ssl-mode, a session asks for TLS when the server offers
    it and checks no certificate (PREFERRED, as mysql and PyMySQL do); ssl-ca alone means VERIFY_CA
    (as MySQL 8's client reads it), ssl-cert alone REQUIRED. An option this project does not know is
    refused: one left unread could be a certificate check the user believes is made."""

    socket: str = ""
    ssl_mode: str = "PREFERRED"
    ssl_ca: str = ""
    ssl_cert: str = ""
    ssl_key: str = ""

    @classmethod
    def of(cls, parts: Dsn) -> ConnectionOptions:
        """The options of a parsed DSN; DsnError for one not known, given twice, or contradictory."""
        return cls.parse(parts.query)

    @classmethod
    def parse(cls, query: str) -> ConnectionOptions:
        """The options of a DSN's query (with or without its `?`), as `of` reads them."""
        from urllib.parse import parse_qsl

        found: dict[str, str] = {}
        for raw, value in parse_qsl(query.removeprefix("?"), keep_blank_values=True):
            name = raw.strip().lower().replace("_", "-")
            name = _OPTION_ALIASES.get(name, name)
            if name not in OPTION_NAMES:
                raise DsnError(f"server DSN option {raw!r} is not known (known: {', '.join(OPTION_NAMES)})")
            if name in found:
                raise DsnError(f"server DSN option {name} is given twice")
            if not value:
                raise DsnError(f"server DSN option {name} has no value")
            found[name] = value
        mode = found.get("ssl-mode", "").upper()
        if mode and mode not in SSL_MODES:
            raise DsnError(
                f"server DSN option ssl-mode must be one of {', '.join(SSL_MODES)} (got {found['ssl-mode']!r})"
            )
        files = [name for name in ("ssl-ca", "ssl-cert", "ssl-key") if name in found]
        if mode in ("DISABLED", "PREFERRED") and files:
            raise DsnError(f"server DSN option ssl-mode={mode} takes no {' or '.join(files)}")
        if mode == "REQUIRED" and "ssl-ca" in found:
            # a CA the user names is a check the user expects: REQUIRED would make none (mysql only warns)
            raise DsnError(
                "server DSN option ssl-mode=REQUIRED checks no certificate, so it takes no ssl-ca: "
                "give ssl-mode=VERIFY_CA or VERIFY_IDENTITY (or ssl-ca alone, which is VERIFY_CA)"
            )
        if "ssl-key" in found and "ssl-cert" not in found:
            raise DsnError(
                "server DSN option ssl-key needs ssl-cert (the client certificate it is the key of)"
            )
        if not mode:
            mode = "VERIFY_CA" if "ssl-ca" in found else "REQUIRED" if "ssl-cert" in found else "PREFERRED"
        return cls(
            found.get("socket", ""),
            mode,
            found.get("ssl-ca", ""),
            found.get("ssl-cert", ""),
            found.get("ssl-key", ""),
        )

    def _given(self) -> list[tuple[str, str]]:
        """Each option given, in the order a DSN writes them (ssl-mode only when not the default)."""
        pairs = [
            ("socket", self.socket),
            ("ssl-mode", "" if self.ssl_mode == "PREFERRED" else self.ssl_mode),
            ("ssl-ca", self.ssl_ca),
            ("ssl-cert", self.ssl_cert),
            ("ssl-key", self.ssl_key),
        ]
        return [(name, value) for name, value in pairs if value]

    @property
    def query(self) -> str:
        """The options as a DSN's query (`?socket=...`), each only when it is not the default; "" for none."""
        from urllib.parse import quote

        given = [f"{name}={quote(value, safe='/')}" for name, value in self._given()]
        return "?" + "&".join(given) if given else ""

    @property
    def summary(self) -> str:
        """The options given, without their values' paths (for a service's viewers): `socket,
        ssl-mode=VERIFY_CA, ssl-ca`; "" for none."""
        return ", ".join(f"{name}={value}" if name == "ssl-mode" else name for name, value in self._given())

    @property
    def files(self) -> list[tuple[str, str]]:
        """The paths the options name, each with its option: socket, ssl-ca, ssl-cert, ssl-key."""
        return [(name, value) for name, value in self._given() if name != "ssl-mode"]

    def host(self, given: str) -> str:
        """The host a session names: `given`, else `localhost` through a socket, else 127.0.0.1."""
        return given or ("localhost" if self.socket else DEFAULT_HOST)

    def describe(self, host: str, port: int) -> str:
        """Where a session goes, for messages: `db1:3306`, or the socket's path."""
        return f"{self.socket} (Unix socket)" if self.socket else f"{host}:{port}"

    def session_args(self) -> dict[str, Any]:
        """PyMySQL's connect arguments for these options; SourceError when a TLS file cannot be read."""
        args: dict[str, Any] = {}
        if self.socket:
            args["unix_socket"] = self.socket
        if self.ssl_mode == "DISABLED":
            args["ssl_disabled"] = True
        elif self.ssl_mode != "PREFERRED":
            args["ssl"] = _tls_context(replace(self, socket=""))
        return args


_contexts: dict[ConnectionOptions, Any] = {}


def _tls_context(options: ConnectionOptions) -> Any:
    """The TLS context of an ssl-mode that asks for TLS, built once per settings (loading a CA bundle
    costs tens of milliseconds). Built here rather than by PyMySQL, which checks no host name when no
    CA file is given: VERIFY_IDENTITY checks it against the system's CAs as well."""
    import ssl

    with _open_lock:
        context = _contexts.get(options)
        if context is None:
            try:
                context = ssl.create_default_context(cafile=options.ssl_ca or None)
                if options.ssl_cert:
                    context.load_cert_chain(options.ssl_cert, keyfile=options.ssl_key or None)
            except (OSError, ssl.SSLError) as exc:
                files = ", ".join(f"{name} {value}" for name, value in options.files)
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                raise SourceError(f"cannot read the DSN's TLS files ({files}): {reason}") from None
            # as PyMySQL's own contexts: Python 3.13 turns strict X.509 checks on, which refuse the
            # certificates MySQL and MariaDB generate for themselves
            context.verify_flags &= ~getattr(ssl, "VERIFY_X509_STRICT", 0)
            context.check_hostname = options.ssl_mode == "VERIFY_IDENTITY"
            if options.ssl_mode == "REQUIRED":
                context.verify_mode = ssl.CERT_NONE
            _contexts[options] = context
        return context


_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:@/]*:)[^/]+@")


def redact(dsn: str) -> str:
    """The DSN as given, its password replaced by ***."""
    return _PASSWORD.sub(r"\1***@", dsn, count=1)


# ---- connections: every session to a server opens here, with its timeouts, and can be cut

CONNECT_TIMEOUT_ENV = "MYSQL_ROLLBACK_CONNECT_TIMEOUT"
READ_TIMEOUT_ENV = "MYSQL_ROLLBACK_READ_TIMEOUT"
WRITE_TIMEOUT_ENV = "MYSQL_ROLLBACK_WRITE_TIMEOUT"
DEFAULT_CONNECT_TIMEOUT = 10.0
# A statement of a plan can wait for row locks and a schema read can crawl a large information_schema:
# minutes, not hours. A server that says nothing for this long is taken as gone.
DEFAULT_READ_TIMEOUT = 300.0
DEFAULT_WRITE_TIMEOUT = 60.0

# thread -> its open sessions, each with the arguments it was opened with (for kill_queries)
_open: dict[int, weakref.WeakKeyDictionary[Any, dict[str, Any]]] = {}
_open_lock = threading.Lock()


def _seconds(env: str, default: float) -> float:
    text = os.environ.get(env, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 31_536_000:
        raise SourceError(f"{env} must be a number of seconds above 0 (got {text!r})")
    return value


def server_timeouts() -> dict[str, float]:
    """PyMySQL's connect, read and write timeouts for a server session, from the environment."""
    return {
        "connect_timeout": _seconds(CONNECT_TIMEOUT_ENV, DEFAULT_CONNECT_TIMEOUT),
        "read_timeout": _seconds(READ_TIMEOUT_ENV, DEFAULT_READ_TIMEOUT),
        "write_timeout": _seconds(WRITE_TIMEOUT_ENV, DEFAULT_WRITE_TIMEOUT),
    }


_connection_class: Any = None
_preferred_tls: Any = None


def _connection() -> Any:
    """PyMySQL's connection class, with one TLS context for every session that names no TLS option.

    Such a session asks for TLS when the server offers it (PyMySQL's "preferred" mode, no
    certificate check), and PyMySQL builds a new context for each: loading the system's CA bundle,
    tens of milliseconds holding the GIL, five or more times per job (schemas, proof, packet
    limit, side effects), in the service's threads beside its event loop. The context is the same
    each time, so it is built once, and only when a server offers TLS: PyMySQL builds it before it
    knows (0.03 CPU s of every apply's start against a server without TLS, bench/README.md)."""
    global _connection_class
    if _connection_class is None:
        import pymysql.connections

        class Connection(pymysql.connections.Connection):
            def _create_ssl_ctx(self, sslp: Any) -> Any:
                if sslp:  # the caller's own TLS options: a context of their own
                    return super()._create_ssl_ctx(sslp)
                global _preferred_tls
                with _open_lock:
                    if _preferred_tls is None:
                        # PyMySQL's builder reads only its options: not bound to this session, which
                        # the shared context would otherwise keep alive
                        base = pymysql.connections.Connection._create_ssl_ctx
                        _preferred_tls = _PreferredTls(lambda options: base(None, options))
                    return _preferred_tls

        _connection_class = Connection
    return _connection_class


class _PreferredTls:
    """The preferred mode's context, one for every such session, built when first used: at the first
    TLS handshake (PyMySQL's only use of it), or when an attribute of it is read."""

    def __init__(self, build: Callable[[Any], Any]):
        self._build = build
        self._context: Any = None

    def _built(self) -> Any:
        with _open_lock:
            if self._context is None:
                self._context = self._build({})
            return self._context

    def wrap_socket(self, sock: Any, **kwargs: Any) -> Any:
        return self._built().wrap_socket(sock, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._built(), name)


def open_connection(**args: Any) -> Any:
    """pymysql.connect with the configured timeouts (the caller's win), remembered for the
    calling thread so that interrupt_thread can cut it while it waits on a silent server."""
    settings = {**server_timeouts(), **args}
    try:
        conn = _connection()(**settings)
    except RuntimeError as exc:
        # PyMySQL's way of saying an account's authentication plugin needs a package it lacks
        # (pynacl for MariaDB's ed25519, cryptography for sha256_password or caching_sha2_password
        # without TLS): a connection error like any other, so the caller says it in one line
        import pymysql

        raise pymysql.err.OperationalError(2059, f"cannot authenticate: {exc}") from None
    with _open_lock:
        _open.setdefault(threading.get_ident(), weakref.WeakKeyDictionary())[conn] = settings
    return conn


def kill_queries(thread_id: int, timeout: float = 2.0) -> int:
    """Stop the statements the sessions that thread opened are running: `KILL QUERY <id>` sent for
    each from a second session (timeouts of `timeout` seconds), as a DBA would. The session stays
    open and its caller sees the statement fail; a server that does not answer the second session
    either is left to interrupt_thread. The number of sessions the kill was sent for."""
    import pymysql

    with _open_lock:
        sessions = list(_open.get(thread_id, {}).items())
    sent = 0
    for conn, settings in sessions:
        server_id = conn.server_thread_id[0] if getattr(conn, "server_thread_id", None) else None
        if not conn.open or server_id is None:
            continue
        second = {k: v for k, v in settings.items() if k not in ("client_flag", "autocommit", "database")}
        second.update(connect_timeout=timeout, read_timeout=timeout, write_timeout=timeout)
        try:
            killer = _connection()(**second)
            try:
                with killer.cursor() as cur:
                    cur.execute(f"KILL QUERY {int(server_id)}")
                sent += 1
            finally:
                killer.close()
        except (pymysql.MySQLError, OSError):
            pass  # the server does not answer: interrupt_thread, or the process's end, cuts the session
    return sent


def interrupt_thread(thread_id: int) -> int:
    """Shut down the sockets of the sessions that thread opened: a read it is blocked in ends at
    once (PyMySQL raises "lost connection"). The number of sessions cut."""
    with _open_lock:
        conns = list(_open.pop(thread_id, {}))
    cut = 0
    for conn in conns:
        sock = getattr(conn, "_sock", None)
        if sock is None:
            continue
        try:
            sock.shutdown(socket.SHUT_RDWR)
            cut += 1
        except OSError:
            pass  # already closed
    return cut
