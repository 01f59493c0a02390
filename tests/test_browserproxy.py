"""The renderer's proxy (crawler/browserproxy.py) on its own: it forwards to the address the
policy allowed, with ``Connection: close``, and refuses the rest with a counted 403."""

from __future__ import annotations

import asyncio

from scrapy.statscollectors import MemoryStatsCollector

from crawler.browserproxy import REFUSED_HEADER, BrowserProxy, split_host_port
from crawler.ssrf import AddressPolicy


class Stats(MemoryStatsCollector):
    def __init__(self):
        self._stats = {}


async def _upstream(seen: list[bytes]) -> asyncio.Server:
    async def serve(reader, writer):
        seen.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok")
        await writer.drain()
        await reader.read()  # until the proxy closes
        writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


async def _ask(proxy_url: str, head: str) -> bytes:
    host, port = split_host_port(proxy_url.removeprefix("http://"), 80)
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(head.encode())
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), None)
    # like a browser: a complete response on a "Connection: close" answer ends the exchange
    body = await asyncio.wait_for(reader.readexactly(length) if length is not None
                                  else reader.read(), 10)
    writer.close()
    return head + body


def test_forwards_allowed_and_refuses_the_rest():
    async def run():
        seen: list[bytes] = []
        upstream = await _upstream(seen)
        port = upstream.sockets[0].getsockname()[1]
        names = {"ok.test": "127.0.0.1", "inside.test": "127.0.0.2"}

        async def resolve(host):
            return names[host]

        stats = Stats()
        proxy = BrowserProxy(resolve, AddressPolicy(["127.0.0.1/32"]), stats=stats)
        url = await proxy.start()
        try:
            ok = await _ask(url, f"GET http://ok.test:{port}/p?q=1 HTTP/1.1\r\n"
                                 f"Host: ok.test:{port}\r\nProxy-Connection: keep-alive\r\n\r\n")
            by_name = await _ask(url, f"GET http://inside.test:{port}/ HTTP/1.1\r\n\r\n")
            literal = await _ask(url, "GET http://169.254.169.254/latest HTTP/1.1\r\n\r\n")
            tunnel = await _ask(url, f"CONNECT [::1]:{port} HTTP/1.1\r\n\r\n")
            other = await _ask(url, "GET ftp://ok.test/ HTTP/1.1\r\n\r\n")
        finally:
            await proxy.close()
            upstream.close()
        return seen, ok, by_name, literal, tunnel, other, stats.get_stats()

    seen, ok, by_name, literal, tunnel, other, stats = asyncio.run(run())
    assert len(seen) == 1  # only the allowed request reached the upstream
    assert seen[0].startswith(b"GET /p?q=1 HTTP/1.1\r\n")
    assert b"Proxy-Connection: keep-alive" not in seen[0] and b"Connection: close" in seen[0]
    assert ok.startswith(b"HTTP/1.1 200 OK") and ok.endswith(b"ok")
    assert b"Connection: close" in ok and b"keep-alive" not in ok
    assert by_name.startswith(b"HTTP/1.1 403")
    assert f"{REFUSED_HEADER}: loopback 127.0.0.2".encode() in by_name
    assert f"{REFUSED_HEADER}: link_local 169.254.169.254".encode() in literal
    assert tunnel.startswith(b"HTTP/1.1 403") and b"loopback ::1" in tunnel
    assert other.startswith(b"HTTP/1.1 400")
    assert stats["ssrf/refused"] == stats["render/ssrf_refused"] == 3
    assert stats["ssrf/refused/loopback"] == 2 and stats["ssrf/refused/link_local"] == 1


def test_split_host_port():
    assert split_host_port("a.test", 80) == ("a.test", 80)
    assert split_host_port("A.test:8080", 80) == ("a.test", 8080)
    assert split_host_port("[::1]:443", 80) == ("::1", 443)
    for bad in ("", ":80", "a.test:x", "a.test:0", "a.test:70000"):
        try:
            split_host_port(bad, 80)
        except ValueError:
            continue
        raise AssertionError(bad)
