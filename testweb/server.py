"""A small, fast HTTP/1.1 server on asyncio.Protocol serving a ``TestWeb`` by Host header.

Keep-alive, pipelining, Content-Length, HEAD; every request is logged as one JSON line
``{"start", "end", "host", "path", "method", "status", "bytes", "conn"}`` (``bytes`` is the
body bytes sent, ``path`` the request target, ``conn`` a per-connection id; status 0 means
the connection was closed without an answer). A streamed answer the client gave up on is
logged when it stops, with the bytes sent so far. Requests that hang are not logged. The log
is buffered and flushed every ``flush_interval`` seconds and on close.

``start`` is taken when the request has been read, ``end`` just before the answer's last
write: a stamp taken after the write can land after the client already holds the answer,
when the server process loses its core to the client it just woke (traced on a box at load
16: in 58 of 1,266 fetches the crawler had released the host before the server stamped the
end, by up to 30 ms), and the politeness audit then counts a gap the crawler never left.
"""

from __future__ import annotations

import asyncio
import email.utils
import http
import itertools
import json
import socket
import time
from typing import IO

from testweb.messages import Request, Response
from testweb.web import TestWeb

MAX_HEAD = 64 * 1024
#: How often the request log is written to its file (and at close).
LOG_FLUSH_S = 0.2
_REASONS = {s.value: s.phrase for s in http.HTTPStatus}


class RequestLog:
    """Buffered JSON-lines request log, flushed periodically and on close."""

    def __init__(self, stream: IO[str] | None, flush_interval: float = LOG_FLUSH_S):
        self._stream = stream
        self._lines: list[str] = []
        self._interval = flush_interval
        self._timer: asyncio.TimerHandle | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Begin periodic flushing on this loop."""
        self._loop = loop
        self._timer = loop.call_later(self._interval, self._tick)

    def _tick(self) -> None:
        self.flush()
        self._timer = self._loop.call_later(self._interval, self._tick)

    def record(self, start: float, end: float, host: str, path: str, method: str,
               status: int, nbytes: int, conn: int) -> None:
        """Queue one request's line."""
        if self._stream is None:
            return
        self._lines.append(json.dumps({
            "start": start, "end": end, "host": host, "path": path, "method": method,
            "status": status, "bytes": nbytes, "conn": conn,
        }))

    def flush(self) -> None:
        """Write out queued lines."""
        if self._lines and self._stream is not None:
            self._stream.write("\n".join(self._lines) + "\n")
            self._lines.clear()
            self._stream.flush()

    def close(self) -> None:
        """Stop the timer and flush what is left."""
        if self._timer is not None:
            self._timer.cancel()
        self.flush()


class _DateCache:
    """The HTTP Date header value, formatted at most once a second."""

    def __init__(self) -> None:
        self._second = -1
        self._value = ""

    def now(self) -> str:
        second = int(time.time())
        if second != self._second:
            self._second = second
            self._value = email.utils.formatdate(second, usegmt=True)
        return self._value


