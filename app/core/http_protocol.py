"""uvicorn's httptools protocol, sending each response's head and body in one system call.

uvicorn writes a response's status line and headers, then its body, each straight to the socket:
two sends, and on loopback two wake-ups of the client, for every answer. Profiled under 100
polling clients, that first send was a third of the service's time (the kernel delivers the
segment in the sender's call). Here the writes of one turn of the event loop are joined and sent
at its end; a large body is sent once it passes FLUSH_BYTES, so flow control still sees it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

FLUSH_BYTES = 1 << 16


class _JoinedWrites:
    """A transport that holds what is written until the loop's next turn (or FLUSH_BYTES), then
    writes it at once; everything else goes to the transport it wraps."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop):
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []
        self._size = 0

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

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class JoinedWritesProtocol(HttpToolsProtocol):
    """Also cuts slow clients: a connection is closed when a request's headers take longer than
    header_timeout from its first byte (or from the connection), or when the client sends nothing
    for body_timeout while a request's body is still coming. uvicorn closes idle keep-alive
    connections itself (timeout_keep_alive) and caps connections (limit_concurrency), but has no
    limit on a request that never ends; one timer per connection keeps the check cheap."""

    header_timeout = 10.0  # `mysql-rollback serve` sets both from the settings
    body_timeout = 30.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_JoinedWrites(transport, self.loop))  # type: ignore[arg-type]
        self._phase: str | None = "headers"
        self._phase_since = self.loop.time()
        self._watch = self.loop.call_later(min(self.header_timeout, self.body_timeout), self._check)

    def connection_lost(self, exc: Exception | None) -> None:
        self._watch.cancel()
        super().connection_lost(exc)

    def _enter(self, phase: str | None) -> None:
        self._phase = phase
        self._phase_since = self.loop.time()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._enter("headers")

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        has_body = any(
            (name == b"content-length" and value.strip() not in (b"", b"0")) or name == b"transfer-encoding"
            for name, value in self.headers
        )
        self._enter("body" if has_body else None)

    def on_body(self, body: bytes) -> None:
        super().on_body(body)
        self._phase_since = self.loop.time()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._enter(None)

    def _check(self) -> None:
        if self.transport.is_closing():
            return
        if self.flow.read_paused:  # the service holds the body back (flow control): not the client's silence
            self._phase_since = self.loop.time()
        limit = self.header_timeout if self._phase == "headers" else self.body_timeout
        waited = self.loop.time() - self._phase_since
        if self._phase is not None and waited >= limit:
            self.logger.info(
                "closing a connection whose request's %s took longer than %g s", self._phase, limit
            )
            self.transport.close()
            return
        wait = limit - waited if self._phase is not None else min(self.header_timeout, self.body_timeout)
        self._watch = self.loop.call_later(max(wait, 0.05), self._check)
