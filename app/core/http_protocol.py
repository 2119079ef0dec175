"""The service's HTTP protocol: uvicorn's own httptools protocol, wrapped (not extended), sending
each response's head and body in one system call and cutting clients that stall.

uvicorn writes a response's status line and headers, then its body, each straight to the socket:
two sends, and on loopback two wake-ups of the client, for every answer. Profiled under 100
polling clients, that first send was a third of the service's time (the kernel delivers the
segment in the sender's call). Here the writes of one turn of the event loop are joined and sent
at its end; a large body is sent once it passes FLUSH_BYTES, so flow control still sees it.

Only public interfaces are used: uvicorn's `http` option takes an asyncio protocol class and builds
it with the keyword arguments it builds its own with; this one builds uvicorn's httptools protocol
(the class uvicorn's `http="httptools"` names) with them and talks to it as asyncio does, handing it
a transport that joins the writes. A request's phases (headers, body) come from a second httptools
parser (httptools' own API) fed the same bytes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httptools
from uvicorn.config import HTTP_PROTOCOLS
from uvicorn.importer import import_from_string

FLUSH_BYTES = 1 << 16
UVICORN_HTTPTOOLS: type[asyncio.Protocol] = import_from_string(HTTP_PROTOCOLS["httptools"])
log = logging.getLogger("uvicorn.error")  # uvicorn's protocol logs there too


class _JoinedWrites:
    """A transport that holds what is written until the loop's next turn (or FLUSH_BYTES), then
    writes it at once; everything else goes to the transport it wraps. It also says whether
    reading is paused (uvicorn's flow control holds a body back the service does not take yet)."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop):
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []
        self._size = 0
        self.read_paused = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(bytes(data))
        self._size += len(data)
        if self._size >= FLUSH_BYTES:
            self._flush()

    def writelines(self, chunks: Any) -> None:
        for chunk in chunks:
            self.write(chunk)

    def _flush(self) -> None:
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending.clear()
        self._size = 0
        if not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._pending.clear()
        self._size = 0
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._size + self._transport.get_write_buffer_size()

    def pause_reading(self) -> None:
        self.read_paused = True
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self.read_paused = False
        self._transport.resume_reading()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class _Phases:
    """httptools' callbacks: where the connection's current request is (headers, body, or none
    between requests), and since when. A request without a body completes in the same call that
    completes its headers, so its "body" phase is never seen by the timer."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.phase: str | None = "headers"  # from the connection: a client that sends nothing is cut too
        self.since = loop.time()

    def enter(self, phase: str | None) -> None:
        self.phase = phase
        self.since = self.loop.time()

    def on_message_begin(self) -> None:
        self.enter("headers")

    def on_headers_complete(self) -> None:
        self.enter("body")

    def on_body(self, body: bytes) -> None:
        self.since = self.loop.time()

    def on_message_complete(self) -> None:
        self.enter(None)


class JoinedWritesProtocol(asyncio.Protocol):
    """Also cuts slow clients: a connection is closed when a request's headers take longer than
    header_timeout from its first byte (or from the connection), or when the client sends nothing
    for body_timeout while a request's body is still coming. uvicorn closes idle keep-alive
    connections itself (timeout_keep_alive) and caps connections (limit_concurrency), but has no
    limit on a request that never ends; one timer per connection keeps the check cheap."""

    header_timeout = 10.0  # `mysql-rollback serve` sets both from the settings
    body_timeout = 30.0

    def __init__(self, **uvicorn_arguments: Any):
        self._http = UVICORN_HTTPTOOLS(**uvicorn_arguments)  # type: ignore[call-arg]
        self.loop: asyncio.AbstractEventLoop = uvicorn_arguments.get("_loop") or asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = _JoinedWrites(transport, self.loop)  # type: ignore[arg-type]
        self._phases = _Phases(self.loop)
        self._parser: httptools.HttpRequestParser | None = httptools.HttpRequestParser(self._phases)
        self._watch = self.loop.call_later(min(self.header_timeout, self.body_timeout), self._check)
        self._http.connection_made(self.transport)  # type: ignore[arg-type]

    def data_received(self, data: bytes) -> None:
        if self._parser is not None:
            try:
                self._parser.feed_data(data)
            except (httptools.HttpParserError, httptools.HttpParserUpgrade):
                # uvicorn answers a malformed request and closes, or hands an upgrade over: not ours to time
                self._parser = None
                self._phases.enter(None)
        self._http.data_received(data)

    def eof_received(self) -> bool | None:
        return self._http.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._watch.cancel()
        self._http.connection_lost(exc)

    def pause_writing(self) -> None:
        self._http.pause_writing()

    def resume_writing(self) -> None:
        self._http.resume_writing()

    def _check(self) -> None:
        if self.transport.is_closing():
            return
        phases = self._phases
        if (
            self.transport.read_paused
        ):  # the service holds the body back (flow control): not the client's silence
            phases.since = self.loop.time()
        limit = self.header_timeout if phases.phase == "headers" else self.body_timeout
        waited = self.loop.time() - phases.since
        if phases.phase is not None and waited >= limit:
            log.info("closing a connection whose request's %s took longer than %g s", phases.phase, limit)
            self.transport.close()
            return
        wait = limit - waited if phases.phase is not None else min(self.header_timeout, self.body_timeout)
        self._watch = self.loop.call_later(max(wait, 0.05), self._check)
