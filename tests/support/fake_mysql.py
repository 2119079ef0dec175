"""A fake MySQL server on 127.0.0.1 for the tests of a server that misbehaves: it sends a valid
handshake, accepts any login, answers the session's SET statements, and then, for every other query,
either never answers (`silent`: a hung server or a network partition) or answers with a hostile
packet (`hostile`: a LOCAL INFILE request, which PyMySQL refuses with a RuntimeError).

It speaks just enough of the protocol for PyMySQL's connect: the handshake V10, an OK for the
login and for `SET ...`. One thread per connection; stop() closes every socket.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

CAPABILITIES = (
    0x00000001  # CLIENT_LONG_PASSWORD
    | 0x00000008  # CLIENT_CONNECT_WITH_DB
    | 0x00000200  # CLIENT_PROTOCOL_41
    | 0x00002000  # CLIENT_TRANSACTIONS
    | 0x00008000  # CLIENT_SECURE_CONNECTION
    | 0x00080000  # CLIENT_PLUGIN_AUTH
)
SERVER_STATUS_AUTOCOMMIT = 0x0002
COM_QUERY = 0x03
COM_QUIT = 0x01


def _packet(seq: int, payload: bytes) -> bytes:
    return struct.pack("<I", len(payload))[:3] + bytes([seq & 0xFF]) + payload


def _handshake(connection_id: int) -> bytes:
    salt = b"abcdefghijklmnopqrst"
    return (
        b"\x0a"
        + b"8.0.99-fake\x00"
        + struct.pack("<I", connection_id)
        + salt[:8]
        + b"\x00"
        + struct.pack("<H", CAPABILITIES & 0xFFFF)
        + bytes([45])  # utf8mb4_general_ci
        + struct.pack("<H", SERVER_STATUS_AUTOCOMMIT)
        + struct.pack("<H", CAPABILITIES >> 16)
        + bytes([21])
        + b"\x00" * 10
        + salt[8:]
        + b"\x00"
        + b"mysql_native_password\x00"
    )


def _ok() -> bytes:
    return b"\x00\x00\x00" + struct.pack("<HH", SERVER_STATUS_AUTOCOMMIT, 0)


class FakeMySQL:
    def __init__(self, mode: str):
        assert mode in ("silent", "hostile")
        self.mode = mode
        self.queries: list[str] = []  # every query it was sent, the SETs included
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name=f"fake-mysql-{mode}", daemon=True).start()

    @property
    def dsn(self) -> str:
        return f"mysql://fake:secret-password@127.0.0.1:{self.port}/"

    def _accept(self) -> None:
        count = 0
        while not self._stopped.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            count += 1
            with self._lock:
                self._sockets.append(conn)
            threading.Thread(target=self._serve, args=(conn, count), daemon=True).start()

    def _read_packet(self, conn: socket.socket) -> tuple[int, bytes] | None:
        header = self._read(conn, 4)
        if header is None:
            return None
        length = int.from_bytes(header[:3], "little")
        payload = self._read(conn, length)
        return (header[3], payload) if payload is not None else None

    def _read(self, conn: socket.socket, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            try:
                chunk = conn.recv(n - len(data))
            except OSError:
                return None
            if not chunk:
                return None
            data += chunk
        return data

    def _serve(self, conn: socket.socket, connection_id: int) -> None:
        try:
            conn.sendall(_packet(0, _handshake(connection_id)))
            login = self._read_packet(conn)
            if login is None:
                return
            conn.sendall(_packet(login[0] + 1, _ok()))
            while (packet := self._read_packet(conn)) is not None:
                seq, payload = packet
                if not payload or payload[0] == COM_QUIT:
                    return
                query = payload[1:].decode("utf-8", "replace") if payload[0] == COM_QUERY else ""
                self.queries.append(query)
                if query.upper().startswith("SET ") or payload[0] != COM_QUERY:
                    conn.sendall(_packet(seq + 1, _ok()))
                elif self.mode == "hostile":
                    conn.sendall(_packet(seq + 1, b"\xfb/etc/passwd"))  # LOCAL INFILE request
                else:
                    self._stopped.wait()  # never answers
                    return
        except OSError:
            return
        finally:
            conn.close()

    def stop(self) -> None:
        self._stopped.set()
        self._listener.close()
        with self._lock:
            for conn in self._sockets:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                conn.close()


@pytest.fixture
def silent_mysql() -> Iterator[FakeMySQL]:
    """A server that logs in and then never answers a query."""
    server = FakeMySQL("silent")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def hostile_mysql() -> Iterator[FakeMySQL]:
    """A server that answers every query with a LOCAL INFILE request."""
    server = FakeMySQL("hostile")
    try:
        yield server
    finally:
        server.stop()
