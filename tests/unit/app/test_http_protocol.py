"""The service's HTTP protocol (app/core/http_protocol.py): what one turn of the event loop writes
leaves in one send, and uvicorn serves through it as before (keep-alive, a streamed body larger
than FLUSH_BYTES, HEAD, Connection: close)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import httpx
import uvicorn

from app.core.http_protocol import FLUSH_BYTES, JoinedWritesProtocol, _JoinedWrites


def test_the_writes_of_one_turn_leave_in_one_send_at_its_end():
    async def run() -> None:
        ours, peer = socket.socketpair()
        peer.setblocking(False)
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, ours)
        joined = _JoinedWrites(transport, loop)  # type: ignore[arg-type]
        joined.write(b"HTTP/1.1 200 OK\r\n\r\n")
        joined.write(b"body")
        try:
            peer.recv(100)
            raise AssertionError("sent before the turn ended")
        except BlockingIOError:
            pass
        await asyncio.sleep(0.05)
        assert peer.recv(100) == b"HTTP/1.1 200 OK\r\n\r\nbody"
        joined.write(b"x" * FLUSH_BYTES)  # a large write is not held
        assert joined.get_write_buffer_size() == transport.get_write_buffer_size()
        joined.write(b"tail")
        joined.close()  # what is held is written before the close
        await asyncio.sleep(0.05)
        received = b""
        while chunk := peer.recv(1 << 20):
            received += chunk
        assert received == b"x" * FLUSH_BYTES + b"tail"
        peer.close()

    asyncio.run(run())


async def _app(scope, receive, send):  # type: ignore[no-untyped-def]
    if scope["type"] != "http":
        return
    if scope["path"] == "/stream":
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}
        )
        for i in range(3):
            await send({"type": "http.response.body", "body": bytes([65 + i]) * 100_000, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    body = b"small answer"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"12")]})
    await send({"type": "http.response.body", "body": body})


def test_uvicorn_serves_through_it():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(_app, host="127.0.0.1", port=port, http=JoinedWritesProtocol, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
            time.sleep(0.05)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            for _ in range(3):  # one connection, kept alive
                assert client.get("/").content == b"small answer"
            streamed = client.get("/stream")
            assert streamed.content == b"A" * 100_000 + b"B" * 100_000 + b"C" * 100_000
            head = client.head("/")
            assert head.status_code == 200 and head.content == b""
            closing = client.get("/", headers={"Connection": "close"})
            assert closing.content == b"small answer" and closing.headers["connection"] == "close"
    finally:
        server.should_exit = True
        thread.join(20)


class _QuickCuts(JoinedWritesProtocol):
    header_timeout = 1.0
    body_timeout = 1.0


def test_slow_clients_are_cut_after_the_timeouts_and_the_service_keeps_serving():
    """200 connections that stall (in their headers, or in a body) are closed after the timeout;
    meanwhile and afterwards ordinary requests are answered."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            _app, host="127.0.0.1", port=port, http=_QuickCuts, log_level="warning", limit_concurrency=1000
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    slow: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
            time.sleep(0.05)
        for i in range(200):
            sock = socket.create_connection(("127.0.0.1", port))
            if i % 3 == 0:
                pass  # connects, sends nothing
            elif i % 3 == 1:
                sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # headers never end
            else:
                sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\npart")  # body stalls
            sock.settimeout(10)
            slow.append(sock)
        started = time.monotonic()
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            assert client.get("/").content == b"small answer"  # served while they stall
        for sock in slow:
            try:
                rest = sock.recv(1000)
            except ConnectionResetError:
                rest = b""
            assert rest == b"" or rest.startswith(b"HTTP/1.1 200")  # closed (the stalled body's answer first)
        waited = time.monotonic() - started
        assert 0.8 < waited < 6, f"the stalled connections were closed after {waited:.1f} s"
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            assert client.get("/").content == b"small answer"
    finally:
        for sock in slow:
            sock.close()
        server.should_exit = True
        thread.join(20)
