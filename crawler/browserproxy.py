"""The renderer's SSRF guard: a small HTTP proxy on loopback that every request of the
browser goes through.

chromium is started with ``--proxy-server=http://127.0.0.1:<port>`` and
``--proxy-bypass-list=<-loopback>`` (loopback goes through the proxy too), so it connects
to nothing else and resolves no name itself: for ``http:`` it sends the proxy the absolute
URL, for ``https:`` and WebSockets a ``CONNECT host:port``. Navigations, redirect hops,
``location=`` changes, subresources, frames of any origin (``about:srcdoc``, ``data:``),
workers and service workers all arrive here. The proxy resolves the host through the
crawler's resolver (``crawler.resolver.OverrideResolver``: ``RESOLVE_OVERRIDES``, the DNS
cache and the SSRF policy of ``crawler.ssrf``), checks literal addresses with the same
``AddressPolicy``, and connects to exactly the address it checked: there is no second
lookup for a name to rebind between.

Why a proxy rather than ``--host-resolver-rules``: the rules are fixed when the browser
starts, so they cannot carry the decisions the resolver makes during a crawl (answers
change, the cache expires), and a rule that maps names says nothing about literal
addresses. The proxy is one place that sees every connection, and it costs one loopback hop
per browser request; rendering is for the few app-shell pages.

A refusal is answered ``403`` with ``X-SSRF-Refused: <reason> <address>`` (a refused
``CONNECT`` makes the browser fail the request), counted as ``ssrf/refused``,
``ssrf/refused/<reason>`` and ``render/ssrf_refused``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from crawler.ssrf import AddressPolicy, RefusalLog, SSRFRefused, is_ip_literal

logger = logging.getLogger(__name__)

REFUSED_HEADER = "X-SSRF-Refused"
#: Hop-by-hop headers the proxy drops in both directions (it sets its own Connection).
_HOP_HEADERS = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization",
                          "proxy-authenticate", "te", "trailer", "upgrade"})
_MAX_HEAD = 64 * 1024


def split_host_port(authority: str, default_port: int) -> tuple[str, int]:
    """``host``, ``port`` of ``host[:port]`` or ``[v6]:port``; raises ValueError if bad."""
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = authority.rpartition(":") if ":" in authority else (authority, "", "")
    if not host or (port and not port.isdigit()):
        raise ValueError(f"bad authority {authority!r}")
    number = int(port) if port else default_port
    if not 0 < number < 65536:
        raise ValueError(f"bad port in {authority!r}")
    return host.lower(), number


class BrowserProxy:
    """Forwards the browser's HTTP requests and tunnels, each to the address the SSRF
    policy allowed for its host; refuses the rest. One decision per connection, never a
    second lookup."""

    def __init__(
        self,
        resolve: Callable[[str], Awaitable[str]],
        policy: AddressPolicy,
        refusals: RefusalLog | None = None,
        stats=None,
        idle_timeout: float = 30.0,
    ):
        self.resolve = resolve
        self.policy = policy
        self.refusals = refusals or RefusalLog()
        self.stats = stats
        self.idle_timeout = idle_timeout
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task] = set()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` once started."""
        if self._server is None:
            raise RuntimeError("the browser proxy is not started")
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    def launch_args(self) -> list[str]:
        """chromium switches that send every request through this proxy."""
        return [f"--proxy-server={self.url}", "--proxy-bypass-list=<-loopback>"]

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on ``host:port`` (a free port by default); returns :attr:`url`."""
        self._server = await asyncio.start_server(self._serve, host, port, limit=_MAX_HEAD)
        return self.url

    async def close(self) -> None:
        """Stop listening and drop the connections in flight."""
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def address_for(self, host: str) -> str:
        """The address to connect to for ``host``; raises ``SSRFRefused``."""
        ip = host if is_ip_literal(host) else await self.resolve(host)
        reason = self.policy.refusal(ip)  # the resolver checks names too, with this policy
        if reason is not None:
            raise self.refusals.refused(host, ip, reason)
        return ip

    # -- one client connection -----------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        upstream: asyncio.StreamWriter | None = None
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.idle_timeout)
            method, target, version, headers = _parse_head(head)
            if method == "CONNECT":
                host, port = split_host_port(target, 443)
            else:
                parts = urlsplit(target)
                if parts.scheme != "http" or not parts.hostname:
                    await _answer(writer, 400, "the proxy takes absolute http URLs")
                    return
                host, port = split_host_port(parts.netloc.rpartition("@")[2], 80)
            try:
                ip = await self.address_for(host)
            except SSRFRefused as exc:
                self._count(exc.reason)
                await _answer(writer, 403, str(exc), {REFUSED_HEADER: f"{exc.reason} {exc.ip}"})
                return
            except Exception as exc:  # noqa: BLE001 - any resolution failure is a 502
                await _answer(writer, 502, f"cannot resolve {host}: {exc}")
                return
            try:
                up_reader, upstream = await asyncio.wait_for(
                    asyncio.open_connection(ip, port, limit=_MAX_HEAD), self.idle_timeout)
            except (TimeoutError, OSError) as exc:
                await _answer(writer, 502, f"cannot connect to {host} ({ip}:{port}): {exc}")
                return
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
            else:
                path = parts.path or "/"
                if parts.query:
                    path += "?" + parts.query
                upstream.write(_build_head(f"{method} {path} {version}", headers))
                await upstream.drain()
                if not await self._relay_response_head(up_reader, writer):
                    return
            await self._splice(reader, writer, up_reader, upstream)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ConnectionError, ValueError):
            pass
        finally:
            for w in (writer, upstream):
                if w is not None:
                    w.close()
            if task is not None:
                self._tasks.discard(task)

    async def _relay_response_head(self, up_reader: asyncio.StreamReader,
                                   writer: asyncio.StreamWriter) -> bool:
        """Forward the response head(s) with ``Connection: close``: the browser must not
        send its next request (maybe for another host) down this connection."""
        while True:
            head = await asyncio.wait_for(up_reader.readuntil(b"\r\n\r\n"), self.idle_timeout)
            status_line, headers = head.decode("latin-1").split("\r\n", 1)
            writer.write(_build_head(status_line, _header_pairs(headers)))
            await writer.drain()
            code = status_line.split(" ", 2)[1] if status_line.count(" ") else ""
            if not (code.startswith("1") and code != "101"):
                return True

    async def _splice(self, reader, writer, up_reader, upstream) -> None:
        """Copy both ways until either side closes or stays idle past the timeout."""
        pipes = [asyncio.ensure_future(self._pipe(reader, upstream)),
                 asyncio.ensure_future(self._pipe(up_reader, writer))]
        try:
            await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pipe in pipes:
                pipe.cancel()
            await asyncio.gather(*pipes, return_exceptions=True)

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.TimeoutError):
            while data := await asyncio.wait_for(source.read(65536), self.idle_timeout):
                sink.write(data)
                await sink.drain()

    def _count(self, reason: str) -> None:
        if self.stats is not None:
            for key in ("ssrf/refused", f"ssrf/refused/{reason}", "render/ssrf_refused"):
                self.stats.inc_value(key)


def _parse_head(head: bytes) -> tuple[str, str, str, list[tuple[str, str]]]:
    request_line, _, rest = head.decode("latin-1").partition("\r\n")
    method, target, version = request_line.split(" ", 2)
    return method.upper(), target, version.strip(), _header_pairs(rest)


def _header_pairs(text: str) -> list[tuple[str, str]]:
    pairs = []
    for line in text.split("\r\n"):
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() not in _HOP_HEADERS:
            pairs.append((name.strip(), value.strip()))
    return pairs


def _build_head(first_line: str, headers: list[tuple[str, str]]) -> bytes:
    lines = [first_line, *(f"{k}: {v}" for k, v in headers), "Connection: close",
             "Proxy-Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1")


async def _answer(writer: asyncio.StreamWriter, status: int, text: str,
                  headers: dict[str, str] | None = None) -> None:
    reasons = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}
    body = (text + "\n").encode()
    pairs = [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body))),
             *(headers or {}).items()]
    writer.write(_build_head(f"HTTP/1.1 {status} {reasons[status]}", pairs) + body)
    with contextlib.suppress(ConnectionError):
        await writer.drain()