class HTTPProtocol(asyncio.Protocol):
    """One client connection: parses requests in order and answers each through the web."""

    def __init__(self, web: TestWeb, log: RequestLog, conn_id: int, dates: _DateCache):
        self.web = web
        self.log = log
        self.conn_id = conn_id
        self.dates = dates
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.busy = False  # a delayed, streamed or hung response is in progress
        self.closing = False
        self._can_write = asyncio.Event()
        self._can_write.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        self._can_write.set()

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self._process()

    def _process(self) -> None:
        while not self.busy and not self.closing:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > MAX_HEAD:
                    self._fail(431)
                return
            lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
            try:
                method, target, version = lines[0].split(" ")
            except ValueError:
                self._fail(400)
                return
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = headers.get("content-length", "0") or "0"
            if not length.isdigit():
                self._fail(400)
                return
            body_len = int(length)
            if len(self.buffer) < end + 4 + body_len:
                return
            del self.buffer[:end + 4 + body_len]
            connection = headers.get("connection", "").lower()
            keep_alive = ("close" not in connection if version == "HTTP/1.1"
                          else "keep-alive" in connection)
            host = headers.get("host", "").lower()
            name, sep, port = host.rpartition(":")
            if sep and port.isdigit():
                host = name
            self._answer(Request(method, host, target, headers), keep_alive)

    def _fail(self, status: int) -> None:
        body = _REASONS.get(status, "Error").encode()
        self.transport.write(  # type: ignore[union-attr]
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nContent-Length: {len(body)}"
            f"\r\nConnection: close\r\n\r\n".encode() + body)
        self.closing = True
        self.transport.close()  # type: ignore[union-attr]

    def _head(self, response: Response, length: int | None, keep_alive: bool) -> bytes:
        status = response.status
        parts = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}\r\n",
                 f"Server: testweb\r\nDate: {self.dates.now()}\r\n"]
        for name, value in response.headers.items():
            parts.append(f"{name}: {value}\r\n")
        if length is not None and "Content-Length" not in response.headers \
                and status not in (204, 304):  # these have no body and no length (RFC 9110)
            parts.append(f"Content-Length: {length}\r\n")
        parts.append(f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n")
        return "".join(parts).encode("latin-1")

    def _answer(self, request: Request, keep_alive: bool) -> None:
        start = time.time()
        try:
            response = self.web.handle(request)
        except Exception as exc:  # noqa: BLE001 - a host bug must not kill the server: a 500
            response = Response(500, {"Content-Type": "text/plain"}, repr(exc).encode())
        if response.hang:
            self.busy = True  # never answer; the client has to give up
            return
        if response.abort:
            self.log.record(start, time.time(), request.host, request.target, request.method,
                            0, 0, self.conn_id)
            self.closing = True
            self.transport.close()  # type: ignore[union-attr]
            return
        if response.delay > 0 or response.stream is not None:
            self.busy = True
            asyncio.get_running_loop().create_task(
                self._answer_later(request, response, keep_alive, start))
            return
        self._send(request, response, keep_alive, start)

    def _send(self, request: Request, response: Response, keep_alive: bool, start: float) -> None:
        body = response.body
        head_only = request.method == "HEAD"
        data = self._head(response, len(body), keep_alive)
        end = time.time()  # before the write (see the module docstring)
        self.transport.write(data if head_only else data + body)  # type: ignore[union-attr]
        self.log.record(start, end, request.host, request.target, request.method,
                        response.status, 0 if head_only else len(body), self.conn_id)
        if not keep_alive:
            self.closing = True
            self.transport.close()  # type: ignore[union-attr]

    async def _answer_later(self, request: Request, response: Response, keep_alive: bool,
                            start: float) -> None:
        if response.delay > 0:
            await asyncio.sleep(response.delay)
        if self.closing:
            self._log_aborted(request, response, start, 0)
            return
        if response.stream is None:
            self._send(request, response, keep_alive, start)
        else:
            await self._stream(request, response, keep_alive, start)
        self.busy = False
        if not self.closing:
            self._process()

    async def _stream(self, request: Request, response: Response, keep_alive: bool,
                      start: float) -> None:
        keep_alive = keep_alive and response.length is not None
        end = time.time()  # before each write: the last one's is the end
        self.transport.write(self._head(response, response.length, keep_alive))  # type: ignore
        sent = 0
        if request.method != "HEAD":
            for chunk in response.stream:  # type: ignore[union-attr]
                await self._can_write.wait()
                if self.closing or self.transport.is_closing():  # type: ignore[union-attr]
                    self._log_aborted(request, response, start, sent)
                    return
                end = time.time()
                self.transport.write(chunk)  # type: ignore[union-attr]
                sent += len(chunk)
                await asyncio.sleep(0)  # let other connections and connection_lost run
        self.log.record(start, end, request.host, request.target, request.method,
                        response.status, sent, self.conn_id)
        if not keep_alive:
            self.closing = True
            self.transport.close()  # type: ignore[union-attr]

    def _log_aborted(self, request: Request, response: Response, start: float, sent: int) -> None:
        self.log.record(start, time.time(), request.host, request.target, request.method,
                        response.status, sent, self.conn_id)


class BlackHoleProtocol(asyncio.Protocol):
    """Accepts a connection, reads and discards everything, never answers."""

    def data_received(self, data: bytes) -> None:
        pass


class TestWebServer:
    """Serves a ``TestWeb`` on one listening socket and logs every request."""

    __test__ = False

    def __init__(self, web: TestWeb, log: RequestLog):
        self.web = web
        self.log = log
        self._ids = itertools.count(1)
        self._dates = _DateCache()
        self._server: asyncio.Server | None = None

    def _protocol(self) -> HTTPProtocol:
        return HTTPProtocol(self.web, self.log, next(self._ids), self._dates)

    async def start(self, sock: socket.socket) -> None:
        """Start serving on an already bound socket."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._protocol, sock=sock, backlog=1024)
        self.log.start(loop)

    async def close(self) -> None:
        """Stop accepting and flush the log."""
        if self._server is not None:
            self._server.close()
        self.log.close()
