"""A scratch MariaDB server owned by the test run.

It lives in a private temporary directory (data dir, socket, binlogs), listens on a
free loopback port (never 3306), and is stopped by its own PID. If the test process
dies without cleaning up, the kernel sends the server SIGTERM (PR_SET_PDEATHSIG), so
no server outlives its test run.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pymysql

_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class ServerOptions:
    """What makes one scratch server different from another; each set gets its own server."""

    row_image: str = "FULL"  # FULL | MINIMAL | NOBLOB
    row_metadata: str | None = None  # None (server default) | MINIMAL | FULL
    binlog_format: str = "ROW"
    gtid_strict: bool = False
    extra_args: tuple[str, ...] = ()

    def args(self) -> list[str]:
        args = [
            f"--binlog-format={self.binlog_format}",
            f"--binlog-row-image={self.row_image}",
        ]
        if self.row_metadata:
            args.append(f"--binlog-row-metadata={self.row_metadata}")
        if self.gtid_strict:
            args.append("--gtid-strict-mode=ON")
        return args + list(self.extra_args)


@dataclass(frozen=True)
class BinlogRange:
    """The binlog coordinates a piece of SQL produced: start is inclusive, stop is the end position."""

    start_file: str
    start_position: int
    stop_file: str
    stop_position: int
    gtid_before: str
    gtid_after: str
    files: tuple[Path, ...]  # the binlog files the range touches, in order


@dataclass
class ScratchServer:
    options: ServerOptions = field(default_factory=ServerOptions)
    host: str = "127.0.0.1"
    port: int = 0
    user: str = "rollback"
    password: str = ""
    base_dir: Path = Path()
    process: subprocess.Popen | None = None

    @property
    def datadir(self) -> Path:
        return self.base_dir / "data"

    @property
    def binlog_dir(self) -> Path:
        return self.base_dir / "binlog"

    @property
    def socket_path(self) -> Path:
        return self.base_dir / "mysqld.sock"

    @property
    def error_log(self) -> Path:
        return self.base_dir / "error.log"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def dsn(self) -> str:
        return f"mysql://{self.user}:{self.password}@{self.host}:{self.port}/"

    # ---- lifecycle ---------------------------------------------------------

    def start(self) -> ScratchServer:
        mariadbd = _find_binary("mariadbd", "/usr/sbin/mariadbd")
        install_db = _find_binary("mariadb-install-db", "/usr/bin/mariadb-install-db")
        self.base_dir = Path(tempfile.mkdtemp(prefix="mrb-db-"))
        self.binlog_dir.mkdir()
        # A private temporary directory: a starting mariadbd (the bootstrap of mariadb-install-db too) removes
        # every `#sql*` file of its tmpdir, so two servers starting at once in /tmp (the suite's two processes
        # do) deleted each other's temporary tables ("Unknown table 'mysql.tmp_user_sys'", 2 bootstraps in 12).
        tmpdir = self.base_dir / "tmp"
        tmpdir.mkdir()
        self.port = _free_port()
        self.password = secrets.token_hex(12)
        user_args = ["--user=root"] if os.geteuid() == 0 else []
        installed = subprocess.run(
            [
                install_db,
                "--no-defaults",
                f"--datadir={self.datadir}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                f"--tmpdir={tmpdir}",
                *user_args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        if installed.returncode != 0:
            raise RuntimeError(
                f"mariadb-install-db failed ({installed.returncode}):\n{installed.stderr[-2000:]}"
            )
        cmd = [
            mariadbd,
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--socket={self.socket_path}",
            f"--pid-file={self.base_dir / 'mysqld.pid'}",
            f"--log-error={self.error_log}",
            f"--tmpdir={tmpdir}",
            f"--port={self.port}",
            f"--bind-address={self.host}",
            f"--log-bin={self.binlog_dir / 'mysql-bin'}",
            "--server-id=1",
            "--log-slave-updates",
            "--skip-name-resolve",
            "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_general_ci",
            "--innodb-buffer-pool-size=128M",
            "--innodb-flush-log-at-trx-commit=2",
            "--sync-binlog=0",
            "--max-connections=200",
            *self.options.args(),
            *user_args,
        ]
        self.process = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
        )
        try:
            self._wait_until_ready()
            self._create_user()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self.base_dir != Path() and self.base_dir.exists():
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def _wait_until_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"scratch mariadbd exited early:\n{self._log_tail()}")
            try:
                pymysql.connect(unix_socket=str(self.socket_path), user="root", password="").close()
                return
            except pymysql.err.OperationalError as exc:
                last = exc
                time.sleep(0.1)
        raise RuntimeError(f"scratch mariadbd not ready after {timeout}s ({last}):\n{self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            return "\n".join(self.error_log.read_text(errors="replace").splitlines()[-20:])
        except OSError:
            return "(no error log)"

    def _create_user(self) -> None:
        conn = pymysql.connect(unix_socket=str(self.socket_path), user="root", password="", autocommit=True)
        with conn.cursor() as cur:
            # Users are created without writing the binlog so that tests see only their own events.
            cur.execute("SET SESSION sql_log_bin = 0")
            for host in ("%", "localhost"):
                password = conn.escape(self.password)
                cur.execute(f"CREATE USER '{self.user}'@'{host}' IDENTIFIED BY {password}")
                cur.execute(f"GRANT ALL PRIVILEGES ON *.* TO '{self.user}'@'{host}' WITH GRANT OPTION")
        conn.close()

    # ---- use ----------------------------------------------------------------

    def connect(self, database: str | None = None, **kwargs) -> pymysql.connections.Connection:
        kwargs.setdefault("autocommit", True)
        kwargs.setdefault("charset", "utf8mb4")
        return pymysql.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            database=database,
            **kwargs,
        )

    def query(self, sql: str, args=None, database: str | None = None) -> list[tuple]:
        conn = self.connect(database)
        try:
            with conn.cursor() as cur:
                cur.execute(sql, args)
                return list(cur.fetchall())
        finally:
            conn.close()

    def binlog_position(self) -> tuple[str, int, str]:
        """(file, position, gtid_binlog_pos) of the end of the binary log right now."""
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                try:
                    cur.execute("SHOW BINLOG STATUS")  # MariaDB 10.5.2+
                except pymysql.err.ProgrammingError:
                    cur.execute("SHOW MASTER STATUS")
                row = cur.fetchone()
                cur.execute("SELECT @@global.gtid_binlog_pos")
                gtid = cur.fetchone()[0] or ""
        finally:
            conn.close()
        return row[0], int(row[1]), gtid

    def binlog_files(self) -> list[Path]:
        index = self.binlog_dir / "mysql-bin.index"
        names = [line.strip() for line in index.read_text().splitlines() if line.strip()]
        return [self.binlog_dir / Path(n).name for n in names]

    def flush_binary_logs(self) -> None:
        self.query("FLUSH BINARY LOGS")

    def wait_for_binlog_checkpoint(self, timeout: float = 10.0) -> None:
        """After a rotation MariaDB writes a Binlog_checkpoint event naming the new file into it once the
        older file's transactions are durable, at a moment of its own (43 bytes at the end of the log):
        a test that compares two reads of "the end of the log" waits for it first."""
        current = self.binlog_position()[0]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            events = self.query(f"SHOW BINLOG EVENTS IN '{current}'")
            if any(row[2] == "Binlog_checkpoint" and str(row[5]).strip() == current for row in events):
                return
            time.sleep(0.02)
        raise AssertionError(f"no Binlog_checkpoint of {current} within {timeout} s")

    def run_sql(
        self, statements: str | Iterable[str], database: str | None = None, own_file: bool = False
    ) -> BinlogRange:
        """Run SQL (autocommit per statement unless it opens a transaction) and return the binlog range it wrote.

        With own_file=True the binary log is rotated before and after, so the range is one whole file.
        """
        if isinstance(statements, str):
            statements = [statements]
        if own_file:
            self.flush_binary_logs()
        start_file, start_pos, gtid_before = self.binlog_position()
        conn = self.connect(database)
        try:
            with conn.cursor() as cur:
                for sql in statements:
                    cur.execute(sql)
        finally:
            conn.close()
        stop_file, stop_pos, gtid_after = self.binlog_position()
        if own_file:
            self.flush_binary_logs()
        names = [p.name for p in self.binlog_files()]
        touched = names[names.index(start_file) : names.index(stop_file) + 1]
        return BinlogRange(
            start_file,
            start_pos,
            stop_file,
            stop_pos,
            gtid_before,
            gtid_after,
            tuple(self.binlog_dir / n for n in touched),
        )


def _find_binary(name: str, fallback: str) -> str:
    found = shutil.which(name) or (fallback if os.path.exists(fallback) else None)
    if not found:
        raise RuntimeError(f"{name} is not installed; run ./scripts/test, which installs mariadb-server")
    return found


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    if port == 3306:  # pragma: no cover - the kernel never hands out 3306 from the ephemeral range
        return _free_port()
    return port


def _die_with_parent() -> None:
    """Runs in the child before exec: ask the kernel to SIGTERM it when the test process dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass
    os.setsid()
